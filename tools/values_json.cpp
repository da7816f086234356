// Literal tensor values and option values as JSON text (values_json.h).
#include "values_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "cli.h"
#include "literals.h"

namespace strideweave::cli {
namespace {

constexpr std::size_t kMaxDepth = 64;

// Recursive descent over one JSON text.
class JsonReader {
 public:
  JsonReader(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  JsonNode document() {
    JsonNode node = value(0);
    skip_blanks();
    if (pos_ != s_.size()) fail("unexpected text after the value");
    return node;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError(fmt::format("{}: malformed JSON '{}' at offset {}: {}", what_, s_, pos_, why));
  }
  void skip_blanks() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool word(const char* w) {
    const std::string_view v(w);
    if (s_.compare(pos_, v.size(), v) != 0) return false;
    // A word must not run on into letters or digits ("nanx", "true1").
    const std::size_t end = pos_ + v.size();
    if (end < s_.size() && std::isalnum(static_cast<unsigned char>(s_[end]))) return false;
    pos_ = end;
    return true;
  }

  JsonNode value(std::size_t depth) {
    skip_blanks();
    if (pos_ >= s_.size()) fail("a value is missing");
    JsonNode node;
    const char c = s_[pos_];
    if (c == '[') {
      if (depth >= kMaxDepth) fail(fmt::format("lists nested deeper than {}", kMaxDepth));
      ++pos_;
      node.kind = JsonNode::Kind::List;
      skip_blanks();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return node;
      }
      for (;;) {
        node.items.push_back(value(depth + 1));
        skip_blanks();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == ']') {
          ++pos_;
          return node;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c == '"') return string();
    if (word("true")) {
      node.kind = JsonNode::Kind::Bool;
      node.boolean = true;
      return node;
    }
    if (word("false")) {
      node.kind = JsonNode::Kind::Bool;
      return node;
    }
    if (word("null")) return node;
    for (const char* special : {"nan", "inf", "-inf"}) {
      if (word(special)) {
        node.kind = JsonNode::Kind::Real;
        node.text = special;
        return node;
      }
    }
    return number();
  }

  JsonNode string() {
    ++pos_;  // the opening quote
    JsonNode node;
    node.kind = JsonNode::Kind::String;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        const char e = s_[pos_++];
        switch (e) {
          case '"': case '\\': case '/': c = e; break;
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          default: fail(fmt::format("unsupported escape '\\{}'", e));
        }
      }
      node.text += c;
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;  // the closing quote
    return node;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  JsonNode number() {
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      return pos_ - from;
    };
    JsonNode node;
    node.kind = JsonNode::Kind::Integer;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    const std::size_t int_start = pos_;
    const std::size_t n = digits();
    if (n == 0) fail("expected a value");
    if (n > 1 && s_[int_start] == '0') fail("a number must not have leading zeros");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) fail("expected digits after '.'");
      node.kind = JsonNode::Kind::Real;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("expected digits in the exponent");
      node.kind = JsonNode::Kind::Real;
    }
    if (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) fail("unexpected letter");
    node.text = s_.substr(start, pos_ - start);
    return node;
  }

  const std::string& s_;
  const std::string& what_;
  std::size_t pos_ = 0;
};

std::string describe(const JsonNode& node) {
  switch (node.kind) {
    case JsonNode::Kind::Null: return "null";
    case JsonNode::Kind::Bool: return node.boolean ? "true" : "false";
    case JsonNode::Kind::Integer:
    case JsonNode::Kind::Real: return node.text;
    case JsonNode::Kind::String: return fmt::format("\"{}\"", node.text);
    case JsonNode::Kind::List: return "a list";
  }
  return "?";
}

bool is_special_real(const JsonNode& node) {
  return (node.kind == JsonNode::Kind::Real || node.kind == JsonNode::Kind::String) &&
         (node.text == "nan" || node.text == "inf" || node.text == "-inf");
}

