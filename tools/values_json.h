// The strideweave command: literal tensor values and option values as JSON
// text (`strideweave run`, docs/cli.md).
//
// A small JSON reader of its own (rather than nlohmann::json) keeps each
// number's literal text, so that an integer literal stays an integer, a
// Float32 is rounded once from the decimal text (no double rounding through
// a double), and an Int32 out of range is an OverflowError instead of a
// silently widened number; literals.h converts the text. Beyond JSON it
// accepts the bare tokens nan, inf and -inf; for float32 elements and option
// values the strings "nan", "inf" and "-inf" mean the same.
#pragma once

#include <strideweave/strideweave.h>

#include <string>
#include <utility>
#include <vector>

namespace strideweave::cli {

// One parsed JSON value.
struct JsonNode {
  enum class Kind { Null, Bool, Integer, Real, String, List };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;  // the literal text of an Integer or Real; the content of a String
  std::vector<JsonNode> items;
};

// Parses one JSON value (the whole of `text`, surrounding blanks allowed;
// numbers by the grammar of literals.h, lists nested at most 64 deep).
// Malformed text -> UsageError (cli.h) naming `what`.
JsonNode parse_json_value(const std::string& text, const std::string& what);

// The `--option NAME=JSON` values of a command line, in order, each value
// parsed (UsageError for malformed JSON or a NAME given twice).
std::vector<std::pair<std::string, JsonNode>> parse_option_args(const std::vector<std::string>& specs);

// A tensor of `dtype` (Float32, Int32 or Bool; any other dtype ValueError)
// on a fresh carrier of the shipped carrier named `carrier` (case-insensitive;
// cli.h find_carrier) from VALUES, a parsed
// JSON nested list whose nesting gives the shape (outer list = axis 0; a bare
// value is rank 0). Ragged lists -> ValueError; a value that is not of the
// dtype's kind -> ValueError; an Int32 or a finite Float32 out of range ->
// OverflowError. The carrier holds the values in logical order
// (first mode fastest) under the compact layout.
Tensor tensor_from_json(const DType& dtype, const JsonNode& values, const std::string& carrier);

// An option value from its parsed JSON: null, true/false, an integer literal
// (int64), a real (or "nan"/"inf"/"-inf"), a list of integer literals. A list
// with another element or a string -> TypeError; an integer outside int64 or
// a real beyond the largest double -> OverflowError.
OptionValue option_from_json(const std::string& name, const JsonNode& value);

// The shortest decimal text that reads back as the same float; integral
// values keep a ".0" ("2.0", "-0.0"), exponents stay ("1e-45"). Non-finite
// values are the JSON strings "nan", "inf", "-inf" (quotes included).
std::string float32_json(float value);

// {"dtype": ..., "shape": [...], "values": ...} as one JSON text; values
// nested with the outer list = axis 0, a bare value for rank 0.
std::string tensor_json(const Tensor& tensor);
// The values part alone, and a readable one-line form of a tensor.
std::string tensor_values_json(const Tensor& tensor);
std::string tensor_text(const Tensor& tensor);

}  // namespace strideweave::cli
