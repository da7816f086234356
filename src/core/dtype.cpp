// Dtype descriptors and their registry. See include/strideweave/dtype.h.
#include <strideweave/dtype.h>
#include <strideweave/errors.h>
#include <strideweave/value.h>

#include <fmt/format.h>

#include <cmath>

#include <mutex>
#include <unordered_map>

namespace strideweave {
namespace {

// The registry owns every descriptor forever (descriptors are identities; a
// reference handed out must never dangle).
struct Registry {
  std::mutex mutex;
  std::vector<const DType*> ordered;
  std::unordered_map<std::string, const DType*> by_name;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: identities outlive statics
  return *r;
}

}  // namespace

const char* element_kind_name(ElementKind kind) noexcept {
  switch (kind) {
    case ElementKind::Bool: return "bool";
    case ElementKind::Int32: return "int32";
    case ElementKind::Float32: return "float32";
    case ElementKind::Float64: return "float64";
  }
  return "?";
}

DType::DType(std::string name, const DType* supertype) : name_(std::move(name)), supertype_(supertype) {}

void DType::register_descriptor(const DType* self) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (self->name_.empty()) throw ValueError("dtype registration: a dtype name must be non-empty");
  if (r.by_name.count(self->name_))
    throw ValueError(fmt::format("dtype registration: the name '{}' is already registered", self->name_));
  r.by_name.emplace(self->name_, self);
  r.ordered.push_back(self);
}

std::vector<const DType*> DType::supertypes() const {
  std::vector<const DType*> out;
  for (const DType* t = supertype_; t; t = t->supertype_) out.push_back(t);
  return out;
}

bool DType::is_subtype_of(const DType& other) const noexcept {
  for (const DType* t = this; t; t = t->supertype_)
    if (t == &other) return true;
  return false;
}

const DType& DType::from_name(std::string_view name) {
  DType::Any();  // make sure the built-ins are registered
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_name.find(std::string(name));
  if (it == r.by_name.end()) throw LookupError(fmt::format("DType.from_name: no dtype named '{}'", name));
  return *it->second;
}

std::vector<const DType*> DType::registered() {
  DType::Any();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.ordered;
}

// Built-ins are created in central-list order on first use of any of them so
// that registration order is deterministic whatever is touched first.
struct detail::DTypeBuiltins {
#define SW_DTYPE_CATEGORY(ident, name, super) const DTypeCategory* ident = nullptr;
#define SW_DTYPE_SIMPLE(ident, name, bits, super, kind) const SimpleDType* ident = nullptr;
#include <strideweave/dtypes.def>

  static const DTypeBuiltins& get() {
    static const DTypeBuiltins* b = make();
    return *b;
  }

