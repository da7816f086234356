"""strideweave.CUDA, the accelerator carrier (issue 23; docs/cuda.md).

Requirements named: core-concepts 8.3 (construction; RuntimeError without a
runtime), backend-capabilities (the sealed exact-class set),
carrier-extension R2.3 (definition-backed: sealed against declarations).
Tests marked `device` need a CUDA device and skip with one message
otherwise (scripts/device-check runs them on a lent GPU).
"""

import pathlib

import pytest

import strideweave as sw

NO_DEVICE = ("no CUDA device in this process (CUDA.unavailable_reason() says why); "
             "scripts/device-check runs these on a lent GPU")
device = pytest.mark.skipif(sw.CUDA.device_count() == 0, reason=NO_DEVICE)


def test_core_concepts_8_3_cuda_is_exported_and_final():
    assert sw.CUDA is sw.carriers.CUDA
    assert issubclass(sw.CUDA, sw.Carrier)
    with pytest.raises(TypeError):
        type("Sub", (sw.CUDA,), {})


@pytest.mark.skipif(sw.CUDA.device_count() > 0, reason="a CUDA device is present")
def test_core_concepts_8_3_construction_without_a_runtime_is_runtime_error():
    reason = sw.CUDA.unavailable_reason()
    assert reason
    if not sw.CUDA.built():
        assert reason == "strideweave was built without the CUDA toolkit"
    with pytest.raises(RuntimeError, match="CUDA: "):
        sw.CUDA(4)
    # The runtime comes first: the framework's own checks never run without it.
    with pytest.raises(RuntimeError):
        sw.CUDA(-1)
    with pytest.raises(RuntimeError):
        sw.CUDA(4, dtype=sw.DType.Float64)


def test_issue23_an_absent_device_index_is_runtime_error():
    with pytest.raises(RuntimeError):
        sw.CUDA(4, device=sw.CUDA.device_count())
    with pytest.raises(RuntimeError):
        sw.CUDA(4, device=-1)


def test_issue23_arguments_are_type_checked():
    with pytest.raises(TypeError):
        sw.CUDA(4, device="0")
    with pytest.raises(TypeError):
        sw.CUDA(4, mutable=1)
    with pytest.raises(TypeError):
        sw.CUDA(4, empty=None)


def test_backend_capabilities_sealed_set_is_its_patterns_plans():
    caps = sw.capabilities_for_carrier_class(sw.CUDA)
    assert caps
    add = sw.resolve_operation_plan("add", sw.DType.Float32, sw.DType.Float32)
    assert sw.supports_operation_plan(sw.CUDA, add)
    int_add = sw.resolve_operation_plan("add", sw.DType.Int32, sw.DType.Int32)
    assert not sw.supports_operation_plan(sw.CUDA, int_add)
    with pytest.raises(TypeError):
        sw.register_operation_capabilities(sw.CUDA, [sw.OperationCapability.from_plan(int_add)])
    assert sw.capabilities_for_carrier_class(sw.CUDA) == caps


def test_backend_capability_descriptor_docs_table_is_rendered():
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "cuda.md").read_text()
    begin = "<!-- BEGIN CAPABILITIES: CUDA -->\n"
    table = doc.split(begin, 1)[1].split("<!-- END CAPABILITIES: CUDA -->", 1)[0]
    assert table == sw.render_capability_table(sw.CUDA)


@device
def test_issue23_values_move_to_the_device_and_back():
    host = sw.tensor([[1.5, -2.0, 0.0], [3.25, 7.0, -0.5]])
    on_device = sw.move(host, sw.CUDA(6))
    assert type(on_device.carrier) is sw.CUDA
    assert on_device.carrier.placement == sw.Placement.device(0)
    assert on_device.tolist() == host.tolist()
    assert sw.move(on_device, sw.CPU(6)).tolist() == host.tolist()


@device
def test_issue23_elementwise_on_the_device_matches_cpu():
    a = sw.tensor([[1.5, -2.0, 0.0], [3.25, 7.0, -0.5]])
    b = sw.tensor([0.5, 2.0, -1.0])
    da, db = sw.move(a, sw.CUDA(6)), sw.move(b, sw.CUDA(3))
    for f in (sw.add, sw.sub, sw.maximum, sw.lt):
        assert f(da, db).tolist() == f(a, b).tolist()
    for f in (sw.relu, sw.neg, sw.sqrt, sw.round):
        assert f(da).tolist() == f(a).tolist()


def test_backend_capabilities_every_registered_operation_name_has_a_cuda_plan():
    # "Cover the complete Metal dispatch-name set", with CUDA in Metal's role.
    names = {c.operation for c in sw.capabilities_for_carrier_class(sw.CUDA)}
    registered = {spec.name for spec in sw.registered_operations()}
    assert registered and registered <= names


def test_issue23_scalar_first_mul_is_a_cuda_plan():
    # 2.5 * x: the definition's invocation lists the weak scalar first.
    tensor_scalar = sw.resolve_operation_plan("mul", sw.DType.Float32, 2.5)
    assert sw.supports_operation_plan(sw.CUDA, tensor_scalar)
    names = [(c.operation, [o.role for o in c.operands]) for c in sw.capabilities_for_carrier_class(sw.CUDA)]
    assert ("mul", [sw.OperandRole.WEAK_SCALAR, sw.OperandRole.TENSOR]) in names
