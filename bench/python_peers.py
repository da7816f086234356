#!/usr/bin/env python3
"""strideweave's Python package beside numpy and PyTorch's Python API, in one
run (issue 12, item 8; docs/python.md, "Performance"). bench/run calls it
with PYTHONPATH pointing at the built package; it prints the same rows as
bench/peers (a table, or one JSON object per line with --json): ours, the
peer's figure and their ratio oriented so that above 1 means strideweave is
better. Peers that are not installed are left out (they are benchmark-only:
Debian's python3-numpy and python3-torch).

    PYTHONPATH=build-bench/python /usr/bin/python3 bench/python_peers.py [--json] [--quick]

Work measured:
  py_add_tiny_call      per-call cost of strideweave.add on two 4-element
                        Float32 tensors, against numpy.add and torch.add on
                        the same data (microseconds per call, best
                        repetition); inference: ours under strideweave.no_grad(),
                        torch under torch.no_grad() (numpy records nothing)
  py_add_tiny_operator  the same through `a + b`
  py_add_tiny_recording `a + b` recording its node (grad mode, the specified
                        model: every Float32 call records) against torch's
                        `a + b` on tensors that require grad
  py_add_1M_bridge      add of two 2^20-element float32 numpy arrays through
                        the bridge: asarray both (no copy), add, numpy.asarray
                        of the result (no copy), against numpy.add and
                        torch.add over torch.from_numpy views
  py_matmul_512_bridge  the same for a 512x512 float32 matmul
  py_train_mlp          the full examples/train_mlp.py task (2,000 epochs of
                        full-batch SGD on the 64-point sin fit) against the
                        same model, data, initial weights and updates written
                        with torch.nn / torch.optim (seconds for the task)
  py_zeros_1M, py_ones_1M, py_full_1M, py_arange_1M, py_linspace_1M,
  py_uniform_1M, py_normal_1M, py_integers_1M
                        creation of 2^20 elements (Float32; arange Int32;
                        integers Int32 in [0, 100)) against numpy's
                        (numpy.random.default_rng for the random ones) and
                        torch's functions
  py_concatenate_1M     concatenate of four 2^18-element Float32 tensors,
                        under no_grad (inference) and recording
                        (py_concatenate_1M_rec: grad mode on, the scatter
                        path), against numpy.concatenate and torch.cat
  py_mean_1M, py_softmax_1M
                        mean of 2^20 Float32 values; softmax of a (1024, 1024)
                        Float32 tensor along its contiguous axis (torch's
                        last, our first: the same memory walk); under
                        no_grad, against torch (and numpy's mean)
Tiny and training work runs at 1 thread; the bridge and everyday work at 1 and 2.
"""

import argparse
import importlib.util
import json
import math
import pathlib
import sys
import time
import timeit

import strideweave as sw

try:
    import numpy as np
except ImportError:  # a peer, never required
    np = None
try:
    import torch
except ImportError:
    torch = None

ROOT = pathlib.Path(__file__).resolve().parent.parent
AS_JSON = False


def emit(work, threads, unit, ours, peer, peer_value, higher_is_better=False):
    ratio = ours / peer_value if higher_is_better else peer_value / ours
    if AS_JSON:
        print(json.dumps({"work": work, "threads": threads, "unit": unit, "ours": round(ours, 5), "peer": peer,
                          "peer_value": round(peer_value, 5), "ratio": round(ratio, 3)}), flush=True)
    else:
        print(f"{work:<24} {threads:>2} thr  ours {ours:>11.4f} {unit:<3}  {peer:<8} {peer_value:>11.4f} {unit:<3}"
              f"  ratio {ratio:6.3f}", flush=True)


def per_call_us(function, number, repeat):
    """The best repetition's time per call, in microseconds."""
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number * 1e6


def best_seconds(function, repeat):
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def set_threads(n):
    sw.set_num_threads(n)
    if torch is not None:
        torch.set_num_threads(n)


