// The carrier-definition registry: one immutable definition per exact class,
// kernel packs until first observation, and the sealed capability union
// (carrier-extension R2.3-R2.5, R6.3, R7, R10.2, R11.4, R11.6, R12.2, R13).
//
// Locks: `Registry::mutex` guards the class map and pack identities; each
// ClassDefinition's `mutex` guards its packs and sealing. Order: registry ->
// capability registry (declaration) and registry -> class record (packs);
// the capability registry calls a class record's seal() under its own lock
// and seal() takes no other lock, so no cycle exists.
#include "extension/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <typeinfo>
#include <unordered_map>

#include "capability/registry.h"
#include "core/bootstrap.h"

namespace strideweave::extension {
namespace detail {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<CarrierClass, std::shared_ptr<ClassDefinition>> classes;
};

Registry& registry() {
  static Registry* r = new Registry();  // lives for the program (carrier identities outlive statics)
  return *r;
}

std::vector<OperationCapability> plans_of(const ClassDefinition& record) {
  std::vector<OperationCapability> out;
  if (const auto& k = record.definition->kernels())
    for (const KernelPattern& p : k->patterns()) out.insert(out.end(), p.plans().begin(), p.plans().end());
  for (const auto& pack : record.packs)
    for (const KernelPattern& p : pack->patterns()) out.insert(out.end(), p.plans().begin(), p.plans().end());
  return out;
}

}  // namespace

capability_registry::Sealed ClassDefinition::seal() {
  std::lock_guard lock(mutex);
  if (!sealed) {
    auto s = std::make_shared<SealedKernels>();
    // R11.4: built-in patterns, then packs by (namespace, version), each in
    // pattern order; a stable sort by descending preference keeps that
    // order among ties.
    std::vector<std::shared_ptr<const KernelPack>> ordered = packs;
    std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
      return std::tie(a->namespace_name(), a->version()) < std::tie(b->namespace_name(), b->version());
    });
    if (const auto& k = definition->kernels())
      for (const KernelPattern& p : k->patterns()) s->candidates.push_back({&p, "built-in", k->interface_ptr()});
    for (const auto& pack : ordered)
      for (const KernelPattern& p : pack->patterns())
        s->candidates.push_back({&p, pack->namespace_name() + "@" + pack->version(), definition->kernels()->interface_ptr()});
    std::stable_sort(s->candidates.begin(), s->candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.pattern->preference() > b.pattern->preference(); });
    // R11.6: the deduplicated union, in the standard order.
    std::vector<OperationCapability> all = plans_of(*this);
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    s->capabilities = std::move(all);
    s->by_capability.resize(s->capabilities.size());
    for (std::size_t i = 0; i < s->capabilities.size(); ++i) {
      const OperationPlan plan = s->capabilities[i].to_plan();
      for (const Candidate& c : s->candidates)
        if (c.pattern->operation().name() == plan.operation() && c.pattern->matching_plan(plan))
          s->by_capability[i].push_back(&c);
    }
    packs = std::move(ordered);
    sealed = std::move(s);
    kernels.store(sealed.get(), std::memory_order_release);
  }
  capability_registry::Sealed out{sealed->capabilities, {}};
  out.executors.reserve(out.capabilities.size());
  for (const auto& run : sealed->by_capability)
    out.executors.push_back({capability_registry::ExecutorKind::KernelPatterns, &run, this});
  return out;
}

std::shared_ptr<const ClassDefinition> find_definition(CarrierClass cls) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.classes.find(cls);
  return it == r.classes.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const ClassDefinition>> all_definitions() {
  Registry& r = registry();
  std::vector<std::shared_ptr<const ClassDefinition>> out;
  {
    std::lock_guard lock(r.mutex);
    for (const auto& [cls, record] : r.classes)
      if (record->definition) out.push_back(record);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->cls.name() < b->cls.name(); });
  return out;
}

const ClassDefinition* find_definition_fast(CarrierClass cls) {
  // Only a class whose instances forward to a storage provider can hold a
  // definition (Generic, CPU: no lookup at all).
  if (!cls.traits().storage_provider) return nullptr;
  // A definition, once registered, is never replaced or removed and its
  // record lives for the process: the last class a thread found is answered
  // again without the lock. An absent answer is not remembered (a
  // definition may be registered later).
  thread_local std::optional<CarrierClass> last_class;
  thread_local const ClassDefinition* last_record = nullptr;
  if (last_class && *last_class == cls) return last_record;
  const std::shared_ptr<const ClassDefinition> found = find_definition(cls);
  if (!found) return nullptr;
  last_class = cls;
  last_record = found.get();  // retained by the registry for the life of the process
  return last_record;
}

const SealedKernels& sealed_kernels(const ClassDefinition& record) {
  if (const SealedKernels* k = record.kernels.load(std::memory_order_acquire)) return *k;
  (void)capabilities_for_carrier_class(record.cls);  // the first observation seals the class
  return *record.kernels.load(std::memory_order_acquire);
}

}  // namespace detail

