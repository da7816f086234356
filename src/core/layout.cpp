// Hierarchical Shape, Stride and Layout. See include/strideweave/layout.h and
// docs/layout.md (core-concepts.md section 3).
#include <strideweave/errors.h>
#include <strideweave/layout.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <span>
#include <utility>

namespace strideweave {
namespace {

// ---------------------------------------------------------------------------
// Small private helpers.

std::size_t hash_mix(std::size_t seed, std::size_t value) noexcept {
  // 64-bit variant of boost::hash_combine with a splitmix finaliser on value.
  std::uint64_t v = static_cast<std::uint64_t>(value);
  v ^= v >> 30;
  v *= 0xbf58476d1ce4e5b9ULL;
  v ^= v >> 27;
  v *= 0x94d049bb133111ebULL;
  v ^= v >> 31;
  return seed ^ (static_cast<std::size_t>(v) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

std::size_t hash_modes(std::span<const IntTuple> modes, std::size_t salt) noexcept {
  std::size_t h = hash_mix(salt, modes.size());
  for (const IntTuple& m : modes) h = hash_mix(h, m.hash());
  return h;
}

std::string join_modes(std::span<const IntTuple> modes) {
  std::string out = "(";
  for (std::size_t i = 0; i < modes.size(); ++i) {
    if (i) out += ',';
    out += modes[i].to_string();
  }
  out += ')';
  return out;
}

void collect_leaves(const IntTuple& t, std::vector<std::int64_t>& out) {
  if (t.is_leaf()) {
    out.push_back(t.value());
    return;
  }
  for (const IntTuple& c : t.children()) collect_leaves(c, out);
}

// Product of `leaves` under the overflow rule of docs/layout.md: the product
// of the NON-ZERO leaves must fit in int64_t (ValueError naming `what`); a
// zero leaf makes the result 0. This matches numpy's "array is too big" check
// and guarantees that every stride computed from these extents (which skips
// zero extents) is representable.
std::int64_t checked_product(std::span<const std::int64_t> leaves, const char* what) {
  std::int64_t nonzero = 1;
  bool any_zero = false;
  for (std::int64_t e : leaves) {
    if (e == 0) {
      any_zero = true;
      continue;
    }
    std::int64_t r = 0;
    if (__builtin_mul_overflow(nonzero, e, &r))
      throw ValueError(fmt::format("{}: the product of the extents overflows int64 (at factor {})", what, e));
    nonzero = r;
  }
  return any_zero ? 0 : nonzero;
}

// A tuple congruent to `t` with every leaf set to `v`.
IntTuple filled_like(const IntTuple& t, std::int64_t v) {
  if (t.is_leaf()) return IntTuple(v);
  std::vector<IntTuple> kids;
  kids.reserve(t.rank());
  for (const IntTuple& c : t.children()) kids.push_back(filled_like(c, v));
  return IntTuple::tuple(std::move(kids));
}

// A tuple congruent to `t` whose leaves are taken, in depth-first order, from
// `values` starting at `*pos`.
IntTuple rebuild_like(const IntTuple& t, const std::vector<std::int64_t>& values, std::size_t* pos) {
  if (t.is_leaf()) return IntTuple(values.at((*pos)++));
  std::vector<IntTuple> kids;
  kids.reserve(t.rank());
  for (const IntTuple& c : t.children()) kids.push_back(rebuild_like(c, values, pos));
  return IntTuple::tuple(std::move(kids));
}

struct Leaf {
  std::int64_t extent;
  std::int64_t stride;
};

// Leaves of one (shape mode, stride mode) pair in depth-first order.
void zip_leaves(const IntTuple& shape, const IntTuple& stride, std::vector<Leaf>& out) {
  if (shape.is_leaf()) {
    out.push_back({shape.value(), stride.value()});
    return;
  }
  for (std::size_t i = 0; i < shape.rank(); ++i) zip_leaves(shape[i], stride[i], out);
}

std::vector<Leaf> mode_leaves(const Layout& l, std::size_t axis) {
  std::vector<Leaf> out;
  zip_leaves(l.shape().mode(axis), l.stride().mode(axis), out);
  return out;
}

std::vector<Leaf> all_leaves(const Layout& l) {
  std::vector<Leaf> out;
  for (std::size_t i = 0; i < l.rank(); ++i) zip_leaves(l.shape().mode(i), l.stride().mode(i), out);
  return out;
}

// Drop extent-1 leaves and merge adjacent contiguous leaves
// (next.stride == extent * stride). Precondition: no zero extent.
std::vector<Leaf> coalesce_leaves(const std::vector<Leaf>& leaves) {
  std::vector<Leaf> out;
  for (const Leaf& lf : leaves) {
    if (lf.extent == 1) continue;
    if (!out.empty()) {
      Leaf& back = out.back();
      std::int64_t reach = 0;
      if (!__builtin_mul_overflow(back.extent, back.stride, &reach) && reach == lf.stride) {
        // back.extent * lf.extent <= layout size, which fits.
        back.extent *= lf.extent;
        continue;
      }
    }
    out.push_back(lf);
  }
  return out;
}

Layout from_leaves(const std::vector<Leaf>& leaves) {
  std::vector<std::int64_t> e, s;
  e.reserve(leaves.size());
  s.reserve(leaves.size());
  for (const Leaf& lf : leaves) {
    e.push_back(lf.extent);
    s.push_back(lf.stride);
  }
  return Layout(Shape::of(e), Stride::of(s));
}

// Index of `key` (already range-checked) expanded over `leaves` mixed-radix,
// first leaf fastest.
std::int64_t expand_key(std::int64_t key, const std::vector<Leaf>& leaves) {
  std::int64_t index = 0;
  for (const Leaf& lf : leaves) {
    if (lf.extent <= 1) continue;  // extent 1: coordinate 0; extent 0 unreachable (empty domain)
    index += (key % lf.extent) * lf.stride;  // <= cosize - 1: cannot overflow
    key /= lf.extent;
  }
  return index;
}

// expand_key over the leaves of (shape, stride) in the same depth-first
// order, without collecting them: `key` holds what is left of the key and
// `index` accumulates. Layout::operator()(key) runs once per element in
// element-wise loops (Tensor::values, gradient buffers), so it allocates
// nothing.
void expand_key_in_place(const IntTuple& shape, const IntTuple& stride, std::int64_t& key, std::int64_t& index) {
  if (shape.is_leaf()) {
    const std::int64_t extent = shape.value();
    if (extent <= 1) return;  // as in expand_key
    index += (key % extent) * stride.value();
    key /= extent;
    return;
  }
  for (std::size_t i = 0; i < shape.rank(); ++i) expand_key_in_place(shape[i], stride[i], key, index);
}

}  // namespace

// ---------------------------------------------------------------------------
// Checked arithmetic and axes.

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw ValueError(fmt::format("{}: integer overflow in {} * {}", what, a, b));
  return r;
}

std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw ValueError(fmt::format("{}: integer overflow in {} + {}", what, a, b));
  return r;
}

std::int64_t normalize_axis(std::int64_t axis, std::size_t rank, const char* what) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    throw ValueError(fmt::format("{}: axis {} is out of range for rank {} (valid: [{}, {}))", what, axis, rank,
                                 -r, r));
  return axis < 0 ? axis + r : axis;
}

