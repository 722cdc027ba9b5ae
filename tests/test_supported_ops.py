"""An accelerator that can run nothing is not silent: unknown op types in supported_ops are an error with the
closest ONNX name; a device that supports no op of the model gets a warning in the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetsim.cli import main
from hetsim.devices.optypes import ORT_CONTRIB_OP_TYPES, known_op_types
from hetsim.errors import PlatformError
from hetsim.platform import load_platform

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
R20 = ROOT / "workloads" / "resnet20_cifar10.onnx"


@pytest.mark.parametrize(("ops", "hint"), [("[Cnv, Gemm]", "'Cnv'.*did you mean 'Conv'"),
                                           ("[conv]", "'conv'.*did you mean 'Conv'"),
                                           ("[Conv, QGem]", "'QGem'.*did you mean 'QGemm'")])
def test_unknown_op_types_are_refused_with_the_closest_name(tmp_path, ops, hint):
    bad = tmp_path / "bad.yaml"
    bad.write_text(PUMA.read_text().replace("supported_ops: [Conv, Gemm, MatMul, QLinearConv, QGemm, QLinearMatMul, "
                                            "ConvInteger, MatMulInteger]", f"supported_ops: {ops}"))
    with pytest.raises(PlatformError, match=f"devices.cim.supported_ops: unknown op type {hint}"):
        load_platform(bad)
    with pytest.raises(PlatformError, match="unknown op type 'Cnv'"):  # an override is checked the same way
        load_platform(PUMA).with_overrides({"devices.cim.supported_ops": ["Cnv"]})


def test_every_shipped_platform_names_known_op_types():
    for p in sorted((ROOT / "platforms").glob("*.yaml")):
        load_platform(p)
    assert {"Conv", "LSTM", "QLinearConv", "QGemm", "QLinearAdd"} <= known_op_types()


def test_the_stored_contrib_op_types_are_onnxruntimes():
    st = pytest.importorskip("onnxruntime.capi.onnxruntime_pybind11_state")
    if not hasattr(st, "get_all_operator_schema"):
        pytest.skip("this onnxruntime build has no operator schemas")
    live = {s.name for s in st.get_all_operator_schema() if s.domain == "com.microsoft"}
    assert {"QGemm", "QLinearAdd", "QLinearConv"} <= live
    assert not ORT_CONTRIB_OP_TYPES - live  # every stored name is still one of the installed onnxruntime's


@pytest.mark.parametrize("ops", ["[LSTM]", "[]"])
def test_a_device_that_runs_no_op_of_the_model_is_named_in_the_report(tmp_path, capsys, ops):
    plat = tmp_path / "idle.yaml"
    plat.write_text(PUMA.read_text().replace("supported_ops: [Conv, Gemm, MatMul, QLinearConv, QGemm, QLinearMatMul, "
                                             "ConvInteger, MatMulInteger]", f"supported_ops: {ops}"))
    assert main(["run", str(plat), str(R20), "--mapper", "greedy", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    warn = [x for x in out.splitlines() if "warning" in x]
    assert len(warn) == 1 and "device cim (puma) can run no op of resnet20_cifar10" in warn[0]
    assert f"supported_ops [{ops.strip('[]')}]" in warn[0] and "Conv" in warn[0]
    assert "can run no op" in (tmp_path / "o" / "report.html").read_text()
    assert main(["run", str(PUMA), str(R20), "--mapper", "greedy"]) == 0
    assert "warning" not in capsys.readouterr().out  # the shipped platform's CIM runs the GEMM ops
