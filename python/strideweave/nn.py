"""strideweave.nn: a small neural-network toolkit over strideweave's
operations and autograd (docs/python.md, "strideweave.nn").

It is plain Python over the public operations: every forward pass is
ordinary recorded operation calls, every gradient comes from
Tensor.backward(), and SGD updates parameters in place under no_grad()
through caller-provided outputs. Nothing here has a kernel of its own.

    >>> import strideweave as sw
    >>> from strideweave import nn
    >>> model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
    >>> optimizer = nn.SGD(model.parameters(), lr=0.1)
    >>> x = sw.tensor([[0.0], [0.5]]); y = sw.tensor([[0.0], [0.479]])
    >>> loss = nn.MSELoss()(model(x), y)
    >>> optimizer.zero_grad(); loss.backward(); optimizer.step()

Parameters are Float32 tensors on the CPU carrier unless a module is given
another carrier class (``carrier=sw.Generic``). Initialisation draws from
``random.Random(seed)`` so a run is reproducible.
"""

import inspect
import math
import random as _random

from . import _core
from ._grad_mode import no_grad

__all__ = [
    "Parameter",
    "Module",
    "Sequential",
    "Linear",
    "ReLU",
    "LeakyReLU",
    "ELU",
    "GELU",
    "SiLU",
    "Sigmoid",
    "Tanh",
    "Softplus",
    "MSELoss",
    "SGD",
]

_F32 = _core.DType.Float32


class Parameter(_core.Tensor):
    """A leaf tensor a Module owns and an optimizer updates: a Tensor (a
    subclass, usable wherever one is) over the same carrier, offset and
    layout as `data`. `data` must be exactly Float32 (RuntimeError
    otherwise): only differentiable tensors receive gradients, and every
    Float32 tensor takes part in the graphs built while grad mode is on
    (core-concepts 6.2), so there is no flag to set."""

    def __init__(self, data):
        if not isinstance(data, _core.Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {data!r}")
        if not data.is_differentiable():
            raise RuntimeError(f"Parameter: a {data.dtype().name} tensor is not differentiable (only Float32 is)")
        super().__init__(data.carrier, data.offset, data.layout)

    def __repr__(self):
        return "Parameter(" + super().__repr__() + ")"


class Module:
    """The base of every layer: assigning a Parameter or a Module to an
    attribute registers it (in assignment order), parameters() yields them
    recursively, and calling the module runs forward()."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__}: call super().__init__() before assigning attributes")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix=""):
        """(dotted name, Parameter) pairs, this module's first, each once."""
        seen = set()
        for name, p in self._parameters.items():
            if id(p) not in seen:
                seen.add(id(p))
                yield prefix + name, p
        for name, m in self._modules.items():
            for sub, p in m.named_parameters(prefix + name + "."):
                if id(p) not in seen:
                    seen.add(id(p))
                    yield sub, p

    def parameters(self):
        """Every Parameter of this module and its submodules, each once."""
        return [p for _, p in self.named_parameters()]

    def children(self):
        return list(self._modules.values())

    def zero_grad(self):
        for p in self.parameters():
            p.grad = None

    def __repr__(self):
        inner = ", ".join(f"{n}={m!r}" for n, m in self._modules.items())
        return f"{type(self).__name__}({inner})"


class Sequential(Module):
    """Sequential(*modules): applies each module to the previous output."""

    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: item {i} is not a Module: {m!r}")
            setattr(self, str(i), m)

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __repr__(self):
        return "Sequential(" + ", ".join(repr(m) for m in self._modules.values()) + ")"


def _uniform(shape, bound, rng, carrier):
    """A Float32 tensor of `shape` (row-major nested lists) with values drawn
    from U(-bound, bound)."""
    rows, cols = shape
    data = [[rng.uniform(-bound, bound) for _ in range(cols)] for _ in range(rows)]
    return _core.tensor(data, dtype=_F32, carrier=carrier)


class Linear(Module):
    """Linear(in_features, out_features, bias=True, *, seed=0, carrier=CPU):
    y = x @ weight^T + bias for x of shape (N, in_features). weight has shape
    (out_features, in_features) and bias (out_features,), both drawn from
    U(-1/sqrt(in_features), 1/sqrt(in_features)) as PyTorch initialises
    them."""

    def __init__(self, in_features, out_features, bias=True, *, seed=0, carrier=None):
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"Linear: {name} must be an int, got {v!r}")
            if v < 1:
                raise ValueError(f"Linear: {name} must be positive, got {v}")
        self.in_features, self.out_features = in_features, out_features
        rng = _random.Random(seed)
        bound = 1.0 / math.sqrt(in_features)
        carrier = carrier or _core.CPU
        self.weight = Parameter(_uniform((out_features, in_features), bound, rng, carrier))
        if bias:
            b = _uniform((1, out_features), bound, rng, carrier)
            self.bias = Parameter(_core.Tensor(b.carrier, 0, _core.Layout.compact(_core.Shape(out_features))))
        else:
            self.bias = None

    def forward(self, x):
        y = _core.matmul(x, self.weight.permute(1, 0))
        return y if self.bias is None else _core.add(y, self.bias)

    def __repr__(self):
        return f"Linear(in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None})"


