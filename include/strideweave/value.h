// strideweave/value.h — one element value of a stored dtype.
//
// A Value is what Carrier::get_value returns and set_value takes: a Bool,
// Int32 or Float32 element (Float64 exists only as an accumulator and is never
// a Value). It is a plain value type; comparison with operator== is bitwise
// for floats (so NaN == NaN and -0.0 != +0.0), which is what storage tests
// need.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <string>

#include <strideweave/dtype.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

struct Value {
  ElementKind kind = ElementKind::Float32;
  union {
    bool b;
    std::int32_t i;
    float f;
  };

  Value() : f(0.0f) {}
  static Value from_bool(bool v) { Value x; x.kind = ElementKind::Bool; x.i = 0; x.b = v; return x; }
  static Value from_int32(std::int32_t v) { Value x; x.kind = ElementKind::Int32; x.i = v; return x; }
  static Value from_float32(float v) { Value x; x.kind = ElementKind::Float32; x.f = v; return x; }

  // The typed payload; the caller checks `kind` (TypeError helpers live in
  // the carrier layer).
  template <class T>
  T as() const;

  friend bool operator==(const Value& a, const Value& b) noexcept {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
      case ElementKind::Bool: return a.b == b.b;
      case ElementKind::Int32: return a.i == b.i;
      default: return std::memcmp(&a.f, &b.f, sizeof(float)) == 0;
    }
  }
  std::string to_string() const;
};

template <> inline bool Value::as<bool>() const { return b; }
template <> inline std::int32_t Value::as<std::int32_t>() const { return i; }
template <> inline float Value::as<float>() const { return f; }

// Prints "float32(0.5)", "int32(3)", "bool(true)" (also what GoogleTest
// shows for a Value).
std::ostream& operator<<(std::ostream& os, const Value& value);

// The zero an initialised storage of `dtype` holds (0.0, 0, false), or
// nullopt for a dtype that is never stored (core-concepts.md 1.3).
std::optional<Value> storage_zero(const DType& dtype);

// The ElementKind a stored dtype uses, or nullopt when `dtype` is not one of
// Float32, Int32, Bool.
std::optional<ElementKind> stored_element_kind(const DType& dtype) noexcept;
// The built-in descriptor of a stored element kind.
const SimpleDType& dtype_of(ElementKind kind) noexcept;

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
