// strideweave/ops.h — the operation front end.
//
// Every function here is policy, not arithmetic (STYLE.md habit 1). It
//   1. resolves the OperationPlan once through the central dtype policy
//      (errors: TypeError / NotImplementedError / OverflowError as
//      operation-dtype-policy.md says);
//   2. validates options and shapes and computes the result Shape
//      (ValueError), reading no element;
//   3. checks that every tensor operand lives on one exact carrier class
//      (TypeError) and that no carrier is released (RuntimeError);
//   4. requires a kernel for exactly that plan on that class
//      (UnsupportedOperationPlan), before any allocation;
//   5. allocates the result on the operands' carrier class in the canonical
//      compact layout of a flat Shape (one leaf per top-level mode of the
//      inputs, whatever their nesting) and runs the kernel.
// A failure at any step leaves every operand unchanged.
//
// Broadcasting follows docs/broadcasting.md (numpy rules on top-level modes).
// Results are fresh tensors; inputs may be any view (strided, broadcast,
// permuted, hierarchical).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/execution.h>
#include <strideweave/output.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>

#include <strideweave/ops/arithmetic.h>
#include <strideweave/ops/reductions.h>
#include <strideweave/ops/structured.h>
#include <strideweave/ops/unary.h>
#include <strideweave/ops/operators.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// The broadcast of two shapes' top-level extents (ValueError naming
// `operation` when incompatible).
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view operation);

// Caller-provided outputs (the descriptor note's execution axes;
// <strideweave/output.h>). Every single-result operation takes a trailing
// `const Output& out = {}`:
//
//   add(a, b, into(out));                          // out = a + b
//   matmul(a, b, std::nullopt, accumulate_into(acc));   // acc += a @ b
//
// and then writes its result into `out` instead of fresh storage, or adds it
// into `out` (read-modify-write in the plan's output arithmetic), and returns
// the `out` handle itself. After the plan is resolved and the shapes are
// validated, and before any allocation: `out` must be on the operands' exact
// carrier class (TypeError), publicly mutable and live (RuntimeError), of the
// plan's output dtype (TypeError), of the result's shape (or that shape
// without the extent-1 axes a vector matmul removes; ValueError), injective
// (ValueError), and share no carrier with an operand (ValueError). The
// executing carrier's capability entry decides how: caller_output /
// accumulation (and strided_output when `out` is not compact at offset 0)
// must not be Unsupported (UnsupportedOpDType); Native kernels write `out`
// directly, FallbackCopy computes into fresh storage and copies (counted:
// fallback_copy_count, execution.h). Either way `out` changes only if the
// whole call succeeds, and its carrier's version advances by exactly one.
// While an operand requires grad (grad mode on), a caller-provided output is
// a RuntimeError: the result could not be recorded for backward.
// sort and topk (two results) take no output.

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
