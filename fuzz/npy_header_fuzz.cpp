// libFuzzer target: the .npy header parser (src/formats/npy_header.cpp) over
// arbitrary bytes. The contract: it returns a header whose data lies inside
// the file, or throws strideweave::ValueError; anything else (a crash, an
// out-of-bounds read under AddressSanitizer, another exception) is a bug.
#include <strideweave/errors.h>
#include <strideweave/formats.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const strideweave::FileHeader h = strideweave::parse_npy_header(bytes, static_cast<std::int64_t>(size));
    const strideweave::StoredTensor& t = h.tensors.at(0);
    if (t.data_offset < 0 || t.data_bytes < 0 || t.data_offset + t.data_bytes > static_cast<std::int64_t>(size))
      std::abort();
  } catch (const strideweave::ValueError&) {
  }
  return 0;
}
