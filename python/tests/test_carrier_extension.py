"""strideweave.carriers.extension: carrier-extension.md R1-R13 as far as
they are reachable without kernel execution (the definition-backed dispatch
pipeline has its own tests: test_operation_semantics.py,
test_definition_autograd.py, test_typed_definition_route.py).
Test names carry the requirement id. Every test makes fresh carrier classes:
a definition is registered once per class and a class seals on first
observation (R7)."""

import threading

import pytest

import strideweave as sw
from strideweave.carriers import extension as ext
from conftest import BOOL, F32, I32, join_bounded, plan, raises_exactly

ADD = plan("add", F32, F32)
MUL = plan("mul", F32, F32)
ADD_I32 = plan("add", I32, I32)
ADD_DEF = sw.operation.get_definition("add")


def cap(p):
    return sw.OperationCapability.from_plan(p)


def fresh(name="Acme", base=sw.Carrier):
    return type(name, (base,), {})


class Recorder:
    """A list-backed StorageProvider whose callbacks log (name, carrier)."""

    def __init__(self, dtypes=(F32, I32, BOOL), fallback=False):
        self.dtypes, self.log = dtypes, []
        self.provider = ext.StorageProvider(self.supports, self.size, self.allocate, self.release, self.read,
                                            self.write, elementwise_fallback=fallback)

    def supports(self, carrier, dtype):
        self.log.append(("supports_dtype", carrier))
        return any(dtype is d for d in self.dtypes)

    def size(self, carrier):
        self.log.append(("physical_size", carrier))
        return len(carrier.slots_)

    def allocate(self, carrier, slots):
        self.log.append(("allocate", carrier))
        carrier.slots_ = [sw.storage_zero(carrier_dtype(carrier))] * slots

    def release(self, carrier):
        self.log.append(("release", carrier))
        carrier.slots_ = []

    def read(self, carrier, index):
        self.log.append(("read", carrier))
        return carrier.slots_[index]

    def write(self, carrier, index, value):
        self.log.append(("write", carrier))
        carrier.slots_[index] = value

    def names(self):
        return [name for name, _ in self.log]


def carrier_dtype(carrier):
    # The instance a provider callback receives is usable during
    # construction too (test_R3_provider_callbacks_see_the_carrier_being_built).
    return carrier.dtype()


def define(cls=None, recorder=None, **fields):
    cls = cls or fresh()
    recorder = recorder or Recorder()
    ext.register_carrier_definition(cls, ext.CarrierDefinition(recorder.provider, **fields))
    return cls, recorder


def interface(version="1", cls=ext.KernelExecutionInterface):
    return cls(version)


def pattern(kernel_id="k", plans=None, preference=0, prepare=None):
    calls = []

    def default_prepare(invocation, iface):
        calls.append(invocation)
        return ext.Unsupported("never")

    plans = plans if plans is not None else [cap(ADD)]
    return ext.KernelPattern(sw.operation.get_definition(plans[0].operation), plans, kernel_id,
                             prepare or default_prepare, preference)


def compact(carrier, *extents):
    return sw.Tensor(carrier, 0, sw.Layout.compact(sw.Shape(*extents)))


class Completion:
    def __init__(self, outcome=None, error=None):
        self.outcome, self.error, self.waits = outcome, error, 0

    @property
    def done(self):
        return self.waits > 0

    def wait(self):
        self.waits += 1
        if self.error is not None:
            raise self.error
        return self.outcome


# ---- R1 one import surface

SEVENTEEN_PLUS = {
    "CarrierDefinition", "StorageProvider", "KernelProvider", "KernelExecutionInterface", "KernelPack",
    "KernelPattern", "Unsupported", "PreparedKernel", "PreparedTransfer", "PreparedComposite", "ProviderResult",
    "ProviderCompletion", "TransferProvider", "TransferRoute", "TransferRequest", "CompositeProvider",
    "CarrierFacet", "register_carrier_definition", "register_kernel_pack",
}
EXTENSION_ONLY = {"TransferProvider", "PreparedKernel", "PreparedTransfer", "PreparedComposite", "ProviderResult",
                  "ProviderCompletion", "TransferRequest"}


def test_R1_every_extension_name_is_importable_from_the_extension_module():
    assert len(SEVENTEEN_PLUS) == 19
    assert set(ext.__all__) == SEVENTEEN_PLUS
    for name in SEVENTEEN_PLUS:
        assert getattr(ext, name) is not None


def test_R1_twelve_names_are_top_level_exports_of_the_identical_objects():
    top = SEVENTEEN_PLUS - EXTENSION_ONLY
    assert len(top) == 12
    for name in top:
        assert getattr(sw, name) is getattr(ext, name), name
        assert name in sw.__all__
    for name in EXTENSION_ONLY:
        assert not hasattr(sw, name), name


# ---- R2 the definition

def test_R2_1_definition_freezes_iterables_as_tuples_and_is_immutable():
    class Facet(ext.CarrierFacet):
        pass

    cls = fresh()
    route = ext.TransferRoute(cls, sw.CPU, "to-cpu", ext.TransferProvider(lambda request: ext.Unsupported("x")))
    facet = Facet()
    storage = Recorder().provider
    d = ext.CarrierDefinition(storage, None, (r for r in [route]), None, iter([facet]))
    assert d.storage is storage and d.kernels is None and d.composite is None
    assert d.transfers == (route,) and d.facets == (facet,)
    for field in ("storage", "kernels", "transfers", "composite", "facets"):
        with pytest.raises(AttributeError):
            setattr(d, field, None)
    with pytest.raises(AttributeError):
        d.extra = 1


def test_R2_2_wrong_field_or_entry_types_are_type_errors():
    storage = Recorder().provider
    route = ext.TransferRoute(fresh(), sw.CPU, "r", ext.TransferProvider(lambda request: None))
    raises_exactly(TypeError, ext.CarrierDefinition, object())
    raises_exactly(TypeError, ext.CarrierDefinition, storage, kernels=storage)
    raises_exactly(TypeError, ext.CarrierDefinition, storage, transfers=[route, "route"])
    raises_exactly(TypeError, ext.CarrierDefinition, storage, transfers=route)  # not an iterable
    raises_exactly(TypeError, ext.CarrierDefinition, storage, composite=storage)
    raises_exactly(TypeError, ext.CarrierDefinition, storage, facets=[ext.CarrierFacet])  # a class, not an instance
    raises_exactly(TypeError, ext.CarrierDefinition, storage, facets=[object()])


