// libFuzzer target: the safetensors header parser
// (src/formats/safetensors_header.cpp) over arbitrary bytes. The contract:
// it returns tensors that lie inside the file, in offset order, without
// overlap, or throws strideweave::ValueError; anything else is a bug.
#include <strideweave/errors.h>
#include <strideweave/formats.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const strideweave::FileHeader h = strideweave::parse_safetensors_header(bytes, static_cast<std::int64_t>(size));
    std::int64_t end = h.header_bytes;
    for (const strideweave::StoredTensor& t : h.tensors) {
      if (t.data_offset != end || t.data_bytes < 0) std::abort();
      end = t.data_offset + t.data_bytes;
    }
    if (end != static_cast<std::int64_t>(size)) std::abort();
  } catch (const strideweave::ValueError&) {
  }
  return 0;
}
