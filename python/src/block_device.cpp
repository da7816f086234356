// BlockDevice and BlockDeviceCarrier (core-concepts.md 8.5; docs/storage.md,
// "BlockDeviceCarrier"): BlockDevice(path, *, size=None, checksums=False),
// its allocate(), the carrier's extent and its bulk aligned transfers (numpy
// float32 arrays in and out), and BlockIoCompletion. BlockDeviceCarrier has
// no constructor: calling the class is pybind11's TypeError.
#include "bindings.h"

#include <pybind11/numpy.h>

#include <fmt/format.h>

#include <cstring>

namespace strideweave::python {
namespace {

// An asynchronous transfer as Python sees it: the completion and the
// aligned staging buffer it reads into or writes from.
struct PyBlockIo {
  BlockIoCompletion completion;
  std::shared_ptr<AlignedFloats> buffer;
  std::int64_t slots = 0;
  bool write = false;
  // The array the first successful wait() of a read returned: every later
  // wait() returns that same object (guarded by the GIL).
  py::object read_result = py::object();
};

// A float32 array of `slots` copied out of an aligned buffer.
py::array_t<float> array_of(const float* data, std::int64_t slots) {
  py::array_t<float> out(static_cast<py::ssize_t>(slots));
  if (slots > 0) std::memcpy(out.mutable_data(), data, static_cast<std::size_t>(slots) * sizeof(float));
  return out;
}

PyBlockIo start_read(const BlockDeviceCarrier& c, std::int64_t first, std::int64_t slots) {
  if (slots < 0) throw ValueError(fmt::format("BlockDeviceCarrier.read_aligned: count must be >= 0, got {}", slots));
  auto buffer = std::make_shared<AlignedFloats>(BlockDevice::aligned_buffer(slots));
  py::gil_scoped_release nogil;
  BlockIoCompletion done = c.read_aligned_async(first, std::span<float>(buffer->get(), static_cast<std::size_t>(slots)));
  return PyBlockIo{std::move(done), std::move(buffer), slots, false};
}

PyBlockIo start_write(BlockDeviceCarrier& c, std::int64_t first, py::handle values) {
  auto array = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(values);
  if (!array) throw TypeError("BlockDeviceCarrier.write_aligned: values must convert to a float32 array");
  if (array.ndim() != 1)
    throw ValueError(fmt::format("BlockDeviceCarrier.write_aligned: values must be one-dimensional, got {} "
                                 "dimensions",
                                 array.ndim()));
  const auto slots = static_cast<std::int64_t>(array.size());
  auto buffer = std::make_shared<AlignedFloats>(BlockDevice::aligned_buffer(slots));
  if (slots > 0) std::memcpy(buffer->get(), array.data(), static_cast<std::size_t>(slots) * sizeof(float));
  py::gil_scoped_release nogil;
  BlockIoCompletion done =
      c.write_aligned_async(first, std::span<const float>(buffer->get(), static_cast<std::size_t>(slots)));
  return PyBlockIo{std::move(done), std::move(buffer), slots, true};
}

py::object finish(PyBlockIo& io) {
  if (io.read_result) return io.read_result;
  {
    py::gil_scoped_release nogil;
    io.completion.wait();
  }
  if (io.write) return py::none();
  if (!io.read_result) io.read_result = array_of(io.buffer->get(), io.slots);
  return io.read_result;
}

}  // namespace

void bind_block_device(py::module_& m) {
  py::class_<PyBlockIo>(m, "BlockIoCompletion", R"doc(
The completion of an asynchronous bulk transfer of a BlockDeviceCarrier.
done() never blocks; wait() blocks, and is thread-safe and idempotent: it
returns the same result (the float32 array read, or None for a write) or
raises the same OSError every time.)doc")
      .def("done", [](const PyBlockIo& io) {
             py::gil_scoped_release nogil;
             return io.completion.done();
           }, "True once the transfer finished (successfully or not).")
      .def("wait", &finish, "Blocks until the transfer finished: the array read, None for a write, or the OSError.");

  py::class_<BlockDevice, std::shared_ptr<BlockDevice>>(m, "BlockDevice", py::is_final(), R"doc(
BlockDevice(path, *, size=None, checksums=False): a device image (a regular
file or a block device) opened with O_DIRECT, locked for this device
(flock), with one io_uring submission queue shared by all its carriers and
threads. size=None opens an existing image (its whole 4096-byte blocks are
the capacity); size=N creates a new file of N bytes (a multiple of 4096;
FileExistsError when the path exists), which is yours and never deleted.
checksums=True records an xxHash per block written and verifies every block
read (OSError with errno EBADMSG naming the image and offset on a
mismatch). An image on a file system without direct I/O (tmpfs) is an
OSError (EINVAL) saying so. allocate() makes the carriers.)doc")
      .def(py::init([](py::handle path, py::handle size, py::handle checksums) {
             const std::string p = py::str(py::module_::import("os").attr("fsdecode")(path));
             std::optional<std::int64_t> bytes;
             if (!size.is_none()) bytes = integer_arg(size, "BlockDevice: size");
             const bool sums = bool_arg(checksums, "BlockDevice: checksums");
             py::gil_scoped_release nogil;
             return BlockDevice::open(p, bytes, sums);
           }),
           py::arg("path"), py::kw_only(), py::arg("size") = py::none(), py::arg("checksums") = false)
      .def("allocate", [](BlockDevice& d, py::handle size, py::handle mutable_, py::handle dtype, py::handle empty) {
             const std::int64_t n = integer_arg(size, "BlockDevice.allocate: size");
             const bool m_ = bool_arg(mutable_, "BlockDevice.allocate: mutable");
             const DType& dt = dtype_arg(dtype, "BlockDevice.allocate: dtype");
             const bool e = bool_arg(empty, "BlockDevice.allocate: empty");
             py::gil_scoped_release nogil;
             return d.allocate(n, m_, dt, e);
           },
           py::arg("size"), py::kw_only(), py::arg("mutable") = true, py::arg("dtype") = dtype_object(DType::Float32()),
           py::arg("empty") = false, R"doc(
allocate(size, *, mutable=True, dtype=DType.Float32, empty=False): a
BlockDeviceCarrier of `size` Float32 slots on a fresh extent of whole
4096-byte blocks, zeroed on the image unless empty=True. ValueError for
another dtype, a negative size or more than the whole image; MemoryError
when no free extent is large enough (release carriers to give theirs back).)doc")
      .def_property_readonly("path", [](const BlockDevice& d) {
             return py::module_::import("pathlib").attr("Path")(d.path().string());
           }, "The image (pathlib.Path).")
      .def_property_readonly("capacity_bytes", &BlockDevice::capacity_bytes, "The image's whole blocks, in bytes.")
      .def_property_readonly("free_bytes", &BlockDevice::free_bytes, "Bytes in free extents.")
      .def_property_readonly("largest_free_extent_bytes", &BlockDevice::largest_free_extent_bytes,
                             "The largest free extent, in bytes.")
      .def_property_readonly("checksums", &BlockDevice::checksums, "Per-block xxHash checksums are kept.")
      .def_readonly_static("block_bytes", &BlockDevice::block_bytes)
      .def_readonly_static("slots_per_block", &BlockDevice::slots_per_block);

  py::class_<BlockDeviceCarrier, Carrier, std::shared_ptr<BlockDeviceCarrier>>(m, "BlockDeviceCarrier",
                                                                               py::is_final(), R"doc(
Storage only (core-concepts.md 8.5): Float32 slots in one extent of a
BlockDevice image, read and written with aligned direct I/O. Made only by
BlockDevice.allocate (calling the class is a TypeError). No operation runs on
it (NotImplementedError), carrier scatter is a NotImplementedError, and it
cannot be an Evictable tier. Indexed access reads (and writes) the 4096-byte
block holding the slot; read_aligned / write_aligned move whole blocks.)doc")
      .def_property_readonly("device", &BlockDeviceCarrier::device, "The BlockDevice holding the extent.")
      .def_property_readonly("extent_offset", &BlockDeviceCarrier::extent_offset, "The extent's byte offset in the image.")
      .def_property_readonly("extent_bytes", &BlockDeviceCarrier::extent_bytes, "The extent's length (whole blocks).")
      .def_property_readonly("padded_size", &BlockDeviceCarrier::padded_size,
                             "size() rounded up to whole blocks: the range of the bulk transfers.")
      .def("read_aligned", [](const BlockDeviceCarrier& c, std::int64_t first, std::int64_t count) {
             PyBlockIo io = start_read(c, first, count);
             return finish(io);
           }, py::arg("first"), py::arg("count"), R"doc(
The float32 array of slots [first, first + count): first and count multiples
of BlockDevice.slots_per_block, within padded_size (ValueError otherwise).
OSError for a failed or short read or a checksum mismatch.)doc")
      .def("write_aligned", [](BlockDeviceCarrier& c, std::int64_t first, py::handle values) {
             PyBlockIo io = start_write(c, first, values);
             finish(io);
           }, py::arg("first"), py::arg("values"), R"doc(
Writes `values` (one-dimensional, converted to float32) to slots from
`first`, as one versioned mutation; the same alignment rules as
read_aligned. A failed write leaves the range unspecified and the version
unchanged.)doc")
      .def("read_aligned_async", &start_read, py::arg("first"), py::arg("count"),
           "read_aligned without waiting: a BlockIoCompletion whose wait() returns the array.")
      .def("write_aligned_async", &start_write, py::arg("first"), py::arg("values"),
           "write_aligned without waiting: a BlockIoCompletion (the version steps when it completes).");
}

}  // namespace strideweave::python
