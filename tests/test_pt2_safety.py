"""A saved torch.export program (.pt2) never runs the code it carries (hetsim/workload/pt2_archive.py), on every
path that loads a model; every malformed .pt2 is one line and exit code 2; a PyTorch checkpoint read by
dnas-export is unpickled with torch's restricted unpickler only.

Each crafted archive carries a payload that creates a marker file when it runs: on torch 2.13's own
``torch.export.load`` every one of them creates it (the pickled example inputs through the fallback to
``weights_only=False``, a ``use_pickle`` weight, a shape expression through ``sympy.sympify``, the input guards
through ``exec``); here the marker must never appear.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest
import yaml
from fuzz_helpers import ROOT, problems, run_cli

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")  # the torch.export-based ONNX exporter (hetsim[torch])

PUMA = str(ROOT / "platforms" / "puma.yaml")
DIANA = str(ROOT / "platforms" / "diana.yaml")


class _Payload:
    """Unpickling this runs ``touch MARKER``."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def _tsave(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _rewrite(src: Path, dst: Path, change) -> Path:
    """``src`` with each member's bytes replaced by ``change(name, data)`` (``None`` drops the member)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(buf, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info.filename))
            if data is not None:
                zout.writestr(info.filename, data)
    dst.write_bytes(buf.getvalue())
    return dst


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """A valid static program, a valid program with a dynamic batch dimension, and the crafted ones."""
    d = tmp_path_factory.mktemp("pt2")
    nn = torch.nn
    small = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 10)).eval()
    torch.export.save(torch.export.export(small, (torch.zeros(1, 3, 8, 8),)), d / "small.pt2")

    class Double(nn.Module):
        def forward(self, x):
            return (x * 2).sum(1)

    ep = torch.export.export(Double(), (torch.zeros(4, 3),), dynamic_shapes=({0: torch.export.Dim("b")},))
    torch.export.save(ep, d / "dyn.pt2")
    marker = d / "MARKER"
    touch = f"__import__('os').system('touch {marker}')"
    symbol = b"Symbol('s77', positive=True, integer=True)"
    assert symbol in zipfile.ZipFile(d / "dyn.pt2").read("dyn/models/model.json")

    def weight(name, data):
        if name.endswith("model_weights_config.json"):
            cfg = json.loads(data)
            cfg["config"]["0.weight"]["use_pickle"] = True
            return json.dumps(cfg).encode()
        return _tsave(_Payload(marker)) if name.endswith("weights/weight_0") else data

    def guards(name, data):
        if not name.endswith("models/model.json"):
            return data
        doc = json.loads(data)
        doc["guards_code"] = [f"{touch} == 0"]
        return json.dumps(doc).encode()

    crafted = {
        "example inputs": _rewrite(d / "small.pt2", d / "inputs.pt2", lambda n, b: _tsave(((_Payload(marker),), {}))
                                   if n.endswith("sample_inputs/model.pt") else b),
        "a pickled weight": _rewrite(d / "small.pt2", d / "weight.pt2", weight),
        "a shape expression": _rewrite(d / "dyn.pt2", d / "sympy.pt2", lambda n, b: b.replace(
            symbol, f"{touch} or ".encode() + symbol) if n.endswith("model.json") else b),
        "input guards": _rewrite(d / "dyn.pt2", d / "guards.pt2", guards),
    }
    return d, marker, crafted


def _assert_clean(o, marker: Path, allow_exit_1: bool = False) -> None:
    assert not marker.exists(), "the payload ran"
    if allow_exit_1 and o.code == 1 and "points failed" in o.stdout:
        return
    assert not problems(o, True), (o.code, o.stderr[-2000:])


def _commands(d: Path, model: Path) -> dict[str, list[str]]:
    scen = d / f"scen-{model.stem}.yaml"
    scen.write_text(yaml.safe_dump({"name": "s", "seed": 1, "streams": {"a": {
        "model": str(model), "arrival": {"process": "periodic", "period_s": 0.1}, "count": 2}}}))
    sweep = d / f"sweep-{model.stem}.yaml"
    sweep.write_text(yaml.safe_dump({"name": "p", "workloads": [str(model)], "platforms": [PUMA], "mappers": ["heft"],
                                     "output": str(d / f"sweep-{model.stem}.csv")}))
    return {
        "run": ["run", PUMA, str(model), "--mapper", "heft"],
        "inspect": ["inspect", str(model)],
        "map": ["map", PUMA, str(model), "--mapper", "heft", "-o", str(d / f"s-{model.stem}.json"), "--force"],
        "validate": ["validate", PUMA, str(model), "--mapper", "heft"],
        "scenario stream": ["run", PUMA, str(scen)],
        "sweep": ["sweep", str(sweep), "--workers", "1"],
    }


@pytest.mark.parametrize("command", ["run", "inspect", "map", "validate", "scenario stream", "sweep"])
def test_no_payload_runs_on_any_path(archives, command):
    d, marker, crafted = archives
    for what, path in crafted.items():
        o = run_cli(_commands(d, path)[command])
        _assert_clean(o, marker, allow_exit_1=command == "sweep")
        text = o.stderr + o.stdout
        if what != "input guards":  # the guards are dropped unread: the program itself loads
            assert "hetsim can load safely" in text, (what, text[-1500:])


def test_the_refusals_say_why(archives):
    d, marker, crafted = archives
    expect = {"example inputs": "data/sample_inputs/model.pt is not a pickle that torch.load(weights_only=True) "
                                "accepts (it names posix.system",
              "a pickled weight": "data/weights/weight_0 is not a pickle that",
              "a shape expression": "the name '__import__'"}
    for what, needle in expect.items():
        o = run_cli(["inspect", str(crafted[what])])
        _assert_clean(o, marker)
        assert o.code == 2 and needle in o.stderr, (what, o.stderr)


def test_torch_cannot_fall_back_even_past_the_archive_check(archives, monkeypatch):
    """The second line of defence: with the pickle check switched off, torch's own fallback to
    ``weights_only=False`` is still held to ``weights_only`` (``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` during the load)."""
    import hetsim.workload.pt2_archive as pt2

    d, marker, crafted = archives
    monkeypatch.setattr(pt2, "_check_weights_only", lambda *a: None)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # a user's setting does not reopen it
    for what in ("example inputs", "a pickled weight"):
        o = run_cli(["inspect", str(crafted[what])])
        _assert_clean(o, marker)
        assert o.code == 2 and "is not a saved torch.export program" in o.stderr, (what, o.stderr)
    assert os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] == "1" and "TORCH_FORCE_WEIGHTS_ONLY_LOAD" not in os.environ


def test_a_valid_program_still_loads_and_the_guards_are_dropped(archives):
    d, marker, crafted = archives
    o = run_cli(["inspect", str(d / "small.pt2")])
    assert o.code == 0 and "Conv 1" in o.stdout, o.stderr
    o = run_cli(["inspect", str(crafted["input guards"]), "--input-shape", "x=2,3"])
    assert not marker.exists(), "the payload ran"
    assert o.code == 0 and not problems(o, False) and "Mul 1, ReduceSum 1" in o.stdout, o.stderr


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _malformed(d: Path) -> dict[str, tuple[bytes, str]]:
    """name -> (the file's bytes, a phrase of the one-line refusal)."""
    good = (d / "small.pt2").read_bytes()
    onnx_bytes = (ROOT / "workloads" / "paper" / "yolov5n_int8_ort.onnx").read_bytes()[:4096]
    state = io.BytesIO()
    torch.save(torch.nn.Linear(2, 2).state_dict(), state)
    aoti = _zip({"m/archive_format": b"pt2", "m/archive_version": b"0", "m/models/model.json": b"{}",
                 "m/data/aotinductor/model/model.so": b"\x7fELF"})
    opaque = _rewrite(d / "small.pt2", d / "opaque.pt2", lambda n, b: json.dumps({"config": {"c": {
        "path_name": "opaque_obj_0", "is_param": False, "use_pickle": True}}}).encode()
        if n.endswith("constants_config.json") else b).read_bytes()
    return {
        "empty": (b"", "is empty"),
        "random bytes": (bytes(range(256)) * 8, "not a zip archive"),
        "an ONNX model renamed": (onnx_bytes, "it looks like an ONNX model"),
        "truncated": (good[: len(good) // 2], "damaged zip archive"),
        "an empty zip": (_zip({}), "empty zip archive"),
        "a zip bomb": (_zip({"m/archive_format": b"pt2", "m/big": b"\0" * (4 << 20)}), "zip bomb"),
        "a plain state dict": (state.getvalue(), "is a torch.save file"),
        "the torch 2.7 format": (_zip({"version": b"1", "serialized_exported_program.json": b"{}"}),
                                 "the format of torch 2.7"),
        "compiled code": (aoti, "compiled AOTInductor code"),
        "a pickled object constant": (opaque, "is a pickled Python object"),
        "a program that is not JSON": (_rewrite(d / "small.pt2", d / "nojson.pt2", lambda n, b: b[:-1] + b"!"
                                                if n.endswith("model.json") else b).read_bytes(),
                                       "models/model.json is not JSON"),
        "a one-byte flip": (good.replace(b'{"graph_module":', b'{"graph_module"!', 1), "damaged zip archive"),
        "no example inputs": (_rewrite(d / "small.pt2", d / "noinputs.pt2", lambda n, b: None
                                       if "sample_inputs" in n else b).read_bytes(),
                              "it has no data/sample_inputs/model.pt"),
    }


@pytest.mark.parametrize("case", ["empty", "random bytes", "an ONNX model renamed", "truncated", "an empty zip",
                                  "a zip bomb", "a plain state dict", "the torch 2.7 format", "compiled code",
                                  "a pickled object constant", "a program that is not JSON", "a one-byte flip",
                                  "no example inputs"])
def test_a_malformed_pt2_is_one_line(archives, case, monkeypatch):
    import hetsim.workload.pt2_archive as pt2

    monkeypatch.setattr(pt2, "PT2_MAX_UNPACKED_BYTES", 1 << 20)  # the bomb: 4 MiB of zeros in a 4 kB zip
    d, marker, _ = archives
    data, needle = _malformed(d)[case]
    p = d / "bad.pt2"
    p.write_bytes(data)
    for argv in (["inspect", str(p)], ["run", PUMA, str(p), "--mapper", "heft"]):
        o = run_cli(argv)
        assert o.code == 2 and not problems(o, True), (case, o.code, o.stderr[-2000:])
        assert needle in o.stderr, (case, o.stderr)


def test_shape_expressions():
    from hetsim.workload.pt2_archive import check_sym_expr

    for ok in ("Symbol('s77', positive=True, integer=True)", "Mul(Integer(2), Symbol('s0', integer=True))",
               "FloorDiv(s0, 2) + Mod(s1, 3)", "Float('1.5', precision=53)", "s0 >= 2", "Max(1, s0)", "-oo"):
        assert check_sym_expr(ok) == "", ok
    for bad in ("__import__('os').system('x')", "s0.__class__", "(lambda: 1)()", "eval('1')", "Symbol('a b')",
                "[s0][0]", "(Max)(1)", "open", "Symbol('s0')('x')", "getattr(s0, 'x')", 7, "x" * 20_000):
        assert check_sym_expr(bad) != "", bad


def test_a_checkpoint_with_a_payload_is_refused_by_dnas_export(tmp_path):
    marker = tmp_path / "MARKER"
    ckpt = tmp_path / "search.pth"
    torch.save({"state_dict": {"layer.alpha": _Payload(marker)}}, ckpt)
    model = ROOT / "workloads" / "paper" / "resnet18_int8_ort.onnx"
    o = run_cli(["run", DIANA, str(model), "--mapper", "dnas-export", "--export", str(ckpt)])
    assert not marker.exists()
    assert o.code == 2 and not problems(o, True), o.stderr
    assert "readable PyTorch checkpoint" in o.stderr, o.stderr