// ---------------------------------------------------------------------------
// IntTuple

IntTuple::IntTuple(std::int64_t leaf) : leaf_(true), value_(leaf) {}

IntTuple::IntTuple(std::initializer_list<IntTuple> children) : leaf_(false), value_(0), children_(children) {}

IntTuple IntTuple::tuple(std::vector<IntTuple> children) {
  IntTuple t;
  t.children_ = std::move(children);
  return t;
}

std::vector<std::int64_t> IntTuple::leaves() const {
  std::vector<std::int64_t> out;
  collect_leaves(*this, out);
  return out;
}

bool IntTuple::congruent(const IntTuple& other) const noexcept {
  if (leaf_ != other.leaf_) return false;
  if (leaf_) return true;
  if (children_.size() != other.children_.size()) return false;
  for (std::size_t i = 0; i < children_.size(); ++i)
    if (!children_[i].congruent(other.children_[i])) return false;
  return true;
}

std::int64_t IntTuple::product(const char* what) const {
  const std::vector<std::int64_t> l = leaves();
  return checked_product(l, what);
}

std::string IntTuple::to_string() const {
  if (leaf_) return fmt::format("{}", value_);
  return join_modes(children_);
}

bool operator==(const IntTuple& a, const IntTuple& b) noexcept {
  if (a.leaf_ != b.leaf_) return false;
  if (a.leaf_) return a.value_ == b.value_;
  return a.children_ == b.children_;
}

std::size_t IntTuple::hash() const noexcept {
  if (leaf_) return hash_mix(0x51ed270b27a3f1c5ULL, static_cast<std::size_t>(value_));
  return hash_modes(children_, 0x2545f4914f6cdd1dULL);
}

// ---------------------------------------------------------------------------
// ModeBlock: the shared immutable modes of a Shape or Stride