def tiny_add(quick):
    set_threads(1)
    values = [1.0, 2.0, 3.0, 4.0]
    a, b = sw.tensor(values), sw.tensor(values)
    number, repeat = (2000, 3) if quick else (20000, 7)
    ours_recording = per_call_us(lambda: a + b, number, repeat)
    with sw.no_grad():
        ours_call = per_call_us(lambda: sw.add(a, b), number, repeat)
        ours_operator = per_call_us(lambda: a + b, number, repeat)
    if np is not None:
        na, nb = np.array(values, dtype=np.float32), np.array(values, dtype=np.float32)
        peer = per_call_us(lambda: np.add(na, nb), number, repeat)
        emit("py_add_tiny_call", 1, "us", ours_call, "numpy", peer)
        emit("py_add_tiny_operator", 1, "us", ours_operator, "numpy", per_call_us(lambda: na + nb, number, repeat))
    if torch is not None:
        ta, tb = torch.tensor(values), torch.tensor(values)
        with torch.no_grad():
            peer_call = per_call_us(lambda: torch.add(ta, tb), number, repeat)
            peer_operator = per_call_us(lambda: ta + tb, number, repeat)
        emit("py_add_tiny_call", 1, "us", ours_call, "torch", peer_call)
        emit("py_add_tiny_operator", 1, "us", ours_operator, "torch", peer_operator)
        ra, rb = torch.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
        emit("py_add_tiny_recording", 1, "us", ours_recording, "torch", per_call_us(lambda: ra + rb, number, repeat))


def bridge(quick):
    if np is None:
        return
    rng = np.random.default_rng(0)
    n = 1 << (16 if quick else 20)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    m = 128 if quick else 512
    p, q = rng.standard_normal((m, m), dtype=np.float32), rng.standard_normal((m, m), dtype=np.float32)
    repeat = 3 if quick else 15

    def ours_add():
        return np.asarray(sw.add(sw.asarray(x), sw.asarray(y)))

    def ours_matmul():
        return np.asarray(sw.matmul(sw.asarray(p), sw.asarray(q)))

    assert np.array_equal(ours_add(), x + y)
    assert np.allclose(ours_matmul(), p @ q, rtol=1e-4, atol=1e-3)
    for threads in (1, 2):
        set_threads(threads)
        us_add = best_seconds(ours_add, repeat) * 1e6
        us_mm = best_seconds(ours_matmul, repeat) * 1e6
        emit("py_add_1M_bridge" if not quick else "py_add_64K_bridge", threads, "us", us_add, "numpy",
             best_seconds(lambda: np.add(x, y), repeat) * 1e6)
        emit(f"py_matmul_{m}_bridge", threads, "us", us_mm, "numpy", best_seconds(lambda: p @ q, repeat) * 1e6)
        if torch is not None:
            tx, ty, tp, tq = (torch.from_numpy(v) for v in (x, y, p, q))
            emit("py_add_1M_bridge" if not quick else "py_add_64K_bridge", threads, "us", us_add, "torch",
                 best_seconds(lambda: torch.add(tx, ty).numpy(), repeat) * 1e6)
            emit(f"py_matmul_{m}_bridge", threads, "us", us_mm, "torch",
                 best_seconds(lambda: torch.matmul(tp, tq).numpy(), repeat) * 1e6)


