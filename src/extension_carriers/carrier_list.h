// Internal: the central list of the shipped carriers that are built on the
// public extension surface (docs/design.md, "Layers": extension_carriers).
//
// This layer sits above the whole operation and autograd stack and, unlike
// src/carriers/, may include only public headers (<strideweave/...>) plus
// its own: each carrier lives in src/extension_carriers/<name>/ exactly as
// an out-of-tree accelerator would (examples/acme_accelerator): a
// CarrierDefinition with a StorageProvider, kernel packs or a
// CompositeProvider, TransferRoutes declared on its own definition, facets.
// scripts/check_layers.py enforces the rule ([public-only] in
// cmake/layers.txt). A carrier is one folder plus one line in
// carrier_list.cpp.
#pragma once

#include <span>
#include <string_view>

#include <strideweave/carrier_class.h>

namespace strideweave::extension_carriers {

// One listed carrier: its public name (the library bootstrap gives its
// class that name, before anything registers), its class, and the function
// of its folder that registers its definition (register_carrier_definition,
// its kernel packs, its operations) through the public extension API, or
// null for a definition-free carrier (Evictable), which registers nothing.
struct ExtensionCarrier {
  std::string_view name;
  CarrierClass (*carrier_class)();
  void (*register_definition)();
};

// The list, in registration order.
std::span<const ExtensionCarrier> extension_carriers() noexcept;

// Registers every listed carrier's definition (the library bootstrap, after
// the shipped carriers and the built-in definitions, which these carriers
// build on).
void register_extension_carriers();

}  // namespace strideweave::extension_carriers
