// strideweave.zeros, ones, full, empty, the *_like functions, arange,
// linspace, eye and strideweave.random.Generator: the binding of
// <strideweave/creation.h> and <strideweave/random.h> (docs/creation.md).
// Every rule lives in C++; this file only reads Python arguments.
#include "bindings.h"

#include <fmt/format.h>

#include <limits>

namespace strideweave::python {

namespace {

// A shape given as numpy and torch users give one: extents as separate
// integers (zeros(2, 3)), or one tuple, list, Shape or integer
// (zeros((2, 3)), zeros(5)). zeros(()) is rank 0; no shape at all is a
// TypeError.
Shape varargs_shape(const py::args& args, const char* what) {
  if (args.empty())
    throw TypeError(fmt::format("{}: give a shape (extents, or one tuple of them; () for rank 0)", what));
  if (args.size() == 1 && !is_integer_number(args[0])) return shape_arg(args[0], what);
  std::vector<std::int64_t> extents;
  extents.reserve(args.size());
  for (py::handle a : args) extents.push_back(integer_arg(a, what));
  return Shape::of(extents);
}

// One shape argument: an integer (rank 1), a tuple, list or Shape; None is
// rank 0 (numpy's size=None).
Shape shape_value(py::handle value, const char* what) {
  if (value.is_none()) return Shape();
  if (is_integer_number(value)) return Shape::of({integer_arg(value, what)});
  return shape_arg(value, what);
}

// carrier=: None (CPU), a class (Generic, CPU), or a carrier instance (the
// prototype whose exact class makes the storage).
CarrierChoice carrier_choice(py::handle carrier, const char* what) {
  if (carrier.is_none()) return {};
  if (py::isinstance<Carrier>(carrier)) return CarrierChoice(*carrier_arg(carrier, what));
  return CarrierChoice(carrier_class_arg(carrier, what));
}

std::optional<CarrierChoice> optional_carrier(py::handle carrier, const char* what) {
  if (carrier.is_none()) return std::nullopt;
  return carrier_choice(carrier, what);
}

const SimpleDType& dtype_or(py::handle dtype, const SimpleDType& fallback, const char* what) {
  return dtype.is_none() ? fallback : simple_dtype_arg(dtype, what);
}
const SimpleDType* dtype_or_null(py::handle dtype, const char* what) {
  return dtype.is_none() ? nullptr : &simple_dtype_arg(dtype, what);
}

// Creation may write millions of elements: without the GIL (a Python
// carrier's hooks take it back while they run).
template <class F>
Tensor released(F&& f) {
  py::gil_scoped_release nogil;
  return f();
}

std::uint64_t seed_arg(py::handle seed) {
  if (!is_integer_number(seed)) throw TypeError("Generator: seed must be an integer");
  const py::int_ value = py::reinterpret_borrow<py::object>(seed);
  if (value < py::int_(0) || value > py::int_(std::numeric_limits<std::uint64_t>::max()))
    throw ValueError("Generator: seed must lie in [0, 2**64)");
  return value.cast<std::uint64_t>();
}

}  // namespace

void bind_creation(py::module_& m) {
  m.def("empty", [](const py::args& shape, py::handle dtype, py::handle carrier) {
        const Shape s = varargs_shape(shape, "empty");
        const SimpleDType& d = dtype_or(dtype, DType::Float32(), "empty: dtype");
        const CarrierChoice c = carrier_choice(carrier, "empty: carrier");
        return released([&] { return empty(s, d, c); });
      }, py::kw_only(), py::arg("dtype") = py::none(), py::arg("carrier") = py::none(), R"doc(
empty(*shape, dtype=None, carrier=None): a fresh compact tensor whose values
are unspecified (Bool: False). shape: extents (empty(2, 3)) or one tuple,
list or Shape. dtype: Float32 when None. carrier: None (CPU), a class
(Generic, CPU), or a carrier instance whose class makes the storage.)doc");
  m.def("zeros", [](const py::args& shape, py::handle dtype, py::handle carrier) {
        const Shape s = varargs_shape(shape, "zeros");
        const SimpleDType& d = dtype_or(dtype, DType::Float32(), "zeros: dtype");
        const CarrierChoice c = carrier_choice(carrier, "zeros: carrier");
        return released([&] { return zeros(s, d, c); });
      }, py::kw_only(), py::arg("dtype") = py::none(), py::arg("carrier") = py::none(), R"doc(
zeros(*shape, dtype=None, carrier=None): a fresh compact tensor of zeros
(False). Arguments as for empty().)doc");
  m.def("ones", [](const py::args& shape, py::handle dtype, py::handle carrier) {
        const Shape s = varargs_shape(shape, "ones");
        const SimpleDType& d = dtype_or(dtype, DType::Float32(), "ones: dtype");
        const CarrierChoice c = carrier_choice(carrier, "ones: carrier");
        return released([&] { return ones(s, d, c); });
      }, py::kw_only(), py::arg("dtype") = py::none(), py::arg("carrier") = py::none(), R"doc(
ones(*shape, dtype=None, carrier=None): a fresh compact tensor of ones
(True). Arguments as for empty().)doc");
  m.def("full", [](py::handle shape, py::handle fill_value, py::handle dtype, py::handle carrier) {
        const Shape s = shape_value(shape, "full: shape");
        const WeakScalar v = weak_scalar_arg(fill_value, "full: fill_value");
        const SimpleDType* d = dtype_or_null(dtype, "full: dtype");
        const CarrierChoice c = carrier_choice(carrier, "full: carrier");
        return released([&] { return full(s, v, d, c); });
      }, py::arg("shape"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("carrier") = py::none(), R"doc(
full(shape, fill_value, *, dtype=None, carrier=None): a fresh compact tensor
whose every element is fill_value. shape: an int, a tuple, list or Shape.
dtype None: fill_value's own (bool -> Bool, int -> Int32, float -> Float32);
fill_value converts as a literal does (a float never truncates to Int32:
TypeError).)doc");

  const auto like = [&m](const char* name, auto make) {
    m.def(name, [name, make](const Tensor& t, py::handle dtype, py::handle carrier) {
          const SimpleDType* d = dtype_or_null(dtype, fmt::format("{}: dtype", name).c_str());
          const std::optional<CarrierChoice> c = optional_carrier(carrier, name);
          return released([&] { return make(t, d, c); });
        }, py::arg("like"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("carrier") = py::none(),
        fmt::format("{}(like, *, dtype=None, carrier=None): as {}() with like's shape; dtype None: like's; "
                    "carrier None: a new carrier of like's class.",
                    name, std::string_view(name).substr(0, std::string_view(name).size() - 5))
            .c_str());
  };
  like("empty_like", [](const Tensor& t, const SimpleDType* d, const std::optional<CarrierChoice>& c) {
    return empty_like(t, d, c);
  });
  like("zeros_like", [](const Tensor& t, const SimpleDType* d, const std::optional<CarrierChoice>& c) {
    return zeros_like(t, d, c);
  });
  like("ones_like", [](const Tensor& t, const SimpleDType* d, const std::optional<CarrierChoice>& c) {
    return ones_like(t, d, c);
  });
  m.def("full_like", [](const Tensor& t, py::handle fill_value, py::handle dtype, py::handle carrier) {
        const WeakScalar v = weak_scalar_arg(fill_value, "full_like: fill_value");
        const SimpleDType* d = dtype_or_null(dtype, "full_like: dtype");
        const std::optional<CarrierChoice> c = optional_carrier(carrier, "full_like: carrier");
        return released([&] { return full_like(t, v, d, c); });
      }, py::arg("like"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("carrier") = py::none(),
      "full_like(like, fill_value, *, dtype=None, carrier=None): as full() with like's shape; dtype None: "
      "like's; carrier None: a new carrier of like's class.");

  m.def("arange", [](py::handle start, py::handle stop, py::handle step, py::handle dtype, py::handle carrier) {
        WeakScalar a = 0, b = 0, s = 1;
        if (stop.is_none()) {
          b = weak_scalar_arg(start, "arange: stop");
        } else {
          a = weak_scalar_arg(start, "arange: start");
          b = weak_scalar_arg(stop, "arange: stop");
        }
        if (!step.is_none()) s = weak_scalar_arg(step, "arange: step");
        const SimpleDType* d = dtype_or_null(dtype, "arange: dtype");
        const CarrierChoice c = carrier_choice(carrier, "arange: carrier");
        return released([&] { return arange(a, b, s, d, c); });
      }, py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = py::none(), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("carrier") = py::none(), R"doc(
arange([start,] stop[, step], *, dtype=None, carrier=None): numpy.arange. The
values start, start + step, ... below stop (above it for a negative step),
ceil((stop - start) / step) of them. dtype None: Int32 when every argument
is an integer, else Float32. Element i is start + i * step (exact for
integers; otherwise in double, rounded once).)doc");
  m.def("linspace", [](py::handle start, py::handle stop, py::handle num, bool endpoint, py::handle dtype,
                       py::handle carrier) {
        const double a = real_arg(start, "linspace: start"), b = real_arg(stop, "linspace: stop");
        const std::int64_t n = integer_arg(num, "linspace: num");
        const SimpleDType& d = dtype_or(dtype, DType::Float32(), "linspace: dtype");
        const CarrierChoice c = carrier_choice(carrier, "linspace: carrier");
        return released([&] { return linspace(a, b, n, endpoint, d, c); });
      }, py::arg("start"), py::arg("stop"), py::arg("num") = 50, py::kw_only(), py::arg("endpoint") = true,
      py::arg("dtype") = py::none(), py::arg("carrier") = py::none(), R"doc(
linspace(start, stop, num=50, *, endpoint=True, dtype=None, carrier=None):
numpy.linspace, Float32 only. Element i is start + i * (stop - start) / div in
double, rounded once (div = num - 1 with the endpoint, num without); with
the endpoint the last element is exactly stop.)doc");
  m.def("eye", [](py::handle n, py::handle cols, py::handle k, py::handle dtype, py::handle carrier) {
        const std::int64_t rows = integer_arg(n, "eye: n");
        const std::optional<std::int64_t> m_ =
            cols.is_none() ? std::nullopt : std::optional<std::int64_t>(integer_arg(cols, "eye: m"));
        const std::int64_t diagonal = integer_arg(k, "eye: k");
        const SimpleDType& d = dtype_or(dtype, DType::Float32(), "eye: dtype");
        const CarrierChoice c = carrier_choice(carrier, "eye: carrier");
        return released([&] { return eye(rows, m_, diagonal, d, c); });
      }, py::arg("n"), py::arg("m") = py::none(), py::arg("k") = 0, py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("carrier") = py::none(), R"doc(
eye(n, m=None, k=0, *, dtype=None, carrier=None): the (n, m) tensor with ones
on the k-th diagonal (element (i, j) is one where j - i == k), zeros
elsewhere; m None: n. dtype None: Float32.)doc");

  py::module_ r = m.def_submodule("_random", "Seeded random tensors (strideweave.random re-exports them; docs/creation.md).");
  using random::Generator;
  py::class_<Generator>(r, "Generator", R"doc(
Generator(seed, position=0): a seed and a position. Draw k is four 32-bit words,
a pure function of (seed, k) (Philox4x32-10). A call takes the next draws:
element i (logical order, first axis fastest) takes word i % 4 of draw
position + i // 4 (uniform, integers, permutation's steps), or half i % 2 of
draw position + i // 2 (normal). The values depend only on the seed, the
calls made before and the shape: never on the carrier or the thread count.
Calls from several threads are safe and take disjoint draws. A failed call
takes none; a call that would pass 2**64 draws is an OverflowError.)doc")
      .def(py::init([](py::handle seed, std::uint64_t position) { return Generator(seed_arg(seed), position); }),
           py::arg("seed"), py::arg("position") = 0)
      .def_property_readonly("seed", &Generator::seed, "The seed.")
      .def_property_readonly("position", &Generator::position, "The number of draws taken so far.")
      .def("uniform", [](Generator& g, py::handle low, py::handle high, py::handle size, py::handle dtype,
                         py::handle carrier) {
             const double lo = real_arg(low, "uniform: low"), hi = real_arg(high, "uniform: high");
             const Shape s = shape_value(size, "uniform: size");
             const SimpleDType& d = dtype_or(dtype, DType::Float32(), "uniform: dtype");
             const CarrierChoice c = carrier_choice(carrier, "uniform: carrier");
             return released([&] { return g.uniform(s, lo, hi, d, c); });
           }, py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("size") = py::none(), py::kw_only(),
           py::arg("dtype") = py::none(), py::arg("carrier") = py::none(),
           "uniform(low=0.0, high=1.0, size=None, *, dtype=None, carrier=None): Float32 values uniform on "
           "[low, high) (24 random bits each); size None is a rank-0 tensor.")
      .def("normal", [](Generator& g, py::handle loc, py::handle scale, py::handle size, py::handle dtype,
                        py::handle carrier) {
             const double mean = real_arg(loc, "normal: loc"), stddev = real_arg(scale, "normal: scale");
             const Shape s = shape_value(size, "normal: size");
             const SimpleDType& d = dtype_or(dtype, DType::Float32(), "normal: dtype");
             const CarrierChoice c = carrier_choice(carrier, "normal: carrier");
             return released([&] { return g.normal(s, mean, stddev, d, c); });
           }, py::arg("loc") = 0.0, py::arg("scale") = 1.0, py::arg("size") = py::none(), py::kw_only(),
           py::arg("dtype") = py::none(), py::arg("carrier") = py::none(),
           "normal(loc=0.0, scale=1.0, size=None, *, dtype=None, carrier=None): Float32 normal values "
           "(Box-Muller in double from 53-bit uniforms, rounded once).")
      .def("integers", [](Generator& g, py::handle low, py::handle high, py::handle size, py::handle dtype,
                          py::handle carrier) {
             std::int64_t lo = 0, hi = integer_arg(low, "integers: low");
             if (!high.is_none()) {
               lo = hi;
               hi = integer_arg(high, "integers: high");
             }
             const Shape s = shape_value(size, "integers: size");
             const SimpleDType& d = dtype_or(dtype, DType::Int32(), "integers: dtype");
             const CarrierChoice c = carrier_choice(carrier, "integers: carrier");
             return released([&] { return g.integers(lo, hi, s, d, c); });
           }, py::arg("low"), py::arg("high") = py::none(), py::arg("size") = py::none(), py::kw_only(),
           py::arg("dtype") = py::none(), py::arg("carrier") = py::none(),
           "integers(low, high=None, size=None, *, dtype=None, carrier=None): Int32 values uniform on "
           "[low, high) exactly (high None: [0, low)).")
      .def("permutation", [](Generator& g, py::handle x, py::handle carrier) -> Tensor {
             if (py::isinstance<Tensor>(x)) {
               if (!carrier.is_none())
                 throw TypeError("permutation: carrier is for permutation(n); a tensor is permuted on its own carrier");
               const Tensor t = x.cast<Tensor>();
               return released([&] { return g.permutation(t); });
             }
             const std::int64_t n = integer_arg(x, "permutation: x");
             const CarrierChoice c = carrier_choice(carrier, "permutation: carrier");
             return released([&] { return g.permutation(n, c); });
           }, py::arg("x"), py::kw_only(), py::arg("carrier") = py::none(),
           "permutation(x, *, carrier=None): an int n gives a random permutation of 0 .. n-1 (Int32); a tensor "
           "gives it with its first axis permuted (through gather: what gather executes is what this offers).")
      .def("__repr__", [](const Generator& g) {
        return fmt::format("Generator(seed={}, position={})", g.seed(), g.position());
      });
  r.def("draw_words", [](py::handle seed, std::uint64_t counter, std::uint32_t attempt) {
        const random::DrawWords d = random::draw_words(seed_arg(seed), counter, attempt);
        return py::make_tuple(d.w[0], d.w[1], d.w[2], d.w[3]);
      }, py::arg("seed"), py::arg("counter"), py::arg("attempt") = 0, R"doc(
draw_words(seed, counter, attempt=0): the four 32-bit words of draw `counter`
of `seed` (Philox4x32-10, key (seed low, seed high), counter (counter low,
counter high, 0, attempt)): the one function every Generator value comes
from, for checking another implementation word for word.)doc");
}

}  // namespace strideweave::python
