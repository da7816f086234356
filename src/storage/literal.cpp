// Tensors from nested data. See include/strideweave/literal.h.
#include <strideweave/errors.h>
#include <strideweave/literal.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace strideweave {

namespace {

std::size_t host_element_size(HostElement e) noexcept {
  switch (e) {
    case HostElement::Bool: case HostElement::Int8: case HostElement::UInt8: return 1;
    case HostElement::Int16: case HostElement::UInt16: case HostElement::Float16: return 2;
    case HostElement::Int32: case HostElement::UInt32: case HostElement::Float32: return 4;
    case HostElement::Int64: case HostElement::UInt64: case HostElement::Float64: return 8;
  }
  return 1;
}

enum class ElementClass : std::uint8_t { Bool, Integer, Float };

ElementClass element_class(HostElement e) {
  switch (e) {
    case HostElement::Bool: return ElementClass::Bool;
    case HostElement::Float16: case HostElement::Float32: case HostElement::Float64: return ElementClass::Float;
    default: return ElementClass::Integer;
  }
}

const char* class_name(ElementClass c) {
  return c == ElementClass::Bool ? "bool" : c == ElementClass::Float ? "float" : "integer";
}

// One element's bytes in native order.
void load_bytes(const HostArrayView& a, const char* p, unsigned char* out) {
  const std::size_t n = host_element_size(a.element);
  std::memcpy(out, p, n);
  if (a.byte_swapped)
    for (std::size_t i = 0; i < n / 2; ++i) std::swap(out[i], out[n - 1 - i]);
}

// IEEE binary16 -> double, exactly. (A single conversion of a stored
// half: no library in the build offers one for arbitrary byte order.)
double half_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0) magnitude = std::ldexp(static_cast<double>(mantissa), -24);
  else if (exponent == 31) magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN()
                                                : std::numeric_limits<double>::infinity();
  else magnitude = std::ldexp(static_cast<double>(mantissa | 0x400), exponent - 25);
  return sign ? -magnitude : magnitude;
}

template <class U, class S>
int128 integer_of(const unsigned char* b, bool is_signed) {
  U u;
  std::memcpy(&u, b, sizeof u);
  return is_signed ? int128(static_cast<S>(u)) : int128(u);
}

int128 integer_element(const HostArrayView& a, const char* p) {
  unsigned char b[8];
  load_bytes(a, p, b);
  switch (a.element) {
    case HostElement::Int8: return integer_of<std::uint8_t, std::int8_t>(b, true);
    case HostElement::UInt8: return integer_of<std::uint8_t, std::int8_t>(b, false);
    case HostElement::Int16: return integer_of<std::uint16_t, std::int16_t>(b, true);
    case HostElement::UInt16: return integer_of<std::uint16_t, std::int16_t>(b, false);
    case HostElement::Int32: return integer_of<std::uint32_t, std::int32_t>(b, true);
    case HostElement::UInt32: return integer_of<std::uint32_t, std::int32_t>(b, false);
    case HostElement::Int64: return integer_of<std::uint64_t, std::int64_t>(b, true);
    default: return integer_of<std::uint64_t, std::int64_t>(b, false);
  }
}

double float_element(const HostArrayView& a, const char* p) {
  unsigned char b[8];
  load_bytes(a, p, b);
  switch (a.element) {
    case HostElement::Float16: { std::uint16_t h; std::memcpy(&h, b, 2); return half_to_double(h); }
    case HostElement::Float32: { float f; std::memcpy(&f, b, 4); return static_cast<double>(f); }
    default: { double d; std::memcpy(&d, b, 8); return d; }
  }
}

std::int64_t element_count(const HostArrayView& a) {
  std::int64_t n = 1;
  for (std::int64_t e : a.shape) n *= e;
  return n;
}

