// strideweave/layout.h — hierarchical Shape, Stride and Layout
// (core-concepts.md section 3).
//
// An IntTuple is a leaf integer or an ordered tuple of IntTuples. A Shape is a
// tuple of top-level *modes*; each mode is a leaf extent or a nested tuple of
// extents (a hierarchical mode). A Stride is congruent to its Shape. A Layout
// maps a coordinate to an index: the sum over leaves of leaf coordinate times
// leaf stride. An integer key (for the whole layout, or for one mode) expands
// mixed-radix with the FIRST mode fastest (colexicographic order); this is the
// *logical order* of a tensor's elements (docs/layout.md).
//
// Tensor operations treat the top-level modes as axes: axis i has extent
// `shape.extent(i)` = product of the leaves of mode i, and its coordinate is
// an integer key into that mode.
//
// Deliberate extension (docs/layout.md): extents may be zero (empty tensors);
// negative extents and negative strides are ValueError. Every product of
// extents is overflow-checked in int64_t (ValueError): the product of the
// non-zero extents must fit, so a zero extent never hides an overflow.
//
// All types are immutable values with operator== and std::hash. A Shape or
// Stride keeps its modes in one immutable block shared by its copies (a
// reference count): copying one allocates nothing, and constructing one
// allocates that block once (plus the children of nested modes).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

class IntTuple {
 public:
  // A leaf.
  IntTuple(std::int64_t leaf);  // NOLINT(google-explicit-constructor): Shape(2, (3, 4)) reads naturally
  IntTuple(int leaf) : IntTuple(static_cast<std::int64_t>(leaf)) {}  // NOLINT
  // A tuple (possibly empty).
  IntTuple(std::initializer_list<IntTuple> children);
  static IntTuple tuple(std::vector<IntTuple> children);

  bool is_leaf() const noexcept { return leaf_; }
  // The leaf value; precondition is_leaf().
  std::int64_t value() const noexcept { return value_; }
  // The number of children of a tuple (0 for a leaf).
  std::size_t rank() const noexcept { return children_.size(); }
  const IntTuple& operator[](std::size_t i) const { return children_.at(i); }
  std::span<const IntTuple> children() const noexcept { return children_; }

  // Leaves in depth-first order.
  std::vector<std::int64_t> leaves() const;
  // Same nesting (profile) as `other`.
  bool congruent(const IntTuple& other) const noexcept;
  // Product of the leaves (overflow-checked, ValueError naming `what`).
  std::int64_t product(const char* what = "IntTuple") const;
  // "(2,(3,4))"; a leaf prints as its number.
  std::string to_string() const;

  friend STRIDEWEAVE_EXPORT bool operator==(const IntTuple& a, const IntTuple& b) noexcept;
  std::size_t hash() const noexcept;

 private:
  IntTuple() = default;
  bool leaf_ = false;
  std::int64_t value_ = 0;
  std::vector<IntTuple> children_;
};

