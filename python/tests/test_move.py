"""Movement through the Python package (core-concepts.md 7; interop-movement
requirements and scenarios by name; carrier-extension.md R5; docs/storage.md,
"Movement"). Registries are process-wide: tests that register make fresh
carrier classes."""

import array
import threading

import pytest

import strideweave as sw
from strideweave.carriers import extension as ext
from strideweave.carriers.move import (
    dispatch_move,
    register_move_operation,
    registered_move_operation,
    unregister_move_operation,
)

from conftest import F32, I32, join_bounded, make_carrier_class, raises_exactly


def file(size=0):
    return sw.FileBacked(dtype=F32, size=size)


# ---------------------------------------------------------------- move relocates values


def test_move_and_release_the_source():
    x = sw.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    dest = file(6)
    v0 = dest.version
    y = sw.move(x, dest)
    assert y.carrier is dest and y.offset == 0 and y.layout == x.layout
    assert y.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert x.carrier.is_released()
    raises_exactly(RuntimeError, x.values)
    assert dest.version == v0 + 1


def test_allocate_an_empty_destination():
    dest = file()
    assert dest.size() == 0
    y = sw.move(sw.tensor([1.0, 2.0, 3.0]), dest)
    assert dest.size() == 3 and y.tolist() == [1.0, 2.0, 3.0]
    assert dest.path.stat().st_size == 12


def test_move_a_broadcast_view_without_materializing_it():
    x = sw.tensor([7.0, 8.0]).broadcast_to(sw.Shape(3, 2))
    assert x.layout.cosize == 2
    dest = file()
    y = sw.move(x, dest)
    assert dest.size() == 2 and y.layout == x.layout
    assert y.tolist() == [[7.0, 8.0]] * 3


def test_reject_an_unusable_destination_before_copying():
    x = sw.tensor([1.0, 2.0, 3.0])
    released = sw.CPU(3)
    released.release()
    raises_exactly(RuntimeError, sw.move, x, released)
    immutable = sw.CPU(3, mutable=False)
    raises_exactly(RuntimeError, sw.move, x, immutable)
    raises_exactly(TypeError, sw.move, x, sw.CPU(3, dtype=I32))
    raises_exactly(ValueError, sw.move, x, x.carrier)
    small = sw.CPU(2)
    raises_exactly(ValueError, sw.move, x, small)
    assert small.version == 0 and [small[i] for i in range(2)] == [0.0, 0.0]
    assert not x.carrier.is_released() and x.tolist() == [1.0, 2.0, 3.0]


# ---------------------------------------------------------------- the ordered checks


def test_check_not_a_tensor_is_type_error():
    raises_exactly(TypeError, sw.move, [1.0], sw.CPU(1))


def test_check_source_released_is_runtime_error():
    x = sw.tensor([1.0])
    x.carrier.release()
    raises_exactly(RuntimeError, sw.move, x, sw.CPU(1))


def test_check_destination_not_a_carrier_is_type_error():
    raises_exactly(TypeError, sw.move, sw.tensor([1.0]), object(), match="Carrier instance")


def test_check_destination_is_the_own_carrier_is_value_error():
    x = sw.tensor([1.0])
    raises_exactly(ValueError, sw.move, x, x.carrier)


def test_check_destination_released_is_runtime_error():
    d = sw.CPU(1)
    d.release()
    raises_exactly(RuntimeError, sw.move, sw.tensor([1.0]), d, match="destination")


def test_check_destination_not_mutable_is_runtime_error():
    raises_exactly(RuntimeError, sw.move, sw.tensor([1.0]), sw.CPU(1, mutable=False))


def test_check_dtype_differs_is_type_error():
    raises_exactly(TypeError, sw.move, sw.tensor([1.0]), sw.CPU(1, dtype=I32))


def test_check_pinned_class_mismatch_is_type_error():
    Source = make_carrier_class("PinnedSource")

    class PinnedToCpu(sw.MoveOperation):
        source_class = sw.CPU

        def _copy(self, tensor, destination, output, element_count):
            raise AssertionError("must not run")

    with registered_move_operation(Source, sw.CPU, PinnedToCpu):
        c = Source([1.0, 2.0])
        x = sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(2)))
        raises_exactly(TypeError, sw.move, x, sw.CPU(2), match="PinnedToCpu requires a CPU source")
        assert not c.is_released()


