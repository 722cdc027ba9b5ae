"""Golden metrics of the shipped workloads: a changed number must be seen and explained, never absorbed.

The file ``tests/data/golden_metrics.json`` records, for every shipped workload on both shipped platforms,
the operator count, MACs, the all-host makespan and the heuristic mappers' makespans and offload counts.
After a deliberate model change, regenerate it with::

    HETSIM_UPDATE_GOLDEN=1 pytest tests/test_golden.py

and explain the change in the commit message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hetsim.costs import CostModel
from hetsim.mappers import get_mapper
from hetsim.platform import load_platform
from hetsim.sim import simulate
from hetsim.workload import load_onnx

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden_metrics.json"
WORKLOADS = ["yolov5n.onnx", "mobilenet_v2.onnx", "yolov5n_int8_qdq.onnx", "resnet18_int8_qdq.onnx",
             "resnet50_int8_qdq.onnx", "mobilenet_v2_int8_qdq.onnx"]
PLATFORMS = ["puma.yaml", "puma-x86.yaml"]
MAPPERS = ["all-host", "greedy", "heft"]


def measure() -> dict:
    out = {}
    plats = {p: load_platform(ROOT / "platforms" / p) for p in PLATFORMS}
    for w in WORKLOADS:
        wl = load_onnx(ROOT / "workloads" / w)
        for pname, plat in plats.items():
            costs = CostModel(wl, plat)
            entry = {"operators": len(wl), "macs": wl.summary()["macs"]}
            for m in MAPPERS:
                s = get_mapper(m).map(costs)
                r = simulate(costs, s)
                assert r.makespan_s == s.makespan_s
                entry[m] = {"makespan_s": r.makespan_s,
                            "offloaded": sum(1 for d in s.assignment.values() if d != costs.host)}
            out[f"{w} @ {pname}"] = entry
    return out


def test_golden_metrics():
    got = measure()
    if os.environ.get("HETSIM_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.skip("golden metrics rewritten")
    want = json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(want)
    for key, entry in want.items():
        assert got[key]["operators"] == entry["operators"], key
        assert got[key]["macs"] == entry["macs"], key
        for m in MAPPERS:
            assert got[key][m]["offloaded"] == entry[m]["offloaded"], (key, m)
            assert got[key][m]["makespan_s"] == pytest.approx(entry[m]["makespan_s"], rel=1e-9), (key, m)
