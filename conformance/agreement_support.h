// Conformance support: build the same logical operand on Generic and on the
// carrier under test with the same physical layout, and compare results under the documented agreement
// rule (docs/numerics.md).
#pragma once

#include <strideweave/strideweave.h>


#include <cmath>
#include <functional>
#include <memory>
#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace strideweave::conformance {


// How an operand's view is laid out over its storage.
enum class LayoutCase { Compact, Strided, Permuted, Broadcast, Hierarchical };

inline const char* case_name(LayoutCase c) {
  switch (c) {
    case LayoutCase::Compact: return "compact";
    case LayoutCase::Strided: return "strided";
    case LayoutCase::Permuted: return "permuted";
    case LayoutCase::Broadcast: return "broadcast";
    case LayoutCase::Hierarchical: return "hierarchical";
  }
  return "?";
}

inline std::vector<Value> edge_pool(const SimpleDType& d, bool small_ints) {
  std::vector<Value> out;
  if (&d == &DType::Float32()) {
    const float fs[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 3.25f, -7.5f, 1e-3f, 16777216.0f, 3.0e38f,
                        std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                        -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                        std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1.0e-40f, 0.1f};
    for (float f : fs) out.push_back(Value::from_float32(f));
  } else if (&d == &DType::Int32()) {
    if (small_ints) {
      for (int i = -9; i <= 9; ++i) out.push_back(Value::from_int32(i * 7));
    } else {
      const std::int32_t is[] = {0, 1, -1, 2, -2, 100, -100, 46341, -46341, 16777217, -16777217,
                                 std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::min()};
      for (std::int32_t i : is) out.push_back(Value::from_int32(i));
    }
  } else {
    out = {Value::from_bool(false), Value::from_bool(true)};
  }
  return out;
}

// The carrier class under test: operands are built on it by copying values
// into fresh storage of the prototype's exact class (new_like). CPU unless a
// driver chose another (set_carrier_under_test).
std::shared_ptr<Carrier>& carrier_under_test();
inline void set_carrier_under_test(std::shared_ptr<Carrier> prototype) { carrier_under_test() = std::move(prototype); }
inline std::shared_ptr<Carrier> under_test_from_values(const std::vector<Value>& values, const SimpleDType& d) {
  return carrier_under_test()->new_like(values, true, &d);
}

struct Pair {
  Tensor generic;
  Tensor cpu;
};

// Draws one storage value.
using ValueGen = std::function<Value(std::mt19937&)>;

// A generator drawing from the edge pool of `d`.
inline ValueGen pool_values(const SimpleDType& d, bool small_ints) {
  auto pool = std::make_shared<const std::vector<Value>>(edge_pool(d, small_ints));
  return [pool](std::mt19937& rng) {
    std::uniform_int_distribution<std::size_t> pick(0, pool->size() - 1);
    return (*pool)[pick(rng)];
  };
}

// The operand of logical shape `extents` on Generic and on the carrier under
// test (same values, same physical layout), viewed per `c`, with storage
// values drawn from `gen`.
inline Pair twin_of(const SimpleDType& d, const std::vector<std::int64_t>& extents, LayoutCase c, std::mt19937& rng,
                    const ValueGen& gen) {
  const Shape shape = Shape::of(extents);
  auto build = [&](const Layout& layout, std::int64_t offset) {
    std::vector<Value> values;
    const std::int64_t n = offset + std::max<std::int64_t>(layout.cosize(), 1);
    for (std::int64_t i = 0; i < n; ++i) values.push_back(gen(rng));
    return Pair{Tensor(Generic::create(values, d), offset, layout), Tensor(under_test_from_values(values, d), offset, layout)};
  };
  if (extents.empty() || shape.size() == 0) return build(Layout::compact(shape), 0);
  switch (c) {
    case LayoutCase::Compact: return build(Layout::compact(shape), 0);
    case LayoutCase::Strided: {
      // Every other element of axis 0 of a doubled storage, at offset 1.
      std::vector<std::int64_t> big = extents;
      big[0] *= 2;
      Pair base = build(Layout::compact(Shape::of(big)), 1);
      return Pair{base.generic.slice(0, 0, big[0], 2), base.cpu.slice(0, 0, big[0], 2)};
    }
    case LayoutCase::Permuted: {
      std::vector<std::int64_t> rev(extents.rbegin(), extents.rend()), perm;
      for (std::int64_t i = static_cast<std::int64_t>(extents.size()) - 1; i >= 0; --i) perm.push_back(i);
      Pair base = build(Layout::compact(Shape::of(rev)), 0);
      return Pair{base.generic.permute(perm), base.cpu.permute(perm)};
    }
    case LayoutCase::Broadcast: {
      std::vector<std::int64_t> one = extents;
      one[0] = 1;
      Pair base = build(Layout::compact(Shape::of(one)), 0);
      return Pair{base.generic.broadcast_to(shape), base.cpu.broadcast_to(shape)};
    }
    case LayoutCase::Hierarchical: {
      // Axis 0 of extent 2*h becomes the nested mode (2, h):(1, 2*rest) that
      // does not coalesce to one stride.
      if (extents[0] % 2 != 0 || extents[0] < 4) return build(Layout::compact(shape), 0);
      std::int64_t rest = 1;
      for (std::size_t i = 1; i < extents.size(); ++i) rest *= extents[i];
      std::vector<IntTuple> sm{IntTuple{2, extents[0] / 2}}, st{IntTuple{1, 2 * rest}};
      std::int64_t stride = 2;
      for (std::size_t i = 1; i < extents.size(); ++i) {
        sm.emplace_back(extents[i]);
        st.emplace_back(stride);
        stride *= extents[i];
      }
      return build(Layout(Shape(sm), Stride(st)), 0);
    }
  }
  return build(Layout::compact(shape), 0);
}

// twin_of with values from the edge pool (NaN, +-0, +-inf, subnormals,
// extremes; small integers when `small_ints`).
inline Pair twin(const SimpleDType& d, const std::vector<std::int64_t>& extents, LayoutCase c, std::mt19937& rng,
                 bool small_ints = false) {
  return twin_of(d, extents, c, rng, pool_values(d, small_ints));
}

// Bitwise agreement with every NaN equal to every NaN.
inline bool same_value(const Value& a, const Value& b) {
  if (a.kind == ElementKind::Float32 && b.kind == ElementKind::Float32 && std::isnan(a.f) && std::isnan(b.f)) return true;
  return a == b;
}

}  // namespace strideweave::conformance
