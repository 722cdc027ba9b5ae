"""Seeded synthetic operator DAGs for benchmarks and property tests."""

from __future__ import annotations

import networkx as nx
import numpy as np

from hetsim.workload.op import GemmView, Op, Workload


def layered_dag(n_ops: int, width: int = 8, p_conv: float = 0.3, fan_in: int = 2, seed: int = 0) -> Workload:
    """A random CNN-like DAG: ``n_ops`` ops in layers of up to ``width``, each with 1..``fan_in`` inputs
    from the previous two layers.

    A fraction ``p_conv`` of the ops are 3x3 convolutions with a GEMM view (C_in, C_out in 16..256,
    spatial size 7..56, int8), the rest element-wise ``Add``/``Relu`` ops on the same tensors. Same seed,
    same workload.

    Args:
        n_ops: number of ops (>= 1).
        width: maximum ops per layer.
        p_conv: probability that an op is a Conv.
        fan_in: maximum number of producers per op.
        seed: NumPy random seed.
    """
    rng = np.random.default_rng(seed)
    # every random draw up front (vectorised): sizes, kinds, layer widths, fan-ins, producer picks
    hw = rng.choice([7, 14, 28, 56], size=n_ops)
    c_in = rng.choice([16, 32, 64, 128, 256], size=n_ops)
    c_out = rng.choice([16, 32, 64, 128, 256], size=n_ops)
    is_conv = rng.random(n_ops) < p_conv
    is_add = rng.random(n_ops) < 0.5
    k_in = rng.integers(1, fan_in + 1, size=n_ops)
    picks = rng.random((n_ops, fan_in))
    widths = rng.integers(1, width + 1, size=n_ops)
    g = nx.DiGraph()
    layer_of = np.empty(n_ops, dtype=np.int64)
    bounds = []  # [first op, last op + 1) of each layer
    i = 0
    for w in widths:
        if i >= n_ops:
            break
        j = min(i + int(w), n_ops)
        layer_of[i:j] = len(bounds)
        bounds.append((i, j))
        i = j
    for i in range(n_ops):
        name = f"op{i}"
        op = _op(name, i, int(hw[i]), int(c_in[i]), int(c_out[i]), bool(is_conv[i]), bool(is_add[i]))
        g.add_node(name, op=op)
        lay = int(layer_of[i])
        if lay == 0:
            continue
        lo = bounds[max(lay - 2, 0)][0]
        hi = bounds[lay - 1][1]  # producers: the previous two layers
        for u in sorted({lo + int(p * (hi - lo)) for p in picks[i, : int(k_in[i])]}):
            n_out = g.nodes[f"op{u}"]["op"].n_out
            g.add_edge(f"op{u}", name, tensors=[f"op{u}:out"], elements=n_out, bytes=n_out, param=False)
    return Workload(name=f"layered_dag_{n_ops}_s{seed}", graph=g, meta={"synthetic": True, "seed": seed})


def _op(name: str, i: int, h: int, ci: int, co: int, conv: bool, add: bool) -> Op:
    """A 3x3 int8 convolution ``ci -> co`` channels on ``h x h`` (with its GEMM view), or an element-wise
    ``Add``/``Relu`` on ``co x h x h``."""
    if conv:
        gemm = GemmView(m_v=co, n_v=ci * 9, n_mvm=h * h)
        return Op(name=name, op_type="Conv", index=i, input_shapes=((1, ci, h, h),),
                  output_shapes=((1, co, h, h),), n_in=ci * h * h, n_out=co * h * h,
                  weight_shape=(co, ci, 3, 3), weight_elements=co * ci * 9, macs=gemm.macs,
                  bits=8, in_bytes=ci * h * h, out_bytes=co * h * h, gemm=gemm)
    n = co * h * h
    return Op(name=name, op_type="Add" if add else "Relu", index=i, input_shapes=((1, co, h, h),),
              output_shapes=((1, co, h, h),), n_in=n, n_out=n, bits=8, in_bytes=n, out_bytes=n)


def _draws(rng, n: int):
    return (rng.choice([7, 14, 28, 56], size=n), rng.choice([16, 32, 64, 128, 256], size=n),
            rng.choice([16, 32, 64, 128, 256], size=n))


def chain(n_ops: int, p_conv: float = 0.3, seed: int = 0) -> Workload:
    """A chain of ``n_ops`` ops (op ``i`` feeds op ``i + 1`` only), drawn as in :func:`layered_dag`: a
    fraction ``p_conv`` of 3x3 int8 convolutions, the rest ``Add``/``Relu``. Same seed, same workload.

    Raises:
        ValueError: ``n_ops < 1``.
    """
    if n_ops < 1:
        raise ValueError(f"chain: n_ops must be >= 1, got {n_ops}")
    rng = np.random.default_rng(seed)
    hw, c_in, c_out = _draws(rng, n_ops)
    is_conv = rng.random(n_ops) < p_conv
    is_add = rng.random(n_ops) < 0.5
    g = nx.DiGraph()
    for i in range(n_ops):
        op = _op(f"op{i}", i, int(hw[i]), int(c_in[i]), int(c_out[i]), bool(is_conv[i]), bool(is_add[i]))
        g.add_node(op.name, op=op)
        if i:
            n_out = g.nodes[f"op{i - 1}"]["op"].n_out
            g.add_edge(f"op{i - 1}", op.name, tensors=[f"op{i - 1}:out"], elements=n_out, bytes=n_out, param=False)
    return Workload(name=f"chain_{n_ops}_s{seed}", graph=g, meta={"synthetic": True, "seed": seed})


def fan_out(branches: int, p_conv: float = 0.5, seed: int = 0) -> Workload:
    """One source op feeding ``branches`` parallel single-op branches that one ``Add`` joins
    (``branches + 2`` ops), the branch ops drawn as in :func:`layered_dag`. Same seed, same workload.

    Raises:
        ValueError: ``branches < 1``.
    """
    if branches < 1:
        raise ValueError(f"fan_out: branches must be >= 1, got {branches}")
    rng = np.random.default_rng(seed)
    hw, c_in, c_out = _draws(rng, branches)
    is_conv = rng.random(branches) < p_conv
    g = nx.DiGraph()
    src = _op("src", 0, 14, 64, 64, False, False)
    g.add_node("src", op=src)
    sink = _op("sink", branches + 1, 14, 64, 64, False, True)
    for i in range(branches):
        op = _op(f"b{i}", i + 1, int(hw[i]), int(c_in[i]), int(c_out[i]), bool(is_conv[i]), False)
        g.add_node(op.name, op=op)
        g.add_edge("src", op.name, tensors=["src:out"], elements=src.n_out, bytes=src.n_out, param=False)
    g.add_node("sink", op=sink)
    for i in range(branches):
        n_out = g.nodes[f"b{i}"]["op"].n_out
        g.add_edge(f"b{i}", "sink", tensors=[f"b{i}:out"], elements=n_out, bytes=n_out, param=False)
    return Workload(name=f"fan_out_{branches}_s{seed}", graph=g, meta={"synthetic": True, "seed": seed})