namespace detail {

// The immutable modes of a Shape or Stride, shared by its copies: one
// allocation holding a reference count, the modes, and (for a Shape) one
// extent per mode and the size. An empty block (rank 0) allocates nothing.
// Only the constructing Shape/Stride writes to a block, before any copy of
// it exists; afterwards it is read-only, so sharing it across threads needs
// no lock (the count is atomic).
class STRIDEWEAVE_EXPORT ModeBlock {
 public:
  ModeBlock() noexcept = default;
  // `rank` leaf modes of value 0 (and zero extents when `with_extents`), to be
  // filled through the mutable accessors before the block is shared.
  ModeBlock(std::size_t rank, bool with_extents);
  // Copies of `modes`.
  ModeBlock(std::span<const IntTuple> modes, bool with_extents);
  ModeBlock(const ModeBlock& other) noexcept : rep_(other.rep_) {
    if (rep_ && !rep_->is_pinned()) rep_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  ModeBlock(ModeBlock&& other) noexcept : rep_(other.rep_) { other.rep_ = nullptr; }
  ModeBlock& operator=(const ModeBlock& other) noexcept {
    ModeBlock copy(other);
    std::swap(rep_, copy.rep_);
    return *this;
  }
  ModeBlock& operator=(ModeBlock&& other) noexcept {
    ModeBlock moved(std::move(other));
    std::swap(rep_, moved.rep_);
    return *this;
  }
  ~ModeBlock() {
    if (rep_ && !rep_->is_pinned() && rep_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) release(rep_);
  }

  std::size_t rank() const noexcept { return rep_ ? rep_->rank : 0; }
  std::span<const IntTuple> modes() const noexcept {
    return rep_ ? std::span<const IntTuple>(rep_->modes(), rep_->rank) : std::span<const IntTuple>();
  }
  std::span<const std::int64_t> extents() const noexcept {
    return rep_ ? std::span<const std::int64_t>(rep_->extents(), rep_->n_extents) : std::span<const std::int64_t>();
  }
  std::int64_t size() const noexcept { return rep_ ? rep_->size : 1; }
  // Only before the block is shared (construction).
  IntTuple* mutable_modes() noexcept { return rep_ ? rep_->modes() : nullptr; }
  std::int64_t* mutable_extents() noexcept { return rep_ ? rep_->extents() : nullptr; }
  void set_size(std::int64_t size) noexcept {
    if (rep_) rep_->size = size;
  }
  // The same block (copies of one value): equal without comparing modes.
  bool same_block(const ModeBlock& other) const noexcept { return rep_ == other.rep_; }
  // Pins the block for the rest of the process: its copies then share it
  // without touching the count (an atomic read-modify-write per copy and per
  // destruction is a measurable share of a tiny operation), and it is never
  // freed. Only before the block is shared: Layout::compact pins the
  // layouts it interns (a bounded set).
  void pin() noexcept {
    if (rep_) rep_->refs.store(kPinned, std::memory_order_relaxed);
  }

 private:
  // A count no block reaches: the mark of a pinned block.
  static constexpr std::size_t kPinned = ~std::size_t{0} / 2;
  struct Rep {
    std::atomic<std::size_t> refs;
    // Pinned is set before the block is shared and never changes, so a
    // relaxed read decides it.
    bool is_pinned() const noexcept { return refs.load(std::memory_order_relaxed) >= kPinned; }
    std::size_t rank;
    std::size_t n_extents;
    std::int64_t size;
    // The modes, then the extents, follow the header in the same allocation.
    IntTuple* modes() noexcept { return reinterpret_cast<IntTuple*>(this + 1); }
    std::int64_t* extents() noexcept { return reinterpret_cast<std::int64_t*>(modes() + rank); }
  };
  static_assert(sizeof(Rep) % alignof(IntTuple) == 0 && sizeof(IntTuple) % alignof(std::int64_t) == 0);
  static Rep* allocate(std::size_t rank, bool with_extents);
  static void release(Rep* rep) noexcept;

  Rep* rep_ = nullptr;
};

}  // namespace detail

// Shape(2, IntTuple{3, 4}) — top-level modes. Extents must be >= 0
// (ValueError).
class Shape {
 public:
  Shape() = default;  // rank 0: one element
  Shape(std::initializer_list<IntTuple> modes);
  explicit Shape(std::vector<IntTuple> modes);
  // A flat shape from plain extents.
  static Shape of(std::span<const std::int64_t> extents);
  static Shape of(std::initializer_list<std::int64_t> extents);