def test_R2_2_two_routes_of_one_pair_or_two_facets_of_one_class_are_value_errors():
    class Facet(ext.CarrierFacet):
        pass

    class Other(ext.CarrierFacet):
        pass

    storage = Recorder().provider
    cls = fresh()
    provider = ext.TransferProvider(lambda request: None)
    a = ext.TransferRoute(cls, sw.CPU, "a", provider)
    b = ext.TransferRoute(cls, sw.CPU, "b", provider)
    c = ext.TransferRoute(cls, sw.Generic, "c", provider)
    raises_exactly(ValueError, ext.CarrierDefinition, storage, transfers=[a, b])
    raises_exactly(ValueError, ext.CarrierDefinition, storage, facets=[Facet(), Facet()])
    assert len(ext.CarrierDefinition(storage, transfers=[a, c], facets=[Facet(), Other()]).transfers) == 2


def test_R2_3_registration_needs_a_concrete_carrier_subclass_and_a_definition():
    d = ext.CarrierDefinition(Recorder().provider)
    for not_a_class in (object(), 1, "Acme"):
        raises_exactly(TypeError, ext.register_carrier_definition, not_a_class, d)
    raises_exactly(TypeError, ext.register_carrier_definition, int, d)
    raises_exactly(TypeError, ext.register_carrier_definition, sw.Carrier, d)
    raises_exactly(TypeError, ext.register_carrier_definition, sw.DependentCarrier, d)
    cls = fresh()
    raises_exactly(TypeError, ext.register_carrier_definition, cls, object())
    ext.register_carrier_definition(cls, d)  # the refusals published nothing


def test_R2_3_every_route_must_start_at_exactly_the_class_and_a_refusal_publishes_nothing():
    cls, sub = fresh(), None
    sub = fresh("Sub", cls)
    provider = ext.TransferProvider(lambda request: None)
    wrong = ext.TransferRoute(sub, sw.CPU, "from-sub", provider)
    raises_exactly(TypeError, ext.register_carrier_definition, cls,
                   ext.CarrierDefinition(Recorder().provider, transfers=[wrong]))
    raises_exactly(TypeError, cls, 1, dtype=F32)  # nothing was published
    right = ext.TransferRoute(cls, sw.CPU, "to-cpu", provider)
    define(cls, transfers=[right])
    assert cls(1, dtype=F32).size() == 1


def test_R2_4_a_subclass_of_a_definition_backed_class_inherits_nothing():
    class Facet(ext.CarrierFacet):
        pass

    kernels = ext.KernelProvider(interface(), [pattern()])
    base, _ = define(kernels=kernels, facets=[Facet()])
    sub = fresh("Sub", base)
    assert sw.capabilities_for_carrier_class(base) == (cap(ADD),)
    assert sw.capabilities_for_carrier_class(sub) == ()
    error = raises_exactly(TypeError, sub, 1, dtype=F32)
    assert "no carrier definition" in str(error)
    assert base(1, dtype=F32).facet(Facet) is not None


def test_R2_5_shipped_declared_and_definition_free_classes_are_rejected():
    d = ext.CarrierDefinition(Recorder().provider)
    for shipped in (sw.Generic, sw.CPU):
        raises_exactly(TypeError, ext.register_carrier_definition, shipped, d)
    declared = fresh()
    sw.register_operation_capabilities(declared, [cap(ADD)])
    raises_exactly(TypeError, ext.register_carrier_definition, declared, d)

    class Hooked(sw.Carrier):  # a definition-free class: it defines storage hooks
        def _storage_size(self):
            return 0

    error = raises_exactly(TypeError, ext.register_carrier_definition, Hooked, d)
    assert "storage hooks" in str(error)


# ---- R3 storage providers

def test_R3_1_storage_provider_takes_six_callables_and_an_exact_bool():
    r = Recorder()
    fns = [r.supports, r.size, r.allocate, r.release, r.read, r.write]
    for i in range(6):
        args = list(fns)
        args[i] = "not callable"
        raises_exactly(TypeError, ext.StorageProvider, *args)
    for flag in (1, 0, None, "yes"):
        raises_exactly(TypeError, ext.StorageProvider, *fns, elementwise_fallback=flag)
    p = ext.StorageProvider(*fns, elementwise_fallback=True)
    assert p.elementwise_fallback is True and ext.StorageProvider(*fns).elementwise_fallback is False
    assert (p.supports_dtype, p.physical_size, p.allocate, p.release, p.read, p.write) == tuple(fns)
    with pytest.raises(AttributeError):
        p.read = r.write


def test_R3_2_construction_checks_the_dtype_then_allocates_then_measures_on_one_instance():
    cls, r = define()
    c = cls(3, dtype=F32)
    assert r.names() == ["supports_dtype", "allocate", "physical_size"]
    assert all(carrier is c for _, carrier in r.log)
    assert c.size() == len(c) == 3 and c.dtype() is F32 and c.version == 0 and list(c) == [0.0, 0.0, 0.0]


def test_R3_provider_callbacks_see_the_carrier_being_built():
    # The instance supports_dtype, allocate and physical_size receive is the
    # carrier under construction, and its own methods answer there: a
    # provider sizes and types its storage from carrier.dtype().
    seen = []

    class Seeing(Recorder):
        def allocate(self, carrier, slots):
            seen.append((carrier.dtype(), carrier.is_mutable()))
            super().allocate(carrier, slots)

    cls, _ = define(recorder=Seeing())
    c = cls(2, dtype=I32, mutable=False)
    assert len(seen) == 1 and seen[0][0] is I32 and seen[0][1] is False
    assert list(c) == [0, 0] and all(type(v) is int for v in c)


def test_R3_2_supports_dtype_false_rejects_construction_before_allocation():
    cls, r = define(recorder=Recorder(dtypes=(F32,)))
    raises_exactly(TypeError, cls, 2, dtype=I32)
    assert r.names() == ["supports_dtype"]


