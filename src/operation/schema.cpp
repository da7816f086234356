// Operation schemas and option values. See include/strideweave/operation.h.
#include <strideweave/operation.h>

#include <fmt/format.h>

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "operation/registry.h"

namespace strideweave::operation {

// Python's str.isidentifier(): a non-empty string whose first code point is
// "_" or has the Unicode property XID_Start and whose others have
// XID_Continue (so "größe" and "变量" are identifiers, "a-b" and "1x" are
// not). The properties come from ICU's character database (the Unicode
// version of the installed ICU, which may differ from the running Python's
// by a Unicode release for characters added in between). Invalid UTF-8 is
// not an identifier.
bool is_identifier(std::string_view text) noexcept {
  if (text.empty() || text.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) return false;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
  const auto length = static_cast<std::int32_t>(text.size());
  for (std::int32_t i = 0; i < length;) {
    const bool first = i == 0;
    UChar32 c = 0;
    U8_NEXT(bytes, i, length, c);
    if (c < 0) return false;
    const bool ok = first ? c == U'_' || u_hasBinaryProperty(c, UCHAR_XID_START)
                          : static_cast<bool>(u_hasBinaryProperty(c, UCHAR_XID_CONTINUE));
    if (!ok) return false;
  }
  return true;
}

std::string to_string(const OptionValue& value) {
  struct Visitor {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      // A real always reads as one ("1.0", not "1").
      std::string text = fmt::format("{}", d);
      if (std::isfinite(d) && text.find_first_of(".eE") == std::string::npos) text += ".0";
      return text;
    }
    std::string operator()(const std::vector<std::int64_t>& v) const { return fmt::format("[{}]", fmt::join(v, ", ")); }
    std::string operator()(const std::string& s) const { return fmt::format("'{}'", s); }
    std::string operator()(const DType* d) const { return d ? d->name() : "None"; }
    std::string operator()(const OpaqueValue& o) const { return fmt::format("<{}>", o.type_name); }
  };
  return std::visit(Visitor{}, value);
}

std::string_view value_of(OperandKind kind) noexcept {
  switch (kind) {
    case OperandKind::TENSOR: return "tensor";
    case OperandKind::WEAK_SCALAR: return "weak_scalar";
    case OperandKind::STRUCTURAL: return "structural";
  }
  return "tensor";
}

OperandKind operand_kind(std::string_view value) {
  for (OperandKind k : {OperandKind::TENSOR, OperandKind::WEAK_SCALAR, OperandKind::STRUCTURAL})
    if (value_of(k) == value) return k;
  throw ValueError(fmt::format("OperandKind: '{}' is not one of 'tensor', 'weak_scalar', 'structural'", value));
}

OperandSpec::OperandSpec(std::string name, OperandKind kind, bool differentiable)
    : name_(std::move(name)), kind_(kind), differentiable_(differentiable) {
  if (!is_identifier(name_))
    throw ValueError(fmt::format("OperandSpec: name '{}' is not a non-empty identifier", name_));
  if (differentiable_ && kind_ != OperandKind::TENSOR)
    throw ValueError(fmt::format("OperandSpec: operand '{}' of kind {} cannot be differentiable (only tensor operands "
                                 "are)",
                                 name_, value_of(kind_)));
}

OperandSpec OperandSpec::tensor_or_weak_scalar(std::string name, bool differentiable) {
  OperandSpec spec(std::move(name), OperandKind::TENSOR, differentiable);
  spec.accepts_weak_scalar_ = true;
  return spec;
}

std::size_t OperandSpec::hash() const noexcept {
  return std::hash<std::string>{}(name_) ^ (static_cast<std::size_t>(kind_) << 1) ^ (differentiable_ ? 8u : 0u);
}

namespace {
constexpr OptionKind all_option_kinds[] = {OptionKind::ANY,      OptionKind::BOOL, OptionKind::INTEGER, OptionKind::REAL,
                                           OptionKind::INTEGERS, OptionKind::TEXT, OptionKind::DTYPE};

bool is_none(const OptionValue& v) noexcept {
  if (std::holds_alternative<std::monostate>(v)) return true;
  const DType* const* d = std::get_if<const DType*>(&v);
  return d && !*d;
}
}  // namespace

std::string_view value_of(OptionKind kind) noexcept {
  switch (kind) {
    case OptionKind::ANY: return "any";
    case OptionKind::BOOL: return "bool";
    case OptionKind::INTEGER: return "int";
    case OptionKind::REAL: return "real";
    case OptionKind::INTEGERS: return "ints";
    case OptionKind::TEXT: return "str";
    case OptionKind::DTYPE: return "dtype";
  }
  return "any";
}

