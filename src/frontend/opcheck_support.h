// Internal: opcheck's input generation and gradient check
// (include/strideweave/opcheck.h, docs/opcheck.md).
#pragma once

#include <strideweave/opcheck.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strideweave::frontend::opcheck {

// How a sample's Tensor operands are built for one case.
struct Variant {
  enum class Values : std::uint8_t { RANDOM, EDGE };
  enum class View : std::uint8_t { COMPACT, STRIDED, TRANSPOSED, BROADCAST };
  std::string label;
  Values values = Values::RANDOM;
  View view = View::COMPACT;
  std::int64_t emptied_extent = -1;  // >= 0: every extent equal to it becomes 0
  std::uint64_t index = 0;           // seeds the values
};

// The variants of a sample: random, edge values, strided, transposed (when a
// Tensor operand has rank >= 2), broadcast (when one has an extent > 1), and
// one empty-extent variant per distinct positive extent.
std::vector<Variant> variants(const operation::OpcheckSample& sample);

// One generated call on `prototype`'s class: the operands in schema order
// and, per operand, the whole storage it was built with (empty for non-Tensor
// operands). Deterministic in (sample, variant, seed): two builds are equal
// copies on separate storage.
struct Built {
  std::vector<operation::CallOperand> operands;
  std::vector<std::vector<Value>> storage;
};
Built build(const Carrier& prototype, const operation::OpcheckSample& sample, const Variant& variant,
            std::uint64_t seed);

// The VJP of `definition` against central differences of its reference, on
// compact random inputs built on `prototype`, one case per sample and
// differentiable Float32 operand.
std::vector<operation::OpcheckCase> check_gradients(const operation::OperationDefinition& definition,
                                                    const Carrier& prototype, const operation::OpcheckOptions& options);

}  // namespace strideweave::frontend::opcheck