def test_R3_2_physical_size_must_equal_the_slots_and_a_mismatch_releases():
    r = Recorder()
    r.provider = ext.StorageProvider(r.supports, lambda c: len(c.slots_) + 1, r.allocate, r.release, r.read, r.write)
    cls, _ = define(recorder=r)
    raises_exactly(ValueError, cls, 2, dtype=F32)
    assert r.names() == ["supports_dtype", "allocate", "release"]
    negative = Recorder()
    negative.provider = ext.StorageProvider(negative.supports, lambda c: -1, negative.allocate, negative.release,
                                            negative.read, negative.write)
    cls, _ = define(recorder=negative)
    raises_exactly(ValueError, cls, 0, dtype=F32)


def test_R3_2_release_reaches_the_provider_at_most_once():
    cls, r = define()
    c = cls(2, dtype=F32)
    c.release()
    c.release()
    assert r.names().count("release") == 1 and c.is_released()
    raises_exactly(RuntimeError, c.get_value, 0)


def test_R3_2_read_and_write_see_one_in_range_slot_of_a_live_mutable_instance():
    cls, r = define()
    c = cls(2, dtype=F32)
    frozen = cls(1, dtype=F32, mutable=False)
    del r.log[:]
    raises_exactly(IndexError, c.get_value, 2)
    raises_exactly(IndexError, c.set_value, -1, 1.0)
    raises_exactly(TypeError, c.set_value, 0, "x")
    raises_exactly(RuntimeError, frozen.set_value, 0, 1.0)
    assert r.log == []
    c[1] = 4.0
    assert c[1] == 4.0 and r.names() == ["write", "read"] and c.version == 1


def test_R3_3_storage_dtype_queries_ask_the_same_instance_also_after_release():
    cls, r = define(recorder=Recorder(dtypes=(F32, BOOL)))
    c = cls(1, dtype=F32)
    del r.log[:]
    assert c.supports_storage_dtype(BOOL) and not c.supports_storage_dtype(I32)
    c.release()
    assert c.supports_storage_dtype(F32)
    assert [carrier for _, carrier in r.log if _ == "supports_dtype"] == [c, c, c]


def test_R3_4_wrong_return_types_are_type_errors_and_change_nothing():
    r = Recorder()
    r.provider = ext.StorageProvider(r.supports, r.size, r.allocate, r.release, lambda c, i: "text",
                                     lambda c, i, v: 1)
    cls, _ = define(recorder=r)
    c = cls(1, dtype=F32)
    raises_exactly(TypeError, c.get_value, 0)
    raises_exactly(TypeError, c.set_value, 0, 1.0)
    assert c.version == 0
    for bad in (lambda c, d: 1, lambda c, d: None):
        r2 = Recorder()
        r2.provider = ext.StorageProvider(bad, r2.size, r2.allocate, r2.release, r2.read, r2.write)
        raises_exactly(TypeError, define(recorder=r2)[0], 1, dtype=F32)
    r3 = Recorder()
    r3.provider = ext.StorageProvider(r3.supports, lambda c: 1.0, r3.allocate, r3.release, r3.read, r3.write)
    raises_exactly(TypeError, define(recorder=r3)[0], 1, dtype=F32)
    r4 = Recorder()
    r4.provider = ext.StorageProvider(r4.supports, r4.size, lambda c, n: setattr(c, "slots_", [0.0] * n) or 0,
                                      r4.release, r4.read, r4.write)
    raises_exactly(TypeError, define(recorder=r4)[0], 1, dtype=F32)


def test_R3_4_provider_exceptions_propagate_as_themselves_and_change_nothing():
    class Boom(Exception):
        pass

    def write(carrier, index, value):
        raise Boom("write")

    r = Recorder()
    r.provider = ext.StorageProvider(r.supports, r.size, r.allocate, r.release, r.read, write)
    cls, _ = define(recorder=r)
    c = cls(2, dtype=F32)
    with pytest.raises(Boom):
        c.set_value(0, 1.0)
    assert c.version == 0 and c.slots_ == [0.0, 0.0]

    def allocate(carrier, slots):
        raise Boom("allocate")

    r2 = Recorder()
    r2.provider = ext.StorageProvider(r2.supports, r2.size, allocate, r2.release, r2.read, r2.write)
    with pytest.raises(Boom):
        define(recorder=r2)[0](1, dtype=F32)


def test_R3_4_callbacks_run_with_the_gil_from_other_threads():
    cls, r = define()
    c = cls(64, dtype=F32)
    errors = []

    def work(k):
        try:
            for i in range(k, 64, 4):
                c[i] = float(i)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    join_bounded(threads, "the writing threads")
    assert errors == [] and list(c) == [float(i) for i in range(64)] and c.version == 64


def test_R3_5_elementwise_fallback_is_recorded_per_provider():
    assert Recorder(fallback=True).provider.elementwise_fallback is True
    assert Recorder().provider.elementwise_fallback is False


def test_R3_7_instances_are_built_as_cls_slots_dtype_mutable():
    cls, _ = define()
    for slots in (2.0, True, "2", None):
        raises_exactly(TypeError, cls, slots, dtype=F32)
    raises_exactly(ValueError, cls, -1, dtype=F32)
    raises_exactly(TypeError, cls, 1, dtype="float32")
    raises_exactly(TypeError, cls, 1, dtype=F32, mutable=1)
    raises_exactly(TypeError, cls, 1)  # dtype is required
    frozen = cls(1, dtype=F32, mutable=False)
    assert not frozen.is_mutable()
    c = cls(0, dtype=I32)
    assert type(c) is cls and c.size() == 0 and c.dtype() is I32


def test_R3_7_new_like_and_allocate_like_build_the_exact_class_and_fill_through_write():
    cls, r = define()
    c = cls(1, dtype=F32)
    del r.log[:]
    made = c.new_like([1.0, 2.0])
    assert type(made) is cls and made is not c and list(made) == [1.0, 2.0]
    names = r.names()
    assert names.index("allocate") < names.index("physical_size") < names.index("write")
    zeros = c.allocate_like(3, mutable=False)
    assert type(zeros) is cls and list(zeros) == [0.0, 0.0, 0.0] and zeros.dtype() is F32 and not zeros.is_mutable()
    c.release()
    assert list(c.new_like([5.0])) == [5.0]  # a released prototype still makes instances


