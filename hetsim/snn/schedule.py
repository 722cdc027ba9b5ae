"""Timestep-by-timestep schedules of an SNN on the Cortex-M33 + MVP: blocking and asynchronous execution.

The network is unrolled into ops (:func:`unroll`): ``affine_l[t]`` (stateless; on the M33 or the MVP),
``lif_l[t]`` (M33; state chain ``lif_l[t-1] -> lif_l[t]``) and ``readout[t]`` (M33). Dependencies::

    affine_l[t] <- lif_{l-1}[t]   (l > 1; layer 1 reads the buffered input)
    affine_l[t] <- lif_l[t-2]     (double-buffered affine output: the buffer of t-2 must have been consumed)
    lif_l[t]    <- affine_l[t], lif_l[t-1]
    readout[t]  <- lif_L[t], readout[t-1]

Execution modes (SpikeDuet Sec. III-E):

* ``blocking``: the M33 runs the program in order (timestep by timestep, layer by layer) and waits (polls)
  for every MVP launch: the makespan is the sum of all op costs.
* ``async``: the M33 and the MVP each run their ops in a fixed order, every op starting once its
  dependencies are met and its engine is free. The M33 program is software-pipelined: layer ``l`` runs
  ``s_l`` timesteps behind layer 1, where ``s_l`` counts the MVP-mapped affine layers among ``2..l`` (their
  input comes from the M33 in the same timestep), so that while the MVP computes ``affine_l[t]`` the M33 does
  the LIF updates and readout of earlier timesteps. The MVP takes its ops in the order their inputs are
  produced. Outputs are unchanged (the dependencies above hold), and at every instant one engine is busy, so
  ``async <= blocking`` on every sample.

:func:`evaluate` computes makespans for many samples at once (numpy, one pass over the ops in a topological
order); :func:`simulate_sample` replays one sample on SimPy resources and returns a trace; the two agree
(tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import networkx as nx
import numpy as np
import pandas as pd
import simpy

from hetsim.devices.efr32 import M33, MVP
from hetsim.errors import InputError
from hetsim.snn.costs import MVP_ENGINES

MODES = ("async", "blocking")


@dataclass(frozen=True)
class SnnOp:
    """One unrolled op: ``kind`` is ``affine`` | ``lif`` | ``readout``; ``layer`` 1..L (L for readout); ``t``."""

    kind: str
    layer: int
    t: int

    @property
    def name(self) -> str:
        return f"readout[{self.t}]" if self.kind == "readout" else f"{self.kind}_{self.layer}[{self.t}]"


@dataclass(frozen=True)
class Unrolled:
    """The unrolled op DAG of one mapping (see the module docstring).

    Attributes:
        ops: every op, in a topological order that also respects each engine's fixed order.
        device: per op, ``m33`` or ``mvp``.
        preds: per op, indices (into ``ops``) of the ops it waits for: data dependencies and the op before it
            on its engine (blocking: the op before it in the program).
        graph: the data-dependency DAG (op names, for inspection and export).
    """

    ops: tuple[SnnOp, ...]
    device: tuple[str, ...]
    preds: tuple[tuple[int, ...], ...]
    graph: nx.DiGraph


def _skews(on_mvp: tuple[bool, ...]) -> list[int]:
    """``s_l`` per layer (index 0 = layer 1): MVP-mapped affine layers among 2..l."""
    s, out = 0, []
    for i, m in enumerate(on_mvp):
        if i > 0 and m:
            s += 1
        out.append(s)
    return out


@lru_cache(maxsize=64)
def unroll(n_layers: int, timesteps: int, on_mvp: tuple[bool, ...], mode: str) -> Unrolled:
    """Unroll ``n_layers`` affine+LIF layers over ``timesteps``; ``on_mvp[l-1]`` says whether affine layer
    ``l`` runs on the MVP.

    Raises:
        InputError: unknown ``mode`` or ``on_mvp`` of the wrong length.
    """
    if mode not in MODES:
        raise InputError(f"unknown execution mode {mode!r}; allowed: {', '.join(MODES)}")
    if len(on_mvp) != n_layers:
        raise InputError(f"on_mvp has {len(on_mvp)} entries for {n_layers} layers")
    L, T = n_layers, timesteps
    g = nx.DiGraph()
    ops = []
    for t in range(T):
        for layer in range(1, L + 1):
            ops += [SnnOp("affine", layer, t), SnnOp("lif", layer, t)]
        ops.append(SnnOp("readout", L, t))
    for op in ops:
        g.add_node(op)
    for t in range(T):
        for layer in range(1, L + 1):
            a, f = SnnOp("affine", layer, t), SnnOp("lif", layer, t)
            g.add_edge(a, f)
            if layer > 1:
                g.add_edge(SnnOp("lif", layer - 1, t), a)
            if t >= 1:
                g.add_edge(SnnOp("lif", layer, t - 1), f)
            if t >= 2:
                g.add_edge(SnnOp("lif", layer, t - 2), a)
        g.add_edge(SnnOp("lif", L, t), SnnOp("readout", L, t))
        if t >= 1:
            g.add_edge(SnnOp("readout", L, t - 1), SnnOp("readout", L, t))

    def dev(op: SnnOp) -> str:
        return MVP if op.kind == "affine" and on_mvp[op.layer - 1] else M33

    if mode == "blocking":
        order = ops  # program order; one chain: the M33 waits for every MVP launch
        chain = {M33: order}
    else:
        s = _skews(on_mvp)
        kind_rank = {"affine": 0, "lif": 1, "readout": 2}

        def m33_key(op: SnnOp):
            return (op.t + s[op.layer - 1], op.layer, kind_rank[op.kind])

        def mvp_key(op: SnnOp):
            if op.layer == 1:  # fed by the buffered input: as early as its buffer allows (after lif_1[t-2])
                return (op.t - 2 + s[0], 1, 1, 0)
            return (*m33_key(SnnOp("lif", op.layer - 1, op.t)), op.layer)

        m33_ops = sorted((o for o in ops if dev(o) == M33), key=m33_key)
        mvp_ops = sorted((o for o in ops if dev(o) == MVP), key=mvp_key)
        chain = {M33: m33_ops, MVP: mvp_ops}
    full = g.copy()
    for seq in chain.values():
        for a, b in zip(seq, seq[1:], strict=False):
            full.add_edge(a, b)
    rank = {op: i for i, op in enumerate(ops)}
    topo = list(nx.lexicographical_topological_sort(full, key=lambda o: rank[o]))
    index = {op: i for i, op in enumerate(topo)}
    preds = tuple(tuple(sorted(index[p] for p in full.predecessors(op))) for op in topo)
    rg = nx.relabel_nodes(g, {op: op.name for op in ops})
    return Unrolled(tuple(topo), tuple(dev(o) for o in topo), preds, rg)


def evaluate(unrolled: Unrolled, cost_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and finish times of every op for many samples at once.

    Args:
        unrolled: from :func:`unroll`.
        cost_s: float ``[n_ops, samples]`` op durations in seconds, rows in ``unrolled.ops`` order.

    Returns:
        ``(start, finish)``, float ``[n_ops, samples]`` seconds; the makespan is ``finish.max(axis=0)``.
    """
    n, S = cost_s.shape
    start = np.zeros((n, S))
    finish = np.zeros((n, S))
    for i, ps in enumerate(unrolled.preds):
        if len(ps) == 1:
            start[i] = finish[ps[0]]
        elif ps:
            start[i] = finish[list(ps)].max(axis=0)
        finish[i] = start[i] + cost_s[i]
    return start, finish


