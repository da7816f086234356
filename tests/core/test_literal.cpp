// Issue 20, step 9: nested-data construction in C++ (<strideweave/literal.h>),
// the rules Python's strideweave.tensor(data) and C++'s tensor<C>({...}) now
// only feed (docs/python.md, "Tensors from Python data").
#include <gtest/gtest.h>

#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/errors.h>
#include <strideweave/factory.h>
#include <strideweave/literal.h>

#include <cmath>
#include <bit>
#include <cstring>
#include <limits>
#include <vector>

namespace sw = strideweave;
using sw::LiteralBuilder;
using sw::WeakScalar;

namespace {

std::vector<std::int64_t> extents(const sw::Shape& s) {
  const auto e = s.extents();
  return {e.begin(), e.end()};
}

// Reads `rows` (row-major nested floats) into b.
void rows(LiteralBuilder& b, const std::vector<std::vector<double>>& data) {
  b.open(static_cast<std::int64_t>(data.size()));
  for (const auto& row : data) {
    b.open(static_cast<std::int64_t>(row.size()));
    for (double v : row) b.number(WeakScalar(v));
    b.close();
  }
  b.close();
}

// Opens a 2-row outer sequence and reads its first row, [1, 2] (integers).
void open_with_first_row(LiteralBuilder& b) {
  b.open(2);
  b.open(2);
  b.number(WeakScalar(1));
  b.number(WeakScalar(2));
  b.close();
}

sw::HostArrayView view_of(const void* data, sw::HostElement e, std::vector<std::int64_t> shape,
                          std::vector<std::int64_t> strides) {
  sw::HostArrayView v;
  v.data = data;
  v.element = e;
  v.shape = std::move(shape);
  v.byte_strides = std::move(strides);
  return v;
}

}  // namespace

