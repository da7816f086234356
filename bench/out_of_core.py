#!/usr/bin/env python3
"""bench/run --out-of-core: TiledEvictable streamed from a FileBacked tier
beside the disk's own limit and numpy.memmap, in one run (issue 22, step 7;
docs/performance.md, "Out of core").

    bench/out_of_core.py --bench build-bench/peers/bench_out_of_core \
        --dir build-bench/out-of-core [--gib 1] [--factor 4] [--tile 1024] [--repeats 3] [--json]

Each file is one n x n Float32 matrix of about --gib GiB, tile-major; the
residency budget is the file's size / --factor (at least 4). Lines, in
bench_peers' format (a ratio above 1 means strideweave is better):

  ooc_reduce_sum        streamed reduce_sum, GB/s of the file, beside
                        dd-direct-read (dd iflag=direct: the disk's limit;
                        the target is 0.9x) and beside numpy.memmap
                        (np.memmap(file).sum(); the target: never below).
  ooc_add               add(a, b) of two such files into a dense result,
                        GB/s of both inputs, beside dd-direct-read (the
                        bound set by reading both at the direct-read rate;
                        target 0.8x) and beside numpy.memmap (a + b).
  ooc_matmul            matmul(a, b), b an n x 64 resident matrix, GFLOP/s
                        beside the same matmul in memory (target 0.8x where
                        compute dominates).
  ooc_matmul_bytes      the compulsory volume (a once) beside the bytes
                        read, so the ratio is compulsory / read (target:
                        read <= 1.05x compulsory, a ratio >= 0.952).
  ooc_reduce_depth_D    the prefetch-depth ablation: streamed reduce_sum at
                        depth D = 0, 1, 2, 4, beside dd-direct-read.
  ooc_peak_resident     the budget beside the peak resident bytes of the
                        reduce_sum, add and matmul passes (a ratio >= 1:
                        within the budget).

dask.array is measured too when Debian packages it (python3-dask); the run
says when it is absent. Before every timed buffered read the files' pages
are dropped from the page cache (posix_fadvise(DONTNEED)); dd reads with
O_DIRECT. Each figure is the best of --repeats runs. Every file is removed
at the end.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from storage import DD_BLOCK, dd_seconds, drop_cached_pages  # bench/storage.py: the same disk helpers


def write_matrix(path, n, seed):
    """n * n Float32 values in [-1, 1) (the tile order does not matter to a sum)."""
    rng = np.random.default_rng(seed)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        left = n * n
        while left > 0:
            count = min(left, 16 << 20)
            os.write(fd, (rng.random(count, dtype=np.float32) * 2 - 1).tobytes())
            left -= count
        os.fsync(fd)
    finally:
        os.close(fd)


def dd_read_seconds(path):
    return dd_seconds([f"if={path}", "of=/dev/null", f"bs={DD_BLOCK}", "iflag=direct"])


def runs_of(bench, *args):
    out = subprocess.run([bench, *map(str, args)], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True, help="the bench_out_of_core program")
    parser.add_argument("--dir", required=True, help="a directory on the disk to measure (not tmpfs)")
    parser.add_argument("--gib", type=float, default=1.0, help="each file's size in GiB (default 1)")
    parser.add_argument("--factor", type=int, default=4, help="file size / budget (at least 4; default 4)")
    parser.add_argument("--tile", type=int, default=1024, help="square tiles' side (default 1024: 4 MiB)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.factor < 4:
        parser.error("--factor must be at least 4 (the data at least four times the budget)")

    os.makedirs(args.dir, exist_ok=True)
    n = int((args.gib * (1 << 30) / 4) ** 0.5) // args.tile * args.tile
    if n == 0:
        parser.error("--gib is smaller than one tile")
    size = n * n * 4
    budget = size // args.factor
    a_path = os.path.join(args.dir, "ooc-a.f32")
    b_path = os.path.join(args.dir, "ooc-b.f32")
    for stale in (a_path, b_path):
        if os.path.exists(stale):
            os.remove(stale)
    fs = subprocess.run(["stat", "-f", "-c", "%T", args.dir], capture_output=True, text=True).stdout.strip()
    print(f"out-of-core: two {n} x {n} Float32 files of {size / (1 << 30):.2f} GiB in {args.dir} ({fs}), "
          f"budget {budget >> 20} MiB ({args.factor}x smaller), {args.tile} x {args.tile} tiles, best of "
          f"{args.repeats}; page cache dropped before each buffered read", file=sys.stderr)
    threads = os.cpu_count()
    lines = []

    def report(work, unit, ours, peer, peer_value):
        lines.append({"work": work, "threads": threads, "unit": unit, "ours": round(ours, 4), "peer": peer,
                      "peer_value": round(peer_value, 4), "ratio": round(ours / peer_value, 3)})
        line = lines[-1]
        if args.json:
            print(json.dumps(line))
        else:
            print(f"{work:<26} {threads:2d}  {unit:<7} {ours:12.4g}  {peer:<15} {peer_value:12.4g}  "
                  f"{line['ratio']:7.3f}")
        sys.stdout.flush()

    try:
        write_matrix(a_path, n, 1)
        write_matrix(b_path, n, 2)
        gb = size / 1e9
        dd = min(dd_read_seconds(a_path) for _ in range(args.repeats))

        def memmap_best(work):
            seconds = []
            for _ in range(args.repeats):
                drop_cached_pages(a_path)
                drop_cached_pages(b_path)
                t0 = time.perf_counter()
                work()
                seconds.append(time.perf_counter() - t0)
            return min(seconds)

        memmap_sum = memmap_best(lambda: float(np.memmap(a_path, dtype=np.float32, mode="r").sum()))
        memmap_add = memmap_best(lambda: np.add(np.memmap(a_path, dtype=np.float32, mode="r"),
                                                np.memmap(b_path, dtype=np.float32, mode="r")))

        reduce_runs = {depth: runs_of(args.bench, "reduce", a_path, budget, args.tile, depth, args.repeats)
                       for depth in (0, 1, 2, 4)}
        add_runs = runs_of(args.bench, "add", a_path, b_path, budget, args.tile, 2, args.repeats)
        matmul_runs = runs_of(args.bench, "matmul", a_path, budget, args.tile, 2, args.repeats, 64)

        exact = float(np.memmap(a_path, dtype=np.float32, mode="r").astype(np.float64).sum())
        ours_sum = reduce_runs[2][0]["sum"]
        print(f"out-of-core: sums: streamed {ours_sum:.9g}, exact {exact:.9g} (abs diff {abs(ours_sum - exact):.3g})",
              file=sys.stderr)

        try:
            import dask.array as da  # noqa: F401 (Debian: python3-dask)
            dask_sum = memmap_best(lambda: float(da.from_array(np.memmap(a_path, dtype=np.float32, mode="r"),
                                                               chunks=args.tile * args.tile).sum().compute()))
        except ImportError:
            dask_sum = None
            print("out-of-core: dask.array is not installed (python3-dask): not measured", file=sys.stderr)

        reduce = min(run["seconds"] for run in reduce_runs[2])
        report("ooc_reduce_sum", "GB/s", gb / reduce, "dd-direct-read", gb / dd)
        report("ooc_reduce_sum", "GB/s", gb / reduce, "numpy.memmap", gb / memmap_sum)
        if dask_sum:
            report("ooc_reduce_sum", "GB/s", gb / reduce, "dask.array", gb / dask_sum)
        add = min(run["seconds"] for run in add_runs)
        report("ooc_add", "GB/s", 2 * gb / add, "dd-direct-read", gb / dd)
        report("ooc_add", "GB/s", 2 * gb / add, "numpy.memmap", 2 * gb / memmap_add)
        best_matmul = min(matmul_runs, key=lambda run: run["seconds"])
        flops = best_matmul["flops"]
        report("ooc_matmul", "GFLOP/s", flops / best_matmul["seconds"] / 1e9, "in-memory",
               flops / min(run["in_memory_seconds"] for run in matmul_runs) / 1e9)
        report("ooc_matmul_bytes", "GB", best_matmul["compulsory_bytes"] / 1e9, "bytes-read",
               best_matmul["bytes_read"] / 1e9)
        for depth, runs in reduce_runs.items():
            report(f"ooc_reduce_depth_{depth}", "GB/s", gb / min(run["seconds"] for run in runs), "dd-direct-read",
                   gb / dd)
        for name, runs in (("reduce_sum", reduce_runs[2]), ("add", add_runs), ("matmul", matmul_runs)):
            peak = max(run["peak_resident_bytes"] for run in runs)
            report(f"ooc_peak_resident_{name}", "MiB", budget / (1 << 20), "peak-resident", peak / (1 << 20))
        hits = reduce_runs[2][0]
        print(f"out-of-core: reduce_sum at depth 2: {hits['tiles_prefetched']} tiles prefetched, "
              f"{hits['prefetch_hits']} hits, {hits['stalls']} stalls", file=sys.stderr)
    finally:
        for path in (a_path, b_path):
            if os.path.exists(path):
                os.remove(path)


if __name__ == "__main__":
    main()
