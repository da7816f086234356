// opcheck's generated inputs (src/frontend/opcheck_support.h).
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <set>

#include "frontend/opcheck_support.h"

namespace strideweave::frontend::opcheck {

using operation::OpcheckSample;
using operation::SampleTensor;

namespace {

// Slots of a strided operand that no element uses hold this, so a kernel
// that reads outside the view gets a value the reference never sees.
Value sentinel(const DType& dtype) {
  if (&dtype == &DType::Int32()) return Value::from_int32(12345);
  if (&dtype == &DType::Bool()) return Value::from_bool(true);
  return Value::from_float32(1234.5f);
}

// Edge values, cycled through each operand from a per-operand start.
Value edge(const DType& dtype, std::size_t k) {
  if (&dtype == &DType::Int32()) {
    static constexpr std::int32_t v[] = {0, 1, -1, std::numeric_limits<std::int32_t>::max(),
                                         std::numeric_limits<std::int32_t>::min(), 7, -7};
    return Value::from_int32(v[k % std::size(v)]);
  }
  if (&dtype == &DType::Bool()) return Value::from_bool(k % 2 == 0);
  static constexpr float inf = std::numeric_limits<float>::infinity();
  static const float v[] = {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::denorm_min(), -1e-38f,
                            std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), inf, -inf,
                            std::numeric_limits<float>::quiet_NaN(), 0.5f, 65504.0f};
  return Value::from_float32(v[k % std::size(v)]);
}

Value random_value(const DType& dtype, std::mt19937_64& rng) {
  if (&dtype == &DType::Int32()) return Value::from_int32(static_cast<std::int32_t>(rng() % 11) - 5);
  if (&dtype == &DType::Bool()) return Value::from_bool(rng() % 2 == 0);
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
  return Value::from_float32(static_cast<float>(-2.0 + 4.0 * u));
}

std::vector<std::int64_t> compact_strides(std::span<const std::int64_t> extents) {
  std::vector<std::int64_t> s(extents.size());
  std::int64_t running = 1;
  for (std::size_t k = 0; k < extents.size(); ++k) {
    s[k] = running;
    if (extents[k] > 0) running *= extents[k];
  }
  return s;
}

}  // namespace

std::vector<Variant> variants(const OpcheckSample& sample) {
  std::vector<Variant> out = {{"random", Variant::Values::RANDOM, Variant::View::COMPACT, -1, 0},
                              {"edge values", Variant::Values::EDGE, Variant::View::COMPACT, -1, 1},
                              {"strided", Variant::Values::RANDOM, Variant::View::STRIDED, -1, 2}};
  bool rank2 = false, broadcastable = false;
  std::set<std::int64_t> extents;
  for (const auto& o : sample.operands)
    if (const auto* t = std::get_if<SampleTensor>(&o)) {
      rank2 = rank2 || t->shape.rank() >= 2;
      for (std::int64_t e : t->shape.extents()) {
        broadcastable = broadcastable || e > 1;
        if (e > 0) extents.insert(e);
      }
    }
  if (rank2) out.push_back({"transposed", Variant::Values::RANDOM, Variant::View::TRANSPOSED, -1, 3});
  if (broadcastable) out.push_back({"broadcast", Variant::Values::RANDOM, Variant::View::BROADCAST, -1, 4});
  std::uint64_t index = 5;
  for (std::int64_t e : extents)
    out.push_back({fmt::format("empty (extent {} -> 0)", e), Variant::Values::RANDOM, Variant::View::COMPACT, e,
                   index++});
  return out;
}

Built build(const Carrier& prototype, const OpcheckSample& sample, const Variant& variant, std::uint64_t seed) {
  Built out;
  for (std::size_t i = 0; i < sample.operands.size(); ++i) {
    const auto* t = std::get_if<SampleTensor>(&sample.operands[i]);
    if (!t) {
      if (const auto* w = std::get_if<WeakScalar>(&sample.operands[i])) out.operands.emplace_back(*w);
      else out.operands.emplace_back(std::get<operation::Structural>(sample.operands[i]));
      out.storage.emplace_back();
      continue;
    }
    const DType& dtype = *t->dtype;
    std::vector<std::int64_t> extents(t->shape.extents().begin(), t->shape.extents().end());
    if (variant.emptied_extent >= 0)
      for (auto& e : extents)
        if (e == variant.emptied_extent) e = 0;
    const Shape shape = Shape::of(extents);
    std::int64_t offset = 0;
    Layout layout = Layout::compact(shape);
    switch (variant.view) {
      case Variant::View::COMPACT: break;
      case Variant::View::STRIDED: {
        std::vector<std::int64_t> s = compact_strides(extents);
        for (auto& x : s) x *= 2;
        layout = Layout(shape, Stride::of(s));
        offset = 1;
        break;
      }
      case Variant::View::TRANSPOSED: layout = Layout::row_major(shape); break;
      case Variant::View::BROADCAST: {
        const auto k = std::find_if(extents.begin(), extents.end(), [](std::int64_t e) { return e > 1; });
        if (k == extents.end()) break;
        std::vector<std::int64_t> reduced = extents;
        reduced[static_cast<std::size_t>(k - extents.begin())] = 1;
        std::vector<std::int64_t> s = compact_strides(reduced);
        s[static_cast<std::size_t>(k - extents.begin())] = 0;
        layout = Layout(shape, Stride::of(s));
        break;
      }
    }
    std::vector<Value> storage(static_cast<std::size_t>(offset + layout.cosize()), sentinel(dtype));
    std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ULL * (variant.index + 1)) ^ (0xc2b2ae3d27d4eb4fULL * (i + 1)));
    for (std::int64_t o = 0; o < layout.size(); ++o)
      storage[static_cast<std::size_t>(offset + layout(o))] =
          variant.values == Variant::Values::EDGE ? edge(dtype, static_cast<std::size_t>(o) + 3 * i)
                                                  : random_value(dtype, rng);
    // A broadcast or strided operand's unused slots keep the sentinel; the
    // storage always has at least one slot so an offset stays in range.
    if (storage.empty()) storage.push_back(sentinel(dtype));
    std::shared_ptr<Carrier> carrier = prototype.new_like(storage, true, &dtype);
    out.operands.emplace_back(Tensor(carrier, offset, layout));
    out.storage.push_back(std::move(storage));
  }
  return out;
}

}  // namespace strideweave::frontend::opcheck
