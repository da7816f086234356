// strideweave/output.h — a caller-provided output for one operation call.
//
// Every single-result operation takes a trailing `const Output& out = {}`:
//
//   Tensor r = add(a, b);                          // a fresh result
//   add(a, b, into(out));                          // written into `out`
//   matmul(a, b, std::nullopt, accumulate_into(acc));   // acc += a @ b
//
// An Output belongs to exactly the call it is passed to: in
// `add(mul(x, x), x, into(out))` the inner `mul` allocates its own result and
// only `add` writes `out` (the arguments are evaluated before `add` runs).
// The front end checks `out` after resolving the plan and before any
// allocation or kernel (ops.h, "Caller-provided outputs"); the executing
// carrier's capability entry decides how it is written (Native, FallbackCopy
// or Unsupported on the caller_output, strided_output and accumulation
// axes, docs/capabilities.md). The call returns the `out` handle itself.
#pragma once

#include <optional>
#include <utility>

#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

enum class OutputMode {
  Overwrite,   // out = result
  Accumulate,  // out = out + result, in the plan's output arithmetic
};

class Output {
 public:
  // No output: the call allocates a fresh result (the owned_result axis).
  Output() noexcept = default;
  explicit Output(Tensor tensor, OutputMode mode = OutputMode::Overwrite)
      : tensor_(std::move(tensor)), mode_(mode) {}

  bool has_value() const noexcept { return tensor_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  // Precondition: has_value().
  const Tensor& tensor() const { return *tensor_; }
  OutputMode mode() const noexcept { return mode_; }

 private:
  std::optional<Tensor> tensor_;
  OutputMode mode_ = OutputMode::Overwrite;
};

// The call writes its result into `out`.
inline Output into(Tensor out) { return Output(std::move(out), OutputMode::Overwrite); }
// The call adds its result into `out`.
inline Output accumulate_into(Tensor out) { return Output(std::move(out), OutputMode::Accumulate); }

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
