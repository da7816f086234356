"""FileBacked through the Python package (core-concepts.md 1.2-1.8, 2.1, 8.4;
backend-capabilities.md "Shipped carrier declarations are complete and
sealed"; docs/storage.md). The C++ suite (tests/carriers/test_filebacked.cpp)
covers fault injection; here: the Python spellings, error classes and the
binding's argument checks."""

import os
import pathlib
import stat

import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, raises_exactly


def resident_bytes_of(path):
    """This process's resident bytes in the mappings of `path` (the Rss lines
    of /proc/self/smaps)."""
    total, inside, name = 0, False, str(path)
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            first = line.split(" ", 1)[0]
            if "-" in first and all(c in "0123456789abcdef-" for c in first):
                inside = line.rstrip("\n").endswith(name)
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1]) * 1024
    return total


def test_8_4_constructor_signature_and_private_directory():
    c = sw.FileBacked(dtype=F32, size=3)
    assert isinstance(c.path, pathlib.Path) and c.path.parent == sw.FileBacked.session_directory()
    assert c.owns_file and c.size() == 3 and c.dtype() is F32
    assert [c[i] for i in range(3)] == [0.0, 0.0, 0.0]
    assert stat.S_IMODE(os.stat(c.path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(c.path).st_mode) == 0o600
    assert c.path.stat().st_size == 12
    named = sw.FileBacked("py-weights.bin", dtype=I32, size=2)
    assert named.path.name == "py-weights.bin"
    assert sw.carriers.FileBacked is sw.FileBacked
    raises_exactly(TypeError, sw.FileBacked, dtype=F32, size=1.5)
    raises_exactly(TypeError, sw.FileBacked, pathlib.Path("x.bin"), dtype=F32)
    raises_exactly(TypeError, sw.FileBacked, dtype="float32")
    with pytest.raises(TypeError):
        sw.FileBacked(size=1)  # dtype is required


def test_8_4_path_components_are_a_value_error():
    before = set(os.listdir(sw.FileBacked.session_directory()))
    for name in ("a/b", "../x.bin", "/abs.bin", ".", "..", ""):
        raises_exactly(ValueError, sw.FileBacked, name, dtype=F32)
    assert set(os.listdir(sw.FileBacked.session_directory())) <= before  # nothing new (others may have gone)


def test_8_4_existing_name_is_file_exists_error_and_untouched():
    taken = sw.FileBacked.session_directory() / "py-taken.bin"
    taken.write_bytes(b"keep me")
    try:
        e = raises_exactly(FileExistsError, sw.FileBacked, "py-taken.bin", dtype=I32, size=4)
        assert isinstance(e, OSError) and e.filename == str(taken) and e.offset is None
        assert taken.read_bytes() == b"keep me"
    finally:
        taken.unlink()


def test_1_2_storage_dtypes_are_float32_and_int32():
    raises_exactly(ValueError, sw.FileBacked, dtype=BOOL)
    raises_exactly(ValueError, sw.FileBacked, dtype=sw.DType.Float64)
    c = sw.FileBacked(dtype=I32)
    assert [c.supports_storage_dtype(d) for d in (F32, I32, BOOL)] == [True, True, False]


def test_1_1_and_2_1_access_errors_and_versions():
    c = sw.FileBacked(dtype=I32, size=2)
    c[0] = 5
    c.set_value(1, -3)
    assert (c[0], c[1], c.version) == (5, -3, 2)
    assert c.path.read_bytes() == (5).to_bytes(4, "little", signed=True) + (-3).to_bytes(4, "little", signed=True)
    raises_exactly(IndexError, c.get_value, 2)
    raises_exactly(TypeError, c.set_value, 0, 1.5)
    raises_exactly(OverflowError, c.set_value, 0, 2**31)
    assert c.version == 2
    frozen = sw.FileBacked(dtype=F32, size=1, mutable=False)
    raises_exactly(RuntimeError, frozen.set_value, 0, 1.0)


def test_1_6_release_removes_the_file_idempotently():
    c = sw.FileBacked(dtype=F32, size=4)
    path = c.path
    c.release()
    c.release()
    assert c.is_released() and not path.exists()
    raises_exactly(RuntimeError, c.get_value, 0)
    assert c.dtype() is F32
    fresh = c.new_like([1.0, 2.0])
    assert [fresh[0], fresh[1]] == [1.0, 2.0]


def test_1_4_new_like_and_allocate_like_are_fresh_filebacked():
    proto = sw.FileBacked(dtype=F32, residency_bytes=1 << 16)
    made = proto.new_like([1, 2], dtype=I32)
    assert type(made) is sw.FileBacked and made.dtype() is I32 and [made[0], made[1]] == [1, 2]
    assert made.path != proto.path and made.residency_bytes == 1 << 16
    zeroed = proto.allocate_like(5, empty=True)
    assert type(zeroed) is sw.FileBacked and [zeroed[i] for i in range(5)] == [0.0] * 5
    raises_exactly(ValueError, proto.allocate_like, 1, dtype=BOOL)


def test_8_4_storage_only_sealed_empty_and_dispatch_not_implemented():
    assert sw.capabilities_for_carrier_class(sw.FileBacked) == ()
    c = sw.FileBacked(dtype=F32, size=2)
    assert c.operation_capabilities() == ()
    raises_exactly(TypeError, sw.register_operation_capabilities, sw.FileBacked, [])
    t = sw.Tensor(c, 0, sw.Layout(sw.Shape(2), sw.Stride(1)))
    with pytest.raises(NotImplementedError) as info:
        sw.add(t, t)
    assert type(info.value) is sw.UnsupportedOperationPlan


def test_1_7_carrier_scatter_is_not_implemented():
    c = sw.FileBacked(dtype=F32, size=4)
    src = sw.Tensor(c.new_like([1.0, 2.0]), 0, sw.Layout(sw.Shape(2), sw.Stride(1)))
    onto = sw.Tensor(c, 0, sw.Layout(sw.Shape(4), sw.Stride(1)))
    raises_exactly(NotImplementedError, c.scatter, src, onto, sw.Layout(sw.Shape(2), sw.Stride(1)))
    assert c.version == 0 and c[0] == 0.0


def test_1_8_closed_to_subclassing():
    with pytest.raises(TypeError):
        type("Sub", (sw.FileBacked,), {})


def test_storage_open_maps_an_existing_file_read_only_and_keeps_it(tmp_path):
    path = tmp_path / "data.bin"
    payload = b"HDR!" + b"".join(v.to_bytes(4, "little", signed=True) for v in (10, 20, 30))
    path.write_bytes(payload)
    c = sw.FileBacked.open(path, dtype=I32, offset=4)
    assert not c.owns_file and c.path == path and c.size() == 3 and c[2] == 30
    raises_exactly(RuntimeError, c.set_value, 0, 1)
    c.release()
    assert path.read_bytes() == payload
    w = sw.FileBacked.open(str(path), dtype=I32, offset=4, size=1, mutable=True)
    w[0] = 11
    w.flush()
    del w
    assert path.read_bytes()[4:8] == (11).to_bytes(4, "little", signed=True)
    raises_exactly(ValueError, sw.FileBacked.open, path, dtype=I32, offset=2)
    raises_exactly(ValueError, sw.FileBacked.open, path, dtype=I32, size=100)
    e = raises_exactly(FileNotFoundError, sw.FileBacked.open, tmp_path / "missing.bin", dtype=F32)
    assert e.filename == str(tmp_path / "missing.bin")


def test_storage_residency_of_a_file_larger_than_the_window():
    window = 64 << 10
    slots = (2 << 20) // 4  # a 2 MiB file
    c = sw.FileBacked(dtype=I32, size=slots, residency_bytes=window)
    peak = 0
    for k in range(0, slots, 64):  # one write per 256 bytes: every page of the file
        c[k] = k
        if k % (window // 4) == 0:
            peak = max(peak, resident_bytes_of(c.path))
    assert all(c[k] == k for k in range(0, slots, 64))
    peak = max(peak, resident_bytes_of(c.path))
    assert 0 < peak <= window + (64 << 10)  # one window, plus the kernel's read fault-around