def test_R3_7_each_public_set_value_bumps_the_version():
    cls, _ = define()
    c = cls(2, dtype=F32)
    c.set_value(0, 1.0)
    c[1] = 2.0
    assert c.version == 2


def test_R3_definition_backed_instances_back_tensors():
    cls, _ = define()
    c = cls(4, dtype=F32)
    for i in range(4):
        c[i] = float(i)
    t = sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(2, 2)))
    assert t.carrier is c and t.carrier_type() is cls and t.values() == [0.0, 1.0, 2.0, 3.0]


# ---- R4 completions and prepared work

def test_R4_2_provider_result_freezes_a_non_empty_tuple_of_tensors():
    a, b = sw.tensor([1.0]), sw.tensor([2])
    result = ext.ProviderResult(x for x in [a, b])
    assert result.outputs == (a, b) and result.outputs[0] is a
    raises_exactly(TypeError, ext.ProviderResult, [a, 1.0])
    raises_exactly(TypeError, ext.ProviderResult, a.carrier)
    raises_exactly(ValueError, ext.ProviderResult, [])
    with pytest.raises(AttributeError):
        result.outputs = ()


def test_R4_3_prepared_records_take_callables_and_are_immutable():
    iface = interface()
    raises_exactly(TypeError, ext.PreparedKernel, iface, "submit")
    raises_exactly(TypeError, ext.PreparedKernel, "interface", lambda: None)
    raises_exactly(TypeError, ext.PreparedTransfer, 1)
    raises_exactly(TypeError, ext.PreparedComposite, None)
    submit = lambda: None  # noqa: E731
    k = ext.PreparedKernel(iface, submit)
    assert k.interface is iface and k.submit is submit
    assert ext.PreparedTransfer(submit).submit is submit and ext.PreparedComposite(submit).submit is submit
    with pytest.raises(AttributeError):
        k.submit = submit


def test_R4_3_submit_is_invoked_at_most_once():
    out = sw.tensor([1.0])
    calls = []
    prepared = ext.PreparedKernel(interface(), lambda: calls.append(1) or ext.ProviderResult([out]))
    (t,) = ext._core._submit_prepared(prepared) if hasattr(ext, "_core") else sw._core._submit_prepared(prepared)
    assert t.values() == [1.0]
    raises_exactly(RuntimeError, sw._core._submit_prepared, prepared)
    assert calls == [1]


def test_R4_4_kernel_submit_returning_a_bare_tensor_is_a_type_error():
    t = sw.tensor([1.0])
    for prepared in (ext.PreparedKernel(interface(), lambda: t), ext.PreparedComposite(lambda: t)):
        error = raises_exactly(TypeError, sw._core._submit_prepared, prepared)
        assert "bare Tensor" in str(error)
    raises_exactly(TypeError, sw._core._submit_prepared, ext.PreparedComposite(lambda: None))
    raises_exactly(TypeError, sw._core._submit_prepared, ext.PreparedTransfer(lambda: ext.ProviderResult([t])))


def test_R4_1_a_structural_completion_is_accepted_and_waited_on_once_per_wait():
    t = sw.tensor([3.0])
    completion = Completion(ext.ProviderResult([t]))
    assert isinstance(completion, ext.ProviderCompletion)
    (out,) = sw._core._submit_prepared(ext.PreparedComposite(lambda: completion))
    assert out.values() == [3.0] and completion.waits == 1
    done = Completion(None)
    assert sw._core._submit_prepared(ext.PreparedTransfer(lambda: done)) is None and done.waits == 1
    assert sw._core._submit_prepared(ext.PreparedTransfer(lambda: None)) is None


def test_R4_1_await_a_non_bool_done_or_a_missing_member_is_a_type_error_at_acceptance():
    class Awaitable(Completion):
        def __await__(self):
            yield

    class IntDone:
        done = 1

        def wait(self):
            return None

    class NoWait:
        done = False

    for bad in (Awaitable(None), IntDone(), NoWait(), object()):
        raises_exactly(TypeError, sw._core._submit_prepared, ext.PreparedTransfer(lambda bad=bad: bad))
    assert not isinstance(Awaitable(None), ext.ProviderCompletion)
    assert not isinstance(NoWait(), ext.ProviderCompletion)


def test_R4_1_a_completions_outcome_is_validated_and_its_exception_propagates():
    class Boom(Exception):
        pass

    raises_exactly(Boom, sw._core._submit_prepared, ext.PreparedKernel(interface(), lambda: Completion(error=Boom())))
    raises_exactly(TypeError, sw._core._submit_prepared,
                   ext.PreparedKernel(interface(), lambda: Completion(sw.tensor([1.0]))))
    raises_exactly(TypeError, sw._core._submit_prepared, ext.PreparedTransfer(lambda: Completion(5)))


def test_R4_1_provider_completion_is_a_runtime_checkable_generic_protocol():
    assert ext.ProviderCompletion[ext.ProviderResult] is not None
    assert isinstance(Completion(), ext.ProviderCompletion)
    assert not isinstance(sw.tensor([1.0]), ext.ProviderCompletion)


# ---- R5 transfers

def test_R5_2_transfer_provider_takes_one_callable():
    raises_exactly(TypeError, ext.TransferProvider, "prepare")
    prepare = lambda request: ext.Unsupported("no")  # noqa: E731
    assert ext.TransferProvider(prepare).prepare is prepare


def test_R5_4_routes_take_concrete_carrier_classes_a_non_empty_id_and_a_provider():
    cls = fresh()
    provider = ext.TransferProvider(lambda request: None)
    raises_exactly(TypeError, ext.TransferRoute, sw.Carrier, sw.CPU, "r", provider)
    raises_exactly(TypeError, ext.TransferRoute, cls, int, "r", provider)
    raises_exactly(TypeError, ext.TransferRoute, cls, sw.CPU, 7, provider)
    raises_exactly(ValueError, ext.TransferRoute, cls, sw.CPU, "", provider)
    raises_exactly(TypeError, ext.TransferRoute, cls, sw.CPU, "r", lambda request: None)
    route = ext.TransferRoute(cls, sw.CPU, "r", provider)
    assert (route.source_class, route.destination_class, route.route_id, route.provider) == (cls, sw.CPU, "r",
                                                                                             provider)
    with pytest.raises(AttributeError):
        route.route_id = "s"


