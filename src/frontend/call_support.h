// Internal: the built-in operations' front-end records (docs/design.md, "One
// record per operation").
//
// Each family file lists its operations once, as BuiltinEntry records: the
// schema (operands with their kinds and differentiability, options with
// their defaults and documentation), the traits, and the lowering of a bound
// call (dispatch.h, "Lowering"). The built-in OperationDefinitions (the
// builtins layer), the by-name calls (call.h) and the command line are all
// derived from these records; src/frontend/calls.cpp holds the central list
// of families.
#pragma once

#include <strideweave/export.h>

#include <strideweave/call.h>
#include <strideweave/errors.h>
#include <strideweave/operation.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "frontend/dispatch.h"

namespace strideweave::frontend {

using BoundCall = operation::BoundOperationCall;

struct BuiltinEntry {
  std::string name;
  operation::OperationSchema schema;
  operation::BuiltinTraits traits;
  // Everything the call does up to the kernel; the typed function's own
  // validation and errors, in its order. Null for sort and topk, whose
  // by-name calls run two plans (`composite`).
  std::function<Lowered(const BoundCall&)> lower;
  // sort and topk: the two-result call (CallResult with both plans).
  std::function<CallResult(const BoundCall&)> composite;
};

void add_arithmetic_builtins(std::vector<BuiltinEntry>& out);   // arithmetic.cpp
void add_unary_builtins(std::vector<BuiltinEntry>& out);        // unary.cpp
void add_reduction_builtins(std::vector<BuiltinEntry>& out);    // reductions.cpp
void add_structured_builtins(std::vector<BuiltinEntry>& out);   // structured.cpp

// Runs the lowering of `entry` for `call` (the built-in references run it
// on Generic): run() on a kernel table, recording as a typed call does; on a
// definition-backed carrier the built-in's definition through the pipeline
// without a definition node.
Tensor run_builtin(const BuiltinEntry& entry, const BoundCall& call);

// Every entry (the 56 registered operation names, then sort and topk),
// sorted by name; built once.
STRIDEWEAVE_TEST_API const std::vector<BuiltinEntry>& builtin_entries();
// The entry of `name`, or nullptr.
const BuiltinEntry* find_builtin(std::string_view name) noexcept;

// Shorthands for the family files' schemas and option reads.
namespace builtin_schema {

inline operation::OperandSpec tensor(const char* name, bool differentiable = false) {
  return operation::OperandSpec(name, operation::OperandKind::TENSOR, differentiable);
}
// A tensor operand that also accepts a weak scalar (the mul, pow and clamp
// overloads).
inline operation::OperandSpec tensor_or_scalar(const char* name, bool differentiable = false) {
  return operation::OperandSpec::tensor_or_weak_scalar(name, differentiable);
}
// Every built-in option declares its kind (bind() checks values against it
// before the lowering runs).
inline operation::OptionSpec option(const char* name, operation::OptionKind kind, operation::OptionValue default_value,
                                    const char* doc) {
  return operation::OptionSpec(name, std::move(default_value), doc, kind);
}
// The option `name` of `operation` as its SW_OPTION row in
// <strideweave/operations.def> declares it (default and doc); RuntimeError
// when the list has no such row.
operation::OptionSpec listed_option(std::string_view operation, std::string_view name);
inline operation::OptionSpec required(const char* name, operation::OptionKind kind, const char* doc) {
  return operation::OptionSpec(name, operation::REQUIRED, doc, kind);
}

inline BuiltinEntry entry(std::string name, std::vector<operation::OperandSpec> operands,
                          std::vector<operation::OptionSpec> options, std::function<Lowered(const BoundCall&)> lower,
                          operation::BuiltinTraits traits = {}) {
  return BuiltinEntry{std::move(name), operation::OperationSchema(std::move(operands), std::move(options)),
                      std::move(traits), std::move(lower), nullptr};
}

// Bound option reads with the TypeError a binding raises for a value of the
// wrong kind (bind() has filled every default).
bool bool_option(const BoundCall& call, const char* name);
std::int64_t int_option(const BoundCall& call, const char* name);
std::optional<std::int64_t> optional_int_option(const BoundCall& call, const char* name);  // None -> nullopt
double real_option(const BoundCall& call, const char* name);  // an integer is accepted
// A list of integers, or one integer as a one-element list; None -> nullopt.
std::optional<std::vector<std::int64_t>> ints_option(const BoundCall& call, const char* name);
// The execution options of reduce_sum and matmul ("accumulator_dtype",
// "arithmetic"; policy R10), validated by the policy; nullopt when neither
// is set.
std::optional<OperationExecutionOptions> execution_options(const BoundCall& call);
// Their schema entries.
operation::OptionSpec accumulator_option();
operation::OptionSpec arithmetic_option();

}  // namespace builtin_schema

}  // namespace strideweave::frontend
