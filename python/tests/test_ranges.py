"""Storage in ranges (issue 20, step 2; docs/storage.md "Ranges",
docs/extension.md "Ranges"): Carrier.read_values / write_values /
copy_range, StorageProvider's optional range callbacks, and CPU's native
accumulation. Test names carry the requirement."""

import array
import math

import pytest

import strideweave as sw
from strideweave.carriers import extension as ext
from conftest import F32, I32, plan, raises_exactly

INT32_MAX = 2**31 - 1


def cpu(values, dtype=F32):
    """A fresh CPU carrier holding values (version 0)."""
    return sw.tensor(values, dtype=dtype).carrier


class SlotOnly(sw.Carrier):
    """A Python carrier with per-slot hooks only; fail_at counts down writes."""

    def __init__(self, values, dtype=F32):
        self.values_, self.writes, self.fail_at = list(values), 0, None
        super().__init__(dtype=dtype)

    def supports_storage_dtype(self, dtype):
        return dtype is F32 or dtype is I32

    def _storage_size(self):
        return len(self.values_)

    def _read_slot(self, index):
        return self.values_[index]

    def _write_slot(self, index, value):
        if self.fail_at == 0:
            self.fail_at = None
            raise OSError(5, "injected write failure")
        if self.fail_at is not None:
            self.fail_at -= 1
        self.writes += 1
        self.values_[index] = value

    def _release_storage(self):
        self.values_ = []


def test_range_operations_read_write_and_copy_a_run_with_one_version_step():
    for c in (cpu([0.0] * 5), sw.Generic([0.0] * 5, dtype=F32), SlotOnly([0.0] * 5)):
        c.write_values(1, [1.0, 2.0, 3.0])
        assert c.version == 1
        assert c.read_values(0, 5) == [0.0, 1.0, 2.0, 3.0, 0.0]
        assert c.version == 1  # a read is not a mutation
        src = sw.Generic([7.0, 8.0], dtype=F32)
        c.copy_range(src, 0, 3, 2)
        assert c.read_values(0, 5) == [0.0, 1.0, 2.0, 7.0, 8.0] and c.version == 2 and src.version == 0
        c.copy_range(c, 0, 1, 4)  # overlapping: as if the source were read first
        assert c.read_values(0, 5) == [0.0, 0.0, 1.0, 2.0, 7.0]


def test_range_operations_check_everything_before_writing():
    c = cpu([1.0, 2.0, 3.0])
    raises_exactly(ValueError, c.read_values, 0, -1)
    raises_exactly(IndexError, c.read_values, 2, 2)
    raises_exactly(IndexError, c.write_values, 2, [1.0, 2.0])
    raises_exactly(TypeError, c.write_values, 0, ["x"])
    raises_exactly(TypeError, c.copy_range, cpu([1, 2], dtype=I32), 0, 0, 1)
    raises_exactly(TypeError, c.copy_range, [1.0], 0, 0, 1)
    raises_exactly(IndexError, c.copy_range, c, 2, 0, 2)
    assert c.version == 0 and c.read_values(0, 3) == [1.0, 2.0, 3.0]
    frozen = sw.CPU(2, mutable=False)
    raises_exactly(RuntimeError, frozen.write_values, 0, [1.0])
    raises_exactly(RuntimeError, frozen.copy_range, c, 0, 0, 1)
    gone = cpu([1.0])
    gone.release()
    raises_exactly(RuntimeError, gone.read_values, 0, 1)
    raises_exactly(RuntimeError, c.copy_range, gone, 0, 0, 1)


def test_a_range_write_that_fails_midway_publishes_nothing_and_keeps_the_version():
    c = SlotOnly([0.0, 1.0, 2.0, 3.0])
    c.fail_at = 2
    with pytest.raises(OSError):
        c.write_values(0, [10.0, 11.0, 12.0])
    assert c.values_ == [0.0, 1.0, 2.0, 3.0] and c.version == 0
    c.fail_at = 1
    with pytest.raises(OSError):
        c.copy_range(cpu([5.0, 6.0, 7.0]), 0, 1, 3)
    assert c.values_ == [0.0, 1.0, 2.0, 3.0] and c.version == 0


