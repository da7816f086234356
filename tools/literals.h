// The strideweave command's literals (docs/cli.md, "Literals"): one grammar
// for every number the command line carries -- scalar:LITERAL, the elements
// of tensor:DTYPE:VALUES and the values of --option NAME=JSON -- and the
// operand arguments of `resolve` and `run`.
//
// A number is a JSON number, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?:
// an integer when it has neither a fraction nor an exponent (so `1e3` is a
// real), otherwise a real. Beyond JSON the words nan, inf and -inf are reals.
// There is no '+' sign, no leading zero (`010`, `0x10` are refused, never read
// as octal or hexadecimal), no blank inside or around a number.
//
// Two kinds of failure, told apart by the exit code:
//   - text the grammar cannot read is a UsageError (cli.h: exit 2, before
//     anything runs);
//   - a well-formed literal whose value does not fit where it goes is the
//     library's OverflowError (exit 1), as for every other out-of-range
//     value: integers are int64 (scalars, options) or int32 (int32
//     elements); reals are rounded once, from the decimal text, to binary64
//     (scalars, options) or binary32 (float32 elements). A real beyond the
//     largest finite value overflows; a nonzero real below the smallest
//     subnormal rounds to a zero of its sign, as IEEE rounding gives.
//
// Conversions use std::from_chars on text the grammar has already checked
// (so none of strtod's leniency: no blanks, hex, "infinity" or locale).
#pragma once

#include <strideweave/strideweave.h>

#include <cstdint>
#include <string>

#include "values_json.h"

namespace strideweave::cli {

// The value of a well-formed integer number (`text` as the grammar reads
// it); OverflowError outside int64, naming `what`.
std::int64_t int64_of(const std::string& text, const std::string& what);
// The value of a well-formed number or nan/inf/-inf rounded once to binary64
// (double) or binary32 (float); OverflowError beyond the largest finite value.
double double_of(const std::string& text, const std::string& what);
float float32_of(const std::string& text, const std::string& what);

// scalar:LITERAL: a number, true or false (bool, a weak float), nan, inf,
// -inf. Outside the grammar -> UsageError. Its value as a weak scalar:
// integers as int64 (OverflowError beyond), reals as double.
JsonNode read_scalar_literal(const std::string& text);
WeakScalar weak_scalar_of(const JsonNode& literal, const std::string& what);

// One operand argument as written, read by the grammar only (no dtype looked
// up, no value converted): `dtype:NAME` (resolve's tensor operands),
// `tensor:DTYPE:VALUES` (run's) or `scalar:LITERAL`. Another form, an empty
// NAME or DTYPE, malformed VALUES or LITERAL -> UsageError.
struct OperandLiteral {
  enum class Form { DType, Tensor, Scalar };
  Form form = Form::Scalar;
  std::string dtype;  // DType, Tensor: the dtype name
  JsonNode value;     // Tensor: VALUES; Scalar: the literal
  std::string text;   // the argument as given (for messages)
};
enum class TensorOperands { DTypeNames, Values };  // resolve: dtype:NAME; run: tensor:DTYPE:VALUES
OperandLiteral read_operand_literal(const std::string& arg, TensorOperands tensors);

}  // namespace strideweave::cli
