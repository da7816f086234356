// Strict header validation of the .npy and safetensors parsers (issue 13,
// item 4 "Formats people have": "Headers are validated strictly (wrong
// magic, truncated, overflowing shapes or offsets, overlapping or out-of-file
// tensors, unsupported dtypes) with a typed error naming the problem";
// docs/storage.md, "File formats"). One named test per case; each checks
// the ValueError's message names the problem.
#include <strideweave/errors.h>
#include <strideweave/formats.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace sw = strideweave;

namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// A version-1.0 .npy file: the dict (padded to 64 with '\n') and `data_bytes` zero bytes.
std::string npy(const std::string& dict, std::size_t data_bytes, char major = 1) {
  std::string header = dict;
  const std::size_t prelude = major == 1 ? 10 : 12;
  while ((prelude + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(major);
  out.push_back('\0');
  const std::size_t n = header.size();
  for (std::size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + std::string(data_bytes, '\0');
}

sw::FileHeader parse_npy(const std::string& file) {
  const auto b = bytes_of(file);
  return sw::parse_npy_header(b, static_cast<std::int64_t>(b.size()));
}

std::string safetensors(const std::string& json, std::size_t data_bytes) {
  std::string out;
  for (std::size_t i = 0; i < 8; ++i) out.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xff));
  return out + json + std::string(data_bytes, '\0');
}

sw::FileHeader parse_st(const std::string& file) {
  const auto b = bytes_of(file);
  return sw::parse_safetensors_header(b, static_cast<std::int64_t>(b.size()));
}

// Expects a ValueError whose message contains `needle`.
template <class F>
void expect_value_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no ValueError; expected one naming: " << needle;
  } catch (const sw::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

const std::string kF32 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

}  // namespace

// ---- .npy

TEST(Formats_NpyHeader, ValidVersion1Header) {
  const sw::FileHeader h = parse_npy(npy(kF32, 24));
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.version, "1.0");
  EXPECT_EQ(h.header_bytes, 128);  // 10 + 59 characters + padding: a multiple of 64
  EXPECT_EQ(h.tensors[0].dtype, "float32");
  EXPECT_EQ(h.tensors[0].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_FALSE(h.tensors[0].fortran_order);
  EXPECT_EQ(h.tensors[0].data_offset, 128);
  EXPECT_EQ(h.tensors[0].data_bytes, 24);
}

TEST(Formats_NpyHeader, Version2And3UseFourByteLengths) {
  EXPECT_EQ(parse_npy(npy(kF32, 24, 2)).version, "2.0");
  EXPECT_EQ(parse_npy(npy(kF32, 24, 3)).tensors[0].data_offset, 128);
}

TEST(Formats_NpyHeader, ScalarOneDimFortranInt32AndBool) {
  EXPECT_TRUE(parse_npy(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (), }", 4)).tensors[0].shape.empty());
  EXPECT_EQ(parse_npy(npy("{'shape': (5,), 'fortran_order': True, 'descr': '<i4'}", 20)).tensors[0].shape,
            (std::vector<std::int64_t>{5}));
  EXPECT_TRUE(parse_npy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16)).tensors[0].fortran_order);
  EXPECT_EQ(parse_npy(npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 3)).tensors[0].dtype, "bool");
}

TEST(Formats_NpyHeader, WrongMagic) {
  std::string f = npy(kF32, 24);
  f[1] = 'X';
  expect_value_error([&] { parse_npy(f); }, "wrong magic");
}

TEST(Formats_NpyHeader, UnsupportedVersion) {
  std::string f = npy(kF32, 24);
  f[6] = 4;
  expect_value_error([&] { parse_npy(f); }, "unsupported version 4.0");
  f[6] = 1;
  f[7] = 1;
  expect_value_error([&] { parse_npy(f); }, "unsupported version 1.1");
}

TEST(Formats_NpyHeader, TruncatedPreamble) {
  expect_value_error([&] { parse_npy(std::string("\x93NUMP")); }, "truncated header");
  expect_value_error([&] { parse_npy(std::string("\x93NUMPY\x01\x00\x10", 9)); }, "truncated header");
}