def test_R5_1_transfer_requests_are_created_by_the_framework_only():
    with pytest.raises(TypeError):
        ext.TransferRequest()


# ---- R6 kernel and composite providers

def test_R6_1_kernel_provider_validation():
    iface = interface()
    raises_exactly(TypeError, ext.KernelProvider, "interface")
    raises_exactly(TypeError, ext.KernelProvider, iface, [pattern(), "pattern"])
    raises_exactly(ValueError, ext.KernelProvider, iface, [pattern("same"), pattern("same", plans=[cap(ADD_I32)])])
    p = pattern()
    k = ext.KernelProvider(iface, iter([p]))
    assert k.interface is iface and k.patterns == (p,) and ext.KernelProvider(iface).patterns == ()


def test_R6_2_composite_provider_takes_three_callables():
    f = lambda *a: ()  # noqa: E731
    for i in range(3):
        args = [f, f, f]
        args[i] = None
        raises_exactly(TypeError, ext.CompositeProvider, *args)
    c = ext.CompositeProvider(f, f, f)
    assert c.capabilities is f and c.result_carriers is f and c.prepare is f


def dependent_class(capabilities, recorder=None):
    cls = fresh("Tiered", sw.DependentCarrier)

    def init(self, slots, reach, **kw):
        self.reach = reach
        sw.DependentCarrier.__init__(self, slots, **kw)

    cls.__init__ = init
    composite = ext.CompositeProvider(capabilities, lambda c, inv: (), lambda c, inv: ext.Unsupported("x"))
    return define(cls, recorder=recorder, composite=composite)


def test_R6_2_a_dependent_instance_freezes_its_own_sorted_reach_from_the_provider():
    seen = []

    def capabilities(carrier):
        seen.append(carrier)
        return iter(carrier.reach)

    cls, _ = dependent_class(capabilities)
    wide = cls(1, [cap(MUL), cap(ADD)], dtype=F32)
    narrow = cls(1, [cap(ADD)], dtype=F32)
    assert seen == [wide, narrow]
    assert wide.operation_capabilities() == tuple(sorted([cap(ADD), cap(MUL)]))
    assert narrow.operation_capabilities() == (cap(ADD),) and narrow.is_capability_finalized()
    assert wide.supports_operation_plan(MUL) and not narrow.supports_operation_plan(MUL)
    raises_exactly(RuntimeError, narrow.finalize_operation_capabilities)  # finalised by construction: a second one


def test_R6_2_bad_capabilities_fail_construction_and_expose_nothing():
    class Boom(Exception):
        pass

    def capabilities(carrier):
        if carrier.reach == "boom":
            raise Boom()
        return carrier.reach

    r = Recorder()
    cls, _ = dependent_class(capabilities, recorder=r)
    raises_exactly(TypeError, cls, 1, [cap(ADD), "add"], dtype=F32)
    raises_exactly(TypeError, cls, 1, 5, dtype=F32)
    raises_exactly(ValueError, cls, 1, [cap(ADD), cap(ADD)], dtype=F32)
    raises_exactly(Boom, cls, 1, "boom", dtype=F32)
    assert r.names().count("allocate") == r.names().count("release") == 4  # every failure released its storage


def test_R6_3_independent_and_dependent_definitions_own_different_providers():
    composite = ext.CompositeProvider(lambda c: (), lambda c, i: (), lambda c, i: None)
    kernels = ext.KernelProvider(interface(), [pattern()])
    storage = Recorder().provider
    raises_exactly(TypeError, ext.register_carrier_definition, fresh(),
                   ext.CarrierDefinition(storage, composite=composite))
    dependent = fresh("Dep", sw.DependentCarrier)
    raises_exactly(TypeError, ext.register_carrier_definition, dependent, ext.CarrierDefinition(storage))
    raises_exactly(TypeError, ext.register_carrier_definition, dependent,
                   ext.CarrierDefinition(storage, kernels=kernels, composite=composite))
    ext.register_carrier_definition(dependent, ext.CarrierDefinition(storage, composite=composite))


def test_R6_3_a_storage_only_class_has_no_capabilities_and_refuses_computation():
    cls, r = define()
    assert sw.capabilities_for_carrier_class(cls) == ()
    c = cls(2, dtype=F32)
    with pytest.raises(NotImplementedError):
        sw.add(compact(c, 2), compact(c, 2))


# ---- R7 sealing

def test_R7_1_a_second_definition_is_a_type_error_and_the_first_is_kept():
    first = Recorder()
    cls, _ = define(recorder=first)
    raises_exactly(TypeError, ext.register_carrier_definition, cls, ext.CarrierDefinition(Recorder().provider))
    c = cls(1, dtype=F32)
    assert c.size() == 1 and first.names()[:1] == ["supports_dtype"]


def test_R7_2_packs_register_until_the_first_capability_query():
    iface = interface()
    cls, _ = define(kernels=ext.KernelProvider(iface, [pattern("base")]))
    ext.register_kernel_pack(ext.KernelPack("acme", "1", cls, iface, [pattern("mul", plans=[cap(MUL)])]))
    assert sw.capabilities_for_carrier_class(cls) == tuple(sorted([cap(ADD), cap(MUL)]))
    late = ext.KernelPack("acme", "2", cls, iface, [pattern("i32", plans=[cap(ADD_I32)])])
    raises_exactly(TypeError, ext.register_kernel_pack, late)
    assert sw.capabilities_for_carrier_class(cls) == tuple(sorted([cap(ADD), cap(MUL)]))


def test_R7_pack_after_first_instance_is_type_error():
    iface = interface()
    cls, _ = define(kernels=ext.KernelProvider(iface, [pattern("base")]))
    cls(1, dtype=F32)
    raises_exactly(TypeError, ext.register_kernel_pack,
                   ext.KernelPack("acme", "1", cls, iface, [pattern("mul", plans=[cap(MUL)])]))
    assert sw.capabilities_for_carrier_class(cls) == (cap(ADD),)


def test_R7_2_a_definition_after_first_observation_is_a_type_error():
    cls = fresh()
    assert sw.capabilities_for_carrier_class(cls) == ()  # observes (and seals) the class
    raises_exactly(TypeError, ext.register_carrier_definition, cls, ext.CarrierDefinition(Recorder().provider))