// Calls fn(pointer) for every element of `a` in row-major order.
template <class Fn>
void for_each_element(const HostArrayView& a, Fn&& fn) {
  const std::int64_t count = element_count(a);
  if (count == 0) return;
  const std::size_t nd = a.shape.size();
  std::vector<std::int64_t> index(nd, 0);
  const char* p = static_cast<const char*>(a.data);
  for (std::int64_t k = 0; k < count; ++k) {
    fn(p);
    for (std::size_t i = nd; i-- > 0;) {
      p += a.byte_strides[i];
      if (++index[i] < a.shape[i]) break;
      p -= a.byte_strides[i] * a.shape[i];
      index[i] = 0;
    }
  }
}

std::string integer_text(int128 v) { return WeakScalar::integer(v).to_string(); }

}  // namespace

struct LiteralBuilder::State {
  enum class LeafKind : std::uint8_t { Number, HugeInteger, NotNumber, Array };
  struct Leaf {
    LeafKind kind;
    std::size_t index;  // into the table of its kind
  };
  struct Huge {
    bool negative;
    std::string text;
  };
  struct Opaque {
    std::string text, type_name;
  };
  struct Open {
    std::int64_t length, seen;
  };

  std::string what;
  std::optional<std::size_t> rank;  // fixed_rank()
  std::vector<std::int64_t> extents;
  bool known = false;     // extents is complete
  bool complete = false;  // the outermost item has been read
  std::vector<Open> open;
  std::vector<Leaf> leaves;
  std::vector<WeakScalar> numbers;
  std::vector<Huge> huge;
  std::vector<Opaque> opaque;
  std::vector<HostArrayView> arrays;

  [[noreturn]] void ragged() const {
    throw ValueError(fmt::format("{}: ragged nested data (every sequence at one depth must have the same length, "
                                 "and an array the shape the other items have there)",
                                 what));
  }
  [[noreturn]] void too_deep() const {
    throw ValueError(fmt::format("{}: the data is nested more than {} levels deep (a tensor has at most {} axes; "
                                 "a list that contains itself is nested without end)",
                                 what, kMaxLiteralRank, kMaxLiteralRank));
  }
  // An item is about to be read at the current depth: the reader contract.
  void admit_item() const {
    if (complete) throw RuntimeError(fmt::format("{}: LiteralBuilder: an item after the outermost one", what));
    if (!open.empty() && open.back().seen == open.back().length)
      throw RuntimeError(fmt::format("{}: LiteralBuilder: more items than the sequence's length {}", what,
                                     open.back().length));
  }
  void counted() {
    if (open.empty()) complete = true;
    else ++open.back().seen;
  }
  // A leaf at the current depth: checks the shape, then records it.
  void leaf(LeafKind kind, std::size_t index) {
    admit_item();
    const std::size_t depth = open.size();
    if (known ? depth != extents.size() : (rank && depth != *rank)) ragged();
    leaves.reserve(leaves.size() + 1);
    known = true;
    leaves.push_back(Leaf{kind, index});
    counted();
  }
  void require_complete() const {
    if (!complete)
      throw RuntimeError(fmt::format("{}: LiteralBuilder: the data is not complete ({} sequences still open)",
                                     what, open.size()));
  }
};

LiteralBuilder::LiteralBuilder(std::string what) : state_(std::make_unique<State>()) {
  state_->what = std::move(what);
}
LiteralBuilder::~LiteralBuilder() = default;
LiteralBuilder::LiteralBuilder(LiteralBuilder&&) noexcept = default;
LiteralBuilder& LiteralBuilder::operator=(LiteralBuilder&&) noexcept = default;

void LiteralBuilder::fixed_rank(std::size_t rank) {
  State& s = *state_;
  if (rank > kMaxLiteralRank) s.too_deep();
  if (!s.leaves.empty() || !s.open.empty() || s.complete)
    throw RuntimeError(fmt::format("{}: LiteralBuilder: fixed_rank() after data was read", s.what));
  s.rank = rank;
}