namespace detail {

ModeBlock::Rep* ModeBlock::allocate(std::size_t rank, bool with_extents) {
  const std::size_t n_extents = with_extents ? rank : 0;
  void* raw = ::operator new(sizeof(Rep) + rank * sizeof(IntTuple) + n_extents * sizeof(std::int64_t));
  Rep* rep = ::new (raw) Rep{{1}, 0, n_extents, 1};
  return rep;
}

void ModeBlock::release(Rep* rep) noexcept {
  IntTuple* m = rep->modes();
  for (std::size_t i = 0; i < rep->rank; ++i) m[i].~IntTuple();
  rep->~Rep();
  ::operator delete(static_cast<void*>(rep));
}

ModeBlock::ModeBlock(std::size_t rank, bool with_extents) {
  if (rank == 0) return;
  Rep* rep = allocate(rank, with_extents);
  // Leaves never throw on construction; `rank` counts constructed modes.
  for (IntTuple* m = rep->modes(); rep->rank < rank; ++rep->rank) ::new (m + rep->rank) IntTuple(std::int64_t{0});
  for (std::size_t i = 0; i < rep->n_extents; ++i) rep->extents()[i] = 0;
  rep_ = rep;
}

ModeBlock::ModeBlock(std::span<const IntTuple> modes, bool with_extents) {
  if (modes.empty()) return;
  Rep* rep = allocate(modes.size(), with_extents);
  try {
    // A nested mode's copy allocates (and may throw); `rank` counts the
    // constructed modes so that release() destroys exactly those.
    for (IntTuple* m = rep->modes(); rep->rank < modes.size(); ++rep->rank)
      ::new (m + rep->rank) IntTuple(modes[rep->rank]);
  } catch (...) {
    release(rep);
    throw;
  }
  for (std::size_t i = 0; i < rep->n_extents; ++i) rep->extents()[i] = 0;
  rep_ = rep;
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Shape

Shape::Shape(std::initializer_list<IntTuple> modes)
    : block_(std::span<const IntTuple>(modes.begin(), modes.size()), true) {
  init();
}

Shape::Shape(std::vector<IntTuple> modes) : block_(std::span<const IntTuple>(modes), true) { init(); }

Shape Shape::of(std::span<const std::int64_t> extents) {
  Shape shape;
  shape.block_ = detail::ModeBlock(extents.size(), true);
  IntTuple* m = shape.block_.mutable_modes();
  for (std::size_t i = 0; i < extents.size(); ++i) m[i] = IntTuple(extents[i]);
  shape.init();
  return shape;
}

Shape Shape::of(std::initializer_list<std::int64_t> extents) {
  return of(std::span<const std::int64_t>(extents.begin(), extents.size()));
}

// Fills the (still unshared) block's extents and size; ValueError for a
// negative extent or an overflowing product, before the Shape exists.
void Shape::init() {
  const std::span<const IntTuple> modes = block_.modes();
  std::int64_t* extents = block_.mutable_extents();
  if (is_flat()) {  // the common case, without per-mode leaf vectors
    for (std::size_t i = 0; i < modes.size(); ++i) {
      const std::int64_t e = modes[i].value();
      if (e < 0)
        throw ValueError(fmt::format("Shape: extent {} in mode {} ({}) is negative; extents must be >= 0", e, i,
                                     modes[i].to_string()));
      extents[i] = e;
    }
    block_.set_size(checked_product(block_.extents(), "Shape"));
    return;
  }
  std::vector<std::int64_t> all;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    std::vector<std::int64_t> leaves = modes[i].leaves();
    for (std::int64_t e : leaves)
      if (e < 0)
        throw ValueError(fmt::format("Shape: extent {} in mode {} ({}) is negative; extents must be >= 0", e, i,
                                     modes[i].to_string()));
    extents[i] = checked_product(leaves, "Shape");
    all.insert(all.end(), leaves.begin(), leaves.end());
  }
  block_.set_size(checked_product(all, "Shape"));
}

std::string Shape::to_string() const { return join_modes(modes()); }

std::size_t Shape::hash() const noexcept { return hash_modes(modes(), 0x5bd1e9955bd1e995ULL); }

// ---------------------------------------------------------------------------
// Stride

namespace {
void check_strides(std::span<const IntTuple> modes) {
  for (std::size_t i = 0; i < modes.size(); ++i) {
    if (modes[i].is_leaf()) {
      if (modes[i].value() < 0)
        throw ValueError(fmt::format("Stride: stride {} in mode {} ({}) is negative; strides must be >= 0",
                                     modes[i].value(), i, modes[i].to_string()));
      continue;
    }
    for (std::int64_t s : modes[i].leaves())
      if (s < 0)
        throw ValueError(fmt::format("Stride: stride {} in mode {} ({}) is negative; strides must be >= 0", s, i,
                                     modes[i].to_string()));
  }
}
}  // namespace

Stride::Stride(std::initializer_list<IntTuple> modes)
    : block_(std::span<const IntTuple>(modes.begin(), modes.size()), false) {
  check_strides(block_.modes());
}

Stride::Stride(std::vector<IntTuple> modes) : block_(std::span<const IntTuple>(modes), false) {
  check_strides(block_.modes());
}

Stride Stride::of(std::span<const std::int64_t> strides) {
  detail::ModeBlock block(strides.size(), false);
  IntTuple* m = block.mutable_modes();
  for (std::size_t i = 0; i < strides.size(); ++i) m[i] = IntTuple(strides[i]);
  check_strides(block.modes());
  return Stride(std::move(block));
}

Stride Stride::of(std::initializer_list<std::int64_t> strides) {
  return of(std::span<const std::int64_t>(strides.begin(), strides.size()));
}

std::string Stride::to_string() const { return join_modes(modes()); }

std::size_t Stride::hash() const noexcept { return hash_modes(modes(), 0x9ddfea08eb382d69ULL); }

// ---------------------------------------------------------------------------
// Layout: construction and queries

Layout::Layout(Shape shape, Stride stride) : shape_(std::move(shape)), stride_(std::move(stride)) {
  if (shape_.rank() != stride_.rank())
    throw ValueError(fmt::format("Layout: shape {} has rank {} but stride {} has rank {}", shape_.to_string(),
                                 shape_.rank(), stride_.to_string(), stride_.rank()));
  for (std::size_t i = 0; i < shape_.rank(); ++i)
    if (!shape_.mode(i).congruent(stride_.mode(i)))
      throw ValueError(fmt::format("Layout: shape {} and stride {} are not congruent (mode {}: {} vs {})",
                                   shape_.to_string(), stride_.to_string(), i, shape_.mode(i).to_string(),
                                   stride_.mode(i).to_string()));
  if (shape_.size() == 0) {
    cosize_ = 0;
    return;
  }
  std::int64_t last = 0;
  for (const Leaf& lf : all_leaves(*this))
    last = checked_add(last, checked_mul(lf.extent - 1, lf.stride, "Layout cosize"), "Layout cosize");
  cosize_ = checked_add(last, 1, "Layout cosize");
}

namespace {

// Compared inline: std::ranges::equal over int64 spans calls memcmp out of
// line, a measurable share of a tiny call's compact().
bool same_extents(std::span<const std::int64_t> a, std::span<const std::int64_t> b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

std::uint64_t extents_hash(std::span<const std::int64_t> extents) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ extents.size();
  for (const std::int64_t e : extents) h = (h ^ static_cast<std::uint64_t>(e)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

Layout Layout::build_flat_compact(const Shape& shape) {
  detail::ModeBlock block(shape.rank(), false);
  IntTuple* modes = block.mutable_modes();
  std::int64_t s = 1;
  for (std::size_t i = 0; i < shape.rank(); ++i) {
    const std::int64_t e = shape.extents()[i];
    modes[i] = IntTuple(s);
    if (e > 1) s = checked_mul(s, e, "Layout.compact");
  }
  // Non-negative strides congruent with the flat shape; a compact layout's
  // cosize is its size.
  return Layout(shape, Stride(std::move(block)), shape.size(), Trusted{});
}

void Layout::pin() noexcept {
  shape_.block_.pin();
  stride_.block_.pin();
}

// The process's interned compact layouts of flat shapes: every fresh result
// of a front-end call takes one, so sharing a pinned one (ModeBlock::pin)
// spares each result two atomic increments and two decrements. At most
// kCapacity shapes are interned, for the life of the process (a few hundred
// bytes each); beyond that a layout is built per call, as before. Lookups
// take a lock: the per-thread memo below answers the repeated ones.
class detail::CompactInterning {
 public:
  static constexpr std::size_t kCapacity = 4096;
  // The interned layout of `shape` (flat), interning it when there is room;
  // nullopt when the table is full (known without the lock once it is).
  std::optional<Layout> find_or_intern(const Shape& shape, std::uint64_t hash) {
    if (full_.load(std::memory_order_acquire)) return std::nullopt;
    const std::span<const std::int64_t> extents = shape.extents();
    std::lock_guard lock(mutex_);
    auto [first, last] = table_.equal_range(hash);
    for (auto it = first; it != last; ++it)
      if (same_extents(it->second.shape().extents(), extents)) return it->second;
    if (table_.size() >= kCapacity) {
      full_.store(true, std::memory_order_release);
      return std::nullopt;
    }
    // Its own shape block, shared with no one yet; pinned once the table
    // holds it (a failed insertion leaves nothing pinned behind).
    Layout& made = table_.emplace(hash, Layout::build_flat_compact(Shape::of(extents)))->second;
    made.pin();
    return made;
  }

 private:
  std::mutex mutex_;
  std::atomic<bool> full_{false};
  std::unordered_multimap<std::uint64_t, Layout> table_;
};

namespace {
detail::CompactInterning& compact_interning() {
  static auto* interning = new detail::CompactInterning;  // never destroyed: its layouts outlive exit
  return *interning;
}

// The flat compact layouts this thread asked for lately, by extents (direct
// mapped): a loop over tensors of a few shapes (every tiny call's result)
// takes its interned layout without the lock. A trivially constructed
// pointer on the hot path (no thread_local initialisation guard); the memo
// itself lives in an owner destroyed at thread exit, after which nothing is
// remembered.
struct CompactMemo {
  static constexpr std::size_t kWays = 16;
  std::array<std::optional<Layout>, kWays> layouts;
};
CompactMemo* compact_memo() noexcept {
  thread_local CompactMemo* hot = nullptr;
  thread_local bool gone = false;
  if (!hot && !gone) {
    struct Owner {
      CompactMemo memo;
      ~Owner() {
        hot = nullptr;
        gone = true;
      }
    };
    thread_local Owner owner;
    hot = &owner.memo;
  }
  return hot;
}
}  // namespace

Layout Layout::compact(const Shape& shape) {
  // Strides skip zero extents (numpy convention), so they stay meaningful and
  // representable for empty shapes.
  if (shape.is_flat()) {  // the common case, without intermediate vectors
    const std::span<const std::int64_t> extents = shape.extents();
    const std::uint64_t h = extents_hash(extents);
    CompactMemo* memo = compact_memo();
    std::optional<Layout>* way = memo ? &memo->layouts[h % CompactMemo::kWays] : nullptr;
    if (way && *way && same_extents((*way)->shape().extents(), extents)) return **way;
    std::optional<Layout> made = compact_interning().find_or_intern(shape, h);
    if (!made) made = Layout::build_flat_compact(shape);  // the table is full: a counted layout
    if (way) *way = made;  // remembered either way, so a loop over one shape builds nothing
    return *std::move(made);
  }
  std::vector<std::int64_t> strides;
  std::int64_t s = 1;
  for (std::int64_t e : shape.as_tuple().leaves()) {
    strides.push_back(s);
    if (e > 1) s = checked_mul(s, e, "Layout.compact");
  }
  std::vector<IntTuple> modes;
  std::size_t pos = 0;
  for (const IntTuple& m : shape.modes()) modes.push_back(rebuild_like(m, strides, &pos));
  return Layout(shape, Stride(std::move(modes)));
}

Layout Layout::row_major(const Shape& shape) {
  const std::vector<std::int64_t> extents = shape.as_tuple().leaves();
  std::vector<std::int64_t> strides(extents.size());
  std::int64_t s = 1;
  for (std::size_t i = extents.size(); i-- > 0;) {
    strides[i] = s;
    if (extents[i] > 1) s = checked_mul(s, extents[i], "Layout.row_major");
  }
  std::vector<IntTuple> modes;
  std::size_t pos = 0;
  for (const IntTuple& m : shape.modes()) modes.push_back(rebuild_like(m, strides, &pos));
  return Layout(shape, Stride(std::move(modes)));
}

namespace {
// The sufficient (nested strides) test of Layout::is_injective for layouts
// of at most kSmall leaves of extent > 1, all with positive strides, on the
// stack: the autograd engine asks it per gradient, per call. True when it
// proves the layout injective; false when it cannot tell (the full test
// decides then).
constexpr std::size_t kSmall = 16;
bool collect_small(const IntTuple& shape, const IntTuple& stride, std::array<Leaf, kSmall>& out, std::size_t& n) {
  if (shape.is_leaf()) {
    if (shape.value() <= 1) return true;
    if (stride.value() <= 0 || n == kSmall) return false;
    out[n++] = Leaf{shape.value(), stride.value()};
    return true;
  }
  for (std::size_t i = 0; i < shape.rank(); ++i)
    if (!collect_small(shape[i], stride[i], out, n)) return false;
  return true;
}
// The sufficient condition of both tests: sorted by stride, each stride
// clears the previous leaf's span. Sorts `leaves` in place.
bool nested_strides(std::span<Leaf> leaves) {
  std::sort(leaves.begin(), leaves.end(), [](const Leaf& a, const Leaf& b) {
    return a.stride != b.stride ? a.stride < b.stride : a.extent < b.extent;
  });
  for (std::size_t i = 1; i < leaves.size(); ++i) {
    std::int64_t span = 0;
    if (__builtin_mul_overflow(leaves[i - 1].stride, leaves[i - 1].extent, &span) || leaves[i].stride < span)
      return false;
  }
  return true;
}
bool proven_injective_small(const Layout& l) {
  std::array<Leaf, kSmall> leaves;
  std::size_t n = 0;
  for (std::size_t i = 0; i < l.rank(); ++i)
    if (!collect_small(l.shape().mode(i), l.stride().mode(i), leaves, n)) return false;
  return nested_strides(std::span<Leaf>(leaves.data(), n));
}
}  // namespace

bool Layout::is_injective() const {
  if (size() == 0) return true;
  if (proven_injective_small(*this)) return true;
  std::vector<Leaf> leaves;
  for (const Leaf& lf : all_leaves(*this)) {
    if (lf.extent <= 1) continue;
    if (lf.stride == 0) return false;  // two coordinates of this leaf collide
    leaves.push_back(lf);
  }
  if (cosize() < size()) return false;  // pigeonhole
  std::vector<Leaf> sorted = leaves;  // `leaves` keeps its order for the enumeration below
  if (nested_strides(sorted)) return true;
  // Exact check by enumeration for moderate sizes; beyond that the answer is
  // the (conservative) sufficient condition above, i.e. false.
  constexpr std::int64_t kExactLimit = std::int64_t{1} << 20;
  if (size() > kExactLimit) return false;
  std::vector<std::int64_t> indices{0};
  indices.reserve(static_cast<std::size_t>(size()));
  for (const Leaf& lf : leaves) {
    const std::size_t n = indices.size();
    for (std::int64_t c = 1; c < lf.extent; ++c)
      for (std::size_t j = 0; j < n; ++j) indices.push_back(indices[j] + c * lf.stride);
  }
  std::sort(indices.begin(), indices.end());
  return std::adjacent_find(indices.begin(), indices.end()) == indices.end();
}

bool Layout::is_compact() const {
  if (shape_.is_flat()) {
    // Compared in place: compact() would intern the shape of every layout
    // asked about (views and outputs, not only fresh results).
    const std::span<const IntTuple> strides = stride_.modes();
    const std::span<const std::int64_t> extents = shape_.extents();
    std::int64_t s = 1;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (!strides[i].is_leaf() || strides[i].value() != s) return false;
      if (extents[i] > 1) s *= extents[i];  // <= size(), which fits
    }
    return true;
  }
  return *this == compact(shape_);
}

std::int64_t Layout::operator()(std::span<const std::int64_t> coordinate) const {
  if (coordinate.size() != rank())
    throw ValueError(fmt::format("Layout {}: coordinate has {} entries but the layout has rank {}", to_string(),
                                 coordinate.size(), rank()));
  std::int64_t index = 0;
  for (std::size_t i = 0; i < rank(); ++i) index += mode_index(i, coordinate[i]);
  return index;
}

std::int64_t Layout::operator()(std::int64_t key) const {
  if (key < 0 || key >= size())
    throw ValueError(
        fmt::format("Layout {}: integer key {} is outside [0, {})", to_string(), key, size()));
  std::int64_t index = 0;
  for (std::size_t i = 0; i < rank(); ++i) expand_key_in_place(shape_.mode(i), stride_.mode(i), key, index);
  return index;
}

std::int64_t Layout::mode_index(std::size_t axis, std::int64_t key) const {
  if (axis >= rank())
    throw ValueError(fmt::format("Layout.mode_index: axis {} is out of range for rank {}", axis, rank()));
  const std::int64_t extent = shape_.extent(axis);
  if (key < 0 || key >= extent)
    throw ValueError(fmt::format("Layout {}: coordinate {} of mode {} is outside [0, {})", to_string(), key, axis,
                                 extent));
  return expand_key(key, mode_leaves(*this, axis));
}

std::optional<std::vector<std::int64_t>> Layout::flat_strides() const {
  if (!is_flat()) return std::nullopt;
  std::vector<std::int64_t> out;
  out.reserve(rank());
  for (const IntTuple& s : stride_.modes()) out.push_back(s.value());
  return out;
}

std::optional<std::int64_t> Layout::mode_stride(std::size_t axis) const {
  if (axis >= rank())
    throw ValueError(fmt::format("Layout.mode_stride: axis {} is out of range for rank {}", axis, rank()));
  if (shape_.mode(axis).is_leaf()) return stride_.mode(axis).value();
  const std::vector<Leaf> leaves = mode_leaves(*this, axis);
  if (shape_.extent(axis) == 0) {
    // An empty mode maps nothing; report its (first) zero-extent leaf's stride.
    for (const Leaf& lf : leaves)
      if (lf.extent == 0) return lf.stride;
  }
  std::optional<Leaf> acc;
  for (const Leaf& lf : leaves) {
    if (lf.extent == 1) continue;
    if (!acc) {
      acc = lf;
      continue;
    }
    std::int64_t reach = 0;
    if (__builtin_mul_overflow(acc->extent, acc->stride, &reach) || reach != lf.stride) return std::nullopt;
    acc->extent *= lf.extent;  // <= mode extent: fits
  }
  return acc ? acc->stride : 0;
}

// ---------------------------------------------------------------------------
// Layout: views

Layout Layout::broadcast_to(const Shape& target) const {
  if (target.rank() < rank())
    throw ValueError(fmt::format("Layout.broadcast_to: cannot broadcast shape {} (rank {}) to {} (rank {})",
                                 shape_.to_string(), rank(), target.to_string(), target.rank()));
  const std::size_t lead = target.rank() - rank();
  std::vector<IntTuple> shape_modes, stride_modes;
  for (std::size_t i = 0; i < lead; ++i) {
    shape_modes.push_back(target.mode(i));
    stride_modes.push_back(filled_like(target.mode(i), 0));
  }
  for (std::size_t i = 0; i < rank(); ++i) {
    const std::size_t t = lead + i;
    if (shape_.extent(i) == target.extent(t)) {
      shape_modes.push_back(shape_.mode(i));
      stride_modes.push_back(stride_.mode(i));
    } else if (shape_.extent(i) == 1) {
      shape_modes.push_back(target.mode(t));
      stride_modes.push_back(filled_like(target.mode(t), 0));
    } else {
      throw ValueError(fmt::format(
          "Layout.broadcast_to: cannot broadcast shape {} to {}: mode {} has extent {} but the target has {}",
          shape_.to_string(), target.to_string(), i, shape_.extent(i), target.extent(t)));
    }
  }
  return Layout(Shape(std::move(shape_modes)), Stride(std::move(stride_modes)));
}

Layout Layout::permute(std::span<const std::int64_t> perm) const {
  if (perm.size() != rank())
    throw ValueError(fmt::format("Layout.permute: permutation has {} entries but the layout has rank {}",
                                 perm.size(), rank()));
  std::vector<bool> seen(rank(), false);
  std::vector<IntTuple> shape_modes, stride_modes;
  for (std::int64_t p : perm) {
    if (p < 0 || p >= static_cast<std::int64_t>(rank()))
      throw ValueError(fmt::format("Layout.permute: entry {} is outside [0, {})", p, rank()));
    const auto u = static_cast<std::size_t>(p);
    if (seen[u]) throw ValueError(fmt::format("Layout.permute: entry {} is repeated", p));
    seen[u] = true;
    shape_modes.push_back(shape_.mode(u));
    stride_modes.push_back(stride_.mode(u));
  }
  return Layout(Shape(std::move(shape_modes)), Stride(std::move(stride_modes)));
}

Layout Layout::slice(std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step,
                     std::int64_t* offset_delta) const {
  assert(offset_delta != nullptr && "Layout.slice: offset_delta must not be null");
  const auto a = static_cast<std::size_t>(normalize_axis(axis, rank(), "Layout.slice"));
  if (step < 1) throw ValueError(fmt::format("Layout.slice: step must be >= 1, got {}", step));
  const std::int64_t n = shape_.extent(a);
  auto clamp = [n](std::int64_t v) {
    if (v < 0) v += n;  // v >= INT64_MIN and n >= 0: no overflow
    return std::clamp<std::int64_t>(v, 0, n);
  };
  start = clamp(start);
  stop = clamp(stop);
  const std::int64_t len = stop > start ? (stop - start - 1) / step + 1 : 0;
  const std::optional<std::int64_t> s = mode_stride(a);
  if (!s)
    throw ValueError(fmt::format(
        "Layout.slice: mode {} of layout {} is hierarchical and does not coalesce to one stride; "
        "the slice is not expressible as a view",
        a, to_string()));
  // For len >= 2, step <= n - 1 so s * step <= cosize - 1 fits; a 0- or
  // 1-element result only overflows for absurd steps and then keeps stride s.
  std::int64_t new_stride = 0;
  if (__builtin_mul_overflow(*s, step, &new_stride)) new_stride = *s;
  std::vector<IntTuple> shape_modes(shape_.modes().begin(), shape_.modes().end());
  std::vector<IntTuple> stride_modes(stride_.modes().begin(), stride_.modes().end());
  shape_modes[a] = IntTuple(len);
  stride_modes[a] = IntTuple(new_stride);
  // An empty result (this axis or another one has extent 0) addresses no
  // slot, so its offset stays where it was: start * s may lie past the end.
  if (offset_delta) *offset_delta = len > 0 && shape_.size() > 0 ? start * *s : 0;  // start <= n - 1: fits
  return Layout(Shape(std::move(shape_modes)), Stride(std::move(stride_modes)));
}

Layout Layout::reshape(const Shape& target) const {
  if (target.size() != size())
    throw ValueError(fmt::format("Layout.reshape: cannot reshape {} (size {}) to {} (size {})", shape_.to_string(),
                                 size(), target.to_string(), target.size()));
  if (size() == 0) return compact(target);  // any map is valid for an empty layout

  std::deque<Leaf> pieces;
  for (const Leaf& lf : coalesce_leaves(all_leaves(*this))) pieces.push_back(lf);

  auto not_view = [&]() {
    return ValueError(fmt::format("Layout.reshape: reshaping {} to {} is not expressible as a view", to_string(),
                                  target.to_string()));
  };
  // Build the stride (and shape) of one target leaf of extent `need`.
  auto take = [&](std::int64_t need, IntTuple* out_shape, IntTuple* out_stride) {
    if (need == 1) {
      *out_shape = IntTuple(1);
      *out_stride = IntTuple(0);
      return;
    }
    std::vector<Leaf> got;
    while (need > 1) {
      if (pieces.empty()) throw not_view();  // unreachable: sizes agree
      Leaf& front = pieces.front();
      if (need % front.extent == 0) {
        got.push_back(front);
        need /= front.extent;
        pieces.pop_front();
      } else if (front.extent % need == 0) {
        got.push_back({need, front.stride});
        front.stride *= need;  // <= reach of the original piece: fits
        front.extent /= need;
        need = 1;
      } else {
        throw not_view();
      }
    }
    got = coalesce_leaves(got);
    if (got.size() == 1) {
      *out_shape = IntTuple(got[0].extent);
      *out_stride = IntTuple(got[0].stride);
      return;
    }
    std::vector<IntTuple> es, ss;
    for (const Leaf& lf : got) {
      es.emplace_back(lf.extent);
      ss.emplace_back(lf.stride);
    }
    *out_shape = IntTuple::tuple(std::move(es));
    *out_stride = IntTuple::tuple(std::move(ss));
  };
  // Walk the target profile depth-first, replacing each leaf.
  auto build = [&](auto&& self, const IntTuple& t, IntTuple* out_shape, IntTuple* out_stride) -> void {
    if (t.is_leaf()) {
      take(t.value(), out_shape, out_stride);
      return;
    }
    std::vector<IntTuple> es, ss;
    for (const IntTuple& c : t.children()) {
      IntTuple e(0), s(0);
      self(self, c, &e, &s);
      es.push_back(std::move(e));
      ss.push_back(std::move(s));
    }
    *out_shape = IntTuple::tuple(std::move(es));
    *out_stride = IntTuple::tuple(std::move(ss));
  };
  std::vector<IntTuple> shape_modes, stride_modes;
  for (const IntTuple& m : target.modes()) {
    IntTuple e(0), s(0);
    build(build, m, &e, &s);
    shape_modes.push_back(std::move(e));
    stride_modes.push_back(std::move(s));
  }
  assert(pieces.empty());
  return Layout(Shape(std::move(shape_modes)), Stride(std::move(stride_modes)));
}

Layout Layout::squeeze(std::optional<std::vector<std::int64_t>> axes) const {
  std::vector<bool> drop(rank(), false);
  if (!axes) {
    for (std::size_t i = 0; i < rank(); ++i) drop[i] = shape_.extent(i) == 1;
  } else {
    for (std::int64_t ax : *axes) {
      const auto a = static_cast<std::size_t>(normalize_axis(ax, rank(), "Layout.squeeze"));
      if (drop[a]) throw ValueError(fmt::format("Layout.squeeze: axis {} is listed more than once", ax));
      if (shape_.extent(a) != 1)
        throw ValueError(fmt::format("Layout.squeeze: axis {} has extent {}, not 1", ax, shape_.extent(a)));
      drop[a] = true;
    }
  }
  std::vector<IntTuple> shape_modes, stride_modes;
  for (std::size_t i = 0; i < rank(); ++i) {
    if (drop[i]) continue;
    shape_modes.push_back(shape_.mode(i));
    stride_modes.push_back(stride_.mode(i));
  }
  return Layout(Shape(std::move(shape_modes)), Stride(std::move(stride_modes)));
}

Layout Layout::unsqueeze(std::int64_t axis) const {
  const auto r = static_cast<std::int64_t>(rank());
  if (axis < -(r + 1) || axis > r)
    throw ValueError(
        fmt::format("Layout.unsqueeze: axis {} is out of range for rank {} (valid: [{}, {}])", axis, r, -(r + 1), r));
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + r + 1 : axis);
  std::vector<IntTuple> shape_modes(shape_.modes().begin(), shape_.modes().end());
  std::vector<IntTuple> stride_modes(stride_.modes().begin(), stride_.modes().end());
  shape_modes.insert(shape_modes.begin() + static_cast<std::ptrdiff_t>(a), IntTuple(1));
  stride_modes.insert(stride_modes.begin() + static_cast<std::ptrdiff_t>(a), IntTuple(0));
  return Layout(Shape(std::move(shape_modes)), Stride(std::move(stride_modes)));
}

Layout Layout::flatten() const { return from_leaves(all_leaves(*this)); }

Layout Layout::coalesce() const {
  if (size() == 0) return Layout(Shape::of({0}), Stride::of({1}));
  std::vector<Leaf> leaves = coalesce_leaves(all_leaves(*this));
  if (leaves.empty()) return Layout(Shape::of({1}), Stride::of({0}));
  return from_leaves(leaves);
}

std::string Layout::to_string() const { return shape_.to_string() + ":" + stride_.to_string(); }

std::size_t Layout::hash() const noexcept { return hash_mix(shape_.hash(), stride_.hash()); }

}  // namespace strideweave