def test_check_too_small_is_value_error():
    raises_exactly(ValueError, sw.move, sw.tensor([1.0, 2.0]), sw.CPU(1))


def test_the_earlier_check_wins_when_two_fail():
    x = sw.tensor([1.0])
    x.carrier.release()
    raises_exactly(RuntimeError, sw.move, x, object())  # source released before "not a Carrier"
    raises_exactly(TypeError, sw.move, "x", object())  # not a Tensor first
    raises_exactly(RuntimeError, sw.move, sw.tensor([1.0]), sw.CPU(1, mutable=False, dtype=I32))
    raises_exactly(TypeError, sw.move, sw.tensor([1.0, 2.0]), sw.CPU(1, dtype=I32))


# ---------------------------------------------------------------- dispatch and registration


def test_select_a_registered_bulk_operation():
    assert dispatch_move(sw.CPU, sw.FileBacked) is sw.CpuToFileBackedMoveOperation
    assert dispatch_move(sw.FileBacked, sw.CPU) is sw.FileBackedToCpuMoveOperation
    assert sw.CpuToFileBackedMoveOperation.source_class is sw.CPU


def test_fall_back_for_an_unregistered_pair():
    assert dispatch_move(sw.CPU, sw.CPU) is sw.ElementwiseMoveOperation
    assert sw.move(sw.tensor([1.0, 2.0]), sw.CPU(2)).tolist() == [1.0, 2.0]


def test_do_not_inherit_a_registration():
    Parent = make_carrier_class("Parent")
    Child = type("Child", (Parent,), {})

    class Copy(sw.MoveOperation):
        def _copy(self, tensor, destination, output, element_count):
            for k in range(element_count):
                destination[k] = tensor.carrier[tensor.offset + k]

    with registered_move_operation(Parent, sw.CPU, Copy):
        assert dispatch_move(Parent, sw.CPU) is Copy
        assert dispatch_move(Child, sw.CPU) is sw.ElementwiseMoveOperation


def test_refuse_to_overwrite_a_registration():
    Source = make_carrier_class("Twice")
    with registered_move_operation(Source, sw.CPU, sw.ElementwiseMoveOperation):
        with pytest.raises(ValueError, match="Twice"):
            register_move_operation(Source, sw.CPU, sw.MoveOperation)
        assert dispatch_move(Source, sw.CPU) is sw.ElementwiseMoveOperation
    raises_exactly(ValueError, register_move_operation, sw.CPU, sw.FileBacked, sw.CpuToFileBackedMoveOperation)
    assert dispatch_move(sw.CPU, sw.FileBacked) is sw.CpuToFileBackedMoveOperation


def test_remove_a_registration():
    Source = make_carrier_class("Removed")
    assert register_move_operation(Source, sw.CPU, sw.ElementwiseMoveOperation) is None
    assert unregister_move_operation(Source, sw.CPU) is sw.ElementwiseMoveOperation
    raises_exactly(KeyError, unregister_move_operation, Source, sw.CPU)


def test_scope_a_registration_to_a_block():
    Source = make_carrier_class("Scoped")
    with pytest.raises(ZeroDivisionError):
        with registered_move_operation(Source, sw.CPU, sw.ElementwiseMoveOperation) as op:
            assert op is sw.ElementwiseMoveOperation
            1 / 0
    raises_exactly(KeyError, unregister_move_operation, Source, sw.CPU)


def test_non_conforming_registration_arguments_are_type_errors():
    Source = make_carrier_class("Bad")
    raises_exactly(TypeError, register_move_operation, int, sw.CPU, sw.ElementwiseMoveOperation)
    raises_exactly(TypeError, register_move_operation, Source, sw.Carrier, sw.ElementwiseMoveOperation)
    raises_exactly(TypeError, register_move_operation, Source, sw.CPU, object)
    raises_exactly(TypeError, register_move_operation, Source, sw.CPU, sw.ElementwiseMoveOperation())
    assert dispatch_move(Source, sw.CPU) is sw.ElementwiseMoveOperation


