"""SpikeDuet's mappers of spiking networks onto a Cortex-M host + MVP: per affine layer an engine and a weight
residency (SpikeDuet Sec. III-B, III-D), executed blocking or asynchronously (Sec. III-E).

``spikeduet`` enumerates every combination of (engine, residency) per affine layer - ``m33`` with ``sram``,
``flash`` or ``flash+hot``; ``mvp-dense`` or ``mvp-range`` with ``sram`` or ``flash``: 7 options per layer, so
``7^L`` plans - drops those whose weight tables exceed the SRAM budget or the Flash, and keeps the one with the
smallest mean end-to-end latency on the plan (validation) split under the chosen execution mode. This is
exact: every plan that fits is either evaluated or pruned by a valid lower bound (per sample, the makespan is
at least each engine's total work). Baselines are the same search restricted to one engine: ``all-m33``
(sparse Cortex-M33, SpikeDuet's baseline; its best residency, hot columns included) and ``all-dense-mvp``.

Each returns an ordinary :class:`~hetsim.schedule.Schedule` of the unrolled workload
(:mod:`hetsim.snn.unroll`): every affine op on the host (``m33`` engine) or the MVP (the platform's device
names), LIF and readout ops on the host, ``config`` = ``{"mode", "layers": [{engine, residency,
hot_columns}]}``, and the execution mode as per-device orders (and, for ``blocking``, control dependencies):

* ``blocking``: the host runs the program in order (timestep by timestep, layer by layer) and waits (polls) for
  every MVP launch: every op waits for the op before it in the program (``Schedule.after``); the makespan is
  the sum of all op costs.
* ``async``: the host and the MVP each run their ops in a fixed order, every op starting once its
  dependencies are met and its engine is free. The host program is software-pipelined: layer ``l`` runs
  ``s_l`` timesteps behind layer 1, where ``s_l`` counts the MVP-mapped affine layers among ``2..l`` (their
  input comes from the host in the same timestep), so that while the MVP computes ``affine_l[t]`` the host does
  the LIF updates and readout of earlier timesteps. The MVP takes its ops in the order their inputs are
  produced. Outputs are unchanged (the data dependencies hold), and at every instant one engine is busy, so
  ``async <= blocking`` on every sample.

The planner's inner loop prices a mapping on every sample of the plan split at once
(:func:`hetsim.sim.analytic.evaluate_batch` over the schedule's dependencies and orders); the one simulator
replays the same schedule for one sample with the same times (tested).
"""

from __future__ import annotations

import itertools
import time
from functools import lru_cache

import numpy as np

from hetsim.costs import CostModel
from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE, ENGINES, MVP_ENGINES, options
from hetsim.errors import InputError, MappingError
from hetsim.mappers.base import register
from hetsim.schedule import Schedule
from hetsim.sim.analytic import evaluate_batch
from hetsim.snn.activity_costs import ActivityCostModel, LayerChoice
from hetsim.snn.unroll import SnnStep, data_edges, program

MODES = ("async", "blocking")
HOST, ACCEL = "host", "accelerator"  # the two roles in the orders below; the schedule uses the platform's names


def on_mvp(engines) -> tuple[bool, ...]:
    """Per layer: is its affine on the MVP?"""
    return tuple(e in MVP_ENGINES for e in engines)


def _skews(mvp: tuple[bool, ...]) -> list[int]:
    """``s_l`` per layer (index 0 = layer 1): MVP-mapped affine layers among 2..l."""
    s, out = 0, []
    for i, m in enumerate(mvp):
        if i > 0 and m:
            s += 1
        out.append(s)
    return out


def _role(op: SnnStep, mvp: tuple[bool, ...]) -> str:
    return ACCEL if op.kind == "affine" and mvp[op.layer - 1] else HOST


