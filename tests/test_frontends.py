"""Front ends (hetsim/workload/frontends.py): one registry for every model format; a throw-away front end added
from outside hetsim reaches the Python API, the command line and sweeps without editing hetsim."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hetsim
from hetsim.errors import InputError, WorkloadError
from hetsim.workload import frontends as fe
from hetsim.workload.kinds import DAG, SNN, kind_name, kinds_of

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
EFR = ROOT / "platforms" / "efr32mg24.yaml"

def _plugin() -> str:
    """docs/extending.md's front end (a ".chain" text file "ops seed", on hetsim's synthetic chain), as written."""
    doc = (ROOT / "docs" / "extending.md").read_text()
    return re.search(r"## 7\. A front end.*?```python\n(.*?)```", doc, re.S).group(1)


def test_builtin_front_ends_and_kinds():
    names = fe.frontends()
    assert {"onnx", "torch", "snn-spec", "nir"} <= set(names)
    assert fe.frontend_for("x.ONNX").name == "onnx" and fe.frontend_for("n.yml").name == "snn-spec"
    assert fe.frontend_for("g.nir").kind == SNN and fe.frontend_for("m.pt2").kind == DAG
    assert set(fe.suffixes(SNN)) == {".yaml", ".yml", ".nir"}
    # the old spelling of the tensor-operator kind is still read (plug-in device kinds, mappers)
    assert kind_name("onnx") == DAG and kinds_of(type("Old", (), {"workloads": frozenset({"onnx"})})) == {DAG}
    assert hetsim.load_workload(ROOT / "workloads" / "resnet20_cifar10.onnx").kind == DAG
    with pytest.raises(WorkloadError, match=r"no front end reads \.txt; hetsim reads .*\.onnx"):
        fe.frontend_for("model.txt")


def test_options_a_front_end_does_not_take_are_one_line_errors():
    with pytest.raises(InputError, match=r"^spikes gives the input raster of a NIR graph .*, not of an ONNX model$"):
        hetsim.load_workload(ROOT / "workloads" / "resnet20_cifar10.onnx", spikes="x.npz")
    with pytest.raises(InputError, match=r"input_shape fixes .* not of an SNN spec"):
        hetsim.load_workload(ROOT / "workloads" / "snn" / "braille64.yaml", input_shape={"x": [1]})


def test_a_front_end_registered_at_run_time(tmp_path):
    from hetsim.workload.synthetic import chain

    path = tmp_path / "six.chain"
    path.write_text("6 3")
    f = fe.register_frontend(fe.FrontEnd("chain-test", DAG, (".chain",), lambda p: chain(6, seed=3),
                                         description="a chain file"))
    try:
        with pytest.raises(ValueError, match="already read by 'chain-test'"):
            fe.register_frontend(fe.FrontEnd("other", DAG, (".chain",), lambda p: None))
        r = hetsim.run(PUMA, path, mapper="heft")
        assert r.workload.kind == DAG and len(r.workload) == 6 and r.makespan_s > 0
        assert fe.frontend_for(path) is f
    finally:
        fe.unregister_frontend("chain-test")
    with pytest.raises(WorkloadError, match="no front end reads .chain"):
        hetsim.load_workload(path)


def test_a_plugin_front_end_on_the_command_line_and_in_a_sweep(tmp_path):
    (tmp_path / "chain_frontend.py").write_text(_plugin())
    (tmp_path / "ten.chain").write_text("10 1")
    (tmp_path / "sweep.yaml").write_text(f"name: chains\nworkloads: [ten.chain]\nplatforms: [{PUMA}]\n"
                                         "mappers: [heft]\noutput: out.csv\n")
    env = {k: v for k, v in os.environ.items() if k != "HETSIM_PLUGINS"} | {"HETSIM_PLUGINS": "chain_frontend"}

    def hetsim_cli(*args, plugins=True):
        return subprocess.run([sys.executable, "-m", "hetsim", *args], cwd=tmp_path, capture_output=True, text=True,
                              env=env if plugins else {k: v for k, v in env.items() if k != "HETSIM_PLUGINS"},
                              timeout=300)

    out = hetsim_cli("run", str(PUMA), "ten.chain", "--mapper", "heft", "--json")
    assert out.returncode == 0, out.stderr
    assert '"workload": "ten"' in out.stdout and '"operators": 10' in out.stdout
    swept = hetsim_cli("sweep", "sweep.yaml", "--workers", "1")
    assert swept.returncode == 0, swept.stderr + swept.stdout
    table = (tmp_path / "out.csv").read_text().splitlines()
    assert len(table) == 2 and "ten.chain" in table[1] and ",10," in table[1]
    missing = hetsim_cli("run", str(PUMA), "ten.chain", plugins=False)
    assert missing.returncode == 2 and "no front end reads .chain" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_sweep_over_a_nir_graph_matches_its_spec(tmp_path):
    """Sweeps take NIR graphs (``spikes:`` names each one's input raster): the same network as its spec gives
    the same row (the spec's recorded hidden activity is what the NIR graph's replay computes)."""
    from hetsim.dse import load_sweep, run_sweep
    from hetsim.snn.network import load_snn
    from hetsim.snn.nir import save_nir

    spec = ROOT / "workloads" / "snn" / "braille64.yaml"
    save_nir(load_snn(spec), tmp_path / "b64.nir")
    raster = ROOT / "workloads" / "snn" / "braille7_12-64-7_T100.npz"
    body = f"platforms: [{EFR}]\nmappers: [all-m33]\nmode: blocking\n"
    (tmp_path / "nir.yaml").write_text(f"name: nir\nworkloads: [b64.nir]\nspikes: {{b64.nir: {raster}}}\n{body}"
                                       "output: nir.csv\n")
    (tmp_path / "spec.yaml").write_text(f"name: spec\nworkloads: [{spec}]\n{body}output: spec.csv\n")
    import pandas as pd

    rows = {}
    for name in ("nir", "spec"):
        out, ran, _ = run_sweep(load_sweep(tmp_path / f"{name}.yaml"), workers=1)
        rows[name] = pd.read_csv(out).iloc[0]
        assert ran == 1 and pd.isna(rows[name]["error"]), rows[name]["error"]
    assert rows["nir"]["latency_ms"] == pytest.approx(rows["spec"]["latency_ms"], rel=1e-9)
    assert rows["nir"]["engines"] == rows["spec"]["engines"]
    (tmp_path / "bad.yaml").write_text(f"name: bad\nworkloads: [b64.nir]\n{body}")
    with pytest.raises(InputError, match=r"b64.nir is a NIR graph .*: give its input raster under spikes"):
        load_sweep(tmp_path / "bad.yaml")
