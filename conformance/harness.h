// The conformance harness (STYLE.md habit 7): every entry of a carrier's
// capability table is run on that carrier and on Generic over generated cases and
// compared under docs/numerics.md. Cases come from one generator per
// operation name, registered by the family files cases_*.cpp; a plan whose
// operation has no generator fails the suite, so a new kernel cannot land
// untested.
#pragma once

#include <strideweave/strideweave.h>

#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "conformance/agreement_support.h"

namespace strideweave::conformance {

// One call, with operands built twice: once on Generic, once on the carrier
// under test (same values, same physical layouts).
struct TwinCase {
  std::string label;
  std::vector<CallOperand> generic;
  std::vector<CallOperand> other;
  CallOptions options;
  // For FLOATING plans: per result element (logical ordinal), the sum of
  // |terms| and the term count, computed on Generic. Empty = compare exactly.
  std::function<std::pair<double, std::int64_t>(std::size_t result, std::int64_t ordinal)> bound;
};

// Builds an operand twin on Generic and on the carrier under test.
using TwinMaker = std::function<Pair(const SimpleDType&, const std::vector<std::int64_t>&, LayoutCase, std::mt19937&,
                                     bool small_ints)>;

// Cases for one plan (the plan fixes operand roles and dtypes).
using CaseGenerator = std::function<std::vector<TwinCase>(const OperationPlan&, std::mt19937&)>;

// The generator of every built-in operation, as operations.def's conformance
// column names it (built once from the list).
const std::map<std::string, CaseGenerator>& case_generators();

// The generators the conformance column may name (cases_<family>.cpp).
namespace generators {
#define SW_CONFORMANCE_GENERATOR(name) std::vector<TwinCase> name(const OperationPlan& plan, std::mt19937& rng);
SW_CONFORMANCE_GENERATOR(binary_cases)       // cases_arithmetic.cpp
SW_CONFORMANCE_GENERATOR(sub_cases)
SW_CONFORMANCE_GENERATOR(pow_cases)
SW_CONFORMANCE_GENERATOR(logical_not_cases)
SW_CONFORMANCE_GENERATOR(ternary_cases)
SW_CONFORMANCE_GENERATOR(unary_cases)        // cases_unary.cpp
SW_CONFORMANCE_GENERATOR(reduce_sum_cases)   // cases_reductions.cpp
SW_CONFORMANCE_GENERATOR(reduce_cases)
SW_CONFORMANCE_GENERATOR(arg_cases)
SW_CONFORMANCE_GENERATOR(cumsum_cases)
SW_CONFORMANCE_GENERATOR(sort_cases)
SW_CONFORMANCE_GENERATOR(topk_cases)
SW_CONFORMANCE_GENERATOR(matmul_cases)       // cases_structured.cpp
SW_CONFORMANCE_GENERATOR(conv_cases)
SW_CONFORMANCE_GENERATOR(indexed_cases)
#undef SW_CONFORMANCE_GENERATOR
}  // namespace generators
// Defines generators::name as the file's own `name` (a case file keeps its
// generators and helpers in an unnamed namespace and exports each with one
// line).
#define STRIDEWEAVE_EXPORT_CASES(name)                                                          \
  std::vector<TwinCase> generators::name(const OperationPlan& plan, std::mt19937& rng) { \
    return conformance::name(plan, rng);                                                 \
  }

// How results of a plan are compared.
struct AgreementRule {
  enum Kind { Exact, Floating, Ulps } kind = Exact;
  int ulps = 0;  // for Ulps
};
AgreementRule agreement_rule(const OperationPlan& plan);

// Compares one case on Generic and on `other_class`; returns the
// disagreements (empty when they agree under agreement_rule).
std::vector<std::string> compare_case(const OperationPlan& plan, const TwinCase& c, CarrierClass other_class);

struct ConformanceReport {
  std::string name;
  std::size_t entries = 0;      // capability entries of the class
  std::size_t unsupported = 0;  // registry plans the class does not execute
  std::size_t refused = 0;      // of those, the plans whose case the gate refused (UnsupportedOperationPlan)
  std::size_t cases = 0, passed = 0, failed = 0;
  std::vector<std::string> failures;  // the first few
};
// Runs every entry of the prototype's class table against Generic, and
// checks that every registry plan outside the table is refused by the gate.
// With `operations` non-empty, only the entries (and refused plans) of those
// operation names. Each entry draws its cases from its own generator seeded
// by `seed` and the plan, so a filtered run checks exactly the cases the full
// run checks for the same entries.
ConformanceReport run_conformance(const std::shared_ptr<Carrier>& prototype, std::uint32_t seed = 20261129,
                                  const std::vector<std::string>& operations = {});

// Helpers for generators.
inline CallOperand t(const Tensor& x) { return CallOperand(x); }
inline CallOperand s(WeakScalar w) { return CallOperand(w); }
const std::vector<LayoutCase>& all_layout_cases();
// The weak-scalar probes that resolve `plan` when placed at operand `i`
// (others as in the plan).
std::vector<WeakScalar> scalars_selecting(const OperationPlan& plan, std::size_t i);
// |values| as a Float32 Generic tensor with the same view (for bounds).
Tensor abs_twin(const Tensor& generic);

}  // namespace strideweave::conformance