@lru_cache(maxsize=64)
def engine_orders(n_layers: int, timesteps: int, mvp: tuple[bool, ...], mode: str) -> dict[str, tuple[SnnStep, ...]]:
    """Each engine's op order (``host``, ``mvp``) for affine layers placed as ``mvp`` says, in ``mode``
    (module docstring); ``blocking`` also under key ``program``: every op in program order.

    Raises:
        InputError: unknown ``mode`` or ``mvp`` of the wrong length.
    """
    if mode not in MODES:
        raise InputError(f"unknown execution mode {mode!r}; allowed: {', '.join(MODES)}")
    if len(mvp) != n_layers:
        raise InputError(f"on_mvp has {len(mvp)} entries for {n_layers} layers")
    ops = program(n_layers, timesteps)
    if mode == "blocking":
        return {HOST: tuple(o for o in ops if _role(o, mvp) == HOST),
                ACCEL: tuple(o for o in ops if _role(o, mvp) == ACCEL)}
    s = _skews(mvp)
    kind_rank = {"affine": 0, "lif": 1, "readout": 2}

    def host_key(op: SnnStep):
        if op.kind == "program":  # as soon as its inputs are there: right after the LIF update it waits for
            if op.layer == 1:
                return (op.t - 2 + s[0], 1, 1.5)
            return (op.t + s[op.layer - 2], op.layer - 1, 1.5)
        return (op.t + s[op.layer - 1], op.layer, kind_rank[op.kind])

    def mvp_key(op: SnnStep):
        if op.layer == 1:  # fed by the buffered input: as early as its buffer allows (after lif_1[t-2])
            return (op.t - 2 + s[0], 1, 1, 0)
        return (*host_key(SnnStep("lif", op.layer - 1, op.t)), op.layer)

    return {HOST: tuple(sorted((o for o in ops if _role(o, mvp) == HOST), key=host_key)),
            ACCEL: tuple(sorted((o for o in ops if _role(o, mvp) == ACCEL), key=mvp_key))}


@lru_cache(maxsize=64)
def blocking_after(n_layers: int, timesteps: int, mvp: tuple[bool, ...]) -> dict[SnnStep, tuple[SnnStep, ...]]:
    """Blocking execution's control dependencies: the program runs stage by stage in program order, a stage
    being one op, or an MVP-mapped layer's ``program_l[t]`` and ``affine_l[t]`` together (the host programs the
    launches while they run, then polls); every op waits for every op of the previous stage on the other
    engine (the previous ones on its own engine are its device order)."""
    stages: list[list[SnnStep]] = []
    for op in program(n_layers, timesteps):
        if op.kind == "affine" and mvp[op.layer - 1]:
            stages[-1].append(op)  # with its program_l[t]
        else:
            stages.append([op])
    out = {}
    for prev, cur in zip(stages, stages[1:], strict=False):
        for b in cur:
            other = tuple(a for a in prev if _role(a, mvp) != _role(b, mvp))
            if other:
                out[b] = other
    return out


@lru_cache(maxsize=64)
def dependencies(n_layers: int, timesteps: int, mvp: tuple[bool, ...], mode: str):
    """``(steps, preds)``: the unrolled ops in a topological order of the data dependencies plus each engine's
    order (``blocking``: the program chain), and per op the indices of the ops it waits for: what
    :func:`~hetsim.sim.analytic.evaluate_batch` needs."""
    import networkx as nx

    ops = program(n_layers, timesteps)
    g = nx.DiGraph()
    g.add_nodes_from(ops)
    g.add_edges_from(data_edges(n_layers, timesteps))
    for seq in engine_orders(n_layers, timesteps, mvp, mode).values():
        g.add_edges_from(zip(seq, seq[1:], strict=False))
    if mode == "blocking":
        g.add_edges_from((a, b) for b, us in blocking_after(n_layers, timesteps, mvp).items() for a in us)
    rank = {op: i for i, op in enumerate(ops)}
    topo = list(nx.lexicographical_topological_sort(g, key=lambda o: rank[o]))
    index = {op: i for i, op in enumerate(topo)}
    preds = tuple(tuple(sorted(index[p] for p in g.predecessors(op))) for op in topo)
    return tuple(topo), preds