void register_carrier_definition(CarrierClass cls, CarrierDefinition definition) {
  const std::string who = fmt::format("register_carrier_definition({})", cls.name());
  const CarrierClass::Traits& t = cls.traits();
  if (!t.derives_carrier) throw TypeError(fmt::format("{}: {} is not a Carrier class", who, cls.name()));
  if (t.is_root) throw TypeError(fmt::format("{}: the Carrier root cannot hold a definition", who));
  if (detail::is_framework_base(cls))
    throw TypeError(fmt::format("{}: {} is a framework base class; define a concrete class deriving from it", who,
                                cls.name()));
  ::strideweave::detail::ensure_bootstrapped();
  if (auto why = capability_registry::closed_reason(cls))
    throw TypeError(fmt::format("{}: {} {}", who, cls.name(), *why));
  if (!t.storage_provider)
    throw TypeError(fmt::format("{}: instances of {} keep their own storage hooks (a definition-free or shipped "
                                "class); a definition-backed class derives from extension::DefinedCarrier or "
                                "extension::DefinedDependentCarrier",
                                who, cls.name()));
  if (t.is_dependent) {
    if (!definition.composite())
      throw TypeError(fmt::format("{}: a DependentCarrier definition requires a CompositeProvider", who));
    if (definition.kernels())
      throw TypeError(fmt::format("{}: a DependentCarrier definition cannot own kernels (it executes through its "
                                  "dependencies, R6.4)",
                                  who));
  } else if (definition.composite()) {
    throw TypeError(fmt::format("{}: an independent carrier definition cannot have a CompositeProvider", who));
  }
  // R2.3: every route starts at exactly the registering class.
  for (const TransferRoute& route : definition.transfers())
    if (!(route.source_class() == cls))
      throw TypeError(fmt::format("{}: route '{}' starts at {}, not at {}", who, route.route_id(),
                                  route.source_class().name(), cls.name()));
  auto record = std::make_shared<detail::ClassDefinition>(cls);
  record->dependent = t.is_dependent;
  record->definition = std::make_shared<const CarrierDefinition>(std::move(definition));
  detail::Registry& r = detail::registry();
  std::lock_guard lock(r.mutex);
  if (r.classes.count(cls)) throw TypeError(fmt::format("{}: {} already holds a carrier definition", who, cls.name()));
  // Inserted first and taken out again if the capability registry refuses
  // the class, so a failure leaves neither registry claiming it.
  auto [it, inserted] = r.classes.try_emplace(cls, record);
  (void)inserted;
  try {
    if (!t.is_dependent)
      capability_registry::declare_definition_backed(cls, [record] { return record->seal(); }, who);
  } catch (...) {
    r.classes.erase(it);
    throw;
  }
}

void register_kernel_pack(KernelPack pack) {
  const CarrierClass cls = pack.carrier_class();
  const std::string who = fmt::format("register_kernel_pack({}@{} for {})", pack.namespace_name(), pack.version(),
                                      cls.name());
  ::strideweave::detail::ensure_bootstrapped();
  detail::Registry& r = detail::registry();
  std::lock_guard lock(r.mutex);
  auto it = r.classes.find(cls);
  if (it == r.classes.end()) {
    const auto why = capability_registry::closed_reason(cls);
    throw TypeError(fmt::format("{}: {} has no carrier definition{}{}", who, cls.name(), why ? " (it " : "",
                                why ? *why + ")" : ""));
  }
  detail::ClassDefinition& record = *it->second;
  const auto& kernels = record.definition->kernels();
  if (!kernels)
    throw TypeError(fmt::format("{}: {} is a storage-only definition (no KernelProvider)", who, cls.name()));
  if (!(pack.execution_interface().compatibility_identity() == kernels->interface().compatibility_identity()))
    throw TypeError(fmt::format("{}: the pack's interface {} is not the provider's {}", who,
                                pack.execution_interface().describe(), kernels->interface().describe()));
  std::lock_guard class_lock(record.mutex);
  if (record.sealed)
    throw TypeError(fmt::format("{}: {} was already observed; its kernel set is sealed", who, cls.name()));
  for (const auto& p : record.packs)
    if (p->namespace_name() == pack.namespace_name() && p->version() == pack.version())
      throw ValueError(fmt::format("{}: a pack {}@{} is already registered for {}", who, pack.namespace_name(),
                                   pack.version(), cls.name()));
  std::vector<std::string> ids;
  for (const KernelPattern& p : kernels->patterns()) ids.push_back(p.kernel_id());
  for (const auto& other : record.packs)
    for (const KernelPattern& p : other->patterns()) ids.push_back(p.kernel_id());
  for (const KernelPattern& p : pack.patterns())
    if (std::find(ids.begin(), ids.end(), p.kernel_id()) != ids.end())
      throw ValueError(fmt::format("{}: the kernel_id '{}' is already in {}'s kernel set", who, p.kernel_id(),
                                   cls.name()));
  record.packs.push_back(std::make_shared<const KernelPack>(std::move(pack)));
}

std::shared_ptr<const CarrierDefinition> carrier_definition(CarrierClass cls) {
  const auto record = detail::find_definition(cls);
  return record ? record->definition : nullptr;
}

std::shared_ptr<const CarrierFacet> facet(const Carrier& carrier, std::type_index facet_type) {
  const detail::ClassDefinition* record = detail::find_definition_fast(carrier.exact_class());
  if (!record) return nullptr;
  for (const auto& f : record->definition->facets())
    if (std::type_index(typeid(*f)) == facet_type) return f;
  return nullptr;
}

std::shared_ptr<const CarrierFacet> require_facet(const Carrier& carrier, std::type_index facet_type) {
  if (auto f = facet(carrier, facet_type)) return f;
  throw NotImplementedError(fmt::format("{} has no facet of type {}", carrier.class_name(), facet_type.name()));
}

namespace detail {
const TransferRoute* transfer_route_for(CarrierClass source_class, CarrierClass destination_class) {
  const ClassDefinition* record = find_definition_fast(source_class);  // null for a definition-free class
  if (!record) return nullptr;
  for (const TransferRoute& route : record->definition->transfers())
    if (route.destination_class() == destination_class) return &route;
  return nullptr;
}
}  // namespace detail

}  // namespace strideweave::extension
