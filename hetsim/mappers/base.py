"""The Mapper protocol, the registry of mappers by name, and helpers every mapper shares."""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable
from typing import Protocol

from hetsim.costs import CostModel
from hetsim.errors import InputError, InternalError, MappingError, ScheduleError, did_you_mean
from hetsim.schedule import Schedule
from hetsim.sim.analytic import list_schedule


class Mapper(Protocol):
    """A mapper turns a cost model (workload x platform) into a :class:`~hetsim.schedule.Schedule`.

    Implementations are classes with a ``name`` and a ``map`` method; options are constructor keyword
    arguments. Register one with :func:`register` to make it available by name (``hetsim run --mapper NAME``).

    Common option names (the CLI passes the ones the user set; :func:`get_mapper` refuses an option the
    mapper's constructor does not take):
    ``time_limit_s`` (float, a wall-clock limit), ``work_limit`` (a deterministic one, in the solver's units:
    :mod:`hetsim.mappers._limits`), ``mip_rel_gap`` (float, relative), ``threads`` (int), ``seed`` (int),
    ``solver`` (str), ``progress`` (callable receiving a dict with ``time_s``, ``incumbent_s``, ``bound_s``,
    ``gap`` during long solves).

    ``Schedule.stats`` keys every mapper should fill where they apply: ``solve_time_s``, ``status``
    (``optimal`` | ``work_limit`` | ``time_limit`` | ``feasible`` | ``infeasible`` | ``heuristic``), ``operators``,
    ``variables``, ``constraints``, ``incumbent_s``, ``bound_s``, ``mip_gap`` (CPU-CIM ILP, Sec. II-B:
    ``(z_inc - z_bound) / |z_inc|``), ``solver``.
    """

    name: str

    def map(self, costs: CostModel) -> Schedule:
        """Return a feasible schedule; raise :class:`~hetsim.errors.MappingError` if there is none."""
        ...


MAPPERS: dict[str, Callable[..., Mapper]] = {}


#: what a mapper that does not model fused operator groups records in ``stats["fusion"]`` when the platform offers
#: them (:attr:`~hetsim.costs.CostModel.fusion`): its schedule runs every op on its own launch, and its bounds and
#: status are those of the problem without fusion
NO_FUSION_NOTE = "not modelled: every op on its own launch; status and bounds are for the problem without fusion"


def register(name: str):
    """Class decorator: make a mapper available as ``name``."""

    def deco(cls):
        cls.name = name
        MAPPERS[name] = cls
        return cls

    return deco


def mapper_option_names(name: str) -> tuple[str, ...] | None:
    """The keyword options mapper ``name``'s constructor takes, in order (``None``: it takes any, ``**kwargs``).

    Raises:
        InputError: no mapper of that name.
    """
    cls = _mapper_class(name)
    params = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return tuple(k for k, p in params.items()
                 if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))


def _mapper_class(name: str):
    if name not in MAPPERS:
        hint = did_you_mean(name, MAPPERS)
        available = ", ".join(sorted(MAPPERS))
        raise InputError(f"unknown mapper {name!r}{hint} Available: {available}" if hint
                         else f"unknown mapper {name!r}; available: {available}")
    return MAPPERS[name]