def makespans(cm: ActivityCostModel, choices: list[LayerChoice], mode: str) -> np.ndarray:
    """End-to-end latency of every sample of ``cm``'s split under ``choices`` in ``mode``, seconds
    ``[samples]``: the contention-free times of the schedule :func:`snn_schedule` makes
    (:func:`~hetsim.sim.analytic.evaluate_batch`; blocking without launch programming costs: the sum of all
    op costs)."""
    if mode == "blocking" and not cm.m33.mvp_launch_cycles:  # the host waits for every launch: all the work
        return sum(cm.engine_work(choices))
    steps, preds = dependencies(cm.snn.n_layers, cm.timesteps, on_mvp([c.engine for c in choices]), mode)
    return evaluate_batch(preds, cm.step_costs(steps, choices))[1].max(axis=0)


def snn_schedule(cm: ActivityCostModel, choices: list[LayerChoice], mode: str, mapper: str,
                 stats: dict | None = None) -> Schedule:
    """The :class:`~hetsim.schedule.Schedule` of a mapping: parts on the platform's devices, each engine's
    order, ``blocking``'s program chain as control dependencies, and ``config`` (module docstring)."""
    L, T = cm.snn.n_layers, cm.timesteps
    mvp = on_mvp([c.engine for c in choices])
    dev = {HOST: cm.host, ACCEL: cm.mvp_name}
    parts = {s.name: dev[_role(s, mvp)] for s in program(L, T)}
    orders = engine_orders(L, T, mvp, mode)
    order = {dev[k]: [s.name for s in seq] for k, seq in orders.items() if k in dev}
    after = {}
    if mode == "blocking":
        after = {b.name: [a.name for a in us] for b, us in blocking_after(L, T, mvp).items()}
    return Schedule(mapper=mapper, parts=parts, order=order, stats=dict(stats or {}), workload=cm.workload.name,
                    platform=cm.platform.name, after=after,
                    config={"mode": mode, "layers": [c.to_dict() for c in choices]})


def _option_bounds(cm: ActivityCostModel, opts: list[tuple[str, str]]):
    """Per layer and option: SRAM bytes, Flash bytes and a lower bound on the host's affine work, its launch
    programming and the MVP's busy time per sample (``flash+hot`` bounded by the all-hot cost), as arrays
    ``[L, n_opts]`` and ``[L, n_opts, samples]``."""
    L, n, S = len(cm.layers), len(opts), cm.samples
    sram = np.zeros((L, n))
    flash = np.zeros((L, n))
    m33 = np.zeros((L, n, S))
    prog = np.zeros((L, n, S))
    mvp = np.zeros((L, n, S))
    for li, lc in enumerate(cm.layers):
        for k, (e, r) in enumerate(opts):
            table = lc.weight_bytes(e)
            (sram if r == "sram" else flash)[li, k] = table
            cyc = lc.cycles(e, r, lc.n_in if r == "flash+hot" else 0).sum(axis=1)
            if e == ENGINE_M33:
                m33[li, k] = cyc / cm.m33_hz
            else:
                mvp[li, k] = cyc / cm.mvp_hz
                prog[li, k] = lc.program_cycles(e, r).sum(axis=1) / cm.m33_hz  # the host programs the launches
    return sram, flash, m33, prog, mvp


