"""Test support for TiledEvictable: an independent model of the tile geometry
(carrier-composition B1/B2)."""


def logical(slots, grid, tile):
    """The full Tensor's values, first axis fastest, by the geometry's definition."""
    shape = [g * t for g, t in zip(grid, tile)]
    ts = 1
    for t in tile:
        ts *= t
    out = []
    n = 1
    for e in shape:
        n *= e
    for k in range(n):
        rest, t_index, w, gs, ws = k, 0, 0, 1, 1
        for i in range(len(shape)):
            c = rest % shape[i]
            rest //= shape[i]
            t_index += (c // tile[i]) * gs
            w += (c % tile[i]) * ws
            gs *= grid[i]
            ws *= tile[i]
        out.append(slots[t_index * ts + w])
    return out