def check_baseline(platform, where: str | None = None, kind: str | None = None) -> None:
    """The platform's ``baseline`` (the mapper speed-ups are measured against) names a registered mapper (a
    plugin's included) and, with ``kind="dag"``, one that maps DAGs of tensor operators (:mod:`hetsim.workload.kinds`;
    an SNN run measures against SpikeDuet's all-m33 whatever the platform says,
    :data:`hetsim.snn.evaluate.BASELINE_CONFIG`, so ``None`` or ``"snn"`` check the name only). Called where a run
    starts (:func:`hetsim.pipeline.run`, the scenario and sweep loaders): :mod:`hetsim.platform` sits below the
    mapper registry.

    Args:
        platform: a :class:`~hetsim.platform.Platform`.
        where: what the message starts with (the platform file's path); default ``platform NAME``.
        kind: the workload kind of the run, once the platform is known to run it (the cost model's check comes
            first: an ONNX model on an SNN platform is told that, not that its baseline maps SNNs).

    Raises:
        InputError: an unknown mapper (the closest name suggested, the known ones listed), or one that maps only
            the other workload kind (``baseline: spikeduet`` on a platform of ONNX models).
    """
    from hetsim.workload.kinds import DAG, kind_name, kinds_of

    name = platform.baseline
    where = where or f"platform {platform.name!r}"
    if name not in MAPPERS:  # maybe a plugin's (hetsim/plugins.py)
        from hetsim.plugins import load_plugins

        load_plugins()
    if name not in MAPPERS:
        hint = did_you_mean(name, MAPPERS)
        raise InputError(f"{where}: baseline: unknown mapper {name!r}{hint}{' K' if hint else '; k'}nown mappers: "
                         f"{', '.join(sorted(MAPPERS))}")
    if kind is not None and kind_name(kind) == DAG and DAG not in kinds_of(MAPPERS[name]):
        raise InputError(f"{where}: baseline: mapper {name!r} maps spiking networks; the baseline of a "
                         "tensor-operator model is a mapper of such models (default all-host)")


def check_mapper_options(name: str, options) -> None:
    """Refuse an option mapper ``name`` does not take.

    Raises:
        InputError: no mapper of that name, or an unknown option (the message suggests the closest option
            name and lists the ones the mapper takes).
    """
    takes = mapper_option_names(name)
    if takes is None:
        return
    for k in options:
        if k not in takes:
            listed = f"{name} takes: {', '.join(takes)}" if takes else f"{name} takes no options"
            raise InputError(f"unknown option {k!r} for mapper {name!r}{did_you_mean(k, takes)} ({listed})")
    _check_option_values(name, options)


#: ranges of the numeric options mappers share: name -> (low, low included, high, high included)
OPTION_RANGES = {
    "time_limit_s": (0.0, True, 1e7, True), "det_time_limit": (0.0, True, 1e12, True),
    "work_limit": (0.0, False, 1e12, True),
    "resolution_s": (0.0, False, 1e3, True), "mip_rel_gap": (0.0, True, 1.0, True),
    "threads": (1, True, 1024, True), "seed": (0, True, 2**31 - 1, True), "fluid_share": (0.0, True, 1.0, True),
    "decompose_share": (0.0, True, 1.0, True),
}  # fmt: skip


def _check_option_values(name: str, options) -> None:
    """Numeric and boolean options by the constructor's annotation (``float``, ``int``, ``bool``, optionally
    ``| None``): a number that is not a boolean, finite, an integer for ``int``, within :data:`OPTION_RANGES`;
    ``true``/``false`` for ``bool``. Other options are the mapper's to check."""
    params = inspect.signature(_mapper_class(name)).parameters
    for k, v in options.items():
        ann = str(params[k].annotation).replace(" ", "") if k in params else ""
        kind = ann.removesuffix("|None")
        if kind not in ("float", "int", "bool") or (v is None and ann.endswith("|None")):
            continue
        what = f"option {k!r} of mapper {name!r}"
        shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
        if kind == "bool":
            if not isinstance(v, bool):
                raise InputError(f"{what} must be true or false, not {shown}")
            continue
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise InputError(f"{what} must be {'an integer' if kind == 'int' else 'a number'}, not {shown}")
        try:
            x = float(v)
        except OverflowError:
            x = math.inf
        if not math.isfinite(x):
            raise InputError(f"{what} must be a finite number, not {shown}")
        if kind == "int" and x != int(x):
            raise InputError(f"{what} must be an integer, not {shown}")
        if k in OPTION_RANGES:
            lo, lo_in, hi, hi_in = OPTION_RANGES[k]
            if not ((x >= lo if lo_in else x > lo) and (x <= hi if hi_in else x < hi)):
                span = f"{'[' if lo_in else '('}{lo:g}, {hi:g}{']' if hi_in else ')'}"
                raise InputError(f"{what} is {shown}; allowed: {span}")


