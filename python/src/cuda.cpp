// CUDA, the accelerator carrier (core-concepts 8.3 with CUDA in Metal's
// role; include/strideweave/carriers/cuda.h, docs/cuda.md).
#include "bindings.h"

#include <strideweave/carriers/cuda.h>

#include <fmt/format.h>

namespace strideweave::python {

void bind_cuda(py::module_& m) {
  py::class_<CUDA, Carrier, std::shared_ptr<CUDA>>(m, "CUDA", py::is_final(), R"doc(
CUDA(size, *, device=0, mutable=True, dtype=DType.Float32, empty=False): the
accelerator carrier (core-concepts.md 8.3, Metal's role; docs/cuda.md).
Float32, Int32 or Bool slots in the device memory of CUDA device `device`,
zero-filled unless empty=True; its placement is Placement.device(device).
RuntimeError before anything else when strideweave was built without CUDA,
when no driver or device is present, or when `device` is not present
(CUDA.unavailable_reason() says which, CUDA.device_count() how many). A
definition-backed class: its capabilities are its kernel patterns' plans, and
kernel packs naming it attach. Closed to subclassing.)doc")
      .def(py::init([](std::int64_t size, py::handle device, py::handle mutable_, py::handle dtype, py::handle empty) {
             const std::int64_t index = integer_arg(device, "CUDA: device");
             const DType& d = dtype_arg(dtype, "CUDA: dtype");
             const bool m_ = bool_arg(mutable_, "CUDA: mutable");
             const bool e = bool_arg(empty, "CUDA: empty");
             if (index < 0 || index > INT32_MAX) throw RuntimeError(fmt::format("CUDA: device {} is not present", index));
             py::gil_scoped_release nogil;
             return CUDA::create(size, static_cast<int>(index), m_, d, e);
           }),
           py::arg("size"), py::kw_only(), py::arg("device") = 0, py::arg("mutable") = true,
           py::arg("dtype") = dtype_object(DType::Float32()), py::arg("empty") = false)
      .def_property_readonly("device", &CUDA::device, "The CUDA device index this carrier's memory is on.")
      .def_static("built", &CUDA::built,
                  "Whether this build of strideweave compiled the CUDA carrier's device code.")
      .def_static("device_count", &CUDA::device_count,
                  "How many CUDA devices this process can use (0 without a build, driver or device).")
      .def_static("unavailable_reason", &CUDA::unavailable_reason,
                  "Why device_count() is 0 ('' when it is not).");
}

}  // namespace strideweave::python
