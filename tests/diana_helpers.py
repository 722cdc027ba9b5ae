"""Helpers for the DIANA / channel-split tests (``test_diana.py``, ``test_split.py``).

Latencies on ``platforms/diana.yaml`` are cycles at F = 260 MHz: :func:`cyc` turns a hand-computed cycle count
into the expected seconds. :func:`conv` builds a convolution op with the geometry the DIANA models read.
"""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import strategies as st

from hetsim.costs import CostModel
from hetsim.platform import Platform, load_platform
from hetsim.workload import GemmView, Op, Workload

ROOT = Path(__file__).resolve().parent.parent
DIANA_YAML = ROOT / "platforms" / "diana.yaml"
WORKLOADS = ROOT / "workloads"
ODIMO = ROOT / "tests" / "data" / "odimo"  # ODiMO checkpoints, provenance in its README.md
F = 260e6  # DIANA clock, Hz


def cyc(cycles: float):
    """``pytest.approx`` of ``cycles`` at 260 MHz, in seconds."""
    return pytest.approx(cycles / F, rel=1e-12, abs=1e-18)


def diana() -> Platform:
    return load_platform(DIANA_YAML)


WEIGHT_MEMORY_B = 64 * 1024  # DIANA's digital weight memory (platforms/diana.yaml weight_memory_kib: 64)


def diana_unchecked() -> Platform:
    """``platforms/diana.yaml`` with ``weight_memory_kib: null`` on the digital accelerator: no weight-memory check
    (ODiMO's own model, which prices no weight tiling)."""
    data = diana().model_dump(mode="json", exclude={"devices": {"__all__": {"name"}}})
    data["devices"]["digital"]["weight_memory_kib"] = None
    return Platform.model_validate(data)


