// Internal: the class-level capability registry's entry for kernel-backed
// classes (execution/kernel_table.cpp declares through it).
#pragma once

#include <strideweave/capability.h>

#include <string>
#include <vector>

namespace strideweave::capability_registry {

// Declares the sealed set of a kernel-backed class (shipped carriers). A
// class already declared or observed -> RuntimeError.
void declare_kernel_backed(CarrierClass cls, std::string name, std::vector<OperationCapability> capabilities);

}  // namespace strideweave::capability_registry
