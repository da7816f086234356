// The safetensors header parser: a pure function over bytes (docs/storage.md,
// "File formats"; fuzzed by fuzz/safetensors_header_fuzz.cpp).
//
// The format (huggingface/safetensors): 8 bytes little-endian N, then N bytes
// of UTF-8 JSON, an object mapping each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end]} (offsets relative to the data region that
// follows the header) plus an optional "__metadata__" object of strings; the
// JSON may be padded with trailing spaces. The tensors must cover the data
// region exactly: no overlap, no gap, nothing past the end and nothing after
// the last tensor.
#include <strideweave/errors.h>
#include <strideweave/formats.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "formats/checked.h"

namespace strideweave {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw ValueError(fmt::format("safetensors header: {}", what)); }

struct DtypeInfo {
  const char* dtype;
  std::int64_t item_bytes;
};

std::optional<DtypeInfo> supported_dtype(const std::string& name) {
  if (name == "F32") return DtypeInfo{"float32", 4};
  if (name == "I32") return DtypeInfo{"int32", 4};
  if (name == "BOOL") return DtypeInfo{"bool", 1};
  return std::nullopt;
}

bool known_dtype(const std::string& name) {
  static const std::set<std::string> known = {"F64",     "F16",     "BF16", "I64", "I16", "I8",  "U8",
                                              "U16",     "U32",     "U64",  "F8_E4M3", "F8_E5M2", "F8_E8M0",
                                              "F4",      "F6_E2M3", "F6_E3M2", "C64"};
  return known.count(name) > 0;
}

// A non-negative integer that fits int64, or ValueError naming `what`.
std::int64_t non_negative(const json& v, const std::string& what) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(fmt::format("{} {} overflows int64", what, u));
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) fail(fmt::format("{} must be non-negative, got {}", what, v.get<std::int64_t>()));
  fail(fmt::format("{} must be a non-negative integer, got {}", what, v.dump()));
}

struct Entry {
  StoredTensor tensor;
  std::int64_t begin = 0;  // relative to the data region
  std::int64_t end = 0;
};

Entry parse_entry(const std::string& name, const json& info) {
  if (!info.is_object()) fail(fmt::format("tensor '{}': expected an object, got {}", name, info.type_name()));
  for (const auto& item : info.items())
    if (item.key() != "dtype" && item.key() != "shape" && item.key() != "data_offsets")
      fail(fmt::format("tensor '{}': unexpected key '{}' (expected dtype, shape and data_offsets)", name, item.key()));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!info.contains(key)) fail(fmt::format("tensor '{}': missing key '{}'", name, key));
  const json& dtype = info["dtype"];
  if (!dtype.is_string()) fail(fmt::format("tensor '{}': dtype must be a string, got {}", name, dtype.dump()));
  const std::string dtype_name = dtype.get<std::string>();
  const auto supported = supported_dtype(dtype_name);
  if (!supported) {
    if (known_dtype(dtype_name))
      fail(fmt::format("tensor '{}': unsupported dtype '{}' (strideweave reads F32, I32 and BOOL)", name, dtype_name));
    fail(fmt::format("tensor '{}': unknown dtype '{}'", name, dtype_name));
  }
  const json& shape = info["shape"];
  if (!shape.is_array()) fail(fmt::format("tensor '{}': shape must be an array, got {}", name, shape.dump()));
  if (shape.size() > 64) fail(fmt::format("tensor '{}': shape has more than 64 dimensions", name));
  Entry e;
  e.tensor.name = name;
  e.tensor.dtype = supported->dtype;
  e.tensor.file_dtype = dtype_name;
  std::int64_t count = 1;
  for (const json& extent : shape) {
    e.tensor.shape.push_back(non_negative(extent, fmt::format("tensor '{}': shape extent", name)));
    const auto next = formats::checked_mul(count, e.tensor.shape.back());
    if (!next) fail(fmt::format("tensor '{}': the element count of shape {} overflows int64", name, shape.dump()));
    count = *next;
  }
  const auto bytes = formats::checked_mul(count, supported->item_bytes);
  if (!bytes) fail(fmt::format("tensor '{}': the byte size of {} {} elements overflows int64", name, count, dtype_name));
  const json& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail(fmt::format("tensor '{}': data_offsets must be [begin, end], got {}", name, offsets.dump()));
  e.begin = non_negative(offsets[0], fmt::format("tensor '{}': data_offsets begin", name));
  e.end = non_negative(offsets[1], fmt::format("tensor '{}': data_offsets end", name));
  if (e.end < e.begin)
    fail(fmt::format("tensor '{}': data_offsets [{}, {}] end before they begin", name, e.begin, e.end));
  if (e.end - e.begin != *bytes)
    fail(fmt::format("tensor '{}': data_offsets [{}, {}] hold {} bytes but shape {} of {} needs {}", name, e.begin,
                     e.end, e.end - e.begin, shape.dump(), dtype_name, *bytes));
  e.tensor.element_count = count;
  e.tensor.data_bytes = *bytes;
  return e;
}

