"""BlockDevice and BlockDeviceCarrier through the Python package
(core-concepts.md 1.1-1.8, 2.1, 8.5; backend-capabilities.md "Shipped carrier
declarations are complete and sealed"; docs/storage.md "BlockDeviceCarrier",
"Checksums"), and FileBacked's optional window checksums. The C++ suite
(tests/carriers/test_block_device.cpp) covers fault injection at every call
site; here: the Python spellings, error classes and corruption of the image
behind the carrier's back.

Images live in the build tree, on disk: tmpfs (where /tmp may be) has no
O_DIRECT."""

import errno
import os
import pathlib

import numpy as np
import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, raises_exactly

BLOCK = sw.BlockDevice.block_bytes
PER_BLOCK = sw.BlockDevice.slots_per_block


@pytest.fixture
def image(request):
    directory = pathlib.Path(sw.__file__).resolve().parents[2] / "block_device_images"
    directory.mkdir(exist_ok=True)
    path = directory / f"py-{request.node.name}-{os.getpid()}.img"
    path.unlink(missing_ok=True)
    yield path
    path.unlink(missing_ok=True)


def corrupt(path, offset, data=b"\x01\x02\x03\x04"):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset)
        os.fsync(fd)
    finally:
        os.close(fd)


def test_8_5_allocate_is_the_only_way_to_make_a_carrier(image):
    device = sw.BlockDevice(image, size=8 * BLOCK)
    assert device.path == image and device.capacity_bytes == 8 * BLOCK and not device.checksums
    c = device.allocate(PER_BLOCK + 3)
    assert type(c) is sw.BlockDeviceCarrier and isinstance(c, sw.Carrier)
    assert c.size() == PER_BLOCK + 3 and c.dtype() is F32 and c.is_mutable()
    assert c.extent_bytes == 2 * BLOCK and c.padded_size == 2 * PER_BLOCK and c.device.path == image
    assert [c[0], c[PER_BLOCK + 2]] == [0.0, 0.0]
    assert device.free_bytes == 6 * BLOCK
    raises_exactly(TypeError, sw.BlockDeviceCarrier)  # direct construction
    with pytest.raises(TypeError):
        class Sub(sw.BlockDeviceCarrier):  # closed to subclassing
            pass
    assert not device.allocate(1, mutable=False).is_mutable()


def test_8_5_storage_only_and_not_an_evictable_tier(image):
    c = sw.BlockDevice(image, size=4 * BLOCK).allocate(2)
    assert c.operation_capabilities() == ()
    assert not c.can_be_evictable_tier()
    assert sw.CPU(2).can_be_evictable_tier()
    t = sw.Tensor(c, 0, sw.Layout(sw.Shape(2), sw.Stride(1)))
    raises_exactly(sw.UnsupportedOperationPlan, sw.add, t, t)
    assert issubclass(sw.UnsupportedOperationPlan, NotImplementedError)
    assert c.version == 0


def test_1_3_float32_only(image):
    device = sw.BlockDevice(image, size=4 * BLOCK)
    for dtype in (I32, BOOL, sw.DType.Float64):
        raises_exactly(ValueError, device.allocate, 2, dtype=dtype)
    raises_exactly(TypeError, device.allocate, 2, dtype="float32")
    assert device.free_bytes == 4 * BLOCK
    c = device.allocate(1)
    assert c.supports_storage_dtype(F32) and not c.supports_storage_dtype(I32)


def test_1_1_and_2_1_indexed_access_and_versions(image):
    device = sw.BlockDevice(image, size=4 * BLOCK)
    c = device.allocate(2 * PER_BLOCK)
    c[0] = 1.5
    c.set_value(PER_BLOCK, -2.0)
    assert c[0] == 1.5 and c.get_value(PER_BLOCK) == -2.0 and c.version == 2
    raises_exactly(IndexError, c.get_value, 2 * PER_BLOCK)
    raises_exactly(TypeError, c.get_value, 1.0)
    frozen = device.allocate(1, mutable=False)
    raises_exactly(RuntimeError, frozen.set_value, 0, 1.0)
    assert frozen.version == 0
    # The value is on the image, at the extent's offset.
    with open(image, "rb") as f:
        f.seek(c.extent_offset)
        assert np.frombuffer(f.read(4), dtype=np.float32)[0] == 1.5