def get_mapper(name: str, **options) -> Mapper:
    """Instantiate the mapper registered as ``name`` with ``options`` (its constructor's keyword arguments).

    Raises:
        InputError: no mapper of that name (the message suggests the closest name and lists the registered
            ones), or an option the mapper does not take (the message suggests the closest option name and
            lists the ones it takes); a mapper's own errors for a bad option value.
    """
    if name not in MAPPERS:  # maybe a plugin's (hetsim/plugins.py)
        from hetsim.plugins import load_plugins

        load_plugins()
    check_mapper_options(name, options)
    return MAPPERS[name](**options)


def capacity_budget(costs: CostModel) -> dict[str, int]:
    """Resident capacity per device that has one (the crossbar budget C of CPU-CIM ILP Eq. 14, a weight
    memory ...): a copy of :attr:`~hetsim.costs.CostModel.budget` a mapper may spend."""
    return dict(costs.budget)


def place(costs: CostModel, assignment: dict[str, str]) -> dict[str, list[tuple[int, int]]]:
    """Placement of every op's resident capacity on its device's slots (a PUMA's cores: first-fit decreasing),
    for devices that lay it out (:meth:`~hetsim.devices.base.DeviceBase.place`).

    Raises:
        MappingError: a device's resident capacity is exceeded.
    """
    topo = costs.workload.topological_order()
    out: dict[str, list[tuple[int, int]]] = {}
    for name, cap in costs.resident.items():
        demand = {v: costs.need[v][name] for v, d in assignment.items() if d == name}
        if sum(demand.values()) > cap.amount:
            raise MappingError(f"device {name!r}: {cap.name} exceeded ({cap.source}): {sum(demand.values())} "
                               f"{cap.unit} requested, {cap.amount} available")
        try:
            out.update(costs.devices[name].place(demand, order=topo))
        except ValueError as err:
            raise MappingError(f"device {name!r}: {cap.name} exceeded ({cap.source}): {err}") from None
    return out


def make_schedule(
    costs: CostModel,
    assignment: dict[str, str],
    mapper: str,
    stats: dict | None = None,
    order: dict[str, list[str]] | None = None,
    splits: dict[str, dict[str, list[int]]] | None = None,
    *,
    after: dict[str, list[str]] | None = None,
    policies: dict | None = None,
    fused: dict[str, str] | None = None,
) -> Schedule:
    """A complete schedule for ``assignment``: per-device order (``order`` where given, else topological),
    resident-capacity placement, and the contention-free predicted times of
    :func:`~hetsim.sim.analytic.list_schedule` (every op as early as its inputs and its device's order allow, so a
    solver's slack is removed). ``splits`` (op -> {device: output channels}, ODiMO) makes an op's parts: one
    contiguous channel range per device, in the dict's order (only the counts matter to the cost models; the
    function-preserving reordering of ODiMO Fig. 3 makes each device's channels contiguous); ``assignment`` must
    name one of the op's devices. A split op is in the order of every device holding one of its parts.
    ``policies`` (op -> :class:`~hetsim.schedule.WeightPolicy`, :mod:`hetsim.weights`) and ``after`` (control
    dependencies: the chain of a CIM's reprogrammed ops) go into the schedule; ``costs`` must then be the cost
    model bound to them (:mod:`hetsim.mappers._policy` builds it). ``fused`` (consumer -> producer, fused operator
    groups) goes into the schedule too, each fused consumer moved right after its producer in its device's order
    (:func:`fused_order`).

    Raises:
        InternalError: ``order`` contradicts the data dependencies or the assignment (the mapper's own
            inconsistency: a bug to report, not an input error).
        MappingError: a resident capacity is exceeded.
    """
    topo = costs.workload.topological_order()
    given = order or {}
    order = {d: list(given[d]) if d in given else [] for d in costs.platform.devices}
    splits = {k: {d: list(range(lo, lo + len(ch))) for d, ch, lo in _blocks(v)} for k, v in (splits or {}).items()}
    for v in topo:
        for d in (splits[v] if v in splits else [assignment[v]]):
            if d not in given:
                order[d].append(v)
    if fused:
        order = fused_order(costs, assignment, fused, order if given else None)
    placement = place(costs, {v: d for v, d in assignment.items() if v not in splits})
    try:
        start, finish, makespan = list_schedule(costs, assignment, order, splits, after=after, fused=fused)
    except ScheduleError as err:
        raise InternalError(f"mapper {mapper!r} built an inconsistent schedule: {err} (a bug in the mapper, "
                            "please report it)") from err
    counts = {v: {d: len(ch) for d, ch in p.items()} for v, p in splits.items()}
    return Schedule.from_assignment(
        mapper, {v: assignment[v] for v in topo if v in assignment}, counts,
        workload=costs.workload.name,
        platform=costs.platform.name,
        order=order,
        placement=placement,
        start_s=start,
        finish_s=finish,
        makespan_s=makespan,
        stats=dict(stats or {}),
        after=after,
        policies=policies,
        fused=fused,
    )