void LiteralBuilder::open(std::int64_t length) {
  State& s = *state_;
  s.admit_item();
  if (length < 0) throw ValueError(fmt::format("{}: a sequence of negative length {}", s.what, length));
  const std::size_t depth = s.open.size();
  if (depth >= kMaxLiteralRank || (s.rank && depth >= *s.rank)) s.too_deep();
  if (!s.known) {
    s.extents.push_back(length);
    if (length == 0) {
      s.known = true;
      if (s.rank) s.extents.resize(*s.rank, 0);  // the axes inside an empty list
    }
  } else if (depth >= s.extents.size() || s.extents[depth] != length) {
    s.ragged();
  }
  s.open.push_back(State::Open{length, 0});
}

void LiteralBuilder::close() {
  State& s = *state_;
  if (s.open.empty()) throw RuntimeError(fmt::format("{}: LiteralBuilder: close() without open()", s.what));
  const State::Open top = s.open.back();
  if (top.seen != top.length)
    throw RuntimeError(fmt::format("{}: LiteralBuilder: a sequence of length {} closed after {} items", s.what,
                                   top.length, top.seen));
  s.open.pop_back();
  s.counted();
}

void LiteralBuilder::number(const WeakScalar& value) {
  State& s = *state_;
  s.numbers.push_back(value);
  try {
    s.leaf(State::LeafKind::Number, s.numbers.size() - 1);
  } catch (...) {
    s.numbers.pop_back();
    throw;
  }
}

void LiteralBuilder::integer_beyond_int128(bool negative, std::string text) {
  State& s = *state_;
  s.huge.push_back(State::Huge{negative, std::move(text)});
  try {
    s.leaf(State::LeafKind::HugeInteger, s.huge.size() - 1);
  } catch (...) {
    s.huge.pop_back();
    throw;
  }
}

void LiteralBuilder::not_a_number(std::string text, std::string type_name) {
  State& s = *state_;
  s.opaque.push_back(State::Opaque{std::move(text), std::move(type_name)});
  try {
    s.leaf(State::LeafKind::NotNumber, s.opaque.size() - 1);
  } catch (...) {
    s.opaque.pop_back();
    throw;
  }
}

void LiteralBuilder::array(HostArrayView view) {
  State& s = *state_;
  s.admit_item();
  const std::size_t nd = view.shape.size();
  if (view.byte_strides.size() != nd)
    throw ValueError(fmt::format("{}: an array of rank {} with {} strides", s.what, nd, view.byte_strides.size()));
  for (std::int64_t e : view.shape)
    if (e < 0) throw ValueError(fmt::format("{}: an array with a negative extent {}", s.what, e));
  const std::size_t depth = s.open.size();
  if (depth + nd > kMaxLiteralRank) s.too_deep();
  if (!s.known) {
    if (s.rank && depth + nd != *s.rank) s.ragged();
    std::vector<std::int64_t> extents = s.extents;
    extents.insert(extents.end(), view.shape.begin(), view.shape.end());
    s.arrays.push_back(std::move(view));
    s.extents = std::move(extents);
    s.known = true;
  } else {
    if (s.extents.size() != depth + nd) s.ragged();
    for (std::size_t i = 0; i < nd; ++i)
      if (s.extents[depth + i] != view.shape[i]) s.ragged();
    s.arrays.push_back(std::move(view));
  }
  s.leaves.push_back(State::Leaf{State::LeafKind::Array, s.arrays.size() - 1});
  s.counted();
}

LiteralBuilder::Mark LiteralBuilder::mark() const {
  const State& s = *state_;
  Mark m;
  m.extents = s.extents;
  m.open.reserve(s.open.size());
  for (const State::Open& o : s.open) m.open.push_back({o.length, o.seen});
  m.leaves = s.leaves.size();
  m.numbers = s.numbers.size();
  m.huge = s.huge.size();
  m.opaque = s.opaque.size();
  m.arrays = s.arrays.size();
  m.known = s.known;
  m.complete = s.complete;
  return m;
}

