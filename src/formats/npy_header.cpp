// The .npy header parser: a pure function over bytes (docs/storage.md, "File
// formats"; fuzzed by fuzz/npy_header_fuzz.cpp).
//
// The format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor
// version byte (1.0, 2.0, 3.0), the header's length (2 bytes little-endian
// in 1.0, 4 bytes in 2.0 and 3.0), then the header: a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and ended by '\n'. The data follows directly.
#include <strideweave/errors.h>
#include <strideweave/formats.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "formats/checked.h"

namespace strideweave {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

[[noreturn]] void fail(const std::string& what) { throw ValueError(fmt::format(".npy header: {}", what)); }

// The dict literal: strings ('...' or "..." without escapes), True/False,
// tuples of non-negative decimal integers, nothing else.
class Literal {
 public:
  explicit Literal(std::string_view text) : text_(text) {}

  void skip_blanks() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n')) ++at_;
  }
  bool peek(char c) {
    skip_blanks();
    return at_ < text_.size() && text_[at_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++at_;
    return true;
  }
  void expect(char c, const char* where) {
    if (!accept(c))
      fail(fmt::format("malformed header dictionary: expected '{}' {} at character {}", c, where, at_));
  }
  std::string string(const char* what) {
    skip_blanks();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"'))
      fail(fmt::format("malformed header dictionary: expected a quoted {} at character {}", what, at_));
    const char quote = text_[at_++];
    const std::size_t start = at_;
    while (at_ < text_.size() && text_[at_] != quote) {
      if (text_[at_] == '\\' || text_[at_] == '\n')
        fail(fmt::format("malformed header dictionary: unsupported character in a string at character {}", at_));
      ++at_;
    }
    if (at_ >= text_.size()) fail("malformed header dictionary: an unterminated string");
    return std::string(text_.substr(start, at_++ - start));
  }
  std::string word() {
    skip_blanks();
    const std::size_t start = at_;
    while (at_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[at_]))) ++at_;
    return std::string(text_.substr(start, at_ - start));
  }
  std::int64_t integer() {
    skip_blanks();
    const std::size_t start = at_;
    std::int64_t v = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      const auto next = formats::checked_mul(v, 10);
      const auto sum = next ? formats::checked_add(*next, text_[at_] - '0') : std::nullopt;
      if (!sum) fail(fmt::format("shape: an extent at character {} overflows int64", start));
      v = *sum;
      ++at_;
    }
    if (at_ == start)
      fail(fmt::format("shape: expected a non-negative integer extent at character {}", start));
    if (at_ < text_.size() && text_[at_] == 'L') ++at_;  // Python 2 writers: 3L
    return v;
  }
  bool at_end() {
    skip_blanks();
    return at_ == text_.size();
  }
  std::size_t position() const { return at_; }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

struct Descr {
  const char* dtype;
  std::int64_t item_bytes;
};

Descr parse_descr(const std::string& descr) {
  // Byte order: '<' little, '=' native (little: strideweave builds for
  // little-endian hosts only, checked below), '|' none (one byte), '>' big.
  if (descr == "|b1" || descr == "<b1" || descr == "=b1" || descr == ">b1" || descr == "?") return {"bool", 1};
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '=' || descr[0] == '>')) {
    const std::string_view kind(descr.data() + 1, 2);
    if ((kind == "f4" || kind == "i4") && descr[0] == '>')
      fail(fmt::format("unsupported dtype '{}': big-endian data (strideweave reads little-endian '<f4', '<i4' and "
                       "'|b1')",
                       descr));
    if (kind == "f4") return {"float32", 4};
    if (kind == "i4") return {"int32", 4};
  }
  fail(fmt::format("unsupported dtype '{}' (strideweave reads '<f4' float32, '<i4' int32 and '|b1' bool)", descr));
}

}  // namespace