class RangeRecorder:
    """A list-backed StorageProvider that counts per-slot and range calls."""

    def __init__(self, ranges=True, host=False, byte_runs=False):
        self.calls = {"read": 0, "write": 0, "read_range": 0, "write_range": 0, "host_data": 0, "read_bytes": 0,
                      "write_bytes": 0}
        kw = {}
        if ranges:
            kw.update(read_range=self.read_range, write_range=self.write_range)
        if host:
            kw.update(host_data=self.host_data)
        if byte_runs:
            kw.update(read_bytes=self.read_bytes, write_bytes=self.write_bytes)
        self.provider = ext.StorageProvider(self.supports, self.size, self.allocate, self.release, self.read,
                                            self.write, True, **kw)

    def supports(self, carrier, dtype):
        return dtype is F32

    def size(self, carrier):
        return len(carrier.slots_)

    def allocate(self, carrier, slots):
        carrier.slots_ = array.array("f", [0.0] * slots)

    def release(self, carrier):
        carrier.slots_ = array.array("f")

    def read(self, carrier, index):
        self.calls["read"] += 1
        return carrier.slots_[index]

    def write(self, carrier, index, value):
        self.calls["write"] += 1
        carrier.slots_[index] = value

    def read_range(self, carrier, first, count):
        self.calls["read_range"] += 1
        return list(carrier.slots_[first:first + count])

    def write_range(self, carrier, first, values):
        self.calls["write_range"] += 1
        carrier.slots_[first:first + len(values)] = array.array("f", values)

    def host_data(self, carrier):
        self.calls["host_data"] += 1
        return carrier.slots_

    def read_bytes(self, carrier, first, count):
        self.calls["read_bytes"] += 1
        return carrier.slots_[first:first + count].tobytes()

    def write_bytes(self, carrier, first, data):
        self.calls["write_bytes"] += 1
        run = array.array("f")
        run.frombytes(data)
        carrier.slots_[first:first + len(run)] = run


def define(recorder):
    cls = type("Ranged", (sw.Carrier,), {})
    ext.register_carrier_definition(cls, ext.CarrierDefinition(recorder.provider))
    return cls


def test_provider_range_callbacks_are_used_instead_of_the_per_slot_ones():
    r = RangeRecorder()
    assert r.provider.read_range == r.read_range and r.provider.write_range == r.write_range
    assert r.provider.host_data is None
    cls = define(r)
    c = cls(6, dtype=F32)
    c.write_values(0, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    assert c.read_values(2, 3) == [2.0, 3.0, 4.0]
    t = sw.Tensor(c, 0, sw.Layout(sw.Shape(2, 2), sw.Stride(1, 3)))
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0]]
    moved = sw.move(sw.tensor([9.0, 8.0, 7.0]), cls(3, dtype=F32))
    assert moved.tolist() == [9.0, 8.0, 7.0]
    assert r.calls["read"] == 0 and r.calls["write"] == 0
    assert r.calls["read_range"] > 0 and r.calls["write_range"] > 0


def test_provider_host_data_makes_runs_memory_copies():
    r = RangeRecorder(ranges=False, host=True)
    cls = define(r)
    c = cls(4, dtype=F32)
    c.write_values(0, [1.0, 2.0, 3.0, 4.0])
    assert list(c.slots_) == [1.0, 2.0, 3.0, 4.0]
    out = sw.CPU(4)
    out.copy_range(c, 0, 0, 4)
    assert out.read_values(0, 4) == [1.0, 2.0, 3.0, 4.0]
    assert r.calls["read"] == 0 and r.calls["write"] == 0 and r.calls["host_data"] > 0


def test_provider_byte_callbacks_carry_moves_and_byte_runs_without_values():
    # A device's bulk copy to and from host memory: moves between CPU and the
    # class, read_bytes and write_bytes go through the byte callbacks, one
    # call per run, never per slot or through Values.
    r = RangeRecorder(byte_runs=True)
    assert r.provider.read_bytes == r.read_bytes and r.provider.write_bytes == r.write_bytes
    cls = define(r)
    moved = sw.move(sw.tensor([9.0, 8.0, 7.0, 6.0]), cls(4, dtype=F32))
    assert list(moved.carrier.slots_) == [9.0, 8.0, 7.0, 6.0]
    # one run written; the destination's before-image is one run read
    assert r.calls["write_bytes"] == 1 and r.calls["read_bytes"] == 1
    back = sw.move(moved, sw.CPU(4))
    assert back.tolist() == [9.0, 8.0, 7.0, 6.0]
    assert r.calls["read_bytes"] == 2
    c = cls(3, dtype=F32)
    c.write_bytes(1, array.array("f", [5.0, 6.0]).tobytes())
    assert c.read_bytes(0, 3) == array.array("f", [0.0, 5.0, 6.0]).tobytes()
    assert r.calls["read"] == 0 and r.calls["write"] == 0
    assert r.calls["read_range"] == 0 and r.calls["write_range"] == 0


