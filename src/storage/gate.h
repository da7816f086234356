// Internal: the capability gate of the dispatch path
// (backend-capabilities.md, "Unsupported plans fail before execution work").
#pragma once

#include <strideweave/carrier.h>
#include <strideweave/capability.h>
#include <strideweave/export.h>

#include <cstdint>
#include <optional>

#include "capability/registry.h"

namespace strideweave::storage {

// What the gate admitted: the dispatch record of (exact class, plan): the
// exact capability, the execution axes kept beside it, and what executes it.
// One lookup decides both whether the call may run and what runs it.
struct Admission {
  const OperationCapability& capability;
  const ExecutionAxes& axes;
  const capability_registry::Executor& executor;
};

// Carrier::require_operation_plan by reference: the exact capability for
// `plan` from the carrier's class declaration (independent) or its frozen
// snapshot (dependent; RuntimeError before finalisation), else
// UnsupportedOperationPlan with the stable sentence, and its axes
// (Carrier::execution_axes) and executor (a dependent instance's entries:
// its class's composite provider when the class has a definition, else its
// dispatch hook). The references live as long as `carrier`.
STRIDEWEAVE_TEST_API Admission gate(const Carrier& carrier, const OperationPlan& plan);

// The last admission of one immutable plan object that lives as long as the
// thread (a front-end plan-cache entry): an independent class's sealed entry
// never changes and is retained for the life of the process, so a repeated
// call on the same class is answered from here without searching the
// class's capabilities or comparing the plan again. Dependent carriers are
// never remembered (their snapshot belongs to the instance).
struct GateMemo {
  std::optional<CarrierClass> cls;
  capability_registry::Entry entry{};
};
// gate(carrier, plan), answered from (and recorded into) `memo` when it is
// not null; `memo` must belong to `plan` (the same object every time). The
// lookup is counted as gate() counts it.
STRIDEWEAVE_TEST_API Admission gate(const Carrier& carrier, const OperationPlan& plan, GateMemo* memo);

// Internal, for tests: how many times gate() ran on the calling thread. A
// call of any kind (typed, by name, by definition, dispatch_op) on any
// carrier kind looks its dispatch record up once; the tests check that
// through this count.
STRIDEWEAVE_TEST_API std::uint64_t gate_lookups_on_this_thread() noexcept;

}  // namespace strideweave::storage
