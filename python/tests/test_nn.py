"""strideweave.nn and the training example (issue 12, item 9): modules,
parameters, the loss, SGD, and a short run of examples/train_mlp.py."""

import importlib.util
import math
import pathlib

import pytest

import strideweave as sw
from strideweave import nn
from conftest import F32, I32, raises_exactly

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_mlp.py"


def load_example():
    spec = importlib.util.spec_from_file_location("train_mlp", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parameter_is_a_leaf_tensor_over_the_same_storage():
    data = sw.tensor([[1.0, 2.0]])
    p = nn.Parameter(data)
    assert isinstance(p, sw.Tensor) and p.requires_grad and p.is_leaf
    assert p.carrier is data.carrier and p.tolist() == [[1.0, 2.0]]
    raises_exactly(RuntimeError, nn.Parameter, sw.tensor([1, 2]))  # only Float32 is differentiable
    raises_exactly(TypeError, nn.Parameter, [1.0])


def test_modules_register_parameters_and_submodules_in_order():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1, bias=False))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight"]
    assert [p.shape.extents for p in model.parameters()] == [(3, 2), (3,), (1, 3)]
    assert len(model) == 3 and isinstance(model[1], nn.ReLU)
    raises_exactly(TypeError, nn.Sequential, nn.Tanh(), "relu")

    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(1, 1)
            self.b = self.a

    assert len(Shared().parameters()) == 2  # each parameter once


def test_linear_is_x_times_weight_transposed_plus_bias():
    layer = nn.Linear(2, 3, seed=7)
    x = sw.tensor([[1.0, 2.0], [3.0, -1.0]])
    w, b = layer.weight.tolist(), layer.bias.tolist()
    expected = [[sum(xr[k] * w[j][k] for k in range(2)) + b[j] for j in range(3)] for xr in x.tolist()]
    got = layer(x).tolist()
    assert all(math.isclose(g, e, rel_tol=1e-6, abs_tol=1e-6) for gr, er in zip(got, expected) for g, e in zip(gr, er))
    bound = 1 / math.sqrt(2)
    assert all(-bound <= v <= bound for row in w for v in row)
    assert nn.Linear(2, 3, seed=7).weight.tolist() == w  # seeded: reproducible
    raises_exactly(ValueError, nn.Linear, 0, 1)
    raises_exactly(TypeError, nn.Linear, 1.0, 1)


@pytest.mark.parametrize(
    "module, operation",
    [(nn.ReLU(), sw.relu), (nn.Tanh(), sw.tanh), (nn.Sigmoid(), sw.sigmoid), (nn.SiLU(), sw.silu),
     (nn.GELU(), sw.gelu), (nn.ELU(), sw.elu), (nn.LeakyReLU(), sw.leaky_relu), (nn.Softplus(), sw.softplus)],
)
def test_activations_are_the_librarys_operations(module, operation):
    x = sw.tensor([-2.0, -0.5, 0.0, 0.5, 2.0])
    assert module(x).tolist() == operation(x).tolist()


def test_activation_options_pass_through_by_name():
    x = sw.tensor([-2.0])
    assert nn.LeakyReLU(negative_slope=0.5)(x).tolist() == [-1.0]
    raises_exactly(TypeError, nn.ELU, beta=1.0)


def test_mse_loss_mean_and_sum():
    a, b = sw.tensor([[1.0], [2.0]]), sw.tensor([[0.0], [4.0]])
    assert nn.MSELoss()(a, b).item() == pytest.approx(2.5)
    assert nn.MSELoss("sum")(a, b).item() == pytest.approx(5.0)
    raises_exactly(ValueError, nn.MSELoss(), a, sw.tensor([1.0, 2.0]))  # no silent broadcasting
    raises_exactly(ValueError, nn.MSELoss, "max")


def test_sgd_steps_against_the_gradient_and_zero_grad_forgets_it():
    p = nn.Parameter(sw.tensor([1.0, -2.0]))
    opt = nn.SGD([p], lr=0.5)
    loss = sw.reduce_sum(sw.elementwise_mul(p, p))  # gradient 2p
    loss.backward()
    assert p.grad.tolist() == [2.0, -4.0]
    version = p.carrier.version
    opt.step()
    assert p.tolist() == [0.0, 0.0] and p.carrier.version > version
    assert p.requires_grad and p.is_leaf and p.grad_fn is None  # the update was not recorded
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # no gradient: nothing changes
    assert p.tolist() == [0.0, 0.0]
    raises_exactly(ValueError, nn.SGD, [p], lr=0)
    raises_exactly(TypeError, nn.SGD, [sw.tensor([1])], lr=0.1)  # an Int32 tensor is not differentiable


def test_sgd_momentum_accumulates_a_velocity():
    p = nn.Parameter(sw.tensor([1.0]))
    opt = nn.SGD([p], lr=0.1, momentum=0.5)
    for _ in range(2):
        opt.zero_grad()
        sw.mul(p, 2.0).backward(sw.tensor([1.0]))  # gradient 2 each step
        opt.step()
    # v1 = 2, p1 = 1 - 0.2 = 0.8; v2 = 0.5 * 2 + 2 = 3, p2 = 0.8 - 0.3 = 0.5
    assert p.item() == pytest.approx(0.5)


def test_short_training_run_of_the_example():
    example = load_example()
    x, y = example.sine_data()
    assert x.shape.extents == (64, 1) and y.dtype() is F32
    first = nn.MSELoss()(example.make_model()(x), y).item()
    _, final = example.train(epochs=300)
    assert final < 0.05 < first


@pytest.mark.parametrize("module, operation", [(nn.ReLU, "relu"), (nn.Sigmoid, "sigmoid"), (nn.Tanh, "tanh"),
                                               (nn.SiLU, "silu"), (nn.GELU, "gelu"), (nn.LeakyReLU, "leaky_relu"),
                                               (nn.ELU, "elu"), (nn.Softplus, "softplus")])
def test_activation_modules_take_their_options_and_defaults_from_the_operation(module, operation):
    # Issue 20 step 7 (one home per operation): a module keeps no copy of a
    # default; its options are the operation's keyword options, defaults
    # included (operations.def -> schema -> signature).
    import inspect

    params = inspect.signature(getattr(sw, operation)).parameters.values()
    expected = {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "out"}
    assert module().options == expected
    x = sw.tensor([-1.5, 0.25, 2.0])
    assert module()(x).tolist() == getattr(sw, operation)(x).tolist()
    for name, default in expected.items():
        assert f"{name}={default!r}" in module.__doc__