def test_provider_byte_callbacks_are_checked():
    r = RangeRecorder(byte_runs=True)
    cls = define(r)
    c = cls(2, dtype=F32)
    bad = ext.StorageProvider(r.supports, r.size, r.allocate, r.release, r.read, r.write, True,
                              read_bytes=lambda carrier, first, count: b"\x00")
    bad_cls = type("BadBytes", (sw.Carrier,), {})
    ext.register_carrier_definition(bad_cls, ext.CarrierDefinition(bad))
    with pytest.raises(ValueError, match="bytes"):
        bad_cls(2, dtype=F32).read_bytes(0, 2)
    with pytest.raises(TypeError):
        ext.StorageProvider(r.supports, r.size, r.allocate, r.release, r.read, r.write, True, write_bytes=3)
    assert c.read_values(0, 2) == [0.0, 0.0]


def test_a_provider_without_range_callbacks_keeps_working_per_slot():
    r = RangeRecorder(ranges=False)
    cls = define(r)
    c = cls(3, dtype=F32)
    c.write_values(1, [5.0, 6.0])
    assert c.read_values(0, 3) == [0.0, 5.0, 6.0]
    assert r.calls["write"] == 2 and r.calls["read"] >= 3 and r.calls["read_range"] == 0


def test_storage_provider_range_callbacks_must_be_callable_or_none():
    r = RangeRecorder(ranges=False)
    fns = (r.supports, r.size, r.allocate, r.release, r.read, r.write)
    for field in ("read_range", "write_range", "host_data"):
        raises_exactly(TypeError, ext.StorageProvider, *fns, **{field: 3})


def test_cpu_accumulation_is_native_and_counts_no_fallback_copy():
    add = sw.OperationCapability.from_plan(plan("add", F32, F32))
    assert sw.execution_axes(sw.CPU, add).accumulation is sw.SupportLevel.Native
    before = sw.fallback_copy_count(sw.CPU, sw.ExecutionAxis.accumulation)
    out = sw.tensor([10.0, 20.0, 30.0])
    with sw.no_grad():
        assert sw.add(sw.tensor([1.0, 2.0, 3.0]), sw.tensor([0.5, 0.5, 0.5]), out=sw.accumulate_into(out)) is out
    assert out.tolist() == [11.5, 22.5, 33.5]
    assert sw.fallback_copy_count(sw.CPU, sw.ExecutionAxis.accumulation) == before


def test_cpu_int32_accumulation_overflow_raises_and_leaves_out_unchanged():
    out = sw.tensor([0, INT32_MAX - 1, 5])
    version = out.carrier.version
    with sw.no_grad():
        with pytest.raises(OverflowError, match=r"accumulating into the Int32 output: element 1"):
            sw.add(sw.tensor([1, 2, 3]), sw.tensor([1, 1, 1]), out=sw.accumulate_into(out))
    assert out.tolist() == [0, INT32_MAX - 1, 5] and out.carrier.version == version


def test_cpu_native_accumulation_matches_generic_fallback_bit_for_bit():
    xs = [1e30, -0.0, math.nan, math.inf, 3.5, -2.0, 0.1]
    ys = [1e30, 0.0, 1.0, -math.inf, math.nan, 0.3, 0.2]
    old = [-math.inf, -0.0, 2.0, 1.0, 1.0, math.nan, 0.3]
    for op in (sw.add, sw.sub, sw.mul, sw.div):
        results = []
        for make in (lambda v: sw.Tensor(cpu(v), 0, sw.Layout.compact(sw.Shape(len(v)))),
                     lambda v: sw.Tensor(sw.Generic(v, dtype=F32), 0, sw.Layout.compact(sw.Shape(len(v))))):
            out = make(old)
            with sw.no_grad():
                op(make(xs), make(ys), out=sw.accumulate_into(out))
            results.append(array.array("f", out.carrier.read_values(0, len(old))).tobytes())
        assert results[0] == results[1], op


# ---- bytes (docs/storage.md, "Bytes")