def _activation(name, operation, summary):
    # The module's options and their defaults are the operation's own, read
    # from its signature (built from the schema, whose defaults come from
    # operations.def): no second copy of a default lives here.
    parameters = inspect.signature(getattr(_core, operation)).parameters.values()
    defaults = {p.name: p.default for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "out"}
    signature = ", ".join(f"{k}={v!r}" for k, v in defaults.items())
    doc = f"{name}({'*, ' + signature if signature else ''}): {summary} (strideweave.{operation})."

    def __init__(self, **options):
        Module.__init__(self)
        unknown = set(options) - set(defaults)
        if unknown:
            raise TypeError(f"{name}: unexpected option(s) {sorted(unknown)}")
        object.__setattr__(self, "options", {**defaults, **options})

    def forward(self, x):
        return getattr(_core, operation)(x, **self.options)

    def __repr__(self):
        return name + "(" + ", ".join(f"{k}={v!r}" for k, v in self.options.items() if defaults[k] != v) + ")"

    return type(name, (Module,), {"__init__": __init__, "forward": forward, "__repr__": __repr__,
                                  "__doc__": doc, "__module__": __name__})


ReLU = _activation("ReLU", "relu", "max(x, 0) elementwise")
Sigmoid = _activation("Sigmoid", "sigmoid", "1 / (1 + exp(-x))")
Tanh = _activation("Tanh", "tanh", "tanh(x)")
SiLU = _activation("SiLU", "silu", "x * sigmoid(x)")
GELU = _activation("GELU", "gelu", "the Gaussian error linear unit")
LeakyReLU = _activation("LeakyReLU", "leaky_relu", "x if x > 0 else negative_slope * x")
ELU = _activation("ELU", "elu", "x if x > 0 else alpha * expm1(x)")
Softplus = _activation("Softplus", "softplus", "log1p(exp(beta * x)) / beta below the threshold")


class MSELoss(Module):
    """MSELoss(reduction="mean"): the mean (or "sum") of (input - target)^2
    over every element; input and target must have the same shape
    (ValueError otherwise: no silent broadcasting of a loss)."""

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum"):
            raise ValueError(f"MSELoss: reduction must be 'mean' or 'sum', got {reduction!r}")
        self.reduction = reduction

    def forward(self, input, target):
        if input.shape != target.shape:
            raise ValueError(f"MSELoss: input shape {input.shape} differs from target shape {target.shape}")
        d = _core.sub(input, target)
        total = _core.reduce_sum(_core.elementwise_mul(d, d))
        if self.reduction == "sum" or input.size() == 0:
            return total
        return _core.mul(total, 1.0 / input.size())


class SGD:
    """SGD(parameters, lr, momentum=0.0): plain stochastic gradient descent,
    p <- p - lr * (p.grad, or the momentum buffer when momentum > 0), written
    in place into each parameter's storage under no_grad(). Parameters
    without a gradient are skipped."""

    def __init__(self, parameters, lr, momentum=0.0):
        self.parameters = list(parameters)
        for i, p in enumerate(self.parameters):
            if not isinstance(p, _core.Tensor) or not p.is_differentiable():
                raise TypeError(f"SGD: parameter {i} is not a differentiable (Float32) tensor: {p!r}")
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
            raise ValueError(f"SGD: lr must be a positive number, got {lr!r}")
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0 <= momentum < 1:
            raise ValueError(f"SGD: momentum must be in [0, 1), got {momentum!r}")
        self.lr = float(lr)
        self.momentum = float(momentum)
        self._velocity = [None] * len(self.parameters)

    def zero_grad(self):
        """Forgets every parameter's gradient (the next backward starts afresh)."""
        for p in self.parameters:
            p.grad = None

    def step(self):
        """One update of every parameter that has a gradient."""
        with no_grad():
            for i, p in enumerate(self.parameters):
                g = p.grad
                if g is None:
                    continue
                if self.momentum:
                    # A fresh velocity each step: an operation's output may
                    # not share storage with its operands.
                    v = self._velocity[i]
                    g = self._velocity[i] = _core.mul(g, 1.0) if v is None else _core.add(_core.mul(v, self.momentum), g)
                _core.mul(g, -self.lr, out=_core.accumulate_into(p))