def test_run_a_custom_copy():
    Source = make_carrier_class("Custom")
    seen = []

    class Copy(sw.MoveOperation):
        def _copy(self, tensor, destination, output, element_count):
            seen.append(element_count)
            for k in range(element_count):
                destination[k] = tensor.carrier[tensor.offset + k]

    with registered_move_operation(Source, sw.CPU, Copy):
        c = Source([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        x = sw.Tensor(c, 1, sw.Layout(sw.Shape(3), sw.Stride(2)))  # 1 3 5, cosize 5
        y = sw.move(x, sw.CPU(5))
    assert seen == [5]
    assert y.tolist() == [1.0, 3.0, 5.0]
    assert c.is_released()


def test_move_names_are_where_the_specification_puts_them():
    import strideweave.carriers.move as m

    for name in ("move", "MoveOperation", "ElementwiseMoveOperation", "CpuToFileBackedMoveOperation",
                 "FileBackedToCpuMoveOperation"):
        assert getattr(sw, name) is getattr(m, name)
    for name in ("dispatch_move", "register_move_operation", "unregister_move_operation", "registered_move_operation"):
        assert callable(getattr(m, name))


# ---------------------------------------------------------------- autograd


def test_move_a_gradient_back_to_the_source_carrier_class():
    x = sw.tensor([1.0, 2.0, 3.0])
    y = sw.move(x, file())
    assert y.grad_fn.name == "move"
    cot = sw.Tensor(file(3), 0, sw.Layout.compact(sw.Shape(3)))
    for k, v in enumerate([10.0, 20.0, 30.0]):
        cot.carrier[k] = v
    (g,) = y.grad_fn.backward(cot)
    assert type(g.carrier) is sw.CPU and g.is_leaf and g.autograd_ctx is None  # detached
    assert g.tolist() == [10.0, 20.0, 30.0]
    y.backward(cot)
    assert type(x.grad.carrier) is sw.CPU and x.grad.tolist() == [10.0, 20.0, 30.0]


def test_reject_a_non_injective_cotangent():
    x = sw.tensor([1.0, 2.0, 3.0])
    y = sw.move(x, file())
    stride_zero = sw.Tensor(file(1), 0, sw.Layout(sw.Shape(3), sw.Stride(0)))
    raises_exactly(ValueError, y.grad_fn.backward, stride_zero, match="injective gradient layout is required")
    raises_exactly(TypeError, y.grad_fn.backward, [1.0, 2.0, 3.0])


# ---------------------------------------------------------------- transaction, progress, async


def test_progress_is_reported_per_window_above_the_threshold():
    seen = []
    sw.move(sw.tensor([float(i) for i in range(1000)]), file(), window_bytes=400, progress_threshold_bytes=4000,
            progress=lambda done, total: seen.append((done, total)))
    assert seen == [(400 * (k + 1), 4000) for k in range(10)]
    seen.clear()
    sw.move(sw.tensor([float(i) for i in range(1000)]), file(), window_bytes=400, progress_threshold_bytes=4001,
            progress=lambda done, total: seen.append((done, total)))
    assert seen == []


def test_a_progress_callback_that_raises_rolls_the_move_back():
    x = sw.tensor([float(i) for i in range(100)])
    dest = file()

    def cancel(done, total):
        if done >= 120:
            raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):
        sw.move(x, dest, window_bytes=40, progress_threshold_bytes=0, progress=cancel)
    assert dest.size() == 0 and dest.version == 0
    assert not x.carrier.is_released() and x.values() == [float(i) for i in range(100)]


def test_move_async_returns_an_await_move_that_is_idempotent_across_threads():
    x = sw.tensor([1.0, 2.0])
    pending = sw.move_async(x, file())
    assert isinstance(pending, sw.AwaitMove) and not isinstance(pending, sw.Tensor)
    results = []
    threads = [threading.Thread(target=lambda: results.append(pending.wait())) for _ in range(4)]
    for t in threads:
        t.start()
    join_bounded(threads, "the threads waiting on one AwaitMove")
    assert pending.done is True
    assert len(results) == 4 and all(r.tolist() == [1.0, 2.0] for r in results)
    assert x.carrier.is_released()


def test_streaming_a_file_in_slices_through_move_async_sums_like_the_whole(tmp_path):
    # docs/storage.md, "Streaming a large file": slices of one file opened
    # with FileBacked.open(offset=, size=), four move_async in flight (each
    # slice's interior is over 1 MiB: the asynchronous O_DIRECT route where
    # the file system allows it), each landed slice reduced while the next
    # ones read; the slices' sums add up to the whole file's.
    header = 12
    n = 5 * (1 << 19) + 777  # five 2 MiB slices and a ragged last one
    values = [float(i % 8) * 0.25 for i in range(n)]
    path = tmp_path / "stream.f32"
    path.write_bytes(b"h" * header + array.array("f", values).tobytes())

    def on_file(offset, size):
        carrier = sw.FileBacked.open(path, dtype=F32, offset=offset, size=size)
        return sw.Tensor(carrier, 0, sw.Layout.compact(sw.Shape(size)))

    whole = sw.move(on_file(header, n), sw.CPU(n))
    expected = sw.reduce_sum(whole).item()
    assert expected == sum(values)  # quarters, every partial sum below 2**22: exact in float32

    slice_slots = 1 << 19
    starts = list(range(0, n, slice_slots))
    pending = []
    total = 0.0
    sources = []
    for start in starts:
        size = min(slice_slots, n - start)
        source = on_file(header + 4 * start, size)
        sources.append(source)
        pending.append(sw.move_async(source, sw.CPU(size)))
        if len(pending) == 4:
            total += sw.reduce_sum(pending.pop(0).wait()).item()
    while pending:
        total += sw.reduce_sum(pending.pop(0).wait()).item()
    assert total == pytest.approx(expected, rel=1e-5)
    assert all(source.carrier.is_released() for source in sources)
    assert path.stat().st_size == header + 4 * n  # the user's file, never resized


# ---------------------------------------------------------------- definition-backed routes


class ArenaStorage:
    def __init__(self, fallback):
        self.provider = ext.StorageProvider(
            lambda c, d: d is F32, lambda c: len(c.slots_), self.allocate, self.release, lambda c, i: c.slots_[i],
            self.write, elementwise_fallback=fallback)

    def allocate(self, carrier, slots):
        carrier.slots_ = [0.0] * slots

    def release(self, carrier):
        carrier.slots_ = []

    def write(self, carrier, index, value):
        carrier.slots_[index] = value


def test_a_transfer_route_for_the_exact_pair_runs():
    Arena = type("ArenaR", (sw.Carrier,), {})
    calls = []

    def prepare(request):
        calls.append(request.physical_span)
        tensor, destination = request.tensor, request.destination

        def submit():
            for k in range(request.physical_span):
                destination[k] = tensor.carrier[tensor.offset + k]
            return None

        return ext.PreparedTransfer(submit)

    route = ext.TransferRoute(Arena, sw.CPU, "arena-to-cpu", ext.TransferProvider(prepare))
    ext.register_carrier_definition(Arena, ext.CarrierDefinition(ArenaStorage(False).provider, transfers=[route]))
    a = Arena(3, dtype=F32)
    for k, v in enumerate([1.0, 2.0, 3.0]):
        a[k] = v
    y = sw.move(sw.Tensor(a, 0, sw.Layout.compact(sw.Shape(3))), sw.CPU(3))
    assert calls == [3] and y.tolist() == [1.0, 2.0, 3.0] and a.is_released()
    raises_exactly(RuntimeError, register_move_operation, Arena, sw.Generic, sw.ElementwiseMoveOperation)
    # No route to Generic and no fallback permitted: NotImplementedError, nothing changed.
    b = Arena(1, dtype=F32)
    raises_exactly(NotImplementedError, sw.move, sw.Tensor(b, 0, sw.Layout.compact(sw.Shape(1))), sw.Generic([0.0], dtype=F32))
    assert not b.is_released()


def test_unsupported_falls_back_only_when_both_definitions_permit():
    Permits = type("ArenaPermits", (sw.Carrier,), {})
    unsupported = ext.TransferProvider(lambda request: ext.Unsupported("not today"))
    ext.register_carrier_definition(Permits, ext.CarrierDefinition(
        ArenaStorage(True).provider, transfers=[ext.TransferRoute(Permits, sw.CPU, "r", unsupported)]))
    a = Permits(2, dtype=F32)
    a[0], a[1] = 5.0, 6.0
    assert sw.move(sw.Tensor(a, 0, sw.Layout.compact(sw.Shape(2))), sw.CPU(2)).tolist() == [5.0, 6.0]

    Refuses = type("ArenaRefuses", (sw.Carrier,), {})
    ext.register_carrier_definition(Refuses, ext.CarrierDefinition(
        ArenaStorage(False).provider, transfers=[ext.TransferRoute(Refuses, sw.CPU, "r", unsupported)]))
    b = Refuses(2, dtype=F32)
    raises_exactly(NotImplementedError, sw.move, sw.Tensor(b, 0, sw.Layout.compact(sw.Shape(2))), sw.CPU(2),
                   match="not today")
    assert not b.is_released()


def test_a_move_operation_without_copy_is_not_implemented_and_changes_nothing():
    Source = make_carrier_class("NoCopy")

    class NoCopy(sw.MoveOperation):
        pass

    class ReturnsSomething(sw.MoveOperation):
        def _copy(self, tensor, destination, output, element_count):
            return 1

    c = Source([1.0])
    x = sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(1)))
    dest = sw.CPU(1)
    with registered_move_operation(Source, sw.CPU, NoCopy):
        raises_exactly(NotImplementedError, sw.move, x, dest, match="NoCopy._copy")
    with registered_move_operation(Source, sw.CPU, ReturnsSomething):
        raises_exactly(TypeError, sw.move, x, dest, match="must return None")
    assert not c.is_released() and dest.version == 0


