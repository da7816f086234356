// Internal: the table of the registered operations (operation_table.cpp),
// one per row of <strideweave/operations.def>.
#pragma once

#include <strideweave/export.h>

#include <span>

#include <strideweave/policy.h>

namespace strideweave::policy {

// Every OperationSpec sorted by name (code-point order); built once.
STRIDEWEAVE_TEST_API std::span<const OperationSpec> operation_table();

}  // namespace strideweave::policy
