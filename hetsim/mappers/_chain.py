"""Exact mapping of a chain of ops by dynamic programming (used by :mod:`hetsim.mappers.cpsat`, lever ``chain``).

On a chain (every op feeds the next one only) no two ops ever overlap, so the serial devices never make an op
wait and the makespan of an assignment is the sum of its durations and of the transfers between consecutive
ops on different devices (CPU-CIM ILP Eq. 6-9 with a single path). The CPU-CIM ILP's problem is then a
shortest path with one resource: state (device of op ``i``, capacity used so far), ``O(n * devices^2 *
capacity)`` in integer ticks, no CP-SAT. A capacity whose ops' needs all fit it never binds and is not
tracked; with more than one binding capacity, or a binding one too large to count unit by unit
(:data:`MAX_CELLS`), the chain is left to the general model.
"""

from __future__ import annotations

import numpy as np

from hetsim.mappers import _bounds as B

#: the most ``ops * (capacity + 1)`` DP cells (int64 values and int8 choices per device) the chain solver uses
MAX_CELLS = 20_000_000
INF = np.int64(1) << np.int64(60)


def is_chain(p: B.IntProblem) -> bool:
    """True when ``p.ops`` is one path: op ``i`` is the only predecessor of op ``i + 1`` and vice versa."""
    ops = p.ops
    for i, v in enumerate(ops):
        if p.preds[v] != ([ops[i - 1]] if i else []) or p.succs[v] != ([ops[i + 1]] if i + 1 < len(ops) else []):
            return False
    return True


def binding(p: B.IntProblem) -> list[str]:
    """The capacitated devices whose budget the ops that may use them can exceed."""
    return [d for d, c in p.budget.items() if sum(p.ncb[v][d] for v in p.ops if d in p.devices[v]) > c]


def solve_chain(p: B.IntProblem) -> tuple[dict[str, str], int] | None:
    """The optimal assignment of a chain and its makespan in ticks, or None when the DP does not apply (not a
    chain, several binding capacities, or one too large: :data:`MAX_CELLS`).

    Raises:
        ValueError: no assignment fits the budget and the links (the caller's problem is infeasible).
    """
    if not p.ops or not is_chain(p):
        return None
    bind = binding(p)
    if len(bind) > 1:
        return None
    cim = bind[0] if bind else None
    cap = p.budget[cim] if cim else 0
    n = len(p.ops)
    if n * (cap + 1) > MAX_CELLS:
        return None
    devs = list(dict.fromkeys(d for v in p.ops for d in p.devices[v]))
    idx = {d: k for k, d in enumerate(devs)}
    nd = len(devs)
    width = cap + 1
    # f[k, b]: least finish of the current op on device k with at most b units used (non-increasing in b)
    f = np.full((nd, width), INF, dtype=np.int64)
    v0 = p.ops[0]
    for d in p.devices[v0]:
        need = p.ncb[v0][d] if d == cim else 0
        if need <= cap:
            f[idx[d], need:] = p.dur[v0][d]
    choice = np.zeros((n, nd, width), dtype=np.int8)
    for i in range(1, n):
        u, v = p.ops[i - 1], p.ops[i]
        tr = p.tr[(u, v)]
        g = np.full((nd, width), INF, dtype=np.int64)
        for d in p.devices[v]:
            need = p.ncb[v][d] if d == cim else 0
            if need > cap:
                continue
            k = idx[d]
            best = np.full(width - need, INF, dtype=np.int64)
            arg = np.zeros(width - need, dtype=np.int8)
            for a in p.devices[u]:
                t = tr.get((a, d))
                if t is None:
                    continue
                cand = f[idx[a], : width - need] + (t + p.dur[v][d])
                better = cand < best
                best = np.where(better, cand, best)
                arg = np.where(better, np.int8(idx[a]), arg)
            g[k, need:] = np.minimum(best, INF)
            choice[i, k, need:] = arg
        f = g
    k = int(np.argmin(f[:, cap]))
    total = int(f[k, cap])
    if total >= INF:
        raise ValueError("no assignment of the chain fits the capacity and the links")
    assign: dict[str, str] = {}
    b = cap
    for i in range(n - 1, -1, -1):
        v, d = p.ops[i], devs[k]
        assign[v] = d
        prev = int(choice[i, k, b])
        b -= p.ncb[v][d] if d == cim else 0
        k = prev
    return assign, total