OptionKind option_kind(std::string_view value) {
  for (OptionKind k : all_option_kinds)
    if (value_of(k) == value) return k;
  throw ValueError(
      fmt::format("OptionKind: '{}' is not one of 'any', 'bool', 'int', 'real', 'ints', 'str', 'dtype'", value));
}

OptionSpec::OptionSpec(std::string name, Default default_value, std::string doc, OptionKind kind)
    : name_(std::move(name)), default_(std::move(default_value)), doc_(std::move(doc)), kind_(kind) {
  if (!is_identifier(name_)) throw ValueError(fmt::format("OptionSpec: name '{}' is not a non-empty identifier", name_));
  if (const OptionValue* d = std::get_if<OptionValue>(&default_); d && !is_none(*d))
    default_ = admit("OptionSpec", std::move(*d));
}

std::string OptionSpec::accepted() const {
  std::string what;
  switch (kind_) {
    case OptionKind::ANY: return "any value";
    case OptionKind::BOOL: what = "a bool"; break;
    case OptionKind::INTEGER: what = "an integer"; break;
    case OptionKind::REAL: what = "a real number"; break;
    case OptionKind::INTEGERS: what = "a list of integers"; break;
    case OptionKind::TEXT: what = "a string"; break;
    case OptionKind::DTYPE: what = "a DType"; break;
  }
  const OptionValue* d = std::get_if<OptionValue>(&default_);
  if (d && is_none(*d)) what += " or None";
  return what;
}

OptionValue OptionSpec::admit(std::string_view operation, OptionValue value) const {
  if (kind_ == OptionKind::ANY) return value;
  if (is_none(value)) {
    const OptionValue* d = std::get_if<OptionValue>(&default_);
    if (d && is_none(*d)) return value;
  } else {
    switch (kind_) {
      case OptionKind::ANY: return value;
      case OptionKind::BOOL:
        if (std::holds_alternative<bool>(value)) return value;
        break;
      case OptionKind::INTEGER:
        if (std::holds_alternative<std::int64_t>(value)) return value;
        break;
      case OptionKind::REAL:
        if (std::holds_alternative<double>(value)) return value;
        if (const std::int64_t* i = std::get_if<std::int64_t>(&value)) {
          // Exact only: 2**53 + 1 has no double, and a silent rounding of an
          // option is the kind of promotion the policy rules out.
          const double d = static_cast<double>(*i);
          if (d < 0x1p63 && static_cast<std::int64_t>(d) == *i) return d;
          throw TypeError(fmt::format("{}: option '{}' must be {}, got {} (no double holds it exactly)", operation,
                                      name_, accepted(), *i));
        }
        break;
      case OptionKind::INTEGERS:
        if (std::holds_alternative<std::vector<std::int64_t>>(value)) return value;
        if (const std::int64_t* i = std::get_if<std::int64_t>(&value)) return std::vector<std::int64_t>{*i};
        break;
      case OptionKind::TEXT:
        if (std::holds_alternative<std::string>(value)) return value;
        break;
      case OptionKind::DTYPE:
        if (std::holds_alternative<const DType*>(value)) return value;
        break;
    }
  }
  throw TypeError(fmt::format("{}: option '{}' must be {}, got {}", operation, name_, accepted(), to_string(value)));
}

OperationSchema::OperationSchema(std::vector<OperandSpec> operands, std::vector<OptionSpec> options)
    : operands_(std::move(operands)), options_(std::move(options)) {
  if (operands_.empty()) throw ValueError("OperationSchema: operands must not be empty");
  std::set<std::string_view> names;
  for (const OperandSpec& o : operands_)
    if (!names.insert(o.name()).second)
      throw ValueError(fmt::format("OperationSchema: duplicate operand name '{}'", o.name()));
  for (const OptionSpec& o : options_)
    if (!names.insert(o.name()).second)
      throw ValueError(fmt::format("OperationSchema: option name '{}' repeats an operand or option name", o.name()));
}

const OptionSpec* OperationSchema::option(std::string_view name) const noexcept {
  for (const OptionSpec& o : options_)
    if (o.name() == name) return &o;
  return nullptr;
}

std::string OperationSchema::signature(std::string_view operation) const {
  std::vector<std::string> parts;
  for (const OperandSpec& o : operands_)
    parts.push_back(fmt::format("{}: {}{}", o.name(), value_of(o.kind()),
                                o.kind() == OperandKind::TENSOR && o.accepts_weak_scalar() ? " | weak_scalar" : ""));
  for (const OptionSpec& o : options_)
    parts.push_back(fmt::format("{}{}={}", o.name(), o.kind() == OptionKind::ANY ? "" : fmt::format(": {}", value_of(o.kind())),
                                o.required() ? std::string("REQUIRED") : to_string(std::get<OptionValue>(o.default_value()))));
  return fmt::format("{}({})", operation, fmt::join(parts, ", "));
}

}  // namespace strideweave::operation