# ---------------------------------------------------------------- one dispatcher (issue 20, step 4)


def test_one_move_dispatcher_describes_the_route_of_each_exact_pair():
    from strideweave.carriers.move import MoveRouteInfo, describe_move_route

    cpu = sw.CPU(4)
    same = describe_move_route(cpu, sw.CPU(4))
    assert isinstance(same, MoveRouteInfo)
    assert (same.kind, same.name, same.copy) == ("elementwise_fallback", "ElementwiseMoveOperation", "host_memory")
    assert describe_move_route(cpu, sw.Generic([0.0] * 4, dtype=F32)).copy == "ranges"
    to_file = describe_move_route(cpu, sw.FileBacked(dtype=F32))
    assert (to_file.kind, to_file.name, to_file.copy) == ("move_operation", "CpuToFileBackedMoveOperation", "route")
    raises_exactly(TypeError, describe_move_route, cpu, object())
    raises_exactly(TypeError, describe_move_route, [1.0], cpu)


def test_a_definition_backed_pair_takes_the_sources_route_or_the_permitted_fallback_through_ranges():
    from strideweave.carriers.move import describe_move_route

    # A device-like class: its provider writes runs (one bulk call per run)
    # and permits the elementwise fallback; its one route starts at it
    # (carrier-extension R2.3).
    Device = type("DeviceRanges", (sw.Carrier,), {})
    runs, downloads = [], []

    def write_range(carrier, first, values):
        runs.append((first, len(values)))
        carrier.slots_[first:first + len(values)] = list(values)

    def prepare(request):
        tensor, destination = request.tensor, request.destination

        def submit():
            downloads.append(request.physical_span)
            for k in range(request.physical_span):
                destination[k] = tensor.carrier[tensor.offset + k]

        return ext.PreparedTransfer(submit)

    storage = ArenaStorage(True).provider
    provider = ext.StorageProvider(
        lambda c, d: d is F32, lambda c: len(c.slots_), storage.allocate, storage.release, lambda c, i: c.slots_[i],
        lambda c, i, v: c.slots_.__setitem__(i, v), elementwise_fallback=True,
        read_range=lambda c, first, count: c.slots_[first:first + count], write_range=write_range)
    route = ext.TransferRoute(Device, sw.CPU, "download", ext.TransferProvider(prepare))
    ext.register_carrier_definition(Device, ext.CarrierDefinition(provider, transfers=[route]))
    d = Device(3, dtype=F32)
    up = describe_move_route(sw.CPU(3), d)
    assert (up.kind, up.name, up.copy) == ("elementwise_fallback", "ElementwiseMoveOperation", "ranges")
    y = sw.move(sw.tensor([1.0, 2.0, 3.0]), d)
    assert runs == [(0, 3)] and d.slots_ == [1.0, 2.0, 3.0] and d.version == 1 and y.carrier is d
    down = describe_move_route(d, sw.CPU(3))
    assert (down.kind, down.name, down.copy) == ("transfer_route", "download", "route")
    assert sw.move(y, sw.CPU(3)).tolist() == [1.0, 2.0, 3.0] and downloads == [3] and d.is_released()
