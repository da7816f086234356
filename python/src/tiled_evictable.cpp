// TiledEvictable and its residency types (carrier-composition.md Part B;
// <strideweave/carriers/tiled_evictable.h>; docs/tiled_evictable.md).
// strideweave.carriers.tiled_evictable re-exports them with the
// ResidencyPolicy protocol (python/strideweave/carriers/tiled_evictable.py).
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

// An integer component: an int (numpy's too), never a bool (TypeError).
std::int64_t component_arg(py::handle value, const char* what) {
  if (is_boolean(value) || !is_integer_number(value))
    throw TypeError(fmt::format("{}: tile coordinates are integers, got {}", what, py::repr(value).cast<std::string>()));
  return integer_arg(value, what);
}

std::vector<std::int64_t> int_sequence_arg(py::handle value, const char* what) {
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) || !py::isinstance<py::iterable>(value))
    throw TypeError(fmt::format("{}: expected an iterable of integers, got {}", what, py::repr(value).cast<std::string>()));
  std::vector<std::int64_t> out;
  for (py::handle v : value) out.push_back(component_arg(v, what));
  return out;
}

std::vector<std::vector<std::int64_t>> nested_arg(py::handle value, const char* what) {
  if (PyUnicode_Check(value.ptr()) || !py::isinstance<py::iterable>(value))
    throw TypeError(fmt::format("{}: expected an iterable of iterables of integers, got {}", what,
                                py::repr(value).cast<std::string>()));
  std::vector<std::vector<std::int64_t>> out;
  for (py::handle v : value) out.push_back(int_sequence_arg(v, what));
  return out;
}

py::tuple int_tuple(const std::vector<std::int64_t>& v) {
  py::tuple t(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) t[i] = py::int_(v[i]);
  return t;
}

py::tuple nested_tuple(const std::vector<std::vector<std::int64_t>>& v) {
  py::tuple t(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) t[i] = int_tuple(v[i]);
  return t;
}

// A TileSet or a TileSelection argument (TypeError otherwise).
TileSet tiles_arg(py::handle value, const char* what) {
  if (py::isinstance<TileSet>(value)) return value.cast<TileSet>();
  if (py::isinstance<TileSelection>(value)) return value.cast<TileSelection>().tile_set();
  throw TypeError(fmt::format("{}: expected a TileSet or a TileSelection, got {}", what,
                              py::repr(value).cast<std::string>()));
}

// A TileSet field of a ResidencyPlan: a TileSet or None (TypeError otherwise).
TileSet plan_field_arg(py::handle value, const char* what) {
  if (value.is_none()) return TileSet();
  if (py::isinstance<TileSet>(value)) return value.cast<TileSet>();
  throw TypeError(fmt::format("ResidencyPlan: {} must be a TileSet or None, got {}", what,
                              py::repr(value).cast<std::string>()));
}

// A Python ResidencyPolicy (any object with a callable plan, the protocol),
// asked with the GIL held; the object is released with the GIL held too.
class PyResidencyPolicy final : public ResidencyPolicy {
 public:
  explicit PyResidencyPolicy(py::handle policy) : policy_(share(policy)) {}
  ResidencyPlan plan(const TileSet& required, std::string_view purpose) override {
    py::gil_scoped_acquire gil;
    py::object result = policy_->object.attr("plan")(py::cast(required), py::str(std::string(purpose)));
    if (!py::isinstance<ResidencyPlan>(result))
      throw TypeError(fmt::format("ResidencyPolicy.plan returned {}, not a ResidencyPlan",
                                  py::repr(result).cast<std::string>()));
    return result.cast<ResidencyPlan>();
  }
  py::object object() const { return policy_->object; }

 private:
  std::shared_ptr<SharedPyObject> policy_;
};

std::shared_ptr<ResidencyPolicy> policy_arg(py::handle value) {
  if (value.is_none()) return nullptr;
  py::object plan = py::getattr(value, "plan", py::none());
  if (plan.is_none() || !PyCallable_Check(plan.ptr()))
    throw TypeError(fmt::format("TiledEvictable: residency_policy {} does not conform to ResidencyPolicy (a callable "
                                "plan(required, purpose))",
                                py::repr(value).cast<std::string>()));
  return std::make_shared<PyResidencyPolicy>(value);
}

