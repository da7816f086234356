// strideweave/literal.h — tensors from nested data, read depth first.
//
// LiteralBuilder holds the rules by which nested data (Python's
// `strideweave.tensor(data)`, C++'s `tensor<C>({{...}})`) becomes a tensor,
// so that no binding writes them again (docs/python.md, "Tensors from
// Python data"). A reader walks its own data structure and tells the
// builder what it meets, in row-major order (the outer sequence is axis 0):
//
//   open(n) ... close()  one sequence of n items (n items must come between);
//   number(s)            a leaf number, as a weak scalar (bool, integer, float);
//   integer_beyond_int128(negative, text)
//                        a leaf integer too large for a weak scalar (Python's
//                        arbitrary integers): Float32 reads it as +-inf, Int32
//                        refuses it;
//   not_a_number(text, type_name)
//                        a leaf that is no number (a str, a mapping, a tensor):
//                        an error when the values are converted, not before, so
//                        that a ragged shape is reported first;
//   array(view)          a strided host array: its whole shape at this depth,
//                        read from memory when the values are converted (the
//                        memory must stay valid and unchanged until then).
//
// Shape. The first sequence met at each depth fixes that axis's extent; a
// sequence of another length, a leaf where a sequence was met before (or the
// reverse), or an array whose shape disagrees is ValueError ("ragged"). An
// empty sequence ends the shape there ([[]] is (1, 0)), unless fixed_rank()
// says how many axes the reader's data has (C++ initializer lists: {} at rank
// 2 is (0, 0)). More than kMaxLiteralRank open sequences is ValueError,
// raised by open() before the reader descends further (a list that contains
// itself is nested without end).
//
// Dtype. inferred_dtype(): all bools -> Bool, all integers -> Int32,
// otherwise Float32; bools do not mix with numbers (TypeError: the caller
// chooses with an explicit dtype); a leaf that is no number is TypeError
// "... is not a number".
//
// Conversion (values(dtype)). Each element converts exactly as the same
// value written as a weak scalar would: an integer to Int32 exactly
// (OverflowError outside), to Float32 rounded once to nearest even (beyond
// the float range: +-inf); a float only to Float32, rounded once; a bool only
// to Bool. Anything else is TypeError (no silent truncation). A dtype that
// is not stored (Float64) is ValueError.
//
// Every error message starts with the builder's `what` ("tensor"). A builder
// that threw is left as it was before the call that threw and may be
// discarded; nothing is allocated for a tensor until build().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <strideweave/carrier.h>
#include <strideweave/dtype.h>
#include <strideweave/export.h>
#include <strideweave/layout.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>
#include <strideweave/value.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// The most axes nested data may have (a tensor's rank is bounded only by
// memory; this bounds the reader's recursion).
inline constexpr std::size_t kMaxLiteralRank = 64;

// The element formats of a strided host array (numpy's bool, integer and
// float16/32/64 dtypes; the buffer protocol's '?', 'b'...'Q', 'e', 'f', 'd').
// Python's face of HostArrayView is the buffer protocol: LiteralBuilder.item
// and strideweave.tensor read any exporter of these formats.
enum class HostElement : std::uint8_t {
  Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, Float32, Float64
};

// A strided array in host memory, row-major by axis (shape[0] is the outer
// axis), strides in bytes (any sign). Element bytes are in native order
// unless byte_swapped. An empty shape is one element.
struct HostArrayView {
  const void* data = nullptr;
  HostElement element = HostElement::Float32;
  bool byte_swapped = false;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> byte_strides;
};

class STRIDEWEAVE_EXPORT LiteralBuilder {
 public:
  explicit LiteralBuilder(std::string what = "tensor");
  ~LiteralBuilder();
  LiteralBuilder(LiteralBuilder&&) noexcept;
  LiteralBuilder& operator=(LiteralBuilder&&) noexcept;
  LiteralBuilder(const LiteralBuilder&) = delete;
  LiteralBuilder& operator=(const LiteralBuilder&) = delete;

  // The reader's data has exactly `rank` axes (a typed nested initializer
  // list): an empty sequence leaves the axes inside it at extent 0. Call
  // before anything is read; at most kMaxLiteralRank.
  void fixed_rank(std::size_t rank);

  void open(std::int64_t length);
  void close();
  void number(const WeakScalar& value);
  void integer_beyond_int128(bool negative, std::string text);
  void not_a_number(std::string text, std::string type_name);
  void array(HostArrayView view);

  // A reader that hands the builder several calls as one item (Python's
  // LiteralBuilder.item, which reads a whole nested list) takes a mark
  // first and rewinds to it when the item fails part way, so a refused item
  // leaves the builder as it was. A Mark is opaque: only rewind reads it,
  // and only on the builder that made it, before anything read after it
  // was rewound past it.
  struct Mark {
    std::vector<std::int64_t> extents;
    std::vector<std::pair<std::int64_t, std::int64_t>> open;  // (length, items seen)
    std::size_t leaves = 0, numbers = 0, huge = 0, opaque = 0, arrays = 0;
    bool known = false, complete = false;
  };
  Mark mark() const;
  void rewind(const Mark& mark) noexcept;

  // After the outermost sequence is closed (or one leaf or array was read at
  // depth 0); RuntimeError before. RuntimeError too for any other misuse of
  // the reader contract (more or fewer items than open() said, an item after
  // the outermost one, fixed_rank() after data).
  Shape shape() const;
  // The dtype the data infers (see above).
  const SimpleDType& inferred_dtype() const;
  // The elements as `dtype`, in LOGICAL order (first axis fastest,
  // docs/layout.md), ready for a carrier's from_values.
  std::vector<Value> values(const SimpleDType& dtype) const;
  // A fresh, mutable compact tensor of `dtype` (nullptr: inferred) whose
  // storage is `prototype.new_like(...)` (the carrier's own errors for a
  // dtype it cannot store).
  Tensor build(const SimpleDType* dtype, const Carrier& prototype) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