def fused_order(costs: CostModel, assignment: dict[str, str], fused: dict[str, str],
                order: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Per device, its ops in an order that runs each fused group (``fused``: consumer -> producer) as one launch:
    the group's consumers right after their producers. With ``order`` given (a mapper's own, every group's
    outside inputs before its head), each fused consumer is taken out and put back after its producer; without,
    the groups are taken in a topological order of the graph whose nodes are the groups (ties: the workload's
    topological order), every device listing its own."""
    chain = {p: c for c, p in fused.items()}
    if order:
        out = {}
        for d, seq in order.items():
            new = []
            for v in seq:
                if v in fused:
                    continue
                new.append(v)
                while new[-1] in chain:
                    new.append(chain[new[-1]])
            out[d] = new
        return out
    import networkx as nx

    from hetsim.check import fusion_heads

    g = costs.workload.graph
    topo = costs.workload.topological_order()
    pos = {v: i for i, v in enumerate(topo)}
    heads = fusion_heads(fused)
    group = {v: heads.get(v, v) for v in g}
    h = nx.DiGraph()
    h.add_nodes_from(v for v in topo if v not in fused)
    h.add_edges_from((group[u], group[v]) for u, v in g.edges if group[u] != group[v])
    out = {d: [] for d in costs.platform.devices}
    for x in nx.lexicographical_topological_sort(h, key=pos.__getitem__):
        while True:
            out[assignment[x]].append(x)
            if x not in chain:
                break
            x = chain[x]
    return out


def _blocks(parts: dict[str, list[int]]):
    """``(device, channels, first channel of its block)`` with the devices' blocks laid end to end."""
    lo = 0
    for d, ch in parts.items():
        if ch:
            yield d, ch, lo
            lo += len(ch)


def mapper_or_schedule(mapper: str, options: dict, schedule, kind: str, wrong_kind: str):
    """The mapper a run uses (``None`` when a saved ``schedule`` is replayed) and the schedule, read if it is a
    path (:func:`hetsim.pipeline.run` and :func:`hetsim.snn.evaluate.run_snn`).

    Raises:
        InputError: mapper options given with a schedule to replay, or a mapper that does not map ``kind``
            workloads (:mod:`hetsim.workload.kinds`; ``wrong_kind`` finishes the message); an unknown mapper or
            option (from :func:`get_mapper`, before the model is read).
    """
    from hetsim.schedule import Schedule
    from hetsim.workload.kinds import kind_name, kinds_of

    if schedule is not None:
        if options:
            raise InputError(f"mapper options ({', '.join(options)}) apply when a mapper runs, not when a schedule "
                             "is replayed")
        return None, schedule if isinstance(schedule, Schedule) else Schedule.load(schedule)
    m = get_mapper(mapper, **options)
    if kind_name(kind) not in kinds_of(m):
        raise InputError(f"mapper {mapper!r} {wrong_kind}")
    return m, None


