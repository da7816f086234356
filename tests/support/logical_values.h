// Test support: a tensor's elements in logical order (first mode fastest) as
// plain C++ values, for EXPECT_EQ against a literal vector.
#pragma once

#include <strideweave/tensor.h>
#include <strideweave/value.h>

#include <cstdint>
#include <vector>

namespace strideweave::testing {

inline std::vector<float> floats(const Tensor& t) {
  std::vector<float> out;
  for (std::int64_t i = 0; i < t.size(); ++i) out.push_back(t.at_ordinal(i).f);
  return out;
}
inline std::vector<std::int32_t> ints(const Tensor& t) {
  std::vector<std::int32_t> out;
  for (std::int64_t i = 0; i < t.size(); ++i) out.push_back(t.at_ordinal(i).i);
  return out;
}
inline std::vector<bool> bools(const Tensor& t) {
  std::vector<bool> out;
  for (std::int64_t i = 0; i < t.size(); ++i) out.push_back(t.at_ordinal(i).b);
  return out;
}

// The other way: Float32 Values of plain floats (a carrier's contents).
inline std::vector<Value> float_values(const std::vector<float>& v) {
  std::vector<Value> out;
  out.reserve(v.size());
  for (float x : v) out.push_back(Value::from_float32(x));
  return out;
}

}  // namespace strideweave::testing