FileHeader parse_npy_header(std::span<const std::byte> bytes, std::int64_t file_bytes) {
  static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian host");
  if (file_bytes < 0 || static_cast<std::uint64_t>(file_bytes) < bytes.size())
    throw ValueError(fmt::format(".npy header: file size {} is smaller than the {} bytes given", file_bytes,
                                 bytes.size()));
  if (bytes.size() < 8)
    fail(fmt::format("truncated header: {} bytes, the magic and version need 8", bytes.size()));
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0)
    fail("wrong magic: the file does not start with \"\\x93NUMPY\" (not a .npy file)");
  const int major = static_cast<int>(bytes[6]);
  const int minor = static_cast<int>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(fmt::format("unsupported version {}.{} (strideweave reads 1.0, 2.0 and 3.0)", major, minor));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t prelude = 8 + length_bytes;
  if (bytes.size() < prelude)
    fail(fmt::format("truncated header: {} bytes, the version {}.0 preamble needs {}", bytes.size(), major, prelude));
  const std::uint64_t header_length = formats::little_endian(bytes, 8, length_bytes);
  if (header_length > static_cast<std::uint64_t>(formats::kMaxNpyHeaderBytes))
    fail(fmt::format("header length {} exceeds the limit of {} bytes", header_length, formats::kMaxNpyHeaderBytes));
  const std::uint64_t data_offset = prelude + header_length;
  if (data_offset > bytes.size())
    fail(fmt::format("truncated header: it declares {} bytes of header text but only {} bytes follow the preamble",
                     header_length, bytes.size() - prelude));

  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + prelude, header_length);
  Literal lit(text);
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<std::int64_t>> shape;
  lit.expect('{', "to open the header dictionary");
  while (!lit.peek('}')) {
    const std::string key = lit.string("key");
    lit.expect(':', fmt::format("after the key '{}'", key).c_str());
    if (key == "descr") {
      if (descr) fail("duplicate key 'descr'");
      if (lit.peek('[')) fail("unsupported dtype: a structured dtype (a list descr)");
      descr = lit.string("descr");
    } else if (key == "fortran_order") {
      if (fortran) fail("duplicate key 'fortran_order'");
      const std::string w = lit.word();
      if (w != "True" && w != "False") fail(fmt::format("fortran_order must be True or False, got '{}'", w));
      fortran = w == "True";
    } else if (key == "shape") {
      if (shape) fail("duplicate key 'shape'");
      shape.emplace();
      lit.expect('(', "to open the shape tuple");
      while (!lit.peek(')')) {
        shape->push_back(lit.integer());
        if (shape->size() > 64) fail("shape: more than 64 dimensions");
        if (!lit.accept(',')) break;
      }
      lit.expect(')', "to close the shape tuple");
      // A one-element tuple needs its trailing comma in Python: (3) is 3.
    } else {
      fail(fmt::format("unexpected key '{}' (a .npy header has 'descr', 'fortran_order' and 'shape')", key));
    }
    if (!lit.accept(',')) break;
  }
  lit.expect('}', "to close the header dictionary");
  if (!lit.at_end())
    fail(fmt::format("unexpected text after the header dictionary at character {}", lit.position()));
  if (!descr) fail("missing key 'descr'");
  if (!fortran) fail("missing key 'fortran_order'");
  if (!shape) fail("missing key 'shape'");

  const Descr d = parse_descr(*descr);
  std::int64_t count = 1;
  for (const std::int64_t extent : *shape) {
    const auto next = formats::checked_mul(count, extent);
    if (!next) fail(fmt::format("shape: the element count of {} overflows int64", fmt::join(*shape, "x")));
    count = *next;
  }
  const auto data_bytes = formats::checked_mul(count, d.item_bytes);
  if (!data_bytes) fail(fmt::format("shape: the byte size of {} elements overflows int64", count));
  const auto end = formats::checked_add(static_cast<std::int64_t>(data_offset), *data_bytes);
  if (!end || *end > file_bytes)
    fail(fmt::format("truncated data: {} elements of '{}' need {} bytes from byte offset {}, but the file has {} "
                     "bytes",
                     count, *descr, *data_bytes, data_offset, file_bytes));

  FileHeader h;
  h.format = FileFormat::Npy;
  h.version = fmt::format("{}.0", major);
  h.header_bytes = static_cast<std::int64_t>(data_offset);
  h.file_bytes = file_bytes;
  StoredTensor t;
  t.dtype = d.dtype;
  t.file_dtype = *descr;
  t.shape = std::move(*shape);
  t.fortran_order = *fortran;
  t.element_count = count;
  t.data_offset = static_cast<std::int64_t>(data_offset);
  t.data_bytes = *data_bytes;
  h.tensors.push_back(std::move(t));
  return h;
}

}  // namespace strideweave
