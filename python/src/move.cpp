// Movement (core-concepts.md 7; interop-movement; docs/storage.md,
// "Movement"): move, move_async, AwaitMove, MoveOperation (open for
// subclassing: a Python subclass implements _copy), the built-in operation
// classes and the registry, whose Python face registers and returns
// operation CLASSES (the registry keeps one instance of each).
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

std::string repr_of(py::handle o) { return py::repr(o).cast<std::string>(); }

// The Python object of a MoveOperation the registry holds (a Python
// subclass's own instance, kept alive by the registry entry).
py::object operation_object(const std::shared_ptr<const MoveOperation>& op) {
  return py::cast(const_cast<MoveOperation*>(op.get()), py::return_value_policy::reference);
}
py::object operation_class(const std::shared_ptr<const MoveOperation>& op) {
  return py::type::of(operation_object(op));
}

// A Python subclass of MoveOperation: _copy(tensor, destination, output,
// element_count) -> None, and optional class attributes source_class /
// destination_class (None or a Carrier class).
class PyMoveOperation : public MoveOperation {
 public:
  std::string name() const override {
    py::gil_scoped_acquire gil;
    return py::str(py::type::of(operation_object_self()).attr("__name__"));
  }
  std::optional<CarrierClass> source_class() const override { return pinned("source_class"); }
  std::optional<CarrierClass> destination_class() const override { return pinned("destination_class"); }

 protected:
  MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor& output, std::int64_t element_count,
                       MoveContext&) const override {
    py::gil_scoped_acquire gil;
    py::function hook = py::get_override(static_cast<const MoveOperation*>(this), "_copy");
    if (!hook)
      throw NotImplementedError(fmt::format("{}._copy is not implemented (a MoveOperation subclass implements it)",
                                            py::str(py::type::of(operation_object_self()).attr("__name__"))
                                                .cast<std::string>()));
    py::object result =
        hook(tensor_object(Tensor(tensor)), carrier_object(destination), tensor_object(Tensor(output)), element_count);
    if (!result.is_none())
      throw TypeError(fmt::format("{}._copy must return None, got {}",
                                  py::str(py::type::of(operation_object_self()).attr("__name__")).cast<std::string>(),
                                  repr_of(result)));
    return std::monostate{};
  }

 private:
  py::object operation_object_self() const {
    return py::cast(const_cast<PyMoveOperation*>(this), py::return_value_policy::reference);
  }
  std::optional<CarrierClass> pinned(const char* attribute) const {
    py::gil_scoped_acquire gil;
    py::object value = py::getattr(operation_object_self(), attribute, py::none());
    if (value.is_none()) return std::nullopt;
    return carrier_class_arg(value, fmt::format("MoveOperation.{}", attribute).c_str());
  }
};

bool is_carrier(py::handle value) { return py::isinstance(value, py::type::of<Carrier>()); }

MoveOptions options_arg(py::handle progress, py::handle threshold, py::handle window) {
  MoveOptions o;
  if (!progress.is_none()) {
    if (!PyCallable_Check(progress.ptr()))
      throw TypeError(fmt::format("move: progress must be a callable or None, got {}", repr_of(progress)));
    std::shared_ptr<SharedPyObject> fn = share(progress);
    o.progress = [fn](const MoveProgress& p) {
      py::gil_scoped_acquire gil;
      fn->object(p.bytes_done, p.bytes_total);
    };
  }
  if (!threshold.is_none()) o.progress_threshold_bytes = integer_arg(threshold, "move: progress_threshold_bytes");
  if (!window.is_none()) o.window_bytes = integer_arg(window, "move: window_bytes");
  return o;
}


AwaitMove<Tensor> start_move(py::handle tensor, py::handle destination, py::handle progress, py::handle threshold,
                             py::handle window) {
  const Tensor& t = tensor_arg(tensor, "move: tensor");
  // Not a Carrier is check 4: C++ reports it (as null) after the source
  // checks; the message then names the object.
  if (!is_carrier(destination)) {
    try {
      py::gil_scoped_release nogil;
      move_async(t, nullptr);
    } catch (const TypeError&) {
      throw TypeError(fmt::format("move: destination must be a Carrier instance, got {}", repr_of(destination)));
    }
  }
  std::shared_ptr<Carrier> d = carrier_arg(destination, "move: destination");
  MoveOptions o = options_arg(progress, threshold, window);
  py::gil_scoped_release nogil;
  return move_async(t, d, o);
}

