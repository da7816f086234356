// Internal: the table of the 56 registered operations (operation_table.cpp).
#pragma once

#include <span>

#include <strideweave/policy.h>

namespace strideweave::policy {

// Every OperationSpec sorted by name (code-point order); built once.
std::span<const OperationSpec> operation_table();

}  // namespace strideweave::policy