Value element(const JsonNode& node, ElementKind kind, const std::string& what) {
  switch (kind) {
    case ElementKind::Bool:
      if (node.kind != JsonNode::Kind::Bool)
        throw ValueError(fmt::format("{}: {} is not a bool (true or false)", what, describe(node)));
      return Value::from_bool(node.boolean);
    case ElementKind::Int32: {
      if (node.kind != JsonNode::Kind::Integer)
        throw ValueError(fmt::format("{}: {} is not an int32 (an integer literal)", what, describe(node)));
      std::int64_t v = 0;
      try {
        v = int64_of(node.text, what);
      } catch (const OverflowError&) {
        v = std::numeric_limits<std::int64_t>::max();  // reported below as out of the int32 range
      }
      if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
        throw OverflowError(fmt::format("{}: {} does not fit in int32", what, node.text));
      return Value::from_int32(static_cast<std::int32_t>(v));
    }
    case ElementKind::Float32: {
      if (!is_special_real(node) && node.kind != JsonNode::Kind::Integer && node.kind != JsonNode::Kind::Real)
        throw ValueError(fmt::format("{}: {} is not a float32 (a number, \"nan\", \"inf\" or \"-inf\")", what,
                                     describe(node)));
      // One rounding, straight from the decimal text (literals.h): underflow
      // gives a subnormal or a signed zero, beyond the largest finite float32
      // an OverflowError.
      return Value::from_float32(float32_of(node.text, what));
    }
    default: break;
  }
  throw ValueError(fmt::format("{}: not a stored element kind", what));
}

void ragged(const std::string& what) {
  throw ValueError(fmt::format("{}: ragged nested list (every list at one depth must have the same length, "
                               "and values may appear only at the innermost depth)",
                               what));
}

// Checks that `node` (at `axis`) matches `extents`; appends the leaves in
// nesting order (last axis fastest) with their coordinates.
void collect(const JsonNode& node, std::size_t axis, const std::vector<std::int64_t>& extents,
             std::vector<std::int64_t>& coordinate, std::vector<std::pair<std::vector<std::int64_t>, const JsonNode*>>& out,
             const std::string& what) {
  if (axis == extents.size()) {
    if (node.kind == JsonNode::Kind::List) ragged(what);
    out.emplace_back(coordinate, &node);
    return;
  }
  if (node.kind != JsonNode::Kind::List || static_cast<std::int64_t>(node.items.size()) != extents[axis])
    ragged(what);
  for (std::size_t k = 0; k < node.items.size(); ++k) {
    coordinate[axis] = static_cast<std::int64_t>(k);
    collect(node.items[k], axis + 1, extents, coordinate, out, what);
  }
}

std::string element_json(const Value& v) {
  switch (v.kind) {
    case ElementKind::Bool: return v.b ? "true" : "false";
    case ElementKind::Int32: return std::to_string(v.i);
    default: return float32_json(v.f);
  }
}

void values_json(const Tensor& t, std::size_t axis, std::vector<std::int64_t>& coordinate, std::string& out) {
  if (axis == t.rank()) {
    out += element_json(t.at(coordinate));
    return;
  }
  out += '[';
  for (std::int64_t k = 0; k < t.shape().extent(axis); ++k) {
    if (k) out += ',';
    coordinate[axis] = k;
    values_json(t, axis + 1, coordinate, out);
  }
  out += ']';
}

}  // namespace

JsonNode parse_json_value(const std::string& text, const std::string& what) {
  return JsonReader(text, what).document();
}