TEST(Formats_NpyHeader, HeaderLengthOverLimit) {
  expect_value_error([&] { parse_npy(std::string("\x93NUMPY\x02\x00\x00\x00\x00\x01", 12)); }, "exceeds the limit");
}

TEST(Formats_NpyHeader, TruncatedHeaderText) {
  const std::string f = npy(kF32, 0);
  expect_value_error([&] { parse_npy(f.substr(0, 40)); }, "truncated header");
}

TEST(Formats_NpyHeader, TruncatedData) {
  expect_value_error([&] { parse_npy(npy(kF32, 23)); }, "truncated data");
}

TEST(Formats_NpyHeader, ShapeElementCountOverflows) {
  expect_value_error(
      [&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0)); },
      "overflows int64");
}

TEST(Formats_NpyHeader, ShapeByteSizeOverflows) {
  expect_value_error(
      [&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0)); },
      "byte size");
}

TEST(Formats_NpyHeader, ExtentOverflowsInt64) {
  expect_value_error(
      [&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0)); },
      "overflows int64");
}

TEST(Formats_NpyHeader, NegativeExtent) {
  expect_value_error([&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0)); },
                     "non-negative integer extent");
}

TEST(Formats_NpyHeader, UnsupportedDtypeNamed) {
  expect_value_error([&] { parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 8)); },
                     "unsupported dtype '<f8'");
  expect_value_error([&] { parse_npy(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", 8)); },
                     "unsupported dtype '<i8'");
}

TEST(Formats_NpyHeader, BigEndianRefused) {
  expect_value_error([&] { parse_npy(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 4)); },
                     "big-endian");
}

TEST(Formats_NpyHeader, StructuredDtypeRefused) {
  expect_value_error(
      [&] { parse_npy(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4)); },
      "structured dtype");
}

TEST(Formats_NpyHeader, MissingKey) {
  expect_value_error([&] { parse_npy(npy("{'descr': '<f4', 'shape': (1,), }", 4)); }, "missing key 'fortran_order'");
}

TEST(Formats_NpyHeader, DuplicateKey) {
  expect_value_error(
      [&] { parse_npy(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4)); },
      "duplicate key 'descr'");
}

TEST(Formats_NpyHeader, UnexpectedKey) {
  expect_value_error(
      [&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", 4)); },
      "unexpected key 'extra'");
}

TEST(Formats_NpyHeader, MalformedDictionary) {
  expect_value_error([&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", 4)); },
                     "malformed header dictionary");
  expect_value_error([&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", 4)); },
                     "fortran_order must be True or False");
  expect_value_error([&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", 4)); },
                     "unexpected text after");
}

// ---- safetensors

TEST(Formats_SafetensorsHeader, ValidHeaderSortedByOffset) {
  const sw::FileHeader h = parse_st(safetensors(
      R"({"b":{"dtype":"I32","shape":[2],"data_offsets":[8,16]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("__metadata__":{"format":"pt"}})",
      16));
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[1].name, "b");
  EXPECT_EQ(h.tensors[1].dtype, "int32");
  EXPECT_EQ(h.tensors[1].data_offset, h.header_bytes + 8);
  EXPECT_EQ(h.metadata.at("format"), "pt");
}

TEST(Formats_SafetensorsHeader, TruncatedLength) {
  expect_value_error([&] { parse_st(std::string("\x02\x00\x00", 3)); }, "truncated header");
}

TEST(Formats_SafetensorsHeader, TruncatedHeader) {
  std::string f = safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  expect_value_error([&] { parse_st(f.substr(0, 20)); }, "truncated header");
}

TEST(Formats_SafetensorsHeader, HeaderLengthOverLimit) {
  std::string f(8, '\xff');
  expect_value_error([&] { parse_st(f); }, "exceeds the limit");
}

TEST(Formats_SafetensorsHeader, WrongMagicNotAnObject) {
  expect_value_error([&] { parse_st(safetensors("[1, 2]", 0)); }, "wrong magic");
}

TEST(Formats_SafetensorsHeader, MalformedJson) {
  expect_value_error([&] { parse_st(safetensors(R"({"a": {"dtype": "F32",)", 0)); }, "malformed JSON");
}

TEST(Formats_SafetensorsHeader, DuplicateName) {
  expect_value_error([&] {
    parse_st(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         8));
  }, "duplicate name 'a'");
}

TEST(Formats_SafetensorsHeader, UnsupportedDtypeNamed) {
  expect_value_error([&] { parse_st(safetensors(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8)); },
                     "unsupported dtype 'F64'");
  expect_value_error([&] { parse_st(safetensors(R"({"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,8]}})", 8)); },
                     "unknown dtype 'Q7'");
}

TEST(Formats_SafetensorsHeader, ShapeOverflows) {
  expect_value_error([&] {
    parse_st(safetensors(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4));
  }, "overflows int64");
  expect_value_error([&] {
    parse_st(safetensors(R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", 4));
  }, "overflows int64");
}

TEST(Formats_SafetensorsHeader, OffsetOverflows) {
  expect_value_error([&] {
    parse_st(safetensors(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551615]}})", 4));
  }, "overflows int64");
}

TEST(Formats_SafetensorsHeader, NegativeOrFractionalOffset) {
  expect_value_error([&] { parse_st(safetensors(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4)); },
                     "must be non-negative");
  expect_value_error([&] { parse_st(safetensors(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4.0]}})", 4)); },
                     "non-negative integer");
}

