"""The file formats people have (issue 13, item 4; item 7's progress;
docs/storage.md, "File formats"): .npy round trips with numpy's own np.save
and np.load, a safetensors file built byte by byte here (no `safetensors`
package), zero-copy loading into FileBacked (the tensor's file is the user's
file), atomic saves, typed errors for bad headers."""

import json
import os
import struct

import numpy as np
import pytest

import strideweave as sw


def c_order(t):
    """The tensor's values as nested lists, axis 0 outermost (numpy's tolist())."""
    return t.tolist()


def safetensors_bytes(entries, data, metadata=None):
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    header.update(entries)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize("dtype", ["<f4", "<i4", "|b1"])
def test_numpy_saves_strideweave_loads(tmp_path, dtype):
    """Loading reads np.save's files (C and Fortran order) into CPU."""
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    for order, name in ((a, "c.npy"), (np.asfortranarray(a), "f.npy")):
        np.save(tmp_path / name, order)
        t = sw.load_npy(tmp_path / name)
        assert t.carrier_type() is sw.CPU
        assert t.shape == sw.Shape(3, 4)
        assert c_order(t) == a.tolist()


def test_fortran_order_is_a_transposed_layout_without_copy(tmp_path):
    a = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.save(tmp_path / "f.npy", a)
    t = sw.load_npy(tmp_path / "f.npy", carrier=sw.FileBacked)
    assert t.layout == sw.Layout.compact(sw.Shape(2, 3))  # first axis fastest: numpy's Fortran order
    assert c_order(t) == a.tolist()
    assert t.at(1, 0) == 3.0


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_strideweave_saves_numpy_loads(tmp_path, dtype):
    a = (np.arange(10).reshape(2, 5) % 2).astype(dtype)
    sw.save_npy(tmp_path / "s.npy", sw.asarray(a))
    back = np.load(tmp_path / "s.npy")
    assert back.dtype == a.dtype
    assert np.array_equal(back, a)


def test_save_of_a_view_writes_c_order(tmp_path):
    base = sw.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    view = base.permute(1, 0)
    sw.save_npy(tmp_path / "v.npy", view)
    assert np.load(tmp_path / "v.npy").tolist() == np.arange(6, dtype=np.float32).reshape(2, 3).T.tolist()


def test_zero_copy_load_maps_the_users_file(tmp_path):
    """FileBacked loading maps the user's file: its path is the file, it does
    not own it, it is read-only, and a change to the file shows through."""
    a = np.arange(4, dtype=np.int32)
    path = tmp_path / "z.npy"
    np.save(path, a)
    t = sw.load_npy(path, carrier=sw.FileBacked)
    c = t.carrier
    assert isinstance(c, sw.FileBacked)
    assert c.path == path
    assert not c.owns_file
    assert not c.is_mutable()
    offset = sw.inspect_file(path)["tensors"][0]["data_offset"]
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack("<i", 42))
    assert t.at(0) == 42
    c.release()
    assert path.exists()


def test_mutable_load_writes_reach_the_file(tmp_path):
    path = tmp_path / "m.npy"
    np.save(path, np.zeros(3, dtype=np.float32))
    t = sw.load_npy(path, carrier=sw.FileBacked, mutable=True)
    t.set((1,), 2.5)
    t.carrier.flush()
    assert np.load(path).tolist() == [0.0, 2.5, 0.0]


def test_hand_written_safetensors_file(tmp_path):
    path = tmp_path / "h.safetensors"
    data = struct.pack("<4f", 1, 2, 3, 4) + struct.pack("<2i", -7, 8) + bytes([1, 0, 1])
    path.write_bytes(safetensors_bytes({
        "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "b": {"dtype": "I32", "shape": [2], "data_offsets": [16, 24]},
        "m": {"dtype": "BOOL", "shape": [3], "data_offsets": [24, 27]},
    }, data, metadata={"format": "pt"}))
    ts = sw.load_safetensors(path)
    assert sorted(ts) == ["b", "m", "w"]
    assert c_order(ts["w"]) == [[1.0, 2.0], [3.0, 4.0]]
    assert c_order(ts["b"]) == [-7, 8]
    assert c_order(ts["m"]) == [True, False, True]
    header = sw.inspect_file(path)
    assert header["format"] == "safetensors"
    assert header["metadata"] == {"format": "pt"}
    assert [t["name"] for t in header["tensors"]] == ["w", "b", "m"]
    assert header["tensors"][1]["dtype"] is sw.DType.Int32
    # FileBacked maps the two 4-byte tensors of the user's file; the bool is refused.
    with pytest.raises(ValueError, match="FileBacked does not store"):
        sw.load_safetensors(path, carrier=sw.FileBacked)


def test_safetensors_round_trip_bytes_match_a_hand_built_file(tmp_path):
    path = tmp_path / "r.safetensors"
    sw.save_safetensors(path, {"x": sw.asarray(np.array([1.5, 2.5], dtype=np.float32))}, metadata={"k": "v"})
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header == {"__metadata__": {"k": "v"}, "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    assert raw[8 + n:] == struct.pack("<2f", 1.5, 2.5)
    t = sw.load_safetensors(path, carrier=sw.FileBacked)["x"]
    assert t.carrier.path == path and not t.carrier.owns_file
    assert c_order(t) == [1.5, 2.5]


def test_bad_headers_are_value_errors_naming_the_problem(tmp_path):
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPX\x01\x00")
    with pytest.raises(ValueError, match="wrong magic"):
        sw.load_npy(tmp_path / "bad.npy")
    np.save(tmp_path / "f8.npy", np.zeros(2))
    with pytest.raises(ValueError, match="unsupported dtype '<f8'"):
        sw.load_npy(tmp_path / "f8.npy")
    overlap = safetensors_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                 "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12))
    with pytest.raises(ValueError, match="overlap"):
        sw.parse_safetensors_header(overlap)
    with pytest.raises(ValueError, match="truncated"):
        sw.parse_npy_header(b"\x93NUMPY")


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        sw.load_npy(tmp_path / "nope.npy")


def test_save_is_atomic_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.ones(2, dtype=np.float32))

    def cancel(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sw.save_npy(path, sw.asarray(np.zeros(100, dtype=np.float32)), progress=cancel, progress_threshold_bytes=0)
    assert np.load(path).tolist() == [1.0, 1.0]
    assert os.listdir(tmp_path) == ["a.npy"]


def test_progress_over_the_threshold(tmp_path):
    calls = []
    t = sw.asarray(np.zeros(10000, dtype=np.float32))
    sw.save_safetensors(tmp_path / "p.safetensors", {"t": t}, progress=lambda d, n: calls.append((d, n)),
                        progress_threshold_bytes=1000)
    size = (tmp_path / "p.safetensors").stat().st_size
    assert calls and calls[-1] == (size, size)
    assert calls == sorted(calls)
    calls.clear()
    sw.save_npy(tmp_path / "q.npy", t, progress=lambda d, n: calls.append((d, n)))  # default 64 MiB threshold
    assert calls == []


def test_argument_types():
    with pytest.raises(TypeError):
        sw.load_npy("x.npy", carrier=sw.Generic)
    with pytest.raises(TypeError):
        sw.save_safetensors("x.safetensors", [("a", sw.asarray(np.zeros(1, dtype=np.float32)))])
    with pytest.raises(TypeError):
        sw.parse_npy_header("not bytes")