# ---- R9 kernel execution interfaces

def test_R9_1_interface_version_is_a_non_empty_str_and_immutable():
    raises_exactly(TypeError, ext.KernelExecutionInterface, 1)
    raises_exactly(ValueError, ext.KernelExecutionInterface, "")
    iface = interface("2.1")
    assert iface.version == "2.1"
    assert iface.compatibility_identity() == (ext.KernelExecutionInterface, "2.1")
    with pytest.raises(AttributeError):
        iface.version = "3"


def test_R9_1_compatibility_is_the_exact_python_class_and_the_version():
    class Jit(ext.KernelExecutionInterface):
        def __init__(self, version, device):
            super().__init__(version)
            self.device = device

    class OtherJit(ext.KernelExecutionInterface):
        pass

    class SubJit(Jit):
        pass

    jit = Jit("1", device="gpu0")
    assert jit.compatibility_identity() == (Jit, "1") and jit.device == "gpu0"
    cls, _ = define(kernels=ext.KernelProvider(jit, [pattern("base")]))
    for mismatch in (OtherJit("1"), SubJit("1", None), Jit("2", None), ext.KernelExecutionInterface("1")):
        raises_exactly(TypeError, ext.register_kernel_pack,
                       ext.KernelPack("acme", "1", cls, mismatch, [pattern("mul", plans=[cap(MUL)])]))
    ext.register_kernel_pack(ext.KernelPack("acme", "1", cls, Jit("1", "gpu1"), [pattern("mul", plans=[cap(MUL)])]))
    assert cap(MUL) in sw.capabilities_for_carrier_class(cls)


# ---- R10 kernel packs

def test_R10_1_pack_fields_are_validated():
    iface = interface()
    cls, _ = define(kernels=ext.KernelProvider(iface, [pattern("base")]))
    p = pattern("p")
    raises_exactly(TypeError, ext.KernelPack, 1, "1", cls, iface, [p])
    raises_exactly(TypeError, ext.KernelPack, "acme", None, cls, iface, [p])
    raises_exactly(ValueError, ext.KernelPack, "", "1", cls, iface, [p])
    raises_exactly(ValueError, ext.KernelPack, "acme", "", cls, iface, [p])
    raises_exactly(TypeError, ext.KernelPack, "acme", "1", sw.Carrier, iface, [p])
    raises_exactly(TypeError, ext.KernelPack, "acme", "1", fresh("Dep", sw.DependentCarrier), iface, [p])
    raises_exactly(TypeError, ext.KernelPack, "acme", "1", cls, "iface", [p])
    raises_exactly(ValueError, ext.KernelPack, "acme", "1", cls, iface, [])
    raises_exactly(ValueError, ext.KernelPack, "acme", "1", cls, iface, [p, pattern("p", plans=[cap(MUL)])])
    pack = ext.KernelPack("acme", "1", cls, iface, (q for q in [p]))
    assert (pack.namespace, pack.version, pack.carrier_class, pack.execution_interface, pack.patterns) == (
        "acme", "1", cls, iface, (p,))


def test_R10_2_register_kernel_pack_rejects_and_a_rejected_pack_contributes_nothing():
    iface = interface()
    raises_exactly(TypeError, ext.register_kernel_pack, "pack")
    no_definition = fresh()
    raises_exactly(TypeError, ext.register_kernel_pack,
                   ext.KernelPack("acme", "1", no_definition, iface, [pattern()]))
    storage_only, _ = define()
    raises_exactly(TypeError, ext.register_kernel_pack, ext.KernelPack("acme", "1", storage_only, iface, [pattern()]))
    cls, _ = define(kernels=ext.KernelProvider(iface, [pattern("base")]))
    ext.register_kernel_pack(ext.KernelPack("acme", "1", cls, iface, [pattern("mul", plans=[cap(MUL)])]))
    raises_exactly(ValueError, ext.register_kernel_pack,
                   ext.KernelPack("acme", "1", cls, iface, [pattern("other", plans=[cap(ADD_I32)])]))
    raises_exactly(ValueError, ext.register_kernel_pack,
                   ext.KernelPack("acme", "2", cls, iface, [pattern("i32", plans=[cap(ADD_I32)]), pattern("base")]))
    assert sw.capabilities_for_carrier_class(cls) == tuple(sorted([cap(ADD), cap(MUL)]))


def test_R10_3_a_pack_attaches_to_its_exact_class_only():
    iface = interface()
    target, _ = define(kernels=ext.KernelProvider(iface, [pattern("base")]))
    sibling, _ = define(fresh("Sibling"), kernels=ext.KernelProvider(iface, [pattern("base")]))
    sub = fresh("Sub", target)
    ext.register_kernel_pack(ext.KernelPack("acme", "1", target, iface, [pattern("mul", plans=[cap(MUL)])]))
    assert cap(MUL) in sw.capabilities_for_carrier_class(target)
    assert sw.capabilities_for_carrier_class(sibling) == (cap(ADD),)
    assert sw.capabilities_for_carrier_class(sub) == ()


# ---- R11 patterns

def test_R11_1_unsupported_needs_a_non_empty_reason_and_compares_by_it():
    raises_exactly(TypeError, ext.Unsupported, 1)
    raises_exactly(ValueError, ext.Unsupported, "")
    u = ext.Unsupported("no tensor cores")
    assert u.reason == "no tensor cores" and u == ext.Unsupported("no tensor cores") and u != ext.Unsupported("x")
    assert hash(u) == hash(ext.Unsupported("no tensor cores"))
    with pytest.raises(AttributeError):
        u.reason = "x"