void LiteralBuilder::rewind(const Mark& m) noexcept {
  State& s = *state_;
  s.extents = m.extents;  // no larger than the current extents' capacity: no allocation that can fail
  s.open.clear();
  for (const auto& [length, seen] : m.open) s.open.push_back(State::Open{length, seen});
  s.leaves.resize(std::min(s.leaves.size(), m.leaves), State::Leaf{});
  while (s.numbers.size() > m.numbers) s.numbers.pop_back();
  s.huge.resize(std::min(s.huge.size(), m.huge));
  s.opaque.resize(std::min(s.opaque.size(), m.opaque));
  s.arrays.resize(std::min(s.arrays.size(), m.arrays));
  s.known = m.known;
  s.complete = m.complete;
}

Shape LiteralBuilder::shape() const {
  state_->require_complete();
  return Shape::of(state_->extents);
}

const SimpleDType& LiteralBuilder::inferred_dtype() const {
  const State& s = *state_;
  s.require_complete();
  bool any_bool = false, any_float = false, any_int = false;
  for (const State::Leaf& leaf : s.leaves) {
    switch (leaf.kind) {
      case State::LeafKind::NotNumber:
        throw TypeError(fmt::format("{}: {} is not a number", s.what, s.opaque[leaf.index].text));
      case State::LeafKind::HugeInteger: any_int = true; break;
      case State::LeafKind::Number: {
        const WeakScalar& n = s.numbers[leaf.index];
        if (n.is_bool()) any_bool = true;
        else if (n.kind() == WeakScalarKind::INTEGER) any_int = true;
        else any_float = true;
        break;
      }
      case State::LeafKind::Array:
        switch (element_class(s.arrays[leaf.index].element)) {
          case ElementClass::Bool: any_bool = true; break;
          case ElementClass::Integer: any_int = true; break;
          case ElementClass::Float: any_float = true; break;
        }
        break;
    }
  }
  if (any_bool && (any_int || any_float))
    throw TypeError(fmt::format("{}: bools do not mix with numbers; pass dtype= to choose", s.what));
  if (any_bool) return DType::Bool();
  if (any_int && !any_float) return DType::Int32();
  return DType::Float32();
}

namespace {

const char* a_number(const WeakScalar& n) {
  return n.is_bool() ? "a bool" : n.kind() == WeakScalarKind::INTEGER ? "an integer" : "a float";
}

Value int32_value(const std::string& what, int128 v) {
  if (v < INT32_MIN_VALUE || v > INT32_MAX_VALUE)
    throw OverflowError(fmt::format("{}: {} is outside Int32 [{}, {}]", what, integer_text(v), INT32_MIN_VALUE,
                                    INT32_MAX_VALUE));
  return Value::from_int32(static_cast<std::int32_t>(v));
}

}  // namespace