def test_bytes_read_and_write_runs_in_the_host_representation():
    want = array.array("f", [1.5, -2.0, 3.25])
    for c in (cpu([0.0] * 5), sw.Generic([0.0] * 5, dtype=F32), sw.FileBacked(dtype=F32, size=5),
              SlotOnly([0.0] * 5)):
        assert c.element_bytes() == 4
        c.write_bytes(1, want)  # any C-contiguous bytes-like object
        assert c.version == 1
        got = c.read_bytes(1, 3)
        assert isinstance(got, bytes) and array.array("f", got) == want
        assert c.read_values(0, 5) == [0.0, 1.5, -2.0, 3.25, 0.0] and c.version == 1
    ints = cpu([0, 0], dtype=I32)
    ints.write_bytes(0, array.array("i", [-7, 9]).tobytes())
    assert ints.read_values(0, 2) == [-7, 9]
    flags = sw.Generic([False, False], dtype=sw.DType.Bool)
    assert flags.element_bytes() == 1
    flags.write_bytes(1, b"\x01")
    assert flags.read_values(0, 2) == [False, True]


def test_bytes_check_everything_before_writing():
    c = cpu([1.0, 2.0, 3.0])
    raises_exactly(ValueError, c.write_bytes, 0, b"\x00" * 6)  # not whole elements
    raises_exactly(IndexError, c.write_bytes, 2, b"\x00" * 8)
    raises_exactly(ValueError, c.read_bytes, 0, -1)
    raises_exactly(IndexError, c.read_bytes, 2, 2)
    raises_exactly(TypeError, c.write_bytes, 0, [1.0])  # not bytes-like
    raises_exactly(TypeError, c.write_bytes, 0, memoryview(bytes(16))[::2])  # not contiguous
    assert c.version == 0 and c.read_values(0, 3) == [1.0, 2.0, 3.0]
    flags = sw.Generic([False], dtype=sw.DType.Bool)
    raises_exactly(ValueError, flags.write_bytes, 0, b"\x02")
    raises_exactly(RuntimeError, sw.CPU(2, mutable=False).write_bytes, 0, bytes(4))
    gone = cpu([1.0])
    gone.release()
    raises_exactly(RuntimeError, gone.read_bytes, 0, 1)


def test_bytes_a_write_that_fails_midway_publishes_nothing():
    c = SlotOnly([1.0, 2.0, 3.0])
    c.fail_at = 1
    with pytest.raises(OSError):
        c.write_bytes(0, array.array("f", [7.0, 8.0, 9.0]))
    assert c.read_values(0, 3) == [1.0, 2.0, 3.0] and c.version == 0


def test_bool_bytes_from_a_byte_hook_are_normalised():
    # A Bool slot's host representation is one byte 0 or 1; a class's byte
    # hook may hand back any non-zero byte for true (review finding, issue
    # 23: uninitialised device memory), which the framework normalises.
    B = sw.DType.Bool
    provider = ext.StorageProvider(
        lambda c, d: d is B, lambda c: len(c.slots_), lambda c, n: setattr(c, "slots_", bytearray(n)),
        lambda c: setattr(c, "slots_", bytearray()), lambda c, i: bool(c.slots_[i]),
        lambda c, i, v: c.slots_.__setitem__(i, int(v)), True,
        read_bytes=lambda c, first, count: b"\x02" * count)
    cls = type("TwoIsTrue", (sw.Carrier,), {})
    ext.register_carrier_definition(cls, ext.CarrierDefinition(provider))
    c = cls(3, dtype=B)
    assert c.read_bytes(0, 3) == b"\x01\x01\x01"
    moved = sw.move(sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(3))), sw.CPU(3, dtype=B))
    assert moved.tolist() == [True, True, True]


def test_byte_callbacks_serve_value_runs_when_a_provider_gives_no_value_range_callbacks():
    # A device provider needs only the byte pair: values(), read_values and
    # write_values go through it, converted on the host, one call per run.
    r = RangeRecorder(ranges=False, byte_runs=True)
    cls = define(r)
    c = cls(4, dtype=F32)
    c.write_values(1, [5.0, 6.0, 7.0])
    assert c.read_values(0, 4) == [0.0, 5.0, 6.0, 7.0]
    assert sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(4))).tolist() == [0.0, 5.0, 6.0, 7.0]
    assert r.calls["read"] == 0 and r.calls["write"] == 0
    assert r.calls["read_bytes"] >= 2 and r.calls["write_bytes"] >= 1