  std::size_t rank() const noexcept { return block_.rank(); }
  // std::out_of_range for i >= rank().
  const IntTuple& mode(std::size_t i) const {
    if (i >= rank()) throw std::out_of_range("Shape::mode: index out of range");
    return block_.modes()[i];
  }
  std::span<const IntTuple> modes() const noexcept { return block_.modes(); }
  // Extent of top-level mode i (product of its leaves); std::out_of_range for
  // i >= rank().
  std::int64_t extent(std::size_t i) const {
    if (i >= rank()) throw std::out_of_range("Shape::extent: index out of range");
    return block_.extents()[i];
  }
  std::span<const std::int64_t> extents() const noexcept { return block_.extents(); }
  // Product of all extents (1 for rank 0), overflow-checked at construction.
  std::int64_t size() const noexcept { return block_.size(); }
  // Every top-level mode is a leaf.
  bool is_flat() const noexcept {
    for (const IntTuple& m : modes())
      if (!m.is_leaf()) return false;
    return true;
  }
  // As a tuple of modes.
  IntTuple as_tuple() const {
    const auto m = modes();
    return IntTuple::tuple(std::vector<IntTuple>(m.begin(), m.end()));
  }
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    if (a.block_.same_block(b.block_)) return true;
    const auto x = a.modes(), y = b.modes();
    return std::equal(x.begin(), x.end(), y.begin(), y.end());
  }
  std::size_t hash() const noexcept;

 private:
  friend class Layout;
  void init();
  detail::ModeBlock block_;
};

// Stride: congruent non-negative integers (ValueError for a negative one).
class Stride {
 public:
  Stride() = default;
  Stride(std::initializer_list<IntTuple> modes);
  explicit Stride(std::vector<IntTuple> modes);
  static Stride of(std::span<const std::int64_t> strides);
  static Stride of(std::initializer_list<std::int64_t> strides);

  std::size_t rank() const noexcept { return block_.rank(); }
  // std::out_of_range for i >= rank().
  const IntTuple& mode(std::size_t i) const {
    if (i >= rank()) throw std::out_of_range("Stride::mode: index out of range");
    return block_.modes()[i];
  }
  std::span<const IntTuple> modes() const noexcept { return block_.modes(); }
  std::string to_string() const;

  friend bool operator==(const Stride& a, const Stride& b) noexcept {
    if (a.block_.same_block(b.block_)) return true;
    const auto x = a.modes(), y = b.modes();
    return std::equal(x.begin(), x.end(), y.begin(), y.end());
  }
  std::size_t hash() const noexcept;

 private:
  friend class Layout;
  // Strides already known to be valid (Layout::compact): no re-check.
  explicit Stride(detail::ModeBlock block) noexcept : block_(std::move(block)) {}

  detail::ModeBlock block_;
};

namespace detail {
class CompactInterning;  // Layout::compact's interned layouts (src/core/layout.cpp)
}  // namespace detail

class Layout {
 public:
  Layout() = default;  // rank 0
  // Shape and Stride must have identical nesting (ValueError).
  Layout(Shape shape, Stride stride);

  // The canonical compact injective layout of `shape`: keeps the shape's
  // nesting (profile) and gives its leaves, in depth-first order, strides
  // 1, e0, e0*e1, ... (first mode fastest), so that physical index == logical
  // ordinal. Zero extents are skipped in the running product (numpy
  // convention), so compact(Shape{0, 3}) has strides (1,1).
  static Layout compact(const Shape& shape);
  // The row-major compact layout (same profile, last leaf fastest), for
  // interop.
  static Layout row_major(const Shape& shape);

  const Shape& shape() const noexcept { return shape_; }
  const Stride& stride() const noexcept { return stride_; }
  std::size_t rank() const noexcept { return shape_.rank(); }
  std::int64_t size() const noexcept { return shape_.size(); }
  // 1 + the largest reachable index; 0 for an empty layout.
  std::int64_t cosize() const noexcept { return cosize_; }
  // No two coordinates map to one index. Exact for size <= 2^20; beyond that
  // conservative: true only when the leaves, sorted by stride, nest
  // (stride[i] >= stride[i-1] * extent[i-1]) (docs/layout.md).
  bool is_injective() const;
  // Every top-level mode is a leaf (the plain strided fast path).
  bool is_flat() const noexcept { return shape_.is_flat(); }
  // Equal to Layout::compact(shape()).
  bool is_compact() const;

