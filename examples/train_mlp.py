#!/usr/bin/env python3
"""Fits y = sin(x) on 64 points in [-pi, pi] with a Linear(1, 16) -> Tanh ->
Linear(16, 1) MLP by full-batch SGD (issue 12, item 9; docs/python.md,
"strideweave.nn"): everything runs through strideweave's operations and
autograd from Python.

    PYTHONPATH=build-test/python /usr/bin/python3 examples/train_mlp.py [--epochs 2000] [--lr 0.1]

Prints the loss every 200 epochs and exits with status 1 if the final loss is
not below --target (0.05), so a run checks itself. The test suite runs a
short version (python/tests/test_nn.py) and bench/run times the full task
beside the same model in PyTorch's Python API.
"""

import argparse
import math
import sys
import time

import strideweave as sw
from strideweave import nn


def sine_data(points=64):
    """64 evenly spaced x in [-pi, pi] and sin(x), as (N, 1) Float32 tensors
    made from nested Python lists."""
    xs = [-math.pi + 2.0 * math.pi * i / (points - 1) for i in range(points)]
    return sw.tensor([[x] for x in xs]), sw.tensor([[math.sin(x)] for x in xs])


def make_model(seed=0):
    return nn.Sequential(nn.Linear(1, 16, seed=seed), nn.Tanh(), nn.Linear(16, 1, seed=seed + 1))


def train(epochs=2000, lr=0.1, seed=0, report=None):
    """Trains a fresh model; returns (model, final loss as a float)."""
    x, y = sine_data()
    model = make_model(seed)
    optimizer = nn.SGD(model.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    loss = None
    for epoch in range(epochs):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if report and (epoch % 200 == 0 or epoch == epochs - 1):
            report(epoch, loss.item())
    return model, (loss.item() if loss is not None else float("nan"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.05)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    _, final = train(args.epochs, args.lr, args.seed, report=lambda e, l: print(f"epoch {e:5d}  loss {l:.6f}"))
    seconds = time.perf_counter() - start
    print(f"final loss {final:.6f} after {args.epochs} epochs in {seconds:.2f} s "
          f"({1e3 * seconds / max(args.epochs, 1):.3f} ms per epoch)")
    if not final < args.target:
        print(f"the loss did not fall below {args.target}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