def test_1_6_release_gives_the_extent_back(image):
    device = sw.BlockDevice(image, size=2 * BLOCK)
    c = device.allocate(2 * PER_BLOCK)
    raises_exactly(MemoryError, device.allocate, 1)  # the image is full
    raises_exactly(ValueError, device.allocate, 3 * PER_BLOCK)  # more than the whole image
    c[7] = 3.0
    c.release()
    assert c.is_released() and device.free_bytes == 2 * BLOCK
    raises_exactly(RuntimeError, c.get_value, 0)
    again = device.allocate(PER_BLOCK)
    assert again[7] == 0.0  # reused and zeroed


def test_bulk_aligned_transfers(image):
    c = sw.BlockDevice(image, size=8 * BLOCK).allocate(3 * PER_BLOCK)
    values = np.arange(2 * PER_BLOCK, dtype=np.float32)
    c.write_aligned(PER_BLOCK, values)
    assert c.version == 1
    assert np.array_equal(c.read_aligned(PER_BLOCK, 2 * PER_BLOCK), values)
    pending = c.read_aligned_async(0, PER_BLOCK)
    first = pending.wait()
    assert pending.done() and np.array_equal(pending.wait(), first) and not first.any()
    done = c.write_aligned_async(0, np.ones(PER_BLOCK, dtype=np.float32))
    assert done.wait() is None and c.version == 2 and c[5] == 1.0
    raises_exactly(ValueError, c.read_aligned, 1, PER_BLOCK)
    raises_exactly(ValueError, c.write_aligned, 0, np.ones(3, dtype=np.float32))


def test_provider_completion_R4_1_block_io_wait_returns_the_same_array_every_time(image):
    c = sw.BlockDevice(image, size=2 * BLOCK).allocate(PER_BLOCK)
    c.write_aligned(0, np.full(PER_BLOCK, 2.5, dtype=np.float32))
    pending = c.read_aligned_async(0, PER_BLOCK)
    first = pending.wait()
    assert pending.wait() is first and pending.wait() is first and first[7] == 2.5


def test_opening(image):
    raises_exactly(FileNotFoundError, sw.BlockDevice, image)
    raises_exactly(ValueError, sw.BlockDevice, image, size=100)
    device = sw.BlockDevice(image, size=4 * BLOCK)
    raises_exactly(FileExistsError, sw.BlockDevice, image, size=4 * BLOCK)
    error = raises_exactly(BlockingIOError, sw.BlockDevice, image)  # locked by `device`
    assert error.errno == errno.EWOULDBLOCK and error.filename == str(image)
    del device
    assert sw.BlockDevice(image).capacity_bytes == 4 * BLOCK


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_a_file_system_without_direct_io_is_named():
    path = pathlib.Path("/dev/shm") / f"strideweave-{os.getpid()}.img"
    try:
        device = sw.BlockDevice(path, size=4 * BLOCK)
    except OSError as e:
        assert e.errno == errno.EINVAL and "does not support direct I/O" in str(e)
        assert not path.exists()
    else:  # /dev/shm is not tmpfs here
        del device
    finally:
        path.unlink(missing_ok=True)


def test_checksums_catch_a_block_changed_behind_the_device(image):
    device = sw.BlockDevice(image, size=4 * BLOCK, checksums=True)
    c = device.allocate(2 * PER_BLOCK)
    c[PER_BLOCK + 1] = 5.0
    corrupt(image, c.extent_offset + BLOCK + 4)
    assert c[0] == 0.0  # the other block verifies
    error = raises_exactly(OSError, c.get_value, PER_BLOCK + 1)
    assert error.errno == errno.EBADMSG and error.filename == str(image)
    assert error.offset == c.extent_offset + BLOCK and "checksum mismatch" in str(error)
    raises_exactly(OSError, c.read_aligned, 0, 2 * PER_BLOCK)
    raises_exactly(OSError, c.set_value, PER_BLOCK, 1.0)
    assert c.version == 1