def plan(cm: ActivityCostModel, engines=ENGINES, mode: str = "async", time_limit_s: float | None = None,
         name: str = "spikeduet", max_evaluated: int | None = None) -> tuple[list[LayerChoice], int, float, dict]:
    """Choose each affine layer's engine (among ``engines``) and residency minimising the mean latency on
    ``cm``'s split (exact).

    Every combination is bounded first (vectorised over combinations and samples: per sample the makespan is at
    least each engine's busy time, ``blocking`` at least their sum, with ``flash+hot`` at its all-hot cost);
    combinations over the SRAM or Flash capacity are dropped; the rest are scheduled in order of their bound
    until the bound reaches the best latency found (then the result is optimal), ``max_evaluated`` combinations
    have been scheduled (a deterministic limit: ``stats["status"]`` ``work_limit``) or ``time_limit_s`` passes
    (``time_limit``); then ``stats["gap"]`` is the relative gap to the smallest bound not yet scheduled. Ties go
    to less SRAM, then to the simpler options (M33 and SRAM first).

    Returns:
        ``(choices, sram_bytes, mean_latency_s, stats)``; stats: ``plans`` (combinations), ``fit`` (within the
        memories), ``evaluated``, ``pruned``, ``solve_time_s``, ``split``, ``status``, ``gap``.

    Raises:
        InputError: unknown mode.
        MappingError: no combination fits the SRAM and Flash capacities.
    """
    if mode not in MODES:
        raise InputError(f"unknown execution mode {mode!r}; allowed: {', '.join(MODES)}")
    t0 = time.perf_counter()
    opts = options(engines)
    rank = {o: i for i, o in enumerate(options())}
    L, n = cm.snn.n_layers, len(opts)
    sram, flash, m33w, progw, mvpw = _option_bounds(cm, opts)
    fixed = cm.fixed_m33_s
    flash_cap = cm.flash_bytes if cm.flash_bytes is not None else 0
    lbs, idxs = [], []
    chunk = max(1, 2**16 // max(1, cm.samples))
    combos = itertools.product(range(n), repeat=L)
    while True:
        idx = np.array(list(itertools.islice(combos, chunk)), dtype=np.int16).reshape(-1, L)
        if not len(idx):
            break
        layers = np.arange(L)
        ok = (sram[layers, idx].sum(axis=1) <= cm.budget_sram) & (flash[layers, idx].sum(axis=1) <= flash_cap)
        idx = idx[ok]
        if not len(idx):
            continue
        m = fixed + m33w[layers, idx].sum(axis=1)      # [c, S]
        v = mvpw[layers, idx].sum(axis=1)
        if mode == "async":  # each engine does all its work (the host's includes programming launches)
            if cm.m33.mvp_launch_cycles:
                m = m + progw[layers, idx].sum(axis=1)
            lbs.append(np.maximum(m, v).mean(axis=1))
        else:  # one op at a time, except programming, which overlaps its launches
            lbs.append((m + v).mean(axis=1))
        idxs.append(idx)
    n_plans = n**L
    if not lbs:
        raise MappingError(f"{name}: no engine/residency combination of {cm.snn.name} fits the "
                           f"{cm.budget_sram / 1024:.0f} KiB SRAM budget and the Flash")
    lb = np.concatenate(lbs)
    idx = np.concatenate(idxs)
    order = np.argsort(lb, kind="stable")
    best, evaluated, status, gap = None, 0, "optimal", 0.0
    for j in order:
        if best is not None and lb[j] > best[0][0] * (1 + 1e-12):
            break
        if best is not None and max_evaluated is not None and evaluated >= max_evaluated:
            status = "work_limit"
            gap = max(0.0, (best[0][0] - float(lb[j])) / best[0][0])
            break
        if time_limit_s is not None and best is not None and time.perf_counter() - t0 > time_limit_s:
            status = "time_limit"
            gap = max(0.0, (best[0][0] - float(lb[j])) / best[0][0])
            break
        combo = tuple(opts[k] for k in idx[j])
        choices, used = cm.allocate(combo)  # never None: the capacity filter above is the same test
        lat = float(makespans(cm, choices, mode).mean())
        evaluated += 1
        key = (lat, used, [rank[o] for o in combo])  # ties: less SRAM, then simpler options (m33, sram first)
        if best is None or key < best[0]:
            best = (key, choices, used)
    (lat, _, _), choices, used = best
    stats = {"plans": n_plans, "fit": int(len(lb)), "evaluated": evaluated,
             "pruned": int(len(lb)) - evaluated, "solve_time_s": time.perf_counter() - t0,
             "split": cm.split, "status": status, "gap": gap, "sram_bytes": used,
             "budget_bytes": cm.budget_sram, "plan_mean_latency_s": lat}
    return choices, used, lat, stats


def layer_choices(schedule: Schedule) -> list[LayerChoice]:
    """Per affine layer, the engine and residency an SNN schedule chose (``config["layers"]``)."""
    return [LayerChoice.from_dict(x) for x in schedule.config["layers"]]


#: the default work limit of a plan search: candidate schedules evaluated (assumed: about 30 s at ~30 ms each on
#: a loaded 2-core machine, the former default time limit; the shipped networks' searches end by proof long before,
#: braille384 after 28 of its 196 fitting combinations)
PLAN_EVALS = 1000


def plan_network(snn, platform, mapper: str = "spikeduet", mode: str = "async",
                 costs: ActivityCostModel | None = None, time_limit_s: float | None = None) -> Schedule:
    """The registered SNN ``mapper``'s schedule of network ``snn`` (planned on its plan split; ``costs``: a
    prebuilt cost model of it on any split). Its ``stats`` hold ``plan_mean_latency_s`` and ``sram_bytes``."""
    from hetsim.mappers.base import get_mapper

    cm = costs if costs is not None else ActivityCostModel.of(snn, platform, "plan")
    return get_mapper(mapper, mode=mode, time_limit_s=time_limit_s).map(cm)


class _SnnMapper:
    """A SpikeDuet mapper: :func:`plan` over :attr:`engines` on the ``split`` split (default: the plan role),
    returning :func:`snn_schedule`.

    Args:
        mode: ``async`` | ``blocking`` execution.
        time_limit_s: stop scheduling candidates after this many seconds (the best so far is kept; default:
            none). Given alone it replaces the default ``work_limit``; with it, the first reached stops.
        work_limit: stop after scheduling this many candidates (deterministic: the same plan on any machine;
            default :data:`PLAN_EVALS` unless ``time_limit_s`` alone is given).
        split: the split (name or role) whose mean latency is minimised.

    Raises:
        InputError: unknown mode.
    """

    name = "spikeduet"
    engines: tuple[str, ...] = ENGINES
    workloads = frozenset({"snn"})

    def __init__(self, mode: str = "async", time_limit_s: float | None = None, split: str = "plan",
                 work_limit: int | None = None):
        if mode not in MODES:
            raise InputError(f"unknown execution mode {mode!r}; allowed: {', '.join(MODES)}")
        self.mode, self.time_limit_s, self.split = mode, time_limit_s, split
        self.work_limit = work_limit if work_limit is not None else (PLAN_EVALS if time_limit_s is None else None)

    def map(self, costs: CostModel) -> Schedule:
        """Raises: MappingError: ``costs`` is not a spiking network's, or nothing fits the memories."""
        if not isinstance(costs, ActivityCostModel):
            raise MappingError(f"mapper {self.name!r} maps spiking networks (an SNN spec on a Cortex-M + MVP "
                               "platform, e.g. workloads/snn/braille384.yaml on platforms/efr32mg24.yaml)")
        cm = costs.on_split(self.split)
        choices, _, _, stats = plan(cm, self.engines, self.mode, self.time_limit_s, self.name, self.work_limit)
        return snn_schedule(costs, choices, self.mode, self.name, stats)


@register("spikeduet")
class SpikeDuet(_SnnMapper):
    """SpikeDuet's per-layer engine and residency search over the Cortex-M and both MVP kernels (exact)."""

    engines = ENGINES


@register("all-m33")
class AllM33(_SnnMapper):
    """Every affine layer on the sparse Cortex-M (its best residency): the baseline of SNN speed-ups."""

    engines = (ENGINE_M33,)


@register("all-dense-mvp")
class AllDenseMvp(_SnnMapper):
    """Every affine layer on the dense MVP (its best residency)."""

    engines = (ENGINE_MVP_DENSE,)
