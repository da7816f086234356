// strideweave/dtype.h — dtype descriptors (core-concepts.md section 5).
//
// A dtype is an identity object: one registered descriptor per name, never
// copied, compared by address. Code holds `const DType&` (or a
// `const SimpleDType*` where the specification allows None). Two descriptors
// that merely look alike never select each other's plans.
//
// Built-ins come from the central list in <strideweave/dtypes.def> and are
// reached as DType::Float32(), DType::Any(), ... (functions rather than
// static data members so that they are usable during static initialisation).
// Only Float32, Int32 and Bool are stored or computed; Float64 is an
// accumulator only; the narrow encodings are registered but unimplemented.
//
// Registration rules (core-concepts.md 5.1): constructing a descriptor
// registers its unique non-empty name atomically and forever; a duplicate or
// empty name is a ValueError and registers nothing. Registration is
// thread-safe. Descriptors are immutable.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

class DTypeCategory;
class SimpleDType;
class CompoundDType;
namespace detail {
struct DTypeBuiltins;  // creates the built-ins of dtypes.def (src/core/dtype.cpp)
}

// The element representations kernels compute in. Derived from dtypes.def.
enum class ElementKind : std::uint8_t { Bool, Int32, Float32, Float64 };
const char* element_kind_name(ElementKind kind) noexcept;

class DType {
 public:
  DType(const DType&) = delete;
  DType& operator=(const DType&) = delete;
  virtual ~DType() = default;

  const std::string& name() const noexcept { return name_; }
  virtual bool is_category() const noexcept { return false; }
  virtual bool is_simple() const noexcept { return false; }
  virtual bool is_compound() const noexcept { return false; }
  // The direct supertype, or nullptr for a root.
  const DType* supertype() const noexcept { return supertype_; }
  // Every ancestor, nearest first (excluding this descriptor).
  std::vector<const DType*> supertypes() const;
  // Reflexive: a descriptor is a subtype of itself.
  bool is_subtype_of(const DType& other) const noexcept;
  // Bit width for simple dtypes; std::nullopt otherwise.
  virtual std::optional<int> bits() const noexcept { return std::nullopt; }

  // Identity equality: two references are equal iff they name one descriptor.
  friend bool operator==(const DType& a, const DType& b) noexcept { return &a == &b; }

  // Name lookup. Unknown name -> LookupError.
  static const DType& from_name(std::string_view name);
  // Every registered descriptor in registration order (built-ins first).
  static std::vector<const DType*> registered();

#define SW_DTYPE_CATEGORY(ident, name, super) static const DTypeCategory& ident();
#define SW_DTYPE_SIMPLE(ident, name, bits, super, kind) static const SimpleDType& ident();
#include <strideweave/dtypes.def>


 protected:
  DType(std::string name, const DType* supertype);
  // Publishes `self` in the registry; ValueError on an empty or taken name.
  static void register_descriptor(const DType* self);

 private:
  std::string name_;
  const DType* supertype_;
  friend struct detail::DTypeBuiltins;
};

// A relationship-only category (Any, Floating, Integer, extensions). Never a
// storage or operation dtype.
class DTypeCategory final : public DType {
 public:
  // Registers a new category. supertype must be a category or nullptr.
  static const DTypeCategory& create(std::string name, const DType* supertype = nullptr);
  bool is_category() const noexcept override { return true; }

 private:
  using DType::DType;
  friend struct detail::DTypeBuiltins;
};

// A simple (homogeneous, scalar) dtype.
class SimpleDType final : public DType {
 public:
  // Registers a new simple dtype: bits > 0, supertype a category (ValueError
  // otherwise). Extensions are registered but never implemented.
  static const SimpleDType& create(std::string name, int bits, const DType& supertype);
  bool is_simple() const noexcept override { return true; }
  std::optional<int> bits() const noexcept override { return bits_; }
  // The element representation, or nullopt for a registered-but-unimplemented
  // dtype.
  std::optional<ElementKind> element_kind() const noexcept { return kind_; }

 private:
  SimpleDType(std::string name, int bits, const DType* supertype, std::optional<ElementKind> kind);
  int bits_;
  std::optional<ElementKind> kind_;
  friend struct detail::DTypeBuiltins;
};

// A compound dtype: ordered simple planes plus declarative representation
// rules. Never a homogeneous storage dtype; planning on it raises
// NotImplementedError. Concrete compound kinds derive from this class.
class CompoundDType : public DType {
 public:
  bool is_compound() const noexcept override { return true; }
  std::span<const SimpleDType* const> simple_types() const noexcept { return planes_; }
  std::size_t num_carriers() const noexcept { return planes_.size(); }
  std::span<const std::string> representation_rules() const noexcept { return rules_; }

 protected:
  // planes must be non-empty simple dtypes (ValueError). The subclass calls
  // register_descriptor(this) as the last step of its factory.
  CompoundDType(std::string name, const DType* supertype, std::vector<const SimpleDType*> planes,
                std::vector<std::string> rules);

 private:
  std::vector<const SimpleDType*> planes_;
  std::vector<std::string> rules_;
};

// A plain concrete compound kind for applications and tests.
class PlanarCompoundDType final : public CompoundDType {
 public:
  static const PlanarCompoundDType& create(std::string name, std::vector<const SimpleDType*> planes,
                                           std::vector<std::string> rules = {},
                                           const DType* supertype = nullptr);

 private:
  using CompoundDType::CompoundDType;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
