"""The shape of the code: no device kind is tested by name outside hetsim/devices/, and nothing refers to files the
project does not hold."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KIND_LITERAL = re.compile(r"[\"'](cpu|puma|link|diana-digital|diana-aimc|cortex-m|mvp|npu)[\"']")


def test_no_device_kind_literal_outside_the_devices_package():
    hits = []
    for p in sorted((ROOT / "hetsim").rglob("*.py")):
        if (ROOT / "hetsim" / "devices") in p.parents:
            continue
        for i, line in enumerate(p.read_text().splitlines(), start=1):
            if KIND_LITERAL.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == [], "\n".join(hits)


def test_the_snn_package_front_end_imports_no_pipeline():
    """hetsim/snn/ is the whole workload kind ``snn``: its front end (spec and NIR loading, LIF replay, reordering,
    synthetic networks, the unrolling into the operator DAG) imports none of the pipeline (costs, mappers, the
    simulator, the reports: no second world); its cost model, its run, its report, its sweep points and its
    registry entry (``activity_costs``, ``evaluate``, ``report``, ``sweep``, ``kind``) use the one pipeline's, and
    import-linter places each at its layer."""
    # (atomic file writes and text tables are shared helpers: hetsim.files, hetsim.report.table)
    banned = re.compile(r"^\s*(import|from)\s+(simpy|matplotlib|hetsim\.(costs|sim|mappers|pipeline|schedule|check|"
                        r"analysis|report\.(outputs|metrics|plots|html)))\b")
    run_side = {"activity_costs", "evaluate", "report", "sweep", "kind"}
    hits = []
    for p in sorted((ROOT / "hetsim" / "snn").glob("*.py")):
        if p.stem in run_side:
            continue
        for i, line in enumerate(p.read_text().splitlines(), start=1):
            if banned.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == [], "\n".join(hits)
    names = {p.stem for p in (ROOT / "hetsim" / "snn").glob("*.py")}
    # limits: the bounds checked before loading allocates (npz headers, synthetic sizes)
    assert names - run_side == {"__init__", "activity", "frontend", "limits", "network", "nir", "reorder",
                                "synthetic", "unroll"}, names


def test_no_device_class_tested_and_no_snn_configuration_named_outside_their_modules():
    """SNN engines and links are device capabilities (no ``isinstance`` on a device class outside
    hetsim/devices/), and SpikeDuet's Table I configuration names live with the SNN modules only (the SNN
    evaluation, the SNN mappers, and hetsim/codegen/, the firmware of an SNN mapping)."""
    isinstance_ = re.compile(r"isinstance\(.*\b(CortexM|Mvp|Link|Puma|Npu|Cpu)\b")
    config = re.compile(r"[\"'](all-m33|all-dense-mvp(-async)?|spikeduet-(blocking|async))[\"']")
    snn_modules = {ROOT / "hetsim" / "snn" / "evaluate.py", ROOT / "hetsim" / "mappers" / "spikeduet.py",
                   ROOT / "hetsim" / "mappers" / "__init__.py"}  # the mappers' registry names them as mappers
    hits = []
    for p in sorted((ROOT / "hetsim").rglob("*.py")):
        for i, line in enumerate(p.read_text().splitlines(), start=1):
            if (ROOT / "hetsim" / "devices") not in p.parents and isinstance_.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
            if p not in snn_modules and (ROOT / "hetsim" / "codegen") not in p.parents and config.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == [], "\n".join(hits)


def test_every_registered_kind_comes_from_a_devices_module():
    from hetsim.devices import DEVICE_KINDS

    assert set(DEVICE_KINDS) >= {"cpu", "puma", "diana-digital", "diana-aimc", "npu", "cortex-m", "mvp"}
    for name, cls in DEVICE_KINDS.items():
        assert cls.__module__.startswith("hetsim.devices."), (name, cls.__module__)


def test_nothing_refers_to_files_outside_the_repository():
    pattern = re.compile(r"\.\./shared|shared/(seeds|models|odimo|snn)|DESIGN\.md|seed 00[0-2]", re.I)
    hits = []
    for p in sorted(ROOT.rglob("*")):
        rel = p.relative_to(ROOT)
        if not p.is_file() or rel.parts[0].startswith(".") or "egg-info" in rel.parts[0] or "__pycache__" in rel.parts:
            continue
        if p.suffix not in (".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".sh"):
            continue
        if p == Path(__file__):
            continue
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), start=1):
            if pattern.search(line):
                hits.append(f"{rel}:{i}: {line.strip()[:120]}")
    assert hits == [], "\n".join(hits)