void register_operation(py::handle source_class, py::handle destination_class, py::handle operation_class_) {
  const CarrierClass s = carrier_class_arg(source_class, "register_move_operation: source_class");
  const CarrierClass d = carrier_class_arg(destination_class, "register_move_operation: destination_class");
  if (!PyType_Check(operation_class_.ptr()) ||
      !PyObject_IsSubclass(operation_class_.ptr(), py::type::of<MoveOperation>().ptr()))
    throw TypeError(fmt::format("register_move_operation: operation_class must be a MoveOperation subclass, got {}",
                                repr_of(operation_class_)));
  py::object instance = operation_class_();
  std::shared_ptr<SharedPyObject> keep = share(instance);
  std::shared_ptr<const MoveOperation> op(keep, instance.cast<MoveOperation*>());
  py::gil_scoped_release nogil;
  register_move_operation(s, d, std::move(op));
}

}  // namespace

void bind_move(py::module_& m) {
  py::class_<PyAwaitMove>(m, "AwaitMove", R"doc(
AwaitMove[Tensor]: a move in flight (move_async). wait() blocks until the move
committed and returns the moved Tensor, or raises its error (the move rolled
back); thread-safe and idempotent: every wait() returns the same Tensor
object. `done` never blocks. Dropping the handle neither cancels nor blocks.
Not a Tensor.)doc")
      .def_property_readonly("done", [](const PyAwaitMove& a) {
             py::gil_scoped_release nogil;
             return a.pending.done();
           }, "True exactly when the outcome is recorded.")
      .def("wait", [](PyAwaitMove& a) {
             if (a.result) return a.result;
             std::optional<Tensor> out;
             {
               py::gil_scoped_release nogil;
               out = a.pending.wait();
             }
             // Another thread's wait() may have published the object while
             // this one waited without the GIL: the first one stays.
             if (!a.result) a.result = tensor_object(std::move(*out));
             return a.result;
           }, "Blocks until the move committed; returns the moved Tensor (the same object on every call) or raises "
              "its error.");

  py::class_<MoveOperation, PyMoveOperation, std::shared_ptr<MoveOperation>> base(m, "MoveOperation", R"doc(
MoveOperation: the mechanics of one move for a carrier pair (interop-movement).
Subclass it and implement _copy(tensor, destination, output, element_count) ->
None, which fills destination slots [0, element_count) (element_count is the
layout's cosize; output is the result Tensor already bound to destination).
Optional class attributes source_class / destination_class pin the exact
carrier classes the operation accepts (TypeError on a mismatch, before
anything is copied). Register it with
strideweave.carriers.move.register_move_operation.)doc");
  base.def(py::init<>())
      .def("_copy", [](py::handle self, py::handle, py::handle, py::handle, py::handle) -> py::object {
             throw NotImplementedError(fmt::format("{}._copy is not implemented",
                                                   py::str(py::type::of(self).attr("__name__")).cast<std::string>()));
           }, py::arg("tensor"), py::arg("destination"), py::arg("output"), py::arg("element_count"))
      .def_property_readonly("name", &MoveOperation::name, "The operation's name in messages.");
  base.attr("source_class") = py::none();
  base.attr("destination_class") = py::none();

  py::class_<ElementwiseMoveOperation, MoveOperation, std::shared_ptr<ElementwiseMoveOperation>>(
      m, "ElementwiseMoveOperation", R"doc(
The fallback for every definition-free pair without a registration: copies
logical values one at a time (slots the layout does not address keep their
values).)doc")
      .def(py::init<>());
  py::class_<CpuToFileBackedMoveOperation, MoveOperation, std::shared_ptr<CpuToFileBackedMoveOperation>> to_file(
      m, "CpuToFileBackedMoveOperation", py::is_final(), R"doc(
The built-in bulk route for (CPU, FileBacked): the whole physical span, one
pwrite per window.)doc");
  to_file.def(py::init<>());
  to_file.attr("source_class") = py::type::of<CPU>();
  to_file.attr("destination_class") = py::type::of<FileBacked>();
  py::class_<FileBackedToCpuMoveOperation, MoveOperation, std::shared_ptr<FileBackedToCpuMoveOperation>> from_file(
      m, "FileBackedToCpuMoveOperation", py::is_final(), R"doc(
The built-in bulk route for (FileBacked, CPU): the whole physical span, one
pread per window.)doc");
  from_file.def(py::init<>());
  from_file.attr("source_class") = py::type::of<FileBacked>();
  from_file.attr("destination_class") = py::type::of<CPU>();
  py::class_<CpuToBlockDeviceMoveOperation, MoveOperation, std::shared_ptr<CpuToBlockDeviceMoveOperation>> to_device(
      m, "CpuToBlockDeviceMoveOperation", py::is_final(), R"doc(
The built-in bulk route for (CPU, BlockDeviceCarrier): asynchronous; the span
staged in one aligned buffer, one aligned io_uring write per window.)doc");
  to_device.def(py::init<>());
  to_device.attr("source_class") = py::type::of<CPU>();
  to_device.attr("destination_class") = py::type::of<BlockDeviceCarrier>();
  py::class_<BlockDeviceToCpuMoveOperation, MoveOperation, std::shared_ptr<BlockDeviceToCpuMoveOperation>> from_device(
      m, "BlockDeviceToCpuMoveOperation", py::is_final(), R"doc(
The built-in bulk route for (BlockDeviceCarrier, CPU): asynchronous; one
aligned io_uring read per window into a staging buffer, copied into the CPU
carrier as each window completes.)doc");
  from_device.def(py::init<>());
  from_device.attr("source_class") = py::type::of<BlockDeviceCarrier>();
  from_device.attr("destination_class") = py::type::of<CPU>();

  static const char* options_doc = R"doc(
progress: None or a callable(bytes_done, bytes_total), called once per
completed window when the physical span is at least progress_threshold_bytes
(default 64 MiB); window_bytes (default 64 MiB) is the bulk routes' window and
the progress granularity. See docs/storage.md, "Movement".)doc";
  m.def("move_async", [](py::handle tensor, py::handle destination, py::handle progress, py::handle threshold,
                         py::handle window) {
          return PyAwaitMove{start_move(tensor, destination, progress, threshold, window)};
        },
        py::arg("tensor"), py::arg("destination"), py::kw_only(),
        py::arg("progress") = py::none(), py::arg("progress_threshold_bytes") = py::none(),
        py::arg("window_bytes") = py::none(),
        (std::string(R"doc(
move_async(tensor, destination) -> AwaitMove: starts moving tensor's values into
destination (core-concepts.md 7.1). Check errors are raised here; a transfer
that finishes later reports through the AwaitMove.)doc") + options_doc).c_str());
  m.def("move", [](py::handle tensor, py::handle destination, py::handle progress, py::handle threshold,
                   py::handle window) {
          AwaitMove<Tensor> pending = start_move(tensor, destination, progress, threshold, window);
          std::optional<Tensor> out;
          {
            py::gil_scoped_release nogil;
            out = pending.wait();
          }
          return tensor_object(std::move(*out));
        },
        py::arg("tensor"), py::arg("destination"), py::kw_only(), py::arg("progress") = py::none(),
        py::arg("progress_threshold_bytes") = py::none(), py::arg("window_bytes") = py::none(),
        (std::string(R"doc(
move(tensor, destination) = move_async(tensor, destination).wait(): fills
destination with the tensor's physical span, releases the source carrier and
returns a Tensor on destination at offset 0 with the same layout. An empty
carrier that can allocate (an empty FileBacked) is sized to layout.cosize.
Checks in order: tensor not a Tensor (TypeError), source released or owned
(RuntimeError), destination not a Carrier (TypeError), the tensor's own carrier
(ValueError), destination released or not mutable (RuntimeError), dtype
(TypeError), pinned class (TypeError), too small (ValueError). Any failure
leaves both carriers as they were.)doc") + options_doc).c_str());

  m.def("register_move_operation", &register_operation, py::arg("source_class"), py::arg("destination_class"),
        py::arg("operation_class"), R"doc(
Registers operation_class (a MoveOperation subclass) for exactly the pair
(source_class, destination_class): TypeError naming a non-conforming argument,
ValueError naming both classes when the pair has an entry (kept), RuntimeError
for a definition-backed class (use a TransferRoute). Returns None.)doc");
  m.def("unregister_move_operation", [](py::handle source_class, py::handle destination_class) {
          const CarrierClass s = carrier_class_arg(source_class, "unregister_move_operation: source_class");
          const CarrierClass d = carrier_class_arg(destination_class, "unregister_move_operation: destination_class");
          std::shared_ptr<const MoveOperation> op;
          {
            py::gil_scoped_release nogil;
            op = unregister_move_operation(s, d);
          }
          return operation_class(op);
        },
        py::arg("source_class"), py::arg("destination_class"),
        "Removes and returns the pair's operation class; KeyError naming both classes when it has none.");
  py::class_<MoveRouteInfo>(m, "MoveRouteInfo", R"doc(
The route move() takes for a pair of carriers (describe_move_route). kind:
"transfer_route" (the source class's CarrierDefinition's route for exactly the
destination class), "move_operation" (the definition-free registry's entry) or
"elementwise_fallback" (the framework's copy). name: the route_id, the
operation's name, or "ElementwiseMoveOperation". copy: "route" (the route's
own mechanics), "host_memory" (memcpy per contiguous run) or "ranges" (run by
run through the classes' range access).)doc")
      .def_property_readonly("kind", [](const MoveRouteInfo& r) { return std::string(to_string(r.kind)); })
      .def_readonly("name", &MoveRouteInfo::name)
      .def_property_readonly("copy", [](const MoveRouteInfo& r) { return std::string(to_string(r.copy)); })
      .def("__repr__", [](const MoveRouteInfo& r) {
        return fmt::format("MoveRouteInfo(kind='{}', name='{}', copy='{}')", to_string(r.kind), r.name,
                           to_string(r.copy));
      });
  m.def("describe_move_route", [](py::handle source, py::handle destination) {
          if (!is_carrier(source))
            throw TypeError(fmt::format("describe_move_route: source must be a Carrier instance, got {}", repr_of(source)));
          if (!is_carrier(destination))
            throw TypeError(fmt::format("describe_move_route: destination must be a Carrier instance, got {}",
                                        repr_of(destination)));
          std::shared_ptr<Carrier> s = carrier_arg(source, "describe_move_route: source");
          std::shared_ptr<Carrier> d = carrier_arg(destination, "describe_move_route: destination");
          py::gil_scoped_release nogil;
          return describe_move_route(*s, *d);
        },
        py::arg("source"), py::arg("destination"), R"doc(
describe_move_route(source, destination) -> MoveRouteInfo: the route
move(tensor_on_source, destination) takes, chosen by the exact class pair (the
one move dispatcher; docs/storage.md, "Routing"). Checks nothing else of
move()'s list. NotImplementedError for a definition-backed pair with no
TransferRoute whose definitions do not both permit the elementwise fallback.)doc");
  m.def("dispatch_move", [](py::handle source_class, py::handle destination_class) {
          const CarrierClass s = carrier_class_arg(source_class, "dispatch_move: source_class");
          const CarrierClass d = carrier_class_arg(destination_class, "dispatch_move: destination_class");
          std::shared_ptr<const MoveOperation> op;
          {
            py::gil_scoped_release nogil;
            op = dispatch_move(s, d);
          }
          return operation_class(op);
        },
        py::arg("source_class"), py::arg("destination_class"),
        "The operation class registered for exactly the pair, else ElementwiseMoveOperation (no base-class lookup). "
        "RuntimeError when either class is definition-backed (carrier-extension R5.6: it moves through its "
        "definition's TransferRoutes).");
}

}  // namespace strideweave::python