  static const DTypeBuiltins* make() {
    auto* out = new DTypeBuiltins();
#define SW_SUPER_NONE nullptr
#define SW_SUPER_Any out->Any
#define SW_KIND_NONE std::nullopt
#define SW_KIND_Bool ElementKind::Bool
#define SW_KIND_Int32 ElementKind::Int32
#define SW_KIND_Float32 ElementKind::Float32
#define SW_KIND_Float64 ElementKind::Float64
#define SW_DTYPE_CATEGORY(ident, name, super)                         \
  {                                                                   \
    auto* d = new DTypeCategory(name, SW_SUPER_##super);              \
    DType::register_descriptor(d);                                    \
    out->ident = d;                                                   \
  }
#define SW_DTYPE_SIMPLE(ident, name, bits, super, kind)               \
  {                                                                   \
    auto* d = new SimpleDType(name, bits, out->super, SW_KIND_##kind); \
    DType::register_descriptor(d);                                    \
    out->ident = d;                                                   \
  }
#include <strideweave/dtypes.def>
#undef SW_SUPER_NONE
#undef SW_SUPER_Any
#undef SW_KIND_NONE
#undef SW_KIND_Bool
#undef SW_KIND_Int32
#undef SW_KIND_Float32
#undef SW_KIND_Float64
    return out;
  }
};

#define SW_DTYPE_CATEGORY(ident, name, super) \
  const DTypeCategory& DType::ident() { return *detail::DTypeBuiltins::get().ident; }
#define SW_DTYPE_SIMPLE(ident, name, bits, super, kind) \
  const SimpleDType& DType::ident() { return *detail::DTypeBuiltins::get().ident; }
#include <strideweave/dtypes.def>

const DTypeCategory& DTypeCategory::create(std::string name, const DType* supertype) {
  DType::Any();
  if (supertype && !supertype->is_category())
    throw ValueError(fmt::format("DTypeCategory '{}': the supertype '{}' is not a category", name,
                                 supertype->name()));
  auto* d = new DTypeCategory(std::move(name), supertype);
  try {
    register_descriptor(d);
  } catch (...) {
    delete d;
    throw;
  }
  return *d;
}

SimpleDType::SimpleDType(std::string name, int bits, const DType* supertype, std::optional<ElementKind> kind)
    : DType(std::move(name), supertype), bits_(bits), kind_(kind) {}

const SimpleDType& SimpleDType::create(std::string name, int bits, const DType& supertype) {
  DType::Any();
  if (bits <= 0) throw ValueError(fmt::format("SimpleDType '{}': bits must be positive, got {}", name, bits));
  if (!supertype.is_category())
    throw ValueError(fmt::format("SimpleDType '{}': the supertype '{}' is not a category", name, supertype.name()));
  auto* d = new SimpleDType(std::move(name), bits, &supertype, std::nullopt);
  try {
    register_descriptor(d);
  } catch (...) {
    delete d;
    throw;
  }
  return *d;
}

CompoundDType::CompoundDType(std::string name, const DType* supertype, std::vector<const SimpleDType*> planes,
                             std::vector<std::string> rules)
    : DType(std::move(name), supertype), planes_(std::move(planes)), rules_(std::move(rules)) {}

const PlanarCompoundDType& PlanarCompoundDType::create(std::string name, std::vector<const SimpleDType*> planes,
                                                       std::vector<std::string> rules, const DType* supertype) {
  DType::Any();
  if (planes.empty()) throw ValueError(fmt::format("CompoundDType '{}': simple_types must be non-empty", name));
  for (const SimpleDType* p : planes)
    if (!p) throw TypeError(fmt::format("CompoundDType '{}': a plane is not a SimpleDType", name));
  if (supertype && !supertype->is_category())
    throw ValueError(fmt::format("CompoundDType '{}': the supertype '{}' is not a category", name,
                                 supertype->name()));
  auto* d = new PlanarCompoundDType(std::move(name), supertype, std::move(planes), std::move(rules));
  try {
    register_descriptor(d);
  } catch (...) {
    delete d;
    throw;
  }
  return *d;
}

std::optional<ElementKind> stored_element_kind(const DType& dtype) noexcept {
  // Only the built-ins of dtypes.def carry an element kind (a created
  // SimpleDType has none); Float64 is an accumulator, never stored. Read
  // from the descriptor: comparing against DType::Float32() and the others
  // was three out-of-line calls on every allocation.
  if (!dtype.is_simple()) return std::nullopt;
  const std::optional<ElementKind> kind = static_cast<const SimpleDType&>(dtype).element_kind();
  if (!kind || *kind == ElementKind::Float64) return std::nullopt;
  return kind;
}

const SimpleDType& dtype_of(ElementKind kind) noexcept {
  switch (kind) {
    case ElementKind::Bool: return DType::Bool();
    case ElementKind::Int32: return DType::Int32();
    case ElementKind::Float64: return DType::Float64();
    case ElementKind::Float32: break;
  }
  return DType::Float32();
}

std::optional<Value> storage_zero(const DType& dtype) {
  auto kind = stored_element_kind(dtype);
  if (!kind) return std::nullopt;
  switch (*kind) {
    case ElementKind::Bool: return Value::from_bool(false);
    case ElementKind::Int32: return Value::from_int32(0);
    default: return Value::from_float32(0.0f);
  }
}

std::ostream& operator<<(std::ostream& os, const Value& value) {
  return os << element_kind_name(value.kind) << "(" << value.to_string() << ")";
}

std::string Value::to_string() const {
  switch (kind) {
    case ElementKind::Bool: return b ? "true" : "false";
    case ElementKind::Int32: return std::to_string(i);
    default: {
      // The shortest text that reads back as the same binary32 value, always
      // with a '.' or an exponent so it reads as a float ("2.0", "1e-45").
      if (std::isnan(f)) return "nan";
      if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
      std::string s = fmt::format("{}", f);
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
  }
}

}  // namespace strideweave
