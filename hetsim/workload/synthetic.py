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
    g = nx.DiGraph()
    layers: list[list[str]] = []
    i = 0
    while i < n_ops:
        w = int(rng.integers(1, width + 1))
        layer = []
        for _ in range(min(w, n_ops - i)):
            name = f"op{i}"
            hw = int(rng.choice([7, 14, 28, 56]))
            c_in, c_out = (int(rng.choice([16, 32, 64, 128, 256])) for _ in range(2))
            if rng.random() < p_conv:
                gemm = GemmView(m_v=c_out, n_v=c_in * 9, n_mvm=hw * hw)
                op = Op(name=name, op_type="Conv", index=i, input_shapes=((1, c_in, hw, hw),),
                        output_shapes=((1, c_out, hw, hw),), n_in=c_in * hw * hw, n_out=c_out * hw * hw,
                        weight_shape=(c_out, c_in, 3, 3), weight_elements=c_out * c_in * 9, macs=gemm.macs,
                        bits=8, in_bytes=c_in * hw * hw, out_bytes=c_out * hw * hw, gemm=gemm)
            else:
                n = c_out * hw * hw
                op = Op(name=name, op_type=str(rng.choice(["Add", "Relu"])), index=i,
                        input_shapes=((1, c_out, hw, hw),), output_shapes=((1, c_out, hw, hw),), n_in=n,
                        n_out=n, bits=8, in_bytes=n, out_bytes=n)
            g.add_node(name, op=op)
            layer.append(name)
            i += 1
        prev = [n for lay in layers[-2:] for n in lay]
        if prev:
            for v in layer:
                k = int(rng.integers(1, fan_in + 1))
                for u in rng.choice(prev, size=min(k, len(prev)), replace=False):
                    n_out = g.nodes[u]["op"].n_out
                    g.add_edge(str(u), v, tensors=[f"{u}:out"], elements=n_out, bytes=n_out, param=False)
        layers.append(layer)
    return Workload(name=f"layered_dag_{n_ops}_s{seed}", graph=g, meta={"synthetic": True, "seed": seed})