  // Index of a coordinate given as one integer key per top-level mode (each
  // expanded mixed-radix, first leaf fastest). Wrong count or a key outside
  // [0, extent) -> ValueError.
  std::int64_t operator()(std::span<const std::int64_t> coordinate) const;
  // Index of a whole-layout integer key (first mode fastest); outside
  // [0, size) -> ValueError.
  std::int64_t operator()(std::int64_t key) const;
  // Index contributed by coordinate `key` of top-level mode `axis` alone
  // (axis >= rank or key outside [0, extent) -> ValueError).
  std::int64_t mode_index(std::size_t axis, std::int64_t key) const;

  // Plain strides of the top-level modes; nullopt unless is_flat().
  std::optional<std::vector<std::int64_t>> flat_strides() const;
  // If top-level mode `axis` behaves as one plain stride (a leaf, or a nested
  // mode whose extent>1 leaves coalesce to one), that stride; 0 for a nested
  // mode whose leaves all have extent 1; for a nested mode of extent 0 the
  // stride of its first zero-extent leaf. axis >= rank -> ValueError.
  std::optional<std::int64_t> mode_stride(std::size_t axis) const;

  // Views. Each returns a new Layout; the offset a view adds (slice) is
  // returned through `offset_delta`.
  //
  // broadcast_to: right-aligned numpy rules on top-level extents; a mode whose
  // extent equals the target's keeps its own profile and strides, an extent-1
  // mode takes the target mode's profile with all strides 0, new leading modes
  // are the target's with strides 0 (docs/layout.md). Incompatible, or target
  // rank < rank -> ValueError.
  Layout broadcast_to(const Shape& target) const;
  // permute: `perm` is a permutation of [0, rank) (ValueError otherwise).
  Layout permute(std::span<const std::int64_t> perm) const;
  // slice of a top-level mode (axis may be negative) with step >= 1,
  // python-style clamping of start/stop; a nested mode is sliceable only when
  // it coalesces to one stride s (ValueError otherwise). The result mode is a
  // leaf of extent ceil((stop-start)/step) and stride s*step, and
  // *offset_delta = start*s (0 for an empty result). `offset_delta` must not be
  // null (asserted in debug builds).
  Layout slice(std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step,
               std::int64_t* offset_delta) const;
  // reshape to `target` (same size, else ValueError), preserving logical
  // (first-mode-fastest) order. The result's top-level extents equal the
  // target's and its profile is the target's, except that a target leaf that
  // needs several non-contiguous source pieces becomes a tuple of them; so
  // reshape is a view whenever leaf extents divide; otherwise ValueError.
  // An empty layout reshapes to Layout::compact(target).
  Layout reshape(const Shape& target) const;
  // Remove extent-1 top-level modes (all, or the listed axes; a listed axis
  // whose extent is not 1 -> ValueError).
  Layout squeeze(std::optional<std::vector<std::int64_t>> axes = std::nullopt) const;
  // Insert an extent-1 mode (stride 0) at position `axis` in [0, rank];
  // negative axes in [-(rank+1), -1] count from the end (-1 -> rank).
  Layout unsqueeze(std::int64_t axis) const;
  // Flatten every mode into its leaves (same map, same order).
  Layout flatten() const;
  // Flatten, drop extent-1 leaves and merge adjacent leaves that are
  // contiguous (stride[i+1] == e[i]*s[i]); same map. A size-1 layout
  // coalesces to (1):(0), an empty one to (0):(1).
  Layout coalesce() const;