def parse_mapper_option(name: str, option: str, text: str):
    """The value of option ``option`` of mapper ``name`` written as ``text`` on the command line
    (``--mapper-option NAME=VALUE``), converted by the constructor's annotation: ``int``, ``float``, ``bool``
    (``true``/``false``), ``str`` as given; anything else (or no annotation) read as YAML by the guarded reader of
    platform files and ``--set`` (:func:`hetsim.platform.load_yaml_text`: bounded aliases, size and nesting). The
    option's name and value are then checked as for :func:`get_mapper`.

    Raises:
        InputError: an unknown mapper or option (the closest name suggested), or a value the annotation does not
            read.
    """
    import yaml

    from hetsim.platform import load_yaml_text  # the guarded reader --set and the YAML files use

    takes = mapper_option_names(name)
    if takes is not None and option not in takes:
        listed = f"{name} takes: {', '.join(takes)}" if takes else f"{name} takes no options"
        raise InputError(f"unknown option {option!r} for mapper {name!r}{did_you_mean(option, takes)} ({listed})")
    param = inspect.signature(_mapper_class(name)).parameters.get(option)
    ann = str(param.annotation).replace(" ", "") if param is not None else ""
    kind = ann.removesuffix("|None")
    if ann.endswith("|None") and text.strip().lower() in ("none", "null"):
        return None
    readers = {"int": int, "float": float, "str": str,
               "bool": lambda t: {"true": True, "false": False}[t.strip().lower()]}
    try:
        return readers[kind](text) if kind in readers else load_yaml_text(text)
    except (ValueError, KeyError, yaml.YAMLError):
        want = {"int": "an integer", "float": "a number", "bool": "true or false"}.get(kind, "a YAML value")
        raise InputError(f"option {option!r} of mapper {name!r}: {text!r} is not {want}") from None


def fuse_where_placed(costs: CostModel, assignment: dict[str, str]) -> dict[str, str]:
    """Fused operator groups for a mapping: in the workload's topological order, each op whose producer sits on
    a device that fuses the pair (:attr:`~hetsim.costs.CostModel.fusion`; the first such producer in graph order
    that has no fused consumer yet) is fused into it, unless that would make a group wait for an input computed
    from its own output (a cycle among the groups). Consumer -> producer; empty without fusion options."""
    if not costs.fusion:
        return {}
    g = costs.workload.graph
    fused: dict[str, str] = {}
    head: dict[str, str] = {}  # fused op -> its group's head (a chain grows at its end only)
    members: dict[str, list[str]] = {}  # head -> its group, head first
    taken: set[str] = set()
    topo = costs.workload.topological_order()
    pos = {v: i for i, v in enumerate(topo)}
    for c in topo:
        d = assignment[c]
        for p, per_dev in costs.fusion.get(c, {}).items():
            if assignment[p] != d or d not in per_dev or p in taken:
                continue
            h = head.get(p, p)
            outside = {u for u in g.predecessors(c) if head.get(u, u) != h}
            if outside and _reaches(g, members.get(h, [h]), outside, head, members, pos, pos[c]):
                continue  # an outside input computed from the group's output: a cycle
            fused[c] = p
            head[c] = h
            members.setdefault(h, [h]).append(c)
            taken.add(p)
            break
    return fused


def _reaches(g, start: list[str], targets: set[str], head: dict[str, str], members: dict[str, list[str]],
             pos: dict[str, int], limit: int) -> bool:
    """True when a path leads from the ops ``start`` (a group) to one of ``targets`` in the graph whose nodes are
    the fused groups (``head``: fused op -> its group's head; ``members``: head -> its ops): a search that enters
    a group goes on from every op of it. Every target and every group member comes before position ``limit`` of
    the topological order (``pos``), so an op at or after it, in no group and with only later successors, leads
    to none: the search does not enter it."""
    seen = set(start)
    stack = list(start)
    while stack:
        for y in g.successors(stack.pop()):
            for z in members.get(head.get(y, y), [y]):  # y's group: y alone when it is in none
                if z in seen or pos[z] >= limit:
                    continue
                if z in targets:
                    return True
                seen.add(z)
                stack.append(z)
    return False
