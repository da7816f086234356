// strideweave/opcheck.h — checks a user-defined operation's kernels against
// its reference (issue 11 step 7; docs/opcheck.md; `strideweave check
// --operation NAME`).
//
// opcheck(definition, options) runs every kernel pattern of every carrier
// that advertises the definition, ONE PATTERN AT A TIME, through the ordinary
// dispatch pipeline (bind, resolve, gate, static match, prepare, submit,
// wait, publication validation), on inputs generated from sample calls, and
// compares each with the definition's reference run on an identical,
// separate copy of the inputs:
//   - error agreement (both raise the same error type, or neither does);
//   - result count, dtype, shape and layout (strides) against the
//     ResultSpecs (a ProviderContractError of the pipeline is reported with
//     its field);
//   - logical values within each ResultSpec's atol/rtol (NaN matches NaN, an
//     infinity the same infinity);
//   - aliasing: whether each result shares storage with each operand, as the
//     reference's result does (alias_of results must be the operand itself);
//   - mutation effects: every slot of every operand's storage (padding of
//     strided views included) after the kernel equals the reference's after
//     the reference: a declared mutation must write what the reference
//     writes, and an operand not declared mutated must be left bit for bit;
//   - gradients: the definition's VJP, called directly with a VJPContext over
//     the reference's outputs, against central finite differences of the
//     reference (for differentiable Float32 operands), with the VJP's return
//     checked (count, shape, dtype).
//
// Generated inputs, per sample call: random values; edge values (signed
// zeros, subnormals, the largest finite values, infinities, NaN; INT32_MIN
// and INT32_MAX); strided views (every Tensor operand a stride-2 view with
// an offset, padding filled with a sentinel); transposed views (rank >= 2);
// broadcast views (a stride-0 mode); and empty extents (each distinct
// extent of the sample's Tensor operands set to 0 everywhere it occurs: give
// each symbolic dimension its own extent in a sample). A generated call the
// definition's resolve refuses is recorded as skipped, not failed.
//
// Nothing outside the generated inputs changes; opcheck does not observe
// (seal) a carrier class that has no prototype.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <strideweave/carrier.h>
#include <strideweave/operation.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave::operation {

// A Tensor operand of a sample call: its dtype and shape (opcheck builds the
// values and the views on each carrier).
struct SampleTensor {
  const DType* dtype = &DType::Float32();
  Shape shape;
};
using SampleOperand = std::variant<SampleTensor, WeakScalar, Structural>;

// One sample call: operands in schema order, options by name, a label for
// the report ("" -> "sample N").
struct OpcheckSample {
  std::vector<SampleOperand> operands;
  OptionMap options;
  std::string label;
};

struct OpcheckOptions {
  // The sample calls; empty: those given to register_opcheck_inputs (a
  // ValueError when there are none).
  std::vector<OpcheckSample> samples;
  // Prototype instances, one per carrier class to check (inputs are built
  // with their new_like). Empty: those given to register_opcheck_inputs.
  // Every definition-backed class whose kernel patterns name the definition
  // is checked; one without a prototype is reported as failed (field
  // "prototype"). A prototype of a dependent class is checked through its
  // composite provider (one pseudo-pattern, "composite provider").
  std::vector<std::shared_ptr<Carrier>> carriers;
  bool gradients = true;        // the VJP against finite differences
  std::uint64_t seed = 20261202;
  double fd_step = 1e-2;        // central differences step (Float32 inputs)
  double grad_atol = 2e-2;      // |vjp - fd| <= grad_atol + grad_rtol * |fd|
  double grad_rtol = 2e-2;
  std::int64_t fd_max_elements = 64;  // per operand; more are sampled evenly
};

// The outcome of one case.
enum class OpcheckStatus : std::uint8_t {
  PASSED,
  FAILED,
  DECLINED,        // the pattern returned Unsupported at run time (legal: another candidate would run)
  NOT_APPLICABLE,  // the pattern's plans do not match this case's plan statically
  SKIPPED,         // the generated call could not be built on the carrier, or resolve refused it
};
const char* name_of(OpcheckStatus status) noexcept;  // "passed", "failed", "declined", "not applicable", "skipped"

struct OpcheckCase {
  std::string sample;   // the sample's label
  std::string variant;  // "random", "edge values", "strided", "transposed", "broadcast", "empty (extent 3 -> 0)"
  OpcheckStatus status = OpcheckStatus::PASSED;
  // For FAILED: what differed: "error", "count", "carrier", "physical size",
  // "dtype", "shape", "layout", "values", "alias", "mutation", "completion";
  // for gradients also "vjp" (the callback threw or returned the wrong
  // count), "gradient dtype", "gradient shape", "gradient". Empty otherwise.
  std::string field;
  std::string message;  // the detail (for DECLINED and SKIPPED: the reason)
};

struct OpcheckPatternReport {
  std::string kernel_id;  // "composite provider" for a dependent carrier
  std::string source;     // "built-in" or a pack's "namespace@version"
  std::int64_t preference = 0;
  std::vector<OpcheckCase> cases;
};

struct OpcheckCarrierReport {
  std::string carrier;  // the exact class name
  std::vector<OpcheckPatternReport> patterns;
  // The VJP against finite differences on this carrier's inputs (one case
  // per sample and differentiable operand; variant = the operand's name).
  std::vector<OpcheckCase> gradients;
  // Set when the carrier could not be checked at all (field "prototype").
  std::optional<OpcheckCase> problem;
};

struct OpcheckReport {
  std::string operation;
  std::vector<OpcheckCarrierReport> carriers;
  std::size_t count(OpcheckStatus status) const noexcept;  // over every case, gradients included
  std::size_t failed() const noexcept;                      // FAILED cases plus carrier problems
  bool passed() const noexcept { return failed() == 0; }
};

// Runs the checks above. ValueError for a definition without a reference
// (nothing to compare with), a built-in definition (the conformance harness,
// `strideweave check`, covers those), no samples, or a sample whose operand
// count or kinds do not fit the schema. A failing check never throws: it is a
// FAILED case.
OpcheckReport opcheck(const OperationDefinition& definition, OpcheckOptions options = {});

// Registers the samples and prototypes opcheck uses when its options give
// none (what `strideweave check --operation NAME` runs: a plugin registers
// them beside its operation, docs/opcheck.md). One-shot per definition
// (ValueError for a second registration or a built-in definition);
// ValueError for no samples.
void register_opcheck_inputs(const OperationDefinition& definition, std::vector<OpcheckSample> samples,
                             std::vector<std::shared_ptr<Carrier>> carriers = {});

// The report as text (what `strideweave check --operation NAME` prints).
std::string to_text(const OpcheckReport& report);

}  // namespace strideweave::operation

STRIDEWEAVE_PUBLIC_END