std::vector<Value> LiteralBuilder::values(const SimpleDType& dtype) const {
  const State& s = *state_;
  s.require_complete();
  enum class Target : std::uint8_t { Bool, Int32, Float32 };
  Target target;
  if (&dtype == &DType::Bool()) target = Target::Bool;
  else if (&dtype == &DType::Int32()) target = Target::Int32;
  else if (&dtype == &DType::Float32()) target = Target::Float32;
  else throw ValueError(fmt::format("{}: dtype {} is not a stored dtype (Float32, Int32, Bool)", s.what, dtype.name()));
  auto needed = [&](std::string_view got) -> std::string {
    switch (target) {
      case Target::Bool: return fmt::format("{}: a bool value is needed for dtype bool, got {}", s.what, got);
      case Target::Int32:
        return fmt::format("{}: an integer value is needed for dtype int32, got {} (no silent truncation)", s.what,
                           got);
      case Target::Float32:
        return fmt::format("{}: a real number (not a bool) is needed for dtype float32, got {}", s.what, got);
    }
    return {};
  };

  // The element count must fit before anything is sized from it.
  std::int64_t total = 1;
  for (std::int64_t e : s.extents)
    if (__builtin_mul_overflow(total, e, &total))
      throw ValueError(fmt::format("{}: the data's shape has more elements than 64 bits count", s.what));
  std::vector<Value> logical(static_cast<std::size_t>(total));
  // Row-major position -> logical ordinal (first axis fastest), by odometer.
  const std::size_t rank = s.extents.size();
  std::vector<std::int64_t> coordinate(rank, 0), stride(rank, 1);
  for (std::size_t i = 1; i < rank; ++i) stride[i] = stride[i - 1] * s.extents[i - 1];
  std::int64_t ordinal = 0;
  auto emit = [&](Value v) {
    logical[static_cast<std::size_t>(ordinal)] = v;
    for (std::size_t i = rank; i-- > 0;) {
      ordinal += stride[i];
      if (++coordinate[i] < s.extents[i]) return;
      ordinal -= stride[i] * s.extents[i];
      coordinate[i] = 0;
    }
  };
  const float inf = std::numeric_limits<float>::infinity();
  for (const State::Leaf& leaf : s.leaves) {
    switch (leaf.kind) {
      case State::LeafKind::NotNumber: throw TypeError(needed(s.opaque[leaf.index].type_name));
      case State::LeafKind::HugeInteger: {
        const State::Huge& h = s.huge[leaf.index];
        if (target == Target::Bool) throw TypeError(needed("an integer"));
        if (target == Target::Int32)
          throw OverflowError(fmt::format("{}: {} is outside Int32 [{}, {}]", s.what, h.text, INT32_MIN_VALUE,
                                          INT32_MAX_VALUE));
        // Beyond 2**127, far beyond FLT_MAX + half an ulp.
        emit(Value::from_float32(h.negative ? -inf : inf));
        break;
      }
      case State::LeafKind::Number: {
        const WeakScalar& n = s.numbers[leaf.index];
        const bool integer = !n.is_bool() && n.kind() == WeakScalarKind::INTEGER;
        if (target == Target::Bool) {
          if (!n.is_bool()) throw TypeError(needed(a_number(n)));
          emit(Value::from_bool(n.real_value() != 0.0));
        } else if (target == Target::Int32) {
          if (!integer) throw TypeError(needed(a_number(n)));
          emit(int32_value(s.what, n.integer_value()));
        } else {
          if (n.is_bool()) throw TypeError(needed(a_number(n)));
          emit(Value::from_float32(n.to_float32()));
        }
        break;
      }
      case State::LeafKind::Array: {
        const HostArrayView& a = s.arrays[leaf.index];
        const ElementClass c = element_class(a.element);
        const std::string got = fmt::format("an array of {} elements", class_name(c));
        if (target == Target::Bool) {
          if (c != ElementClass::Bool) throw TypeError(needed(got));
          for_each_element(a, [&](const char* p) { emit(Value::from_bool(*p != 0)); });
        } else if (target == Target::Int32) {
          if (c != ElementClass::Integer) throw TypeError(needed(got));
          for_each_element(a, [&](const char* p) { emit(int32_value(s.what, integer_element(a, p))); });
        } else if (c == ElementClass::Bool) {
          throw TypeError(needed(got));
        } else if (c == ElementClass::Float) {
          for_each_element(a, [&](const char* p) { emit(Value::from_float32(WeakScalar(float_element(a, p)).to_float32())); });
        } else {
          for_each_element(a, [&](const char* p) {
            emit(Value::from_float32(WeakScalar::integer(integer_element(a, p)).to_float32()));
          });
        }
        break;
      }
    }
  }
  return logical;
}

Tensor LiteralBuilder::build(const SimpleDType* dtype, const Carrier& prototype) const {
  const SimpleDType& d = dtype ? *dtype : inferred_dtype();
  const std::vector<Value> logical = values(d);
  return Tensor(prototype.new_like(logical, true, &d), 0, Layout::compact(shape()));
}

}  // namespace strideweave