py::object tile_state_object(const TileState& s) {
  py::object ns = py::module_::import("types").attr("SimpleNamespace");
  return ns(py::arg("location") = to_string(s.location), py::arg("valid") = s.valid, py::arg("dirty") = s.dirty);
}

}  // namespace

void bind_tiled_evictable(py::module_& m) {
  py::class_<TileSelection>(m, "TileSelection", R"doc(
TileSelection(per_axis): an ordered Cartesian product of tile coordinates
(carrier-composition B3). per_axis holds one non-empty iterable of int tile
coordinates per axis, in the caller's order. A non-iterable or non-int ->
TypeError; no axes, an empty axis, a duplicate or a negative -> ValueError.
coordinates is the product, first axis fastest.)doc")
      .def(py::init([](py::handle per_axis) { return TileSelection(nested_arg(per_axis, "TileSelection")); }),
           py::arg("per_axis"))
      .def_property_readonly("per_axis", [](const TileSelection& s) { return nested_tuple(s.per_axis()); }, "The tile coordinates of each axis, in the caller's order.")
      .def_property_readonly("rank", &TileSelection::rank, "The number of axes.")
      .def_property_readonly("compact_grid_shape", [](const TileSelection& s) { return int_tuple(s.compact_grid_shape()); }, "len(per_axis[i]) for each axis.")
      .def_property_readonly("coordinates", [](const TileSelection& s) { return nested_tuple(s.coordinates()); }, "The Cartesian product, first axis fastest.")
      .def_property_readonly("tile_set", &TileSelection::tile_set, "The selected tiles as a TileSet.")
      .def("__eq__", [](const TileSelection& a, py::handle b) {
        return py::isinstance<TileSelection>(b) && a == b.cast<const TileSelection&>();
      })
      .def("__hash__", [](const TileSelection& s) { return py::hash(nested_tuple(s.per_axis())); })
      .def("__repr__", [](const TileSelection& s) {
        return fmt::format("TileSelection({})", py::repr(nested_tuple(s.per_axis())).cast<std::string>());
      });

  py::class_<TileSet>(m, "TileSet", R"doc(
TileSet(coordinates=()): an immutable set of full-rank int tile coordinates,
sorted first axis fastest (carrier-composition B12). A non-iterable or a
non-int component -> TypeError; mixed ranks, a negative or a duplicate ->
ValueError. The empty set is valid.)doc")
      .def(py::init([](py::handle coordinates) { return TileSet(nested_arg(coordinates, "TileSet")); }),
           py::arg("coordinates") = py::tuple())
      .def_property_readonly("coordinates", [](const TileSet& s) { return nested_tuple(s.coordinates()); }, "The coordinates, sorted first axis fastest.")
      .def_property_readonly("rank", [](const TileSet& s) -> py::object {
        return s.rank() ? py::object(py::int_(*s.rank())) : py::object(py::none());
      }, "The coordinates' rank (None when empty).")
      .def("__len__", &TileSet::size)
      .def("__iter__", [](const TileSet& s) { return py::iter(nested_tuple(s.coordinates())); })
      .def("__contains__", [](const TileSet& s, py::handle c) {
        try {
          return s.contains(int_sequence_arg(c, "TileSet"));
        } catch (const TypeError&) {
          return false;
        }
      })
      .def("__eq__", [](const TileSet& a, py::handle b) { return py::isinstance<TileSet>(b) && a == b.cast<const TileSet&>(); })
      .def("__hash__", [](const TileSet& s) { return py::hash(nested_tuple(s.coordinates())); })
      .def("__repr__", [](const TileSet& s) {
        return fmt::format("TileSet({})", py::repr(nested_tuple(s.coordinates())).cast<std::string>());
      });

  py::class_<ResidencyPlan>(m, "ResidencyPlan", R"doc(
ResidencyPlan(promote=None, retain=None, evict=None): what a ResidencyPolicy
asks for (carrier-composition B12). Each field a TileSet (None -> empty;
another type -> TypeError); a tile in two fields -> ValueError.)doc")
      .def(py::init([](py::handle promote, py::handle retain, py::handle evict) {
             return ResidencyPlan(plan_field_arg(promote, "promote"), plan_field_arg(retain, "retain"),
                                  plan_field_arg(evict, "evict"));
           }),
           py::arg("promote") = py::none(), py::arg("retain") = py::none(), py::arg("evict") = py::none())
      .def_property_readonly("promote", &ResidencyPlan::promote, "Tiles to promote before the work.")
      .def_property_readonly("retain", &ResidencyPlan::retain, "Tiles to keep resident.")
      .def_property_readonly("evict", &ResidencyPlan::evict, "Tiles to evict once the work no longer needs them.")
      .def("__eq__", [](const ResidencyPlan& a, py::handle b) {
        return py::isinstance<ResidencyPlan>(b) && a == b.cast<const ResidencyPlan&>();
      })
      .def("__repr__", [](const ResidencyPlan& p) {
        return fmt::format("ResidencyPlan(promote={}, retain={}, evict={})",
                           py::repr(nested_tuple(p.promote().coordinates())).cast<std::string>(),
                           py::repr(nested_tuple(p.retain().coordinates())).cast<std::string>(),
                           py::repr(nested_tuple(p.evict().coordinates())).cast<std::string>());
      });

  py::class_<AwaitResidency>(m, "AwaitResidency", R"doc(
The handle of a residency request (an AwaitResult[None]): done becomes True at
its terminal outcome; wait() blocks until then and returns None or raises its
failure (every wait the same). Thread-safe; dropping it neither cancels nor
blocks the request. Not a Tensor.)doc")
      .def_property_readonly("done", &AwaitResidency::done, "Whether the request reached its terminal outcome.")
      .def("wait", [](const AwaitResidency& h) {
        py::gil_scoped_release nogil;
        h.wait();
      }, "Blocks until the request's outcome; returns None or raises its failure.");

  py::class_<AwaitProjection>(m, "AwaitProjection", R"doc(
The handle of a projection (an AwaitResult[Tensor]): the selected tiles'
transfers start when project() returns it; the first wait() gathers the
compact Tensor, and every wait returns that same Tensor (or raises the same
failure). done becomes True at that outcome. Thread-safe; not a Tensor.)doc")
      .def_property_readonly("done", &AwaitProjection::done, "Whether the projection reached its terminal outcome.")
      .def("wait", [](const AwaitProjection& h) {
        py::gil_scoped_release nogil;
        return h.wait();
      }, "Blocks until the projection's outcome; returns its Tensor (every wait the same) or raises.");

  const auto residency = [](const char* what, bool promote, bool blocking) {
    return [what, promote, blocking](TiledEvictable& t, py::handle tiles) -> py::object {
      const TileSet set = tiles_arg(tiles, what);
      AwaitResidency h = [&] {
        py::gil_scoped_release nogil;
        return promote ? t.promote_async(set) : t.evict_async(set);
      }();
      if (!blocking) return py::cast(h);
      {
        py::gil_scoped_release nogil;
        h.wait();
      }
      return py::none();
    };
  };

  m.attr("DEFAULT_RESIDENCY_BYTES") = default_residency_bytes;
  m.attr("DEFAULT_PREFETCH_DEPTH") = default_prefetch_depth;
  py::class_<TiledEvictableCounters>(m, "TiledEvictableCounters", R"doc(
What a TiledEvictable has moved and held since construction (its counters()):
bytes_read from and bytes_written to the secondary tier,
peak_resident_bytes (the largest resident_bytes seen), tiles_prefetched (tiles
the prefetcher staged ahead of their use), prefetch_hits (uses that found their
tile staged and ready) and stalls (uses that waited for their secondary tile).
A snapshot; equal when every field is.)doc")
      .def_readonly("bytes_read", &TiledEvictableCounters::bytes_read, "Bytes copied from the secondary tier (promotions, staged tiles, reads of secondary tiles).")
      .def_readonly("bytes_written", &TiledEvictableCounters::bytes_written, "Bytes written to the secondary tier (evictions of dirty tiles).")
      .def_readonly("peak_resident_bytes", &TiledEvictableCounters::peak_resident_bytes, "The largest resident_bytes seen.")
      .def_readonly("tiles_prefetched", &TiledEvictableCounters::tiles_prefetched, "Secondary tiles the prefetcher staged ahead of their use.")
      .def_readonly("prefetch_hits", &TiledEvictableCounters::prefetch_hits, "Uses that found their tile staged by the prefetcher, ready.")
      .def_readonly("stalls", &TiledEvictableCounters::stalls, "Uses of a secondary tile that waited for it (a fetch in flight, or a read when needed).")
      .def("__eq__", [](const TiledEvictableCounters& a, py::handle b) -> py::object {
        if (!py::isinstance<TiledEvictableCounters>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
        return py::bool_(a == b.cast<TiledEvictableCounters>());
      }, py::is_operator(), "Equal when every field is.")
      .def("__repr__", [](const TiledEvictableCounters& c) {
        return fmt::format("TiledEvictableCounters(bytes_read={}, bytes_written={}, peak_resident_bytes={}, "
                           "tiles_prefetched={}, prefetch_hits={}, stalls={})",
                           c.bytes_read, c.bytes_written, c.peak_resident_bytes, c.tiles_prefetched, c.prefetch_hits,
                           c.stalls);
      }, "TiledEvictableCounters(bytes_read=..., ..., stalls=...).");
  py::class_<TiledEvictable, DependentCarrier, std::shared_ptr<TiledEvictable>>(m, "TiledEvictable", py::is_final(),
                                                                                 R"doc(
TiledEvictable(primary, secondary, grid_shape, tile_shape, *,
residency_policy=None, residency_bytes=DEFAULT_RESIDENCY_BYTES,
prefetch_depth=DEFAULT_PREFETCH_DEPTH): one flat
logical extent cut into tiles whose residency is controlled tile by tile
(carrier-composition Part B; docs/tiled_evictable.md).
primary is the compute carrier, secondary the backing carrier: distinct, live,
unowned, of one dtype, each empty or exactly the logical extent (a full primary
seeds every tile, else a full secondary; otherwise every tile starts invalid).
Slots are tile-major; full_tensor() is the full logical Tensor. The direct
operations add, elementwise_mul, mul, relu, reduce_sum and matmul take it
whole and publish a dense primary-class result, streamed tile by tile within
residency_bytes (a positive int: the primary memory the instance uses on its
own initiative), the next prefetch_depth tiles (an int >= 0) staged on an I/O
thread while one computes; any other operation is unsupported on it. Closed to
subclassing.)doc")
      .def(py::init([](py::handle primary, py::handle secondary, py::handle grid_shape, py::handle tile_shape,
                       py::handle residency_policy, py::handle residency_bytes, py::handle prefetch_depth) {
             std::shared_ptr<Carrier> p = carrier_arg(primary, "TiledEvictable: primary");
             std::shared_ptr<Carrier> s = carrier_arg(secondary, "TiledEvictable: secondary");
             std::vector<std::int64_t> grid = int_sequence_arg(grid_shape, "TiledEvictable: grid_shape");
             std::vector<std::int64_t> tile = int_sequence_arg(tile_shape, "TiledEvictable: tile_shape");
             TiledEvictableOptions options{policy_arg(residency_policy)};
             if (!py::isinstance<py::int_>(residency_bytes) || py::isinstance<py::bool_>(residency_bytes))
               throw TypeError(fmt::format("TiledEvictable: residency_bytes must be an int, got {}",
                                           py::repr(residency_bytes).cast<std::string>()));
             options.residency_bytes = residency_bytes.cast<std::int64_t>();
             if (!py::isinstance<py::int_>(prefetch_depth) || py::isinstance<py::bool_>(prefetch_depth))
               throw TypeError(fmt::format("TiledEvictable: prefetch_depth must be an int, got {}",
                                           py::repr(prefetch_depth).cast<std::string>()));
             options.prefetch_depth = prefetch_depth.cast<std::int64_t>();
             py::gil_scoped_release nogil;
             return TiledEvictable::create(p, s, std::move(grid), std::move(tile), std::move(options));
           }),
           py::arg("primary"), py::arg("secondary"), py::arg("grid_shape"), py::arg("tile_shape"), py::kw_only(),
           py::arg("residency_policy") = py::none(), py::arg("residency_bytes") = default_residency_bytes,
           py::arg("prefetch_depth") = default_prefetch_depth)
      .def_property_readonly("grid_shape", [](const TiledEvictable& t) { return int_tuple(t.grid_shape()); }, "Tiles per axis.")
      .def_property_readonly("tile_shape", [](const TiledEvictable& t) { return int_tuple(t.tile_shape()); }, "Elements per tile, per axis.")
      .def_property_readonly("logical_shape", [](const TiledEvictable& t) { return int_tuple(t.logical_shape()); }, "grid_shape[i] * tile_shape[i].")
      .def_property_readonly("tile_size", &TiledEvictable::tile_size, "Elements per tile (slots per tile footprint).")
      .def_property_readonly("tile_count", &TiledEvictable::tile_count, "The number of tiles.")
      .def_property_readonly("full_layout", &TiledEvictable::full_layout, "The full logical Tensor's Layout: axis i = (tile_shape[i], grid_shape[i]), tile-major slots.")
      .def("full_tensor", &TiledEvictable::full_tensor, "The full logical Tensor: Tensor(self, 0, self.full_layout).")
      .def("check_full_tensor", [](const TiledEvictable& t, const Tensor& x) { t.check_full_tensor(x, "check_full_tensor"); },
           py::arg("tensor"),
           "B2: ValueError unless tensor's offset and Layout map each tile exactly onto its slots.")
      .def_property_readonly("primary", [](const TiledEvictable& t) { return carrier_object(*t.primary()); }, "The compute carrier as given (owned; released once no tile lives in it).")
      .def_property_readonly("secondary", [](const TiledEvictable& t) { return carrier_object(*t.secondary()); }, "The current backing carrier (owned).")
      .def_property_readonly("residency_policy", [](const TiledEvictable& t) -> py::object {
        if (auto* p = dynamic_cast<PyResidencyPolicy*>(t.residency_policy().get())) return p->object();
        return py::none();
      }, "The ResidencyPolicy given at construction, or None.")
      .def_property_readonly("residency_bytes", &TiledEvictable::residency_bytes, "The residency budget in bytes.")
      .def_property_readonly("prefetch_depth", &TiledEvictable::prefetch_depth, "Uses staged ahead of the current one (0: staged when needed).")
      .def_property_readonly("tile_bytes", &TiledEvictable::tile_bytes, "One tile's bytes in the primary.")
      .def_property_readonly("resident_bytes", &TiledEvictable::resident_bytes, "Primary bytes held now: primary-resident tiles plus tiles staged by running operations.")
      .def("counters", &TiledEvictable::counters, "The instance's TiledEvictableCounters now (a snapshot).")
      .def_property_readonly("primary_tiles", &TiledEvictable::primary_tiles, "Tiles held by a primary block.")
      .def_property_readonly("secondary_tiles", &TiledEvictable::secondary_tiles, "Tiles held only by the secondary.")
      .def_property_readonly("valid_tiles", &TiledEvictable::valid_tiles, "Tiles that have a value.")
      .def_property_readonly("dirty_tiles", &TiledEvictable::dirty_tiles, "Primary tiles not saved to the secondary.")
      .def_property_readonly("implicit_tiles", &TiledEvictable::implicit_tiles, "Tiles that are an implicit zero (no storage).")
      .def_property_readonly("all_tiles", &TiledEvictable::all_tiles, "Every tile of the grid.")
      .def("tile_state", [](const TiledEvictable& t, py::handle coordinate) {
             return tile_state_object(t.tile_state(int_sequence_arg(coordinate, "TiledEvictable.tile_state")));
           },
           py::arg("coordinate"),
           "The tile's location ('primary', 'secondary', 'implicit', 'invalid'), valid and dirty.")
      .def("promote_async", residency("TiledEvictable.promote_async", true, false), py::arg("tiles"), "Starts making the tiles primary-valid; returns an AwaitResidency at once.")
      .def("evict_async", residency("TiledEvictable.evict_async", false, false), py::arg("tiles"), "Starts saving dirty tiles and dropping their primary blocks; returns an AwaitResidency at once.")
      .def("promote", residency("TiledEvictable.promote", true, true), py::arg("tiles"), "promote_async(tiles).wait().")
      .def("evict", residency("TiledEvictable.evict", false, true), py::arg("tiles"), "evict_async(tiles).wait().")
      .def("project",
           [](TiledEvictable& t, py::handle tensor, py::handle selection, py::handle destination) {
             if (!py::isinstance<Tensor>(tensor))
               throw TypeError(fmt::format("TiledEvictable.project: expected a Tensor, got {}",
                                           py::repr(tensor).cast<std::string>()));
             if (!py::isinstance<TileSelection>(selection))
               throw TypeError(fmt::format("TiledEvictable.project: expected a TileSelection, got {}",
                                           py::repr(selection).cast<std::string>()));
             const Tensor x = tensor.cast<Tensor>();
             const TileSelection s = selection.cast<TileSelection>();
             std::shared_ptr<Carrier> d =
                 destination.is_none() ? nullptr : carrier_arg(destination, "TiledEvictable.project: destination");
             py::gil_scoped_release nogil;
             return t.project(x, s, d);
           },
           py::arg("tensor"), py::arg("selection"), py::arg("destination") = py::none(),
           "B4: the selected tiles of the full Tensor, packed in selection.coordinates order into a dense compact "
           "Tensor of the compute carrier's class (in destination when given); returns an AwaitProjection at once.")
      .def("scatter",
           [](py::object self, py::handle a, py::handle b, py::handle c, py::args rest, py::kwargs kwargs) -> py::object {
             // scatter(compact, template, selection, *, reduction="replace") (B10); any other third argument is
             // the carrier scatter of core-concepts 1.7 (Carrier.scatter).
             if (!py::isinstance<TileSelection>(c))
               return py::type::of<Carrier>().attr("scatter")(self, a, b, c, *rest, **kwargs);
             TiledEvictable& t = self.cast<TiledEvictable&>();
             if (rest.size() > 0) throw TypeError("TiledEvictable.scatter: reduction is keyword-only");
             std::string reduction = "replace";
             for (auto item : kwargs) {
               const std::string key = py::str(item.first);
               if (key != "reduction") throw TypeError(fmt::format("TiledEvictable.scatter: unexpected keyword '{}'", key));
               if (!py::isinstance<py::str>(item.second))
                 throw TypeError("TiledEvictable.scatter: reduction must be 'replace' or 'add'");
               reduction = item.second.cast<std::string>();
             }
             if (reduction != "replace" && reduction != "add")
               throw ValueError(fmt::format("TiledEvictable.scatter: reduction must be 'replace' or 'add', got '{}'",
                                            reduction));
             if (!py::isinstance<Tensor>(a) || !py::isinstance<Tensor>(b))
               throw TypeError("TiledEvictable.scatter: compact and template must be Tensors");
             const Tensor compact = a.cast<Tensor>(), tmpl = b.cast<Tensor>();
             const TileSelection s = c.cast<TileSelection>();
             AwaitMove<Tensor> handle = [&] {
               py::gil_scoped_release nogil;
               return t.scatter(compact, tmpl, s, reduction == "add" ? ScatterReduction::Add : ScatterReduction::Replace);
             }();
             return py::cast(PyAwaitMove{std::move(handle)});
           },
           "B10: with a TileSelection third, scatter(compact, template, selection, *, reduction='replace') returns an "
           "AwaitMove of a fresh full Tensor on a new TiledEvictable like template whose selected tiles hold compact's (or template's plus them), every "
           "other tile invalid. With another third argument: Carrier.scatter(to_scatter, scatter_onto, mapping, "
           "mapping_offset=0).");
}

}  // namespace strideweave::python