def everyday(quick):
    """Creation, concatenate, mean and softmax at 2^20 elements (issue 21, step 6)."""
    if np is None:
        return
    n = 1 << (16 if quick else 20)
    repeat = 3 if quick else 15
    rng = np.random.default_rng(0)
    gen = sw.random.Generator(0)
    creation = {
        "zeros": (lambda: sw.zeros(n), lambda: np.zeros(n, np.float32), lambda: torch.zeros(n)),
        "ones": (lambda: sw.ones(n), lambda: np.ones(n, np.float32), lambda: torch.ones(n)),
        "full": (lambda: sw.full(n, 2.5), lambda: np.full(n, 2.5, np.float32), lambda: torch.full((n,), 2.5)),
        "arange": (lambda: sw.arange(n), lambda: np.arange(n, dtype=np.int32),
                   lambda: torch.arange(n, dtype=torch.int32)),
        "linspace": (lambda: sw.linspace(0.0, 1.0, n), lambda: np.linspace(0.0, 1.0, n, dtype=np.float32),
                     lambda: torch.linspace(0.0, 1.0, n)),
        "uniform": (lambda: gen.uniform(size=n), lambda: rng.random(n, dtype=np.float32), lambda: torch.rand(n)),
        "normal": (lambda: gen.normal(size=n), lambda: rng.standard_normal(n, dtype=np.float32),
                   lambda: torch.randn(n)),
        "integers": (lambda: gen.integers(100, size=n), lambda: rng.integers(100, size=n, dtype=np.int32),
                     lambda: torch.randint(0, 100, (n,), dtype=torch.int32)),
    }
    size = "64K" if quick else "1M"
    x = rng.standard_normal(n, dtype=np.float32)
    parts_np = np.split(x, 4)
    parts = [sw.tensor(p) for p in parts_np]
    flat = sw.tensor(x)
    side = 1 << (8 if quick else 10)
    matrix_np = x.reshape(side, -1)
    # The same memory walk in both libraries: torch's softmax over its
    # contiguous last axis, ours over our contiguous first axis (a compact
    # tensor of the transpose holds each of numpy's rows contiguously).
    matrix = sw.tensor(matrix_np.T)
    for threads in (1, 2):
        set_threads(threads)
        for name, (ours, numpy_peer, torch_peer) in creation.items():
            value = best_seconds(ours, repeat) * 1e6
            emit(f"py_{name}_{size}", threads, "us", value, "numpy", best_seconds(numpy_peer, repeat) * 1e6)
            if torch is not None:
                emit(f"py_{name}_{size}", threads, "us", value, "torch", best_seconds(torch_peer, repeat) * 1e6)
        recorded = best_seconds(lambda: sw.concatenate(parts), repeat) * 1e6
        with sw.no_grad():
            concat = best_seconds(lambda: sw.concatenate(parts), repeat) * 1e6
            mean = best_seconds(lambda: sw.mean(flat), repeat) * 1e6
            softmax = best_seconds(lambda: sw.softmax(matrix, 0), repeat) * 1e6
        emit(f"py_concatenate_{size}", threads, "us", concat, "numpy",
             best_seconds(lambda: np.concatenate(parts_np), repeat) * 1e6)
        emit(f"py_mean_{size}", threads, "us", mean, "numpy", best_seconds(lambda: np.mean(x), repeat) * 1e6)
        if torch is not None:
            tparts = [torch.from_numpy(p) for p in parts_np]
            tx, tm = torch.from_numpy(x), torch.from_numpy(matrix_np)
            emit(f"py_concatenate_{size}", threads, "us", concat, "torch",
                 best_seconds(lambda: torch.cat(tparts), repeat) * 1e6)
            rparts = [p.clone().requires_grad_(True) for p in tparts]
            emit(f"py_concatenate_{size}_rec", threads, "us", recorded, "torch",
                 best_seconds(lambda: torch.cat(rparts), repeat) * 1e6)
            with torch.no_grad():
                emit(f"py_mean_{size}", threads, "us", mean, "torch", best_seconds(lambda: torch.mean(tx), repeat) * 1e6)
                emit(f"py_softmax_{size}", threads, "us", softmax, "torch",
                     best_seconds(lambda: torch.softmax(tm, -1), repeat) * 1e6)


def load_example():
    spec = importlib.util.spec_from_file_location("train_mlp", ROOT / "examples" / "train_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torch_train(example, epochs, lr):
    """The same task in PyTorch: the same data, initial weights (copied from
    strideweave's seeded initialisation), loss and SGD updates."""
    x, y = example.sine_data()
    model = example.make_model()
    params = [torch.tensor(p.tolist(), dtype=torch.float32) for p in model.parameters()]
    net = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    with torch.no_grad():
        for target, source in zip(net.parameters(), params):
            target.copy_(source)
    tx, ty = torch.tensor(x.tolist()), torch.tensor(y.tolist())
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    loss_fn = torch.nn.MSELoss()
    loss = None
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = loss_fn(net(tx), ty)
        loss.backward()
        optimizer.step()
    return loss.item()


def train(quick):
    example = load_example()
    set_threads(1)
    epochs, lr, repeat = (200, 0.1, 1) if quick else (2000, 0.1, 3)
    final = {}

    def ours():
        final["ours"] = example.train(epochs=epochs, lr=lr)[1]

    s_ours = best_seconds(ours, repeat)
    if not quick and not final["ours"] < 0.05:
        raise SystemExit(f"py_train_mlp: strideweave's final loss {final['ours']} is not below 0.05")
    if torch is not None:
        def peer():
            final["torch"] = torch_train(example, epochs, lr)

        s_torch = best_seconds(peer, repeat)
        print(f"# py_train_mlp final loss: strideweave {final['ours']:.6f}, torch {final['torch']:.6f}",
              file=sys.stderr)
        emit("py_train_mlp", 1, "s", s_ours, "torch", s_torch)


def main():
    global AS_JSON
    parser = argparse.ArgumentParser(description="strideweave's Python package beside numpy and PyTorch")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="small sizes and few repetitions (a smoke run)")
    args = parser.parse_args()
    AS_JSON = args.json
    peers = [name for name, module in (("numpy", np), ("torch", torch)) if module is not None]
    print(f"# python peers: {', '.join(peers) or 'none installed'}", file=sys.stderr)
    tiny_add(args.quick)
    bridge(args.quick)
    everyday(args.quick)
    train(args.quick)


if __name__ == "__main__":
    main()