def simulate_sample(unrolled: Unrolled, cost_s: np.ndarray, mode: str) -> tuple[pd.DataFrame, float]:
    """Replay one sample on SimPy resources (one per engine) and return ``(trace, makespan_s)``.

    Each op is a process that waits for its data dependencies and for its turn on its engine (the engine's
    fixed order), then holds the engine for its duration. In ``blocking`` mode an MVP op also holds the M33
    (it polls), recorded as a ``poll`` row on the M33.

    Args:
        unrolled: from :func:`unroll`.
        cost_s: float ``[n_ops]`` durations in seconds, in ``unrolled.ops`` order.
        mode: ``async`` | ``blocking`` (must be the mode ``unrolled`` was built for).

    Returns:
        A trace with the columns of :data:`hetsim.sim.engine.TRACE_COLUMNS` plus ``layer`` and ``t``
        (``phase`` = op kind, or ``poll``), and the makespan in seconds.
    """
    env = simpy.Environment()
    res = {M33: simpy.Resource(env, 1), MVP: simpy.Resource(env, 1)}
    done = [env.event() for _ in unrolled.ops]
    rows = []

    def run(i: int):
        op, dev = unrolled.ops[i], unrolled.device[i]
        if unrolled.preds[i]:
            yield simpy.AllOf(env, [done[p] for p in unrolled.preds[i]])
        held = [res[dev].request()]
        if mode == "blocking" and dev == MVP:
            held.append(res[M33].request())
        yield simpy.AllOf(env, held)
        t0 = env.now
        yield env.timeout(float(cost_s[i]))
        for r in held:
            (res[M33] if r.resource is res[M33] else res[MVP]).release(r)
        rows.append((op.name, dev, "compute", op.kind, t0, env.now, pd.NA, op.layer, op.t))
        if len(held) == 2:
            rows.append((op.name, M33, "compute", "poll", t0, env.now, pd.NA, op.layer, op.t))
        done[i].succeed()

    for i in range(len(unrolled.ops)):
        env.process(run(i))
    env.run()
    trace = pd.DataFrame(rows, columns=["op", "device", "kind", "phase", "start_s", "end_s", "channels",
                                        "layer", "t"])
    trace["channels"] = trace["channels"].astype("Int64")
    trace = trace.sort_values(["start_s", "end_s", "device", "op"], kind="stable").reset_index(drop=True)
    return trace, float(trace["end_s"].max()) if len(trace) else 0.0


def on_mvp(engines) -> tuple[bool, ...]:
    """Per layer: is its affine on the MVP?"""
    return tuple(e in MVP_ENGINES for e in engines)
