"""Big ONNX graphs for the whole-command benchmarks, made with ``onnx.helper`` (seeded, no download).

- :func:`relu_chain`: ``n`` ``Relu`` ops one after another (a 20,000-op chain: the chain DP maps it).
- :func:`ladder_dag`: ``n`` ops on ``width`` parallel lanes; at each step a lane's op is a 1x1 ``Conv``
  (a GEMM the CIM can run), a ``Relu``, or an ``Add`` of its own lane and the next lane (so the lanes
  cross and the graph is a DAG, not ``width`` chains), drawn with a seeded generator. Every output feeds the
  next step; the graph's outputs are the lanes' last tensors.

    python bench/onnx_graphs.py chain 20000 /tmp/chain.onnx
    python bench/onnx_graphs.py dag 100000 /tmp/dag.onnx
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
CHANNELS = 8
SIDE = 8


def _save(nodes, inits, inputs, outputs, name: str, path: str | Path) -> Path:
    shape = [1, CHANNELS, SIDE, SIDE]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape) for x in inputs],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, shape) for y in outputs], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="hetsim-bench")
    onnx.save(model, str(path))
    return Path(path)


def relu_chain(n: int, path: str | Path) -> Path:
    """Write a chain of ``n`` ``Relu`` ops on a ``1 x 8 x 8 x 8`` float tensor to ``path``."""
    nodes = [helper.make_node("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}"], name=f"relu{i}") for i in range(n)]
    return _save(nodes, [], ["x"], [f"t{n}"], f"relu_chain_{n}", path)


def ladder_dag(n: int, path: str | Path, width: int = 8, p_conv: float = 0.3, p_add: float = 0.35,
               seed: int = 0) -> Path:
    """Write an ``n``-op DAG on ``width`` crossing lanes (module docstring) to ``path``; same seed, same file.

    Every ``Conv`` has its own ``8 x 8 x 1 x 1`` weight (a distinct GEMM per op, as in a network)."""
    rng = np.random.default_rng(seed)
    kind = rng.random(n)
    lanes = [f"x{k}" for k in range(width)]
    nodes, inits = [], []
    for i in range(n):
        k = i % width
        out = f"t{i}"
        if kind[i] < p_conv:
            w = f"w{i}"
            inits.append(numpy_helper.from_array(
                rng.standard_normal((CHANNELS, CHANNELS, 1, 1)).astype(np.float32), w))
            nodes.append(helper.make_node("Conv", [lanes[k], w], [out], name=f"conv{i}"))
        elif kind[i] < p_conv + p_add and width > 1:
            nodes.append(helper.make_node("Add", [lanes[k], lanes[(k + 1) % width]], [out], name=f"add{i}"))
        else:
            nodes.append(helper.make_node("Relu", [lanes[k]], [out], name=f"relu{i}"))
        lanes[k] = out
    return _save(nodes, inits, [f"x{k}" for k in range(width)], lanes, f"ladder_dag_{n}_w{width}_s{seed}", path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=("chain", "dag"))
    ap.add_argument("ops", type=int)
    ap.add_argument("path", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.kind == "chain":
        relu_chain(args.ops, args.path)
    else:
        ladder_dag(args.ops, args.path, seed=args.seed)
    print(args.path)


if __name__ == "__main__":
    main()