def test_R11_2_kernel_pattern_validation():
    prepare = lambda invocation, iface: ext.Unsupported("x")  # noqa: E731
    raises_exactly(TypeError, ext.KernelPattern, "add", [cap(ADD)], "k", prepare)
    raises_exactly(TypeError, ext.KernelPattern, ADD_DEF, [ADD], "k", prepare)  # a plan, not a capability
    raises_exactly(TypeError, ext.KernelPattern, ADD_DEF, cap(ADD), "k", prepare)  # not an iterable
    raises_exactly(ValueError, ext.KernelPattern, ADD_DEF, [], "k", prepare)
    raises_exactly(ValueError, ext.KernelPattern, ADD_DEF, [cap(ADD), cap(ADD)], "k", prepare)
    raises_exactly(ValueError, ext.KernelPattern, ADD_DEF, [cap(MUL)], "k", prepare)
    raises_exactly(ValueError, ext.KernelPattern, ADD_DEF, [cap(ADD)], "", prepare)
    raises_exactly(TypeError, ext.KernelPattern, ADD_DEF, [cap(ADD)], 1, prepare)
    raises_exactly(TypeError, ext.KernelPattern, ADD_DEF, [cap(ADD)], "k", "prepare")
    for preference in (True, 1.0, "1"):
        raises_exactly(TypeError, ext.KernelPattern, ADD_DEF, [cap(ADD)], "k", prepare, preference)
    p = ext.KernelPattern(ADD_DEF, iter([cap(ADD)]), "k", prepare, preference=-3)
    assert (p.operation, p.plans, p.kernel_id, p.prepare, p.preference) == (ADD_DEF, (cap(ADD),), "k", prepare, -3)
    assert p.operation.name == "add"


def test_R11_3_an_unmatched_plan_is_refused_before_any_prepare():
    prepared = []
    p = pattern("base", prepare=lambda inv, iface: prepared.append(inv))
    cls, r = define(kernels=ext.KernelProvider(interface(), [p]))
    c = cls(2, dtype=F32)
    t = compact(c, 2)
    del r.log[:]
    raises_exactly(sw.UnsupportedOperationPlan, sw.mul, t, t)
    assert prepared == [] and r.log == []


class Accel:
    """A definition-backed Float32 carrier class whose add kernels are written
    in Python: "fast" (preference 10) declines more than `limit` elements at
    run time; "generic" runs everything, through a completion when asked."""

    def __init__(self, limit=2, completion=False):
        self.ran = []
        fast = pattern("fast", preference=10, prepare=self.prepare("fast", limit))
        generic = pattern("generic", prepare=self.prepare("generic", None, completion))
        self.iface = interface()
        self.cls, self.recorder = define(recorder=Recorder(dtypes=(F32,)),
                                         kernels=ext.KernelProvider(self.iface, [generic, fast]))

    def tensor(self, values):
        c = self.cls(len(values), dtype=F32)
        for i, v in enumerate(values):
            c.set_value(i, v)
        return compact(c, len(values))

    def prepare(self, name, limit, completion=False):
        def prepare(invocation, iface):
            a, b = invocation.call.operands
            if limit is not None and a.size() > limit:
                return ext.Unsupported(f"more than {limit} elements")

            def submit():
                self.ran.append(name)
                out = self.cls(a.size(), dtype=F32)
                for i in range(a.size()):
                    out.set_value(i, a.carrier[a.offset + i] + b.carrier[b.offset + i])
                result = ext.ProviderResult([compact(out, a.size())])
                return Completion(result) if completion else result

            assert iface is self.iface  # the provider's own interface object (R9.2)
            return ext.PreparedKernel(iface, submit)

        return prepare


def test_R11_4_the_preferred_pattern_runs_and_a_runtime_rejection_falls_back():
    accel = Accel(limit=2)
    small, big = accel.tensor([1.0, 2.0]), accel.tensor([1.0, 2.0, 3.0])
    r = small + small
    assert type(r.carrier) is accel.cls and r.tolist() == [2.0, 4.0] and accel.ran == ["fast"]
    assert sw.add(big, big).tolist() == [2.0, 4.0, 6.0] and accel.ran == ["fast", "generic"]


def test_R4_a_submit_completion_is_waited_on_before_publication():
    accel = Accel(limit=0, completion=True)
    assert sw.add(accel.tensor([1.5]), accel.tensor([2.0])).tolist() == [3.5] and accel.ran == ["generic"]


def test_R11_5_all_candidates_unsupported_combine_every_reason_in_order():
    reasons = ["no tiles", "no workspace"]
    patterns = [pattern(f"k{i}", preference=2 - i, prepare=lambda inv, iface, why=why: ext.Unsupported(why))
                for i, why in enumerate(reasons)]
    cls, _ = define(recorder=Recorder(dtypes=(F32,)), kernels=ext.KernelProvider(interface(), patterns))
    t = compact(cls(1, dtype=F32), 1)
    message = str(raises_exactly(sw.UnsupportedOperationPlan, sw.add, t, t))
    assert 0 <= message.index("no tiles") < message.index("no workspace")


def test_R11_5_an_exception_from_prepare_is_terminal():
    reached = []

    def boom(invocation, iface):
        raise ValueError("compiler crashed")

    patterns = [pattern("boom", preference=5, prepare=boom),
                pattern("next", prepare=lambda inv, iface: reached.append(1) or ext.Unsupported("x"))]
    cls, _ = define(recorder=Recorder(dtypes=(F32,)), kernels=ext.KernelProvider(interface(), patterns))
    t = compact(cls(1, dtype=F32), 1)
    raises_exactly(ValueError, sw.add, t, t)
    assert reached == []


def test_publication_validation_names_the_field_and_publishes_nothing():
    def wrong_shape(invocation, iface):
        def submit():
            out = type(invocation.call.operands[0].carrier)(3, dtype=F32)
            return ext.ProviderResult([compact(out, 3)])
        return ext.PreparedKernel(iface, submit)

    cls, _ = define(recorder=Recorder(dtypes=(F32,)),
                    kernels=ext.KernelProvider(interface(), [pattern("bad", prepare=wrong_shape)]))
    t = compact(cls(1, dtype=F32), 1)
    version = t.carrier.version
    error = raises_exactly(sw.ProviderContractError, sw.add, t, t)
    assert error.field == "shape" and t.carrier.version == version