// Parses the JSON text, refusing a duplicate key in any object (nlohmann
// would keep the last one silently).
json parse_json(std::string_view text) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  const json::parser_callback_t check = [&keys](int depth, json::parse_event_t event, json& parsed) {
    if (depth > 8) fail("malformed JSON: nested deeper than a safetensors header can be");
    switch (event) {
      case json::parse_event_t::object_start: keys.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
          fail(fmt::format("duplicate name '{}'", parsed.get<std::string>()));
        break;
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    fail(fmt::format("malformed JSON: {}", e.what()));
  }
}

}  // namespace

FileHeader parse_safetensors_header(std::span<const std::byte> bytes, std::int64_t file_bytes) {
  if (file_bytes < 0 || static_cast<std::uint64_t>(file_bytes) < bytes.size())
    throw ValueError(fmt::format("safetensors header: file size {} is smaller than the {} bytes given", file_bytes,
                                 bytes.size()));
  if (bytes.size() < 8)
    fail(fmt::format("truncated header: {} bytes, the header length needs 8", bytes.size()));
  const std::uint64_t length = formats::little_endian(bytes, 0, 8);
  if (length > static_cast<std::uint64_t>(kMaxSafetensorsHeaderBytes))
    fail(fmt::format("header length {} exceeds the limit of {} bytes (wrong magic: not a safetensors file?)", length,
                     kMaxSafetensorsHeaderBytes));
  const std::int64_t data_start = 8 + static_cast<std::int64_t>(length);
  if (static_cast<std::uint64_t>(data_start) > bytes.size())
    fail(fmt::format("truncated header: it declares {} bytes of JSON but only {} bytes follow the length", length,
                     bytes.size() - 8));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, length);
  if (text.empty() || text.front() != '{')
    fail("wrong magic: the JSON header does not start with '{' (not a safetensors file)");
  const json root = parse_json(text);
  if (!root.is_object()) fail(fmt::format("the header must be a JSON object, got {}", root.type_name()));

  FileHeader h;
  h.format = FileFormat::Safetensors;
  h.header_bytes = data_start;
  h.file_bytes = file_bytes;
  const std::int64_t region = file_bytes - data_start;
  std::vector<Entry> entries;
  for (const auto& item : root.items()) {
    if (item.key() == "__metadata__") {
      if (!item.value().is_object()) fail("__metadata__ must be an object of strings");
      for (const auto& m : item.value().items()) {
        if (!m.value().is_string())
          fail(fmt::format("__metadata__ value of '{}' must be a string, got {}", m.key(), m.value().dump()));
        h.metadata.emplace(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    Entry e = parse_entry(item.key(), item.value());
    if (e.end > region)
      fail(fmt::format("tensor '{}': out of file: data_offsets [{}, {}] pass the end of the {}-byte data region",
                       item.key(), e.begin, e.end, region));
    e.tensor.data_offset = data_start + e.begin;
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end != b.end ? a.end < b.end : a.tensor.name < b.tensor.name;
  });
  std::int64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      fail(fmt::format("tensors '{}' and '{}' overlap: [{}, {}] begins before {}", previous->tensor.name,
                       e.tensor.name, e.begin, e.end, covered));
    if (e.begin > covered)
      fail(fmt::format("non-contiguous data region: bytes [{}, {}) before tensor '{}' belong to no tensor", covered,
                       e.begin, e.tensor.name));
    covered = e.end;
    previous = &e;
  }
  if (covered != region)
    fail(fmt::format("non-contiguous data region: {} bytes after the last tensor belong to no tensor",
                     region - covered));
  for (Entry& e : entries) h.tensors.push_back(std::move(e.tensor));
  return h;
}

}  // namespace strideweave