TEST(Formats_SafetensorsHeader, OffsetsDisagreeWithShape) {
  expect_value_error([&] { parse_st(safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4)); },
                     "needs 8");
}

TEST(Formats_SafetensorsHeader, OutOfFileTensor) {
  expect_value_error([&] { parse_st(safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)); },
                     "out of file");
}

TEST(Formats_SafetensorsHeader, OverlappingTensors) {
  expect_value_error([&] {
    parse_st(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         12));
  }, "overlap");
}

TEST(Formats_SafetensorsHeader, GapIsNonContiguous) {
  expect_value_error([&] {
    parse_st(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                         12));
  }, "non-contiguous data region");
}

TEST(Formats_SafetensorsHeader, TrailingBytesAreNonContiguous) {
  expect_value_error([&] { parse_st(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8)); },
                     "after the last tensor");
}

TEST(Formats_SafetensorsHeader, MissingOrUnexpectedField) {
  expect_value_error([&] { parse_st(safetensors(R"({"a":{"dtype":"F32","shape":[1]}})", 0)); },
                     "missing key 'data_offsets'");
  expect_value_error([&] {
    parse_st(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4));
  }, "unexpected key 'x'");
}

TEST(Formats_SafetensorsHeader, MetadataMustBeStrings) {
  expect_value_error([&] { parse_st(safetensors(R"({"__metadata__":{"n":1}})", 0)); }, "must be a string");
}

TEST(Formats_SafetensorsHeader, PaddingSpacesAccepted) {
  EXPECT_EQ(parse_st(safetensors(R"({"a":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}}     )", 3))
                .tensors[0]
                .dtype,
            "bool");
}

// The fuzz targets' seed corpora (fuzz/corpus/) replayed in the ordinary
// suite (and so under the sanitizer builds): each seed parses or is a
// ValueError, never anything else, and the valid seeds numpy and the
// reference layout wrote are accepted.
TEST(Formats_FuzzCorpus, EverySeedParsesOrIsValueError) {
  const std::filesystem::path root = std::filesystem::path(STRIDEWEAVE_SOURCE_DIR) / "fuzz" / "corpus";
  const std::vector<std::string> valid = {"f32_2x3.npy", "i32_vector.npy", "bool_vector.npy", "fortran_2x3.npy",
                                          "scalar.npy", "empty_0x4.npy", "v2_header.npy", "two_tensors.safetensors",
                                          "bool_and_scalar.safetensors", "empty.safetensors",
                                          "zero_size.safetensors"};
  int seeds = 0;
  for (const char* kind : {"npy", "safetensors"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root / kind)) {
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      const std::string name = entry.path().filename().string();
      const bool ok = std::find(valid.begin(), valid.end(), name) != valid.end();
      try {
        std::string(kind) == "npy" ? parse_npy(file) : parse_st(file);
        EXPECT_TRUE(ok) << name << " parsed but is an invalid seed";
      } catch (const sw::ValueError& e) {
        EXPECT_FALSE(ok) << name << ": " << e.what();
      }
      ++seeds;
    }
  }
  EXPECT_GE(seeds, 15);
}