def test_a_user_defined_operation_runs_on_a_python_definition_backed_carrier():
    f32 = sw.DType.Float32

    def resolve(call):
        x = call.operands[0]
        p = sw.OperationPlan("pyext.double", (sw.OperandPlan(sw.OperandRole.TENSOR, f32, f32),),
                             sw.Arithmetic.BINARY32, None, None, f32)
        return sw.operation.ResolvedInvocation(call, p, [sw.ResultSpec(f32, x.shape, sw.Layout.compact(x.shape))])

    double = sw.define_operation(
        "pyext.double", sw.OperationSchema([sw.OperandSpec("x", sw.OperandKind.TENSOR)]), resolve,
        vjp=sw.NON_DIFFERENTIABLE)
    plan_ = sw.OperationCapability.from_plan(sw.OperationPlan(
        "pyext.double", (sw.OperandPlan(sw.OperandRole.TENSOR, f32, f32),), sw.Arithmetic.BINARY32, None, None, f32))

    def prepare(invocation, iface):
        (x,) = invocation.call.operands

        def submit():
            out = type(x.carrier)(x.size(), dtype=f32)
            for i in range(x.size()):
                out.set_value(i, 2 * x.carrier[x.offset + i])
            return ext.ProviderResult([compact(out, x.size())])

        return ext.PreparedKernel(iface, submit)

    cls, _ = define(recorder=Recorder(dtypes=(F32,)),
                    kernels=ext.KernelProvider(interface(), [ext.KernelPattern(double, [plan_], "k", prepare)]))
    c = cls(2, dtype=F32)
    c.set_value(1, 4.0)
    r = double(compact(c, 2))
    assert r.tolist() == [0.0, 8.0] and type(r.carrier) is cls


def test_R11_6_capabilities_are_the_deduplicated_sorted_union_of_built_in_and_pack_plans():
    iface = interface()
    built_in = [pattern("a", plans=[cap(ADD), cap(ADD_I32)]), pattern("b", plans=[cap(ADD)], preference=5),
                pattern("m", plans=[cap(MUL)])]
    cls, _ = define(kernels=ext.KernelProvider(iface, built_in))
    ext.register_kernel_pack(ext.KernelPack("z", "1", cls, iface, [pattern("c", plans=[cap(ADD_I32), cap(ADD)])]))
    ext.register_kernel_pack(ext.KernelPack("y", "1", cls, iface, [pattern("d", plans=[cap(MUL)], preference=9)]))
    caps = sw.capabilities_for_carrier_class(cls)
    assert caps == tuple(sorted({cap(ADD), cap(MUL), cap(ADD_I32)})) and len(caps) == 3
    assert cls(1, dtype=F32).operation_capabilities("add") == tuple(sorted([cap(ADD), cap(ADD_I32)]))


# ---- R12 facets

def test_R12_2_facets_are_found_by_exact_type_only():
    class Residency(ext.CarrierFacet):
        def __init__(self, tier):
            self.tier = tier

    class Fancier(Residency):
        pass

    class Unused(ext.CarrierFacet):
        pass

    residency = Residency("hbm")
    cls, _ = define(facets=[residency])
    c = cls(1, dtype=F32)
    assert c.facet(Residency) is residency and c.require_facet(Residency) is residency
    assert c.facet(Fancier) is None and c.facet(Unused) is None
    error = raises_exactly(NotImplementedError, c.require_facet, Unused)
    assert "Unused" in str(error)
    for bad in (int, residency, "Residency", None):
        raises_exactly(TypeError, c.facet, bad)
        raises_exactly(TypeError, c.require_facet, bad)
    plain = sw.Generic([1.0], dtype=F32)
    assert plain.facet(Residency) is None
    raises_exactly(NotImplementedError, plain.require_facet, Residency)


# ---- R13 definition-free carriers keep their path

def test_R13_1_a_definition_backed_class_rejects_manual_capability_declaration():
    cls, _ = define()
    raises_exactly(TypeError, sw.register_operation_capabilities, cls, [cap(ADD)])


def test_R13_1_a_class_without_hooks_or_definition_says_how_to_become_either():
    bare = fresh("Bare")
    error = raises_exactly(TypeError, bare, 1, dtype=F32)
    assert "register_carrier_definition" in str(error) and "_read_slot" in str(error)


def test_R13_2_shipped_classes_reject_packs():
    iface = interface()
    for shipped in (sw.Generic, sw.CPU):
        raises_exactly(TypeError, ext.register_kernel_pack, ext.KernelPack("acme", "1", shipped, iface, [pattern()]))


def test_R11_2_a_patterns_prepare_receives_the_resolved_invocation_and_the_providers_interface():
    # The pipeline calls the Python prepare with the call's ResolvedInvocation
    # (its operands are the caller's tensors) and the provider's own
    # interface object; what prepare returns decides what runs.
    seen = []
    iface = interface()

    def prepare(invocation, given):
        seen.append((invocation, given))
        return ext.Unsupported("recorded only")

    cls, _ = define(recorder=Recorder(dtypes=(F32,)),
                    kernels=ext.KernelProvider(iface, [pattern("probe", prepare=prepare)]))
    c = cls(2, dtype=F32)
    x = compact(c, 2)
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.add, x, x)
    assert "recorded only" in str(error)
    ((invocation, given),) = seen
    assert isinstance(invocation, sw.operation.ResolvedInvocation) and given is iface
    assert invocation.operation == "add" and invocation.call.operands[0] is x


# ---- explain(): one call, step by step (issue 11 step 8; docs/cli.md)

def test_explain_lists_candidates_in_preference_order_with_reasons_and_what_ran():
    accel = Accel(limit=2)
    big = accel.tensor([1.0, 2.0, 3.0])
    e = sw.explain(ADD_DEF, big, big)
    assert e.error_type is None and e.route == "kernel patterns"
    assert [(c.kernel_id, c.outcome, c.reason) for c in e.candidates] == [
        ("fast", "declined", "more than 2 elements"), ("generic", "ran", "")]
    assert e.ran == "generic" and e.outputs[0].tolist() == [2.0, 4.0, 6.0]
    assert e.plan == ADD and e.admitted_by.to_plan() == ADD and e.carrier == accel.cls.__name__
    assert "candidate:  fast (built-in, preference 10): declined: more than 2 elements" in str(e)
    with pytest.raises(AttributeError):
        e.route = "x"


def test_explain_records_the_failing_step_instead_of_raising():
    e = sw.explain(ADD_DEF, sw.tensor([True]), sw.tensor([True]))
    assert e.error_type == "NotImplementedError" and e.plan is None and e.outputs == ()
    assert e.bound_call.startswith("add(a=tensor bool")
    cpu = sw.explain(ADD_DEF, sw.tensor([1.0]), sw.tensor([2.0]))
    assert cpu.route == "kernel table" and cpu.candidates == () and cpu.outputs[0].tolist() == [3.0]
