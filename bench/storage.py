#!/usr/bin/env python3
"""bench/run --storage: strideweave's storage carriers beside the disk's own
limits, in one run (issue 13 item 8; docs/storage.md, "Measured").

    bench/storage.py --bench-storage build-bench/peers/bench_storage \
        --dir build-bench/storage [--gib 4] [--repeats 3] [--json]

Lines, in bench_peers' format (a ratio above 1 means strideweave is better):

  filebacked_move_reduce  FileBacked.open(file) -> move to CPU -> reduce_sum
                          (bench_storage move-reduce), GB/s of the file,
                          beside  dd-direct-read  (dd iflag=direct: the
                          disk's direct-read limit, the target's 0.8x) and
                          beside  numpy.memmap  (np.memmap(file).sum(): the
                          target's 2x).
  filebacked_stream_reduce  the same file as 64 MiB slices, each
                          FileBacked.open(file, offset, size) -> move_async to
                          CPU, 4 moves in flight, each landed slice reduced
                          while the next ones read (bench_storage
                          stream-reduce), beside dd-direct-read and
                          numpy.memmap; its sum is checked against the
                          file's exact sum (1e-5 relative) or the run fails.
                          The empty=True destinations' figure is printed to
                          stderr.
  memmap_2x_vs_disk       2x numpy.memmap's rate (the memmap target) beside
                          dd-direct-read: above 1, the target asks for more
                          than the disk's direct-read limit.
  block_device_read       BlockDeviceCarrier.read_aligned of one carrier over
                          the whole image, beside dd-direct-read.
  block_device_write      BlockDeviceCarrier.write_aligned, beside
                          dd-direct-write (dd oflag=direct into a
                          preallocated file of the same size, conv=notrunc).

The file is written once, fsync'ed, and before every timed buffered read
(strideweave's move, numpy.memmap) its pages are dropped from the page cache
with posix_fadvise(POSIX_FADV_DONTNEED), so that those reads come from the
disk; dd and the block device read with O_DIRECT, past the page cache. Each
figure is the best of --repeats runs. Every file is removed at the end.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

CHUNK_BYTES = 64 << 20
DD_BLOCK = "16M"
STREAM_SLICE_BYTES = 64 << 20
STREAM_IN_FLIGHT = 4
SUM_TOLERANCE = 1e-5


def chunk_values():
    return ((np.arange(CHUNK_BYTES // 4, dtype=np.int64) % 1000) * 0.001).astype(np.float32)


def drop_cached_pages(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def write_data_file(path, size):
    chunk = chunk_values().tobytes()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        left = size
        while left > 0:
            left -= os.write(fd, chunk[: min(left, len(chunk))])
        os.fsync(fd)
    finally:
        os.close(fd)


def dd_seconds(arguments):
    """dd's own elapsed time (its last stderr line: '..., 1.23 s, ...')."""
    done = subprocess.run(["dd", *arguments], check=True, capture_output=True, text=True)
    match = re.search(r"copied, ([0-9.e+-]+) s", done.stderr)
    if not match:
        raise RuntimeError(f"dd printed no time: {done.stderr!r}")
    return float(match.group(1))


