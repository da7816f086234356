// strideweave._core: the compiled core of the Python package (docs/python.md).
// The package (python/strideweave/__init__.py) re-exports these names.
#include "bindings.h"

PYBIND11_MODULE(_core, m) {
  namespace sw = strideweave::python;
  m.doc() = "The compiled core of strideweave (import strideweave, not this module).";
  m.attr("__version__") = STRIDEWEAVE_PYTHON_VERSION;
  sw::bind_enums(m);
  sw::bind_dtypes(m);
  sw::bind_errors(m);
  sw::bind_layout(m);
  sw::bind_policy(m);
  sw::bind_capability(m);
  sw::bind_carriers(m);
  sw::bind_file_backed(m);
  sw::bind_cuda(m);
  sw::bind_block_device(m);
  sw::bind_tensor(m);
  sw::bind_autograd(m);
  sw::bind_operations(m);
  sw::bind_operation(m);
  sw::bind_interop(m);
  sw::bind_literal(m);
  sw::bind_creation(m);
  sw::bind_compose(m);
  sw::bind_formats(m);
  sw::bind_extension(m);
  sw::bind_move(m);
  sw::bind_evictable(m);
  sw::bind_tiled_evictable(m);
  m.def("num_threads", &strideweave::num_threads, "The number of threads a CPU kernel may use (docs/threading.md).");
  m.def("set_num_threads", &strideweave::set_num_threads, pybind11::arg("n"),
        "Changes it for every later call from any thread; n < 1 -> ValueError.");
  m.def("threading_available", &strideweave::threading_available,
        "False in a build without OpenMP (kernels then run on the calling thread).");
  sw::guard_uninitialised(m);  // last: after every class and function is bound
}
