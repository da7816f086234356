// TileSelection, TileSet and ResidencyPlan (carrier-composition B3, B12).
// See <strideweave/carriers/tiled_evictable.h>. Public headers only.
#include <strideweave/carriers/tiled_evictable.h>
#include <strideweave/errors.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace strideweave {

namespace {

// First axis fastest: compare the reversed tuples.
bool first_axis_fastest_less(const TileCoordinate& a, const TileCoordinate& b) {
  return std::lexicographical_compare(a.rbegin(), a.rend(), b.rbegin(), b.rend());
}

void check_in_grid(const TileCoordinate& c, std::span<const std::int64_t> grid, const char* what) {
  if (c.size() != grid.size())
    throw ValueError(fmt::format("{}: tile coordinate ({}) has rank {}, the grid {}", what, fmt::join(c, ", "),
                                 c.size(), grid.size()));
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i] >= grid[i])
      throw ValueError(fmt::format("{}: tile coordinate ({}) lies outside the grid ({})", what, fmt::join(c, ", "),
                                   fmt::join(grid, ", ")));
}

}  // namespace

// ---------------------------------------------------------------- TileSelection

TileSelection::TileSelection(std::vector<std::vector<std::int64_t>> per_axis) : per_axis_(std::move(per_axis)) {
  if (per_axis_.empty()) throw ValueError("TileSelection: at least one axis is required");
  for (std::size_t i = 0; i < per_axis_.size(); ++i) {
    const std::vector<std::int64_t>& axis = per_axis_[i];
    if (axis.empty()) throw ValueError(fmt::format("TileSelection: axis {} selects no tile", i));
    std::set<std::int64_t> seen;
    for (std::int64_t c : axis) {
      if (c < 0) throw ValueError(fmt::format("TileSelection: axis {} holds the negative tile coordinate {}", i, c));
      if (!seen.insert(c).second)
        throw ValueError(fmt::format("TileSelection: axis {} holds the tile coordinate {} twice", i, c));
    }
  }
}

std::vector<std::int64_t> TileSelection::compact_grid_shape() const {
  std::vector<std::int64_t> out;
  for (const auto& axis : per_axis_) out.push_back(static_cast<std::int64_t>(axis.size()));
  return out;
}

std::vector<TileCoordinate> TileSelection::coordinates() const {
  std::size_t count = 1;
  for (const auto& axis : per_axis_) count *= axis.size();
  std::vector<TileCoordinate> out;
  out.reserve(count);
  std::vector<std::size_t> compact(per_axis_.size(), 0);
  for (std::size_t k = 0; k < count; ++k) {
    TileCoordinate c(per_axis_.size());
    for (std::size_t i = 0; i < per_axis_.size(); ++i) c[i] = per_axis_[i][compact[i]];
    out.push_back(std::move(c));
    for (std::size_t i = 0; i < per_axis_.size(); ++i) {  // first axis fastest
      if (++compact[i] < per_axis_[i].size()) break;
      compact[i] = 0;
    }
  }
  return out;
}

TileSet TileSelection::tile_set() const { return TileSet(coordinates()); }

void TileSelection::check_against(std::span<const std::int64_t> grid_shape, const char* what) const {
  if (rank() != grid_shape.size())
    throw ValueError(fmt::format("{}: the selection has rank {}, the grid {}", what, rank(), grid_shape.size()));
  for (std::size_t i = 0; i < rank(); ++i)
    for (std::int64_t c : per_axis_[i])
      if (c >= grid_shape[i])
        throw ValueError(fmt::format("{}: the selection's axis {} names tile {}, outside the grid's {} tiles", what, i,
                                     c, grid_shape[i]));
}

// ---------------------------------------------------------------- TileSet

TileSet::TileSet(std::vector<TileCoordinate> coordinates) : coordinates_(std::move(coordinates)) {
  for (const TileCoordinate& c : coordinates_) {
    if (c.size() != coordinates_.front().size())
      throw ValueError(fmt::format("TileSet: coordinates of ranks {} and {}", coordinates_.front().size(), c.size()));
    if (c.empty()) throw ValueError("TileSet: a coordinate has no component");
    for (std::int64_t v : c)
      if (v < 0) throw ValueError(fmt::format("TileSet: the coordinate ({}) has a negative component", fmt::join(c, ", ")));
  }
  std::sort(coordinates_.begin(), coordinates_.end(), first_axis_fastest_less);
  const auto dup = std::adjacent_find(coordinates_.begin(), coordinates_.end());
  if (dup != coordinates_.end())
    throw ValueError(fmt::format("TileSet: the coordinate ({}) appears twice", fmt::join(*dup, ", ")));
}

std::optional<std::size_t> TileSet::rank() const noexcept {
  if (coordinates_.empty()) return std::nullopt;
  return coordinates_.front().size();
}

bool TileSet::contains(std::span<const std::int64_t> coordinate) const {
  const TileCoordinate c(coordinate.begin(), coordinate.end());
  return std::binary_search(coordinates_.begin(), coordinates_.end(), c, first_axis_fastest_less);
}

void TileSet::check_against(std::span<const std::int64_t> grid_shape, const char* what) const {
  for (const TileCoordinate& c : coordinates_) check_in_grid(c, grid_shape, what);
}

// ---------------------------------------------------------------- ResidencyPlan

ResidencyPlan::ResidencyPlan(TileSet promote, TileSet retain, TileSet evict)
    : promote_(std::move(promote)), retain_(std::move(retain)), evict_(std::move(evict)) {
  const std::pair<const TileSet*, const char*> sets[] = {{&promote_, "promote"}, {&retain_, "retain"}, {&evict_, "evict"}};
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t b = a + 1; b < 3; ++b)
      for (const TileCoordinate& c : sets[a].first->coordinates())
        if (sets[b].first->contains(c))
          throw ValueError(fmt::format("ResidencyPlan: the tile ({}) is in both {} and {}", fmt::join(c, ", "),
                                       sets[a].second, sets[b].second));
  const std::optional<std::size_t> ranks[] = {promote_.rank(), retain_.rank(), evict_.rank()};
  std::optional<std::size_t> rank;
  for (const auto& r : ranks) {
    if (!r) continue;
    if (rank && *rank != *r) throw ValueError(fmt::format("ResidencyPlan: tile sets of ranks {} and {}", *rank, *r));
    rank = r;
  }
}

const char* to_string(TileLocation location) noexcept {
  switch (location) {
    case TileLocation::Primary: return "primary";
    case TileLocation::Secondary: return "secondary";
    case TileLocation::Implicit: return "implicit";
    case TileLocation::Invalid: return "invalid";
  }
  return "invalid";
}

}  // namespace strideweave
