// Internal: the reference element semantics of the central plans, written
// as plainly as possible on Values. This is the executable meaning of
// Arithmetic and Accumulation (operation-dtype-policy.md R2) that every
// other carrier is compared against.
#pragma once

#include "carriers/int32_overflow.h"

#include <strideweave/errors.h>
#include <strideweave/int128.h>
#include <strideweave/policy.h>
#include <strideweave/value.h>

#include <fmt/format.h>

#include <string_view>

namespace strideweave::carriers::generic {

// An operand's materialisation to its plan's convert_to dtype.
inline Value convert(const Value& v, const SimpleDType& to) {
  if (&to == &DType::Float32()) {
    switch (v.kind) {
      case ElementKind::Float32: return v;
      case ElementKind::Int32: return Value::from_float32(static_cast<float>(v.i));  // round to nearest even
      case ElementKind::Bool: return Value::from_float32(v.b ? 1.0f : 0.0f);
      default: break;
    }
  }
  if (&to == &DType::Int32() && v.kind == ElementKind::Int32) return v;
  if (&to == &DType::Bool() && v.kind == ElementKind::Bool) return v;
  throw RuntimeError(fmt::format("Generic: no conversion of a {} value to {}", element_kind_name(v.kind), to.name()));
}

// The checked narrowing of the exact value of result element `element`
// (its logical ordinal) to Int32: the shipped carriers' one OverflowError.
inline std::int32_t narrow_int32(int128 exact, std::string_view operation, std::int64_t element) {
  if (exact < INT32_MIN_VALUE || exact > INT32_MAX_VALUE) raise_int32_overflow(operation, element);
  return static_cast<std::int32_t>(exact);
}

}  // namespace strideweave::carriers::generic