TEST(Literal_Issue20Step9, RowMajorDataBecomesLogicalOrder) {
  LiteralBuilder b;
  rows(b, {{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(extents(b.shape()), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(&b.inferred_dtype(), &sw::DType::Float32());
  const std::vector<sw::Value> v = b.values(sw::DType::Float32());
  // Logical order is first axis fastest: slot i + 2j holds row i, column j.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(v[i + 2 * j].f, static_cast<float>(3 * i + j + 1)) << i << "," << j;
}

TEST(Literal_Issue20Step9, RaggedDataIsAValueErrorAndLeavesTheBuilderAsItWas) {
  {
    LiteralBuilder b;
    open_with_first_row(b);
    EXPECT_THROW(b.open(3), sw::ValueError);       // a second row of another length
    EXPECT_THROW(b.number(WeakScalar(3)), sw::ValueError);  // a leaf where a row was
    b.open(2);  // the builder still takes the right data
    b.number(WeakScalar(3));
    b.number(WeakScalar(4));
    b.close();
    b.close();
    EXPECT_EQ(extents(b.shape()), (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(b.values(sw::DType::Int32())[1].i, 3);  // element (1, 0)
  }
  {
    LiteralBuilder b;
    b.open(2);
    b.number(WeakScalar(1));
    EXPECT_THROW(b.open(1), sw::ValueError);  // a sequence where a leaf was
  }
  {
    const float a[3] = {1, 2, 3};
    LiteralBuilder b;
    b.open(2);
    b.array(view_of(a, sw::HostElement::Float32, {2}, {4}));
    EXPECT_THROW(b.array(view_of(a, sw::HostElement::Float32, {3}, {4})), sw::ValueError);
  }
}

TEST(Literal_Issue20Step9, NestingDeeperThanTheLimitIsRefusedBeforeDescending) {
  LiteralBuilder b;
  for (std::size_t i = 0; i < sw::kMaxLiteralRank; ++i) b.open(1);
  try {
    b.open(1);
    FAIL() << "a 65th level was accepted";
  } catch (const sw::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("nested more than 64 levels"), std::string::npos) << e.what();
  }
}

TEST(Literal_Issue20Step9, TheDtypeIsInferredFromTheLeaves) {
  auto infer = [](std::vector<WeakScalar> leaves) -> const sw::SimpleDType& {
    LiteralBuilder b;
    b.open(static_cast<std::int64_t>(leaves.size()));
    for (const WeakScalar& s : leaves) b.number(s);
    b.close();
    return b.inferred_dtype();
  };
  EXPECT_EQ(&infer({WeakScalar(true), WeakScalar(false)}), &sw::DType::Bool());
  EXPECT_EQ(&infer({WeakScalar(1), WeakScalar(2)}), &sw::DType::Int32());
  EXPECT_EQ(&infer({WeakScalar(1), WeakScalar(2.5)}), &sw::DType::Float32());
  EXPECT_THROW(infer({WeakScalar(true), WeakScalar(1)}), sw::TypeError);  // bools do not mix with numbers
  LiteralBuilder b;
  b.open(2);
  b.number(WeakScalar(1));
  b.not_a_number("'x'", "str");
  b.close();
  try {
    (void)b.inferred_dtype();
    FAIL() << "a non-number inferred a dtype";
  } catch (const sw::TypeError& e) {
    EXPECT_STREQ(e.what(), "tensor: 'x' is not a number");
  }
  EXPECT_THROW(b.values(sw::DType::Float32()), sw::TypeError);
}

TEST(Literal_Issue20Step9, EachElementConvertsAsTheSameWeakScalarWould) {
  auto one = [](auto fill, const sw::SimpleDType& d) {
    LiteralBuilder b;
    fill(b);
    return b.values(d).at(0);
  };
  auto number = [](WeakScalar s) { return [s](LiteralBuilder& b) { b.number(s); }; };
  // An integer to Float32 rounds once to nearest even (2**24 + 1 -> 2**24).
  EXPECT_EQ(one(number(WeakScalar(16777217)), sw::DType::Float32()).f, 16777216.0f);
  // A float to Float32 rounds once (0.1 -> the nearest float).
  EXPECT_EQ(one(number(WeakScalar(0.1)), sw::DType::Float32()).f, 0.1f);
  EXPECT_EQ(one(number(WeakScalar(2147483647)), sw::DType::Int32()).i, 2147483647);
  EXPECT_THROW(one(number(WeakScalar(2147483648LL)), sw::DType::Int32()), sw::OverflowError);
  EXPECT_THROW(one(number(WeakScalar(1.5)), sw::DType::Int32()), sw::TypeError);  // no silent truncation
  EXPECT_THROW(one(number(WeakScalar(1)), sw::DType::Bool()), sw::TypeError);
  EXPECT_THROW(one(number(WeakScalar(true)), sw::DType::Float32()), sw::TypeError);
  EXPECT_TRUE(one(number(WeakScalar(true)), sw::DType::Bool()).b);
  // Integers beyond a weak scalar's range: +-inf as Float32, refused as Int32.
  auto huge = [](bool negative) {
    return [negative](LiteralBuilder& b) { b.integer_beyond_int128(negative, negative ? "-2**200" : "2**200"); };
  };
  EXPECT_EQ(one(huge(false), sw::DType::Float32()).f, std::numeric_limits<float>::infinity());
  EXPECT_EQ(one(huge(true), sw::DType::Float32()).f, -std::numeric_limits<float>::infinity());
  EXPECT_THROW(one(huge(false), sw::DType::Int32()), sw::OverflowError);
  EXPECT_THROW(one(number(WeakScalar(1)), sw::DType::Float64()), sw::ValueError);  // not a stored dtype
}

TEST(Literal_Issue20Step9, ArraysAreReadFromStridedByteSwappedMemory) {
  // A (2, 2) float16 array stored transposed (column-major) and big-endian:
  // element (i, j) at byte 2 * (i + 2j). Values 1, 2 / 3, 4 as halves.
  const std::uint16_t halves[4] = {0x3c00, 0x4200, 0x4000, 0x4400};  // 1, 3, 2, 4 (column-major)
  unsigned char bytes[8];
  for (int k = 0; k < 4; ++k) {
    bytes[2 * k] = static_cast<unsigned char>(halves[k] >> 8);
    bytes[2 * k + 1] = static_cast<unsigned char>(halves[k] & 0xff);
  }
  sw::HostArrayView v = view_of(bytes, sw::HostElement::Float16, {2, 2}, {2, 4});
  v.byte_swapped = std::endian::native == std::endian::little;
  LiteralBuilder b;
  b.array(v);
  EXPECT_EQ(extents(b.shape()), (std::vector<std::int64_t>{2, 2}));
  const auto values = b.values(sw::DType::Float32());
  EXPECT_EQ(values[0].f, 1.0f);
  EXPECT_EQ(values[2].f, 2.0f);  // element (0, 1)
  EXPECT_EQ(values[1].f, 3.0f);  // element (1, 0)
  EXPECT_EQ(values[3].f, 4.0f);

  // A reversed uint64 run (negative stride) of values beyond Int32.
  const std::uint64_t big[2] = {5, std::uint64_t{1} << 40};
  LiteralBuilder r;
  r.array(view_of(&big[1], sw::HostElement::UInt64, {2}, {-8}));
  EXPECT_EQ(&r.inferred_dtype(), &sw::DType::Int32());
  EXPECT_THROW(r.values(sw::DType::Int32()), sw::OverflowError);
  EXPECT_EQ(r.values(sw::DType::Float32())[0].f, 1099511627776.0f);
  EXPECT_EQ(r.values(sw::DType::Float32())[1].f, 5.0f);
  EXPECT_THROW(r.values(sw::DType::Bool()), sw::TypeError);
}

TEST(Literal_Issue20Step9, MisuseOfTheReaderContractIsARuntimeError) {
  LiteralBuilder b;
  b.open(2);
  b.number(WeakScalar(1));
  EXPECT_THROW(b.shape(), sw::RuntimeError);  // not complete
  EXPECT_THROW(b.close(), sw::RuntimeError);  // one item short
  b.number(WeakScalar(2));
  EXPECT_THROW(b.number(WeakScalar(3)), sw::RuntimeError);  // one item too many
  b.close();
  EXPECT_THROW(b.number(WeakScalar(4)), sw::RuntimeError);  // after the outermost item
  EXPECT_THROW(b.close(), sw::RuntimeError);
  EXPECT_THROW(b.fixed_rank(1), sw::RuntimeError);
  EXPECT_EQ(extents(b.shape()), (std::vector<std::int64_t>{2}));
}

TEST(Literal_Issue20Step9, AnEmptySequenceEndsTheShapeUnlessTheRankIsFixed) {
  LiteralBuilder free;
  free.open(0);
  free.close();
  EXPECT_EQ(extents(free.shape()), (std::vector<std::int64_t>{0}));
  LiteralBuilder fixed;
  fixed.fixed_rank(2);
  fixed.open(0);
  fixed.close();
  EXPECT_EQ(extents(fixed.shape()), (std::vector<std::int64_t>{0, 0}));
  // The C++ factory reads through the builder: {{}} at rank 2 is (1, 0).
  const sw::Tensor t = sw::tensor<sw::CPU, float>({std::initializer_list<float>{}});
  EXPECT_EQ(extents(t.shape()), (std::vector<std::int64_t>{1, 0}));
  EXPECT_THROW((sw::tensor<sw::CPU, float>({{1.0f, 2.0f}, {3.0f}})), sw::ValueError);
}

TEST(Literal_Issue20Step9, BuildMakesStorageLikeThePrototype) {
  LiteralBuilder b;
  rows(b, {{1, 2}, {3, 4}});
  const auto prototype = sw::Generic::from_values(std::vector<sw::Value>{sw::Value::from_float32(0)}, sw::DType::Float32());
  const sw::Tensor t = b.build(nullptr, *prototype);
  EXPECT_EQ(t.carrier()->exact_class(), prototype->exact_class());
  EXPECT_EQ(t.at(std::vector<std::int64_t>{1, 0}).f, 3.0f);
  EXPECT_EQ(t.at(std::vector<std::int64_t>{0, 1}).f, 2.0f);
}

TEST(Literal_Issue20Step9, AnElementCountBeyond64BitsIsAValueErrorBeforeAnythingIsSized) {
  // Four zero-stride arrays of 2**62 elements: 2**64 elements in all.
  const std::int8_t zero = 0;
  LiteralBuilder b;
  b.open(4);
  for (int i = 0; i < 4; ++i) b.array(view_of(&zero, sw::HostElement::Int8, {std::int64_t{1} << 62}, {0}));
  b.close();
  EXPECT_THROW(b.values(sw::DType::Int32()), sw::ValueError);
  EXPECT_THROW(b.shape(), sw::ValueError);
}

TEST(Literal_Issue20Step9, RewindingToAMarkUndoesAPartlyReadItem) {
  LiteralBuilder b;
  open_with_first_row(b);
  const LiteralBuilder::Mark mark = b.mark();
  b.open(2);  // an item [3, [4]] that fails part way
  b.number(WeakScalar(3));
  EXPECT_THROW(b.open(1), sw::ValueError);
  b.rewind(mark);
  b.open(2);
  b.number(WeakScalar(3));
  b.number(WeakScalar(4));
  b.close();
  b.close();
  EXPECT_EQ(extents(b.shape()), (std::vector<std::int64_t>{2, 2}));
  const auto v = b.values(sw::DType::Int32());
  EXPECT_EQ(v[0].i, 1);
  EXPECT_EQ(v[1].i, 3);
  EXPECT_EQ(v[2].i, 2);
  EXPECT_EQ(v[3].i, 4);
}