  // ---- layout algebra (CuTe's; docs/layout.md, "Layout algebra")
  //
  // Each treats a layout as the function from its whole-layout integer key
  // (first mode fastest) to an index, and needs positive extents (a layout
  // with a zero extent -> ValueError). The results are exact: no operation
  // reaches outside its operand's domain (ValueError instead, where CuTe
  // would extend the last mode), so each identity below holds for every
  // result. A divisibility condition that fails is a ValueError naming it.
  //
  // compose(b): the layout R with b's profile (each leaf of b becomes a mode
  // of the same extent) and R(i) == (*this)(b(i)) for every i < b.size().
  // b's image must lie in this layout's domain: b.cosize() <= size().
  Layout compose(const Layout& b) const;
  // By-mode composition with a tiler: mode i of the result is mode i of this
  // layout composed with tiler[i]; modes past the tiler are kept. More
  // tiler entries than modes -> ValueError.
  Layout compose(std::span<const Layout> tiler) const;
  // complement(cotarget): the layout R, sorted by stride and coalesced, of
  // the indices this layout's image leaves out: (this, R) is injective and
  // R repeats the image until it covers [0, cotarget) (R's last mode has
  // extent ceil(cotarget / reach), reach being the span of the image). Needs
  // leaves that, sorted by stride, each start at a multiple of the span of
  // those before (ValueError otherwise: the layout is not injective, or its
  // leaves interleave); stride-0 leaves are ignored. Without an argument,
  // cotarget = cosize().
  Layout complement(std::optional<std::int64_t> cotarget = std::nullopt) const;
  // logical_divide(b) = compose((b, b.complement(size()))): a rank-2 layout
  // whose mode 0 walks one tile (b's shape) and mode 1 the tiles, a
  // reordering of this layout's indices. b must visit distinct indices (no
  // stride-0 leaf) and tile this layout's domain exactly (ValueError
  // otherwise).
  Layout logical_divide(const Layout& b) const;
  // By-mode: mode i becomes the rank-2 nested mode (tile, rest) of mode i
  // divided by tiler[i]; modes past the tiler are kept.
  Layout logical_divide(std::span<const Layout> tiler) const;
  // zipped_divide: the by-mode division regrouped as ((tiles...), (rests...,
  // kept modes...)): mode 0 is the tile, mode 1 enumerates the tiles.
  Layout zipped_divide(std::span<const Layout> tiler) const;
  // tiled_divide: ((tiles...), rest_0, rest_1, ..., kept modes...).
  Layout tiled_divide(std::span<const Layout> tiler) const;
  // logical_product(b) = (this, complement(size() * b.cosize()).compose(b)):
  // mode 0 is this layout, mode 1 repeats it in b's arrangement.
  Layout logical_product(const Layout& b) const;

  std::string to_string() const;  // "(2,3):(1,2)"
  friend bool operator==(const Layout& a, const Layout& b) noexcept {
    return a.shape_ == b.shape_ && a.stride_ == b.stride_;
  }
  std::size_t hash() const noexcept;

 private:
  struct Trusted {};
  // A layout already known to be valid, with its cosize (Layout::compact of a
  // flat shape): none of the public constructor's checks are repeated.
  Layout(Shape shape, Stride stride, std::int64_t cosize, Trusted) noexcept
      : shape_(std::move(shape)), stride_(std::move(stride)), cosize_(cosize) {}
  // The compact layout of a flat shape, built fresh (Layout::compact).
  static Layout build_flat_compact(const Shape& shape);
  // Pins both blocks (detail::ModeBlock::pin): only a layout not yet shared.
  void pin() noexcept;
  friend class detail::CompactInterning;

  Shape shape_;
  Stride stride_;
  std::int64_t cosize_ = 1;
};

// Normalise a possibly negative axis against `rank` (ValueError naming
// `what` when out of range).
std::int64_t normalize_axis(std::int64_t axis, std::size_t rank, const char* what);

// Overflow-checked int64 arithmetic (ValueError naming `what`).
std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what);
std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what);

}  // namespace strideweave

template <>
struct std::hash<strideweave::IntTuple> {
  std::size_t operator()(const strideweave::IntTuple& t) const noexcept { return t.hash(); }
};
template <>
struct std::hash<strideweave::Shape> {
  std::size_t operator()(const strideweave::Shape& s) const noexcept { return s.hash(); }
};
template <>
struct std::hash<strideweave::Layout> {
  std::size_t operator()(const strideweave::Layout& l) const noexcept { return l.hash(); }
};

STRIDEWEAVE_PUBLIC_END
