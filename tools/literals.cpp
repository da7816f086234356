// The literal grammar of the strideweave command (literals.h).
#include "literals.h"

#include <fmt/format.h>

#include <charconv>
#include <system_error>

#include "cli.h"

namespace strideweave::cli {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// std::from_chars reports overflow and underflow alike (result_out_of_range,
// no value). For a nonzero number of the grammar, the value is at least 1 in
// magnitude exactly when the decimal exponent of its first nonzero digit,
// plus the exponent part, is >= 0: that tells the two apart.
bool magnitude_at_least_one(const std::string& text) {
  std::size_t i = text[0] == '-' ? 1 : 0;
  const std::size_t integer_begin = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  std::int64_t leading;  // decimal exponent of the first nonzero digit
  if (!(i - integer_begin == 1 && text[integer_begin] == '0')) {
    leading = static_cast<std::int64_t>(i - integer_begin) - 1;
  } else {
    // 0.000ddd: the first nonzero fraction digit (there is one: the value is nonzero).
    std::size_t j = i + 1;
    while (j < text.size() && text[j] == '0') ++j;
    leading = -static_cast<std::int64_t>(j - i);
  }
  const std::size_t e = text.find_first_of("eE");
  if (e == std::string::npos) return leading >= 0;
  const char* first = text.data() + e + 1;
  if (*first == '+') ++first;
  std::int64_t exponent = 0;
  const auto [end, ec] = std::from_chars(first, text.data() + text.size(), exponent);
  if (ec == std::errc::result_out_of_range) return *first != '-';
  return exponent >= -leading;
}

template <class Real>
Real real_of(const std::string& text, const std::string& what, const char* type) {
  Real value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size()) return value;
  if (ec != std::errc::result_out_of_range || end != text.data() + text.size())
    throw ValueError(fmt::format("{}: '{}' is not a number", what, text));  // the grammar admitted it: a bug
  if (magnitude_at_least_one(text))
    throw OverflowError(fmt::format("{}: {} is beyond the largest finite {}", what, text, type));
  return text[0] == '-' ? -Real(0) : Real(0);
}

[[noreturn]] void not_a_scalar(const std::string& text) {
  throw UsageError(fmt::format(
      "'scalar:{}' is not a scalar literal (a JSON number, true, false, nan, inf or -inf, without blanks)", text));
}

}  // namespace

std::int64_t int64_of(const std::string& text, const std::string& what) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range)
    throw OverflowError(fmt::format("{}: {} does not fit in int64", what, text));
  if (ec != std::errc() || end != text.data() + text.size())
    throw ValueError(fmt::format("{}: '{}' is not an integer", what, text));  // the grammar admitted it: a bug
  return value;
}

double double_of(const std::string& text, const std::string& what) { return real_of<double>(text, what, "double"); }
float float32_of(const std::string& text, const std::string& what) { return real_of<float>(text, what, "float32"); }

JsonNode read_scalar_literal(const std::string& text) {
  // JSON allows blanks around a value; a scalar literal has none.
  if (text.empty() || text.find_first_of(" \t\n\r\f\v") != std::string::npos) not_a_scalar(text);
  JsonNode node;
  try {
    node = parse_json_value(text, "scalar");
  } catch (const UsageError&) {
    not_a_scalar(text);
  }
  if (node.kind != JsonNode::Kind::Integer && node.kind != JsonNode::Kind::Real && node.kind != JsonNode::Kind::Bool)
    not_a_scalar(text);
  return node;
}

WeakScalar weak_scalar_of(const JsonNode& literal, const std::string& what) {
  switch (literal.kind) {
    case JsonNode::Kind::Bool:
      return WeakScalar(literal.boolean);
    case JsonNode::Kind::Integer:
      return WeakScalar(int64_of(literal.text, what));
    case JsonNode::Kind::Real:
      return WeakScalar(double_of(literal.text, what));
    default:
      break;
  }
  throw ValueError(fmt::format("{}: not a scalar literal", what));  // read_scalar_literal admitted it: a bug
}

OperandLiteral read_operand_literal(const std::string& arg, TensorOperands tensors) {
  OperandLiteral out;
  out.text = arg;
  auto starts_with = [&](const char* prefix) { return arg.rfind(prefix, 0) == 0; };
  if (starts_with("scalar:")) {
    out.form = OperandLiteral::Form::Scalar;
    out.value = read_scalar_literal(arg.substr(7));
    return out;
  }
  if (tensors == TensorOperands::DTypeNames && starts_with("dtype:")) {
    out.form = OperandLiteral::Form::DType;
    out.dtype = arg.substr(6);
    if (out.dtype.empty()) throw UsageError(fmt::format("'{}' names no dtype (dtype:NAME)", arg));
    return out;
  }
  if (tensors == TensorOperands::Values && starts_with("tensor:")) {
    out.form = OperandLiteral::Form::Tensor;
    const std::size_t colon = arg.find(':', 7);
    if (colon == std::string::npos || colon == 7) throw UsageError(fmt::format("'{}' is not tensor:DTYPE:VALUES", arg));
    out.dtype = arg.substr(7, colon - 7);
    out.value = parse_json_value(arg.substr(colon + 1), fmt::format("tensor:{}", out.dtype));
    return out;
  }
  throw UsageError(fmt::format("argument '{}' is neither {} nor scalar:LITERAL", arg,
                               tensors == TensorOperands::DTypeNames ? "dtype:NAME" : "tensor:DTYPE:VALUES"));
}

}  // namespace strideweave::cli