def best(values):
    return min(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench-storage", required=True, help="the bench_storage program")
    parser.add_argument("--dir", required=True, help="a directory on the disk to measure (not tmpfs)")
    parser.add_argument("--gib", type=float, default=4.0, help="file size in GiB (default 4)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    size = int(args.gib * (1 << 30)) // CHUNK_BYTES * CHUNK_BYTES
    if size <= 0:
        parser.error("--gib is smaller than one 64 MiB chunk")
    data = os.path.join(args.dir, "storage-bench-data.f32")
    dd_write = os.path.join(args.dir, "storage-bench-dd-write.img")
    image = os.path.join(args.dir, "storage-bench-block-device.img")
    for stale in (data, dd_write, image):
        if os.path.exists(stale):
            os.remove(stale)
    fs = subprocess.run(["stat", "-f", "-c", "%T", args.dir], capture_output=True, text=True).stdout.strip()
    print(f"storage: {size / (1 << 30):.2f} GiB files in {args.dir} ({fs}), best of {args.repeats}; "
          f"page cache dropped with posix_fadvise(DONTNEED) before each buffered read", file=sys.stderr)
    threads = os.cpu_count()
    lines = []

    def report(work, ours, peer, peer_value):
        lines.append({"work": work, "threads": threads, "unit": "GB/s", "ours": round(ours, 4), "peer": peer,
                      "peer_value": round(peer_value, 4), "ratio": round(ours / peer_value, 3)})
        line = lines[-1]
        if args.json:
            print(json.dumps(line))
        else:
            print(f"{work:<26} {threads:2d}  {'GB/s':<7} {ours:12.4g}  {peer:<15} {peer_value:12.4g}  "
                  f"{line['ratio']:7.3f}")
        sys.stdout.flush()

    try:
        write_data_file(data, size)
        gb = size / 1e9

        dd_read = best([dd_seconds([f"if={data}", "of=/dev/null", f"bs={DD_BLOCK}", "iflag=direct"])
                        for _ in range(args.repeats)])

        ours_runs = subprocess.run([args.bench_storage, "move-reduce", data, str(args.repeats)], check=True,
                                   capture_output=True, text=True).stdout.splitlines()
        ours_runs = [json.loads(line) for line in ours_runs]
        move_reduce = best([run["seconds"] for run in ours_runs])
        move_only = best([run["move_seconds"] for run in ours_runs])

        memmap_seconds = []
        memmap_sum = None
        for _ in range(args.repeats):
            drop_cached_pages(data)
            t0 = time.perf_counter()
            mapped = np.memmap(data, dtype=np.float32, mode="r")
            memmap_sum = float(mapped.sum())
            memmap_seconds.append(time.perf_counter() - t0)
            del mapped
        memmap = best(memmap_seconds)
        print(f"storage: sums: strideweave {ours_runs[0]['sum']:.9g}, numpy.memmap {memmap_sum:.9g}; "
              f"move alone {gb / move_only:.3g} GB/s", file=sys.stderr)

        def stream(empty):
            runs = subprocess.run([args.bench_storage, "stream-reduce", data, str(args.repeats),
                                   str(STREAM_SLICE_BYTES), str(STREAM_IN_FLIGHT), "1" if empty else "0"],
                                  check=True, capture_output=True, text=True).stdout.splitlines()
            return [json.loads(line) for line in runs]

        stream_runs = stream(False)
        stream_empty_runs = stream(True)
        stream_reduce = best([run["seconds"] for run in stream_runs])
        stream_empty = best([run["seconds"] for run in stream_empty_runs])
        # The file is whole chunks of one pattern: its exact sum.
        exact = float(chunk_values().astype(np.float64).sum()) * (size // CHUNK_BYTES)
        for name, total in [("filebacked_stream_reduce", run["sum"]) for run in stream_runs + stream_empty_runs]:
            if abs(total - exact) > SUM_TOLERANCE * abs(exact):
                raise RuntimeError(f"{name}: sum {total!r} is not the file's sum {exact!r} (rel {SUM_TOLERANCE})")
        print(f"storage: exact sum {exact:.9g}; streamed {stream_runs[0]['sum']:.9g} (rel "
              f"{abs(stream_runs[0]['sum'] - exact) / exact:.2g}), whole move {ours_runs[0]['sum']:.9g} (rel "
              f"{abs(ours_runs[0]['sum'] - exact) / exact:.2g}), numpy.memmap (rel {abs(memmap_sum - exact) / exact:.2g}); "
              f"streamed into empty=True destinations {gb / stream_empty:.3g} GB/s "
              f"({stream_reduce / stream_empty:.3g}x the rate into zeroed ones)", file=sys.stderr)

        report("filebacked_move_reduce", gb / move_reduce, "dd-direct-read", gb / dd_read)
        report("filebacked_move_reduce", gb / move_reduce, "numpy.memmap", gb / memmap)
        report("filebacked_stream_reduce", gb / stream_reduce, "dd-direct-read", gb / dd_read)
        report("filebacked_stream_reduce", gb / stream_reduce, "numpy.memmap", gb / memmap)
        report("memmap_2x_vs_disk", 2 * gb / memmap, "dd-direct-read", gb / dd_read)

        os.remove(data)
        fd = os.open(dd_write, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.posix_fallocate(fd, 0, size)
        finally:
            os.close(fd)
        count = size // (16 << 20)
        dd_write_seconds = best([dd_seconds(["if=/dev/zero", f"of={dd_write}", f"bs={DD_BLOCK}", f"count={count}",
                                             "oflag=direct", "conv=notrunc"]) for _ in range(args.repeats)])
        os.remove(dd_write)

        block_runs = subprocess.run([args.bench_storage, "block-device", image, str(size), str(args.repeats)],
                                    check=True, capture_output=True, text=True).stdout.splitlines()
        block_runs = [json.loads(line) for line in block_runs]
        block_read = best([run["seconds"] for run in block_runs if run["work"] == "block_device_read"])
        block_write = best([run["seconds"] for run in block_runs if run["work"] == "block_device_write"])
        report("block_device_read", gb / block_read, "dd-direct-read", gb / dd_read)
        report("block_device_write", gb / block_write, "dd-direct-write", gb / dd_write_seconds)
    finally:
        for path in (data, dd_write, image):
            if os.path.exists(path):
                os.remove(path)


if __name__ == "__main__":
    main()