def conv(name: str, c_in: int, c_out: int, k: int, o: int, groups: int = 1, index: int = 0,
         op_type: str = "Conv") -> Op:
    """A ``k x k`` convolution ``c_in -> c_out`` with a ``o x o`` output (batch 1)."""
    g = GemmView(m_v=c_out // groups, n_v=(c_in // groups) * k * k, n_mvm=o * o, groups=groups, kernel=(k, k),
                 out_spatial=(o, o), stride=(1, 1))
    return Op(name=name, op_type=op_type, index=index, input_shapes=((1, c_in, o, o),),
              output_shapes=((1, c_out, o, o),), n_in=c_in * o * o, n_out=c_out * o * o,
              weight_shape=(c_out, c_in // groups, k, k), weight_elements=c_out * (c_in // groups) * k * k,
              macs=g.macs, bits=8, in_bytes=c_in * o * o, out_bytes=c_out * o * o, gemm=g)


def fc(name: str, c_in: int, c_out: int, index: int = 0) -> Op:
    """A Gemm ``c_in -> c_out`` on one input vector (an FC layer: a 1x1 conv with o_x = o_y = 1 for DIANA)."""
    g = GemmView(m_v=c_out, n_v=c_in, n_mvm=1)
    return Op(name=name, op_type="Gemm", index=index, input_shapes=((1, c_in),), output_shapes=((1, c_out),),
              n_in=c_in, n_out=c_out, weight_shape=(c_out, c_in), weight_elements=c_out * c_in, macs=g.macs,
              bits=8, in_bytes=c_in, out_bytes=c_out, gemm=g)


def elementwise(name: str, n: int, index: int = 0, op_type: str = "Mul") -> Op:
    """A weightless host op of ``n`` elements (``Mul`` is not in diana.yaml's ``free_ops``)."""
    return Op(name=name, op_type=op_type, index=index, n_in=n, n_out=n, bits=8, in_bytes=n, out_bytes=n)


def dig_cycles(c_in: int, c_out: int, k: int, o: int, groups: int = 1) -> float:
    """L_dig written out independently of hetsim:
    ceil((C_out/groups)/16) * C_in * ceil(o_x/16) * o_y * f_x * f_y + o_x*o_y*(C_out + C_in)/8; 0 if C_out = 0."""
    if c_out == 0:
        return 0.0
    return math.ceil(c_out / groups / 16) * c_in * math.ceil(o / 16) * o * k * k + o * o * (c_out + c_in) / 8


def ana_cycles(c_in: int, c_out: int, k: int, o_x: int, o_y: int | None = None) -> float:
    """L_ana written out independently of hetsim; 0 if C_out = 0."""
    o_y = o_x if o_y is None else o_y
    if c_out == 0:
        return 0.0
    ox_u = 1
    for u in (1, 2, 4, 8):
        if u * c_out <= 512 and (u + k - 1) * max(64, c_in) * k <= 1152:
            ox_u = u
    return 8 * c_in * k * k + math.ceil(c_out / 512) * math.ceil(c_in / 128) * (o_x * o_y / ox_u) * 70e-9 * F


def odimo_energy_mj_cycles(l_a: float, l_d: float) -> float:
    """The ODiMO code's per-layer energy in mW x cycles: 42.39*min + 28.74*(L_a - min) + 24.96*(L_d - min)."""
    m = min(l_a, l_d)
    return 42.39 * m + 28.74 * (l_a - m) + 24.96 * (l_d - m)


def joules(mw_cycles: float) -> float:
    """mW x cycles at 260 MHz -> J."""
    return mw_cycles * 1e-3 / F


# ------------------------------------------------------------------------------------ random split setups


def split_platform(host_cores: int = 1) -> Platform:
    """host (1 GHz, 1 element/cycle: ``n ns`` per elementwise op) + two digital accelerators + the AIMC, all
    sharing one memory; DIANA's clocks and powers."""
    base = diana().model_dump(mode="json", exclude={"devices": {"__all__": {"name"}}})
    devices = base["devices"]
    devices["host"] = {"kind": "cpu", "cores": host_cores, "clock_ghz": 1, "macs_per_cycle": {8: 1},
                       "elementwise_per_cycle": 1, "mem_bandwidth_gb_s": 1e12, "active_w": 0.002, "idle_w": 0.001}
    devices["digital2"] = dict(devices["digital"])
    base["memories"]["l1"]["shared_by"] = ["host", "digital", "digital2", "aimc"]
    return Platform.model_validate(base)


@st.composite
def random_split_setup(draw):
    """A random DAG of elementwise host ops and convolutions (dense, depthwise, grouped) on
    :func:`split_platform`, each convolution on one accelerator or split over 1-3 of them (random channel
    partitions, non-contiguous, whole groups for grouped convs), with per-device orders from one random
    topological order. Returns ``costs``, ``assignment``, ``splits``, ``order``."""
    n = draw(st.integers(6, 25))
    ops = []
    for i in range(n):
        name = f"o{i:02d}"
        kind = draw(st.sampled_from(["host", "dense", "dense", "depthwise", "grouped"]))
        o = draw(st.integers(1, 9))
        k = draw(st.sampled_from([1, 3]))
        if kind == "host":
            ops.append(elementwise(name, draw(st.integers(1, 3000)), index=i))
        elif kind == "dense":
            ops.append(conv(name, draw(st.integers(1, 80)), draw(st.integers(1, 40)), k, o, index=i))
        elif kind == "depthwise":
            c = draw(st.integers(1, 24))
            ops.append(conv(name, c, c, k, o, groups=c, index=i))
        else:
            g, per_in, per_out = draw(st.integers(2, 4)), draw(st.integers(1, 4)), draw(st.integers(2, 4))
            ops.append(conv(name, g * per_in, g * per_out, k, o, groups=g, index=i))
    edges = []
    for j in range(1, n):
        preds = draw(st.sets(st.integers(0, j - 1), max_size=min(j, 3)))
        edges += [(ops[i].name, ops[j].name, draw(st.integers(1, 400))) for i in sorted(preds)]
    wl = Workload.from_ops("random-split", ops, edges)
    costs = CostModel(wl, split_platform(host_cores=draw(st.integers(1, 2))))
    accs = ["digital", "digital2", "aimc"]
    assignment, splits = {}, {}
    for op in ops:
        if op.gemm is None:
            assignment[op.name] = "host"
            continue
        capable = [d for d in accs if costs.supported(op.name, d)]
        devs = draw(st.lists(st.sampled_from(capable), min_size=1, max_size=len(capable), unique=True))
        g = op.gemm
        units = list(range(g.groups)) if g.groups > 1 else list(range(g.c_out))  # whole groups / channels
        width = g.m_v if g.groups > 1 else 1
        units = draw(st.permutations(units))
        if len(devs) > len(units):
            devs = devs[: len(units)]
        cuts = sorted(draw(st.lists(st.integers(1, max(1, len(units) - 1)), min_size=len(devs) - 1,
                                    max_size=len(devs) - 1, unique=True))) if len(devs) > 1 else []
        bounds = [0, *cuts, len(units)]
        parts = {}
        for d, a, b in zip(devs, bounds, bounds[1:], strict=False):
            parts[d] = sorted(c for u in units[a:b] for c in range(u * width, (u + 1) * width))
        parts = {d: ch for d, ch in parts.items() if ch}
        assignment[op.name] = max(parts, key=lambda d: len(parts[d]))
        if len(parts) > 1 or draw(st.booleans()):
            splits[op.name] = parts
    prio = {o.name: draw(st.integers(0, 1000)) for o in ops}
    topo = list(nx.lexicographical_topological_sort(wl.graph, key=lambda v: (prio[v], v)))
    order = {d: [v for v in topo if d in (splits[v] if v in splits else [assignment[v]])]
             for d in ["host", *accs]}
    return {"costs": costs, "assignment": assignment, "splits": splits, "order": order}