def test_file_backed_window_checksums(tmp_path):
    window = 4096
    c = sw.FileBacked(dtype=F32, size=4 * window // 4, residency_bytes=window, checksums=True)
    assert c.checksums
    c[0] = 2.0
    c[window // 4] = 3.0  # moves the window: region 0's hash is recorded
    corrupt(c.path, 8)  # region 0, behind the carrier's back
    error = raises_exactly(OSError, c.get_value, 0)
    assert error.errno == errno.EBADMSG and error.filename == str(c.path) and error.offset == 0
    assert c[window // 4] == 3.0  # other regions are unaffected
    plain = sw.FileBacked(dtype=F32, size=2 * window // 4, residency_bytes=window)
    assert not plain.checksums
    plain[1] = 1.0
    plain[window // 4] = 1.0
    corrupt(plain.path, 4, np.float32(9.0).tobytes())
    assert plain[1] == 9.0  # without checksums the change is read as a value


# ---------------------------------------------------------------- the CPU <-> BlockDeviceCarrier move routes
# (interop-movement "Move dispatches on the exact carrier class pair", "Move
# relocates values and releases the source"; docs/storage.md "Movement").
# The C++ suite (tests/carriers/test_block_device_move.cpp) injects EIO,
# ENOSPC and short transfers and holds the I/O in flight; here: the Python
# spellings, a checksum failure and progress.


def test_move_routes_are_the_built_in_bulk_operations():
    from strideweave.carriers.move import dispatch_move

    assert dispatch_move(sw.CPU, sw.BlockDeviceCarrier) is sw.CpuToBlockDeviceMoveOperation
    assert dispatch_move(sw.BlockDeviceCarrier, sw.CPU) is sw.BlockDeviceToCpuMoveOperation
    assert sw.CpuToBlockDeviceMoveOperation.source_class is sw.CPU
    assert sw.CpuToBlockDeviceMoveOperation.destination_class is sw.BlockDeviceCarrier
    assert sw.BlockDeviceToCpuMoveOperation.source_class is sw.BlockDeviceCarrier
    assert sw.BlockDeviceToCpuMoveOperation().name == "BlockDeviceToCpuMoveOperation"


def test_move_to_the_device_and_back_with_progress_per_window(image):
    device = sw.BlockDevice(image, size=16 * BLOCK)
    n = 3 * PER_BLOCK + 5
    values = [float(i) for i in range(n)]
    x = sw.tensor(values)
    dest = device.allocate(n)
    v0 = dest.version
    seen = []
    pending = sw.move_async(x, dest, window_bytes=BLOCK, progress_threshold_bytes=1,
                            progress=lambda done, total: seen.append((done, total)))
    y = pending.wait()
    assert pending.done and y.carrier is dest and x.carrier.is_released()
    assert dest.version == v0 + 1
    assert dest.read_aligned(0, 4 * PER_BLOCK)[:n].tolist() == values
    assert [d for d, _ in seen] == [BLOCK, 2 * BLOCK, 3 * BLOCK, n * 4]
    assert all(t == n * 4 for _, t in seen)
    back = sw.move(y, sw.CPU(n))
    assert back.tolist() == values and dest.is_released()


def test_a_failed_move_from_the_device_leaves_both_carriers_as_they_were(image):
    device = sw.BlockDevice(image, size=16 * BLOCK, checksums=True)
    src = device.allocate(2 * PER_BLOCK)
    on_device = sw.move(sw.tensor([1.0] * (2 * PER_BLOCK)), src)
    corrupt(image, src.extent_offset + BLOCK + 8)  # behind the device's back
    out = sw.CPU(2 * PER_BLOCK)
    out[0] = 7.0
    versions = (src.version, out.version)
    error = raises_exactly(OSError, sw.move, on_device, out, window_bytes=BLOCK)
    assert error.errno == errno.EBADMSG and error.filename == str(image)
    assert error.offset == src.extent_offset + BLOCK
    assert not src.is_released() and (src.version, out.version) == versions
    assert out[0] == 7.0 and out[PER_BLOCK] == 0.0  # the first window's copy was rolled back