Tensor tensor_from_json(const DType& dtype, const JsonNode& root, const std::string& carrier) {
  const std::string what = fmt::format("tensor:{}", dtype.name());
  const std::optional<ElementKind> kind = stored_element_kind(dtype);
  if (!kind) throw ValueError(fmt::format("{}: a tensor's dtype must be float32, int32 or bool", what));

  // The extents follow the first item at each depth; collect() checks the rest.
  std::vector<std::int64_t> extents;
  for (const JsonNode* n = &root; n->kind == JsonNode::Kind::List;) {
    extents.push_back(static_cast<std::int64_t>(n->items.size()));
    if (n->items.empty()) break;
    n = &n->items.front();
  }
  std::vector<std::int64_t> coordinate(extents.size(), 0);
  std::vector<std::pair<std::vector<std::int64_t>, const JsonNode*>> leaves;
  collect(root, 0, extents, coordinate, leaves, what);

  // Element (i0, i1, ...) goes to its compact (first-mode-fastest) slot.
  const Shape shape = Shape::of(extents);
  const Layout layout = Layout::compact(shape);
  std::vector<Value> slots(leaves.size());
  for (const auto& [coord, node] : leaves)
    slots[static_cast<std::size_t>(layout(coord))] = element(*node, *kind, what);

  const ShippedCarrier* shipped = find_carrier(carrier);
  if (!shipped)
    throw ValueError(fmt::format("unknown carrier '{}' (known: {})", carrier, fmt::join(carrier_choices(), ", ")));
  return Tensor(shipped->make(slots, dtype), shape);
}

OptionValue option_from_json(const std::string& name, const JsonNode& node) {
  const std::string what = fmt::format("option '{}'", name);
  switch (node.kind) {
    case JsonNode::Kind::Null: return std::monostate{};
    case JsonNode::Kind::Bool: return node.boolean;
    case JsonNode::Kind::Integer:
      return int64_of(node.text, what);
    case JsonNode::Kind::Real:
      return double_of(node.text, what);
    case JsonNode::Kind::String:
      if (is_special_real(node)) return double_of(node.text, what);
      throw TypeError(fmt::format("{}: a string is not an option value (null, bool, integer, real or a list of "
                                  "integers)",
                                  what));
    case JsonNode::Kind::List: {
      std::vector<std::int64_t> list;
      for (const JsonNode& item : node.items) {
        if (item.kind != JsonNode::Kind::Integer)
          throw TypeError(fmt::format("{}: a list must contain only integers, not {}", what, describe(item)));
        list.push_back(int64_of(item.text, what));
      }
      return list;
    }
  }
  throw TypeError(fmt::format("{}: not an option value", what));
}

std::string float32_json(float value) {
  if (std::isnan(value)) return "\"nan\"";
  if (std::isinf(value)) return value > 0 ? "\"inf\"" : "\"-inf\"";
  std::string s = fmt::format("{}", value);  // shortest text that reads back as `value`
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string tensor_values_json(const Tensor& tensor) {
  std::string out;
  std::vector<std::int64_t> coordinate(tensor.rank(), 0);
  values_json(tensor, 0, coordinate, out);
  return out;
}

std::string tensor_json(const Tensor& tensor) {
  return fmt::format("{{\"dtype\":\"{}\",\"shape\":[{}],\"values\":{}}}", tensor.dtype().name(),
                     fmt::join(tensor.shape().extents(), ","), tensor_values_json(tensor));
}

std::string tensor_text(const Tensor& tensor) {
  // The library's value text, never abbreviated (the command line prints
  // every value it computed).
  const std::string values = format_values(tensor, -1);
  return fmt::format("{} {} ({}) {}", tensor.carrier()->class_name(), tensor.dtype().name(),
                     fmt::join(tensor.shape().extents(), ","), values);
}

std::vector<std::pair<std::string, JsonNode>> parse_option_args(const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, JsonNode>> out;
  for (const std::string& spec : specs) {
    const std::size_t eq = spec.find('=');  // the flag's validator saw one at a position > 0
    const std::string name = spec.substr(0, eq);
    for (const auto& [seen, _] : out)
      if (seen == name) throw UsageError(fmt::format("--option {} given twice", name));
    out.emplace_back(name, parse_json_value(spec.substr(eq + 1), fmt::format("--option {}", name)));
  }
  return out;
}

}  // namespace strideweave::cli
