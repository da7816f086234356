// Test support: the logical values of a TiledEvictable's tile-major slots, by
// the geometry's definition (carrier-composition B1/B2): tile t owns slots
// [t * tile_size, (t + 1) * tile_size), tiles and within-tile coordinates
// first axis fastest. An independent model to compare the carrier against.
#pragma once

#include <cstdint>
#include <vector>

namespace strideweave::testing {

// The full logical tensor's values (first axis fastest) of `slots`.
inline std::vector<float> tiled_logical(const std::vector<float>& slots, const std::vector<std::int64_t>& grid,
                                        const std::vector<std::int64_t>& tile) {
  std::vector<std::int64_t> logical;
  std::int64_t n = 1, ts = 1;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    logical.push_back(grid[i] * tile[i]);
    n *= logical.back();
    ts *= tile[i];
  }
  std::vector<float> out;
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t rest = k, t = 0, w = 0, gs = 1, ws = 1;
    for (std::size_t i = 0; i < grid.size(); ++i) {
      const std::int64_t c = rest % logical[i];
      rest /= logical[i];
      t += (c / tile[i]) * gs;
      w += (c % tile[i]) * ws;
      gs *= grid[i];
      ws *= tile[i];
    }
    out.push_back(slots[static_cast<std::size_t>(t * ts + w)]);
  }
  return out;
}

}  // namespace strideweave::testing
