"""The Mapper protocol, the registry of mappers by name, and helpers every mapper shares."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Protocol

from hetsim.costs import CostModel
from hetsim.devices.puma import place_crossbars
from hetsim.errors import InputError, MappingError
from hetsim.schedule import Schedule
from hetsim.sim.analytic import list_schedule


class Mapper(Protocol):
    """A mapper turns a cost model (workload x platform) into a :class:`~hetsim.schedule.Schedule`.

    Implementations are classes with a ``name`` and a ``map`` method; options are constructor keyword
    arguments. Register one with :func:`register` to make it available by name (``hetsim run --mapper NAME``).

    Common option names (the CLI passes each one only to mappers whose constructor takes it):
    ``time_limit_s`` (float), ``mip_rel_gap`` (float, relative), ``threads`` (int), ``seed`` (int),
    ``solver`` (str), ``progress`` (callable receiving a dict with ``time_s``, ``incumbent_s``, ``bound_s``,
    ``gap`` during long solves).

    ``Schedule.stats`` keys every mapper should fill where they apply: ``solve_time_s``, ``status``
    (``optimal`` | ``time_limit`` | ``feasible`` | ``infeasible`` | ``heuristic``), ``operators``,
    ``variables``, ``constraints``, ``incumbent_s``, ``bound_s``, ``mip_gap`` (seed 000 Sec. II-B:
    ``(z_inc - z_bound) / |z_inc|``), ``solver``.
    """

    name: str

    def map(self, costs: CostModel) -> Schedule:
        """Return a feasible schedule; raise :class:`~hetsim.errors.MappingError` if there is none."""
        ...


MAPPERS: dict[str, Callable[..., Mapper]] = {}


def register(name: str):
    """Class decorator: make a mapper available as ``name``."""

    def deco(cls):
        cls.name = name
        MAPPERS[name] = cls
        return cls

    return deco


def get_mapper(name: str, **options) -> Mapper:
    """Instantiate the mapper registered as ``name``, passing it the ``options`` its constructor accepts
    (options other mappers take are ignored, so one CLI line can name any mapper).

    Raises:
        InputError: no mapper of that name (the message lists the registered ones).
    """
    if name not in MAPPERS:
        raise InputError(f"unknown mapper {name!r}; available: {', '.join(sorted(MAPPERS))}")
    cls = MAPPERS[name]
    params = inspect.signature(cls).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        options = {k: v for k, v in options.items() if k in params}
    return cls(**options)


def crossbar_budget(costs: CostModel) -> dict[str, int]:
    """Crossbars available per CIM device (C of seed 000 Eq. 14)."""
    return {n: d.crossbars for n, d in costs.platform.devices.items() if d.kind == "puma"}


def place(costs: CostModel, assignment: dict[str, str]) -> dict[str, list[tuple[int, int]]]:
    """Crossbar placement of every CIM op (first-fit decreasing on each device's cores).

    Raises:
        MappingError: a CIM device's crossbar budget (seed 000 Eq. 14) is exceeded.
    """
    topo = costs.workload.topological_order()
    out: dict[str, list[tuple[int, int]]] = {}
    for name, dev in costs.platform.devices.items():
        if dev.kind != "puma":
            continue
        demand = {v: costs.n_crossbar[v][name] for v, d in assignment.items() if d == name}
        try:
            out.update(place_crossbars(demand, dev.cores, dev.crossbars_per_core, order=topo,
                                       capacities=dev.core_capacities))
        except ValueError as err:
            raise MappingError(f"device {name!r}: crossbar budget exceeded (seed 000 Eq. 14): {err}") from None
    return out


def make_schedule(
    costs: CostModel,
    assignment: dict[str, str],
    mapper: str,
    stats: dict | None = None,
    order: dict[str, list[str]] | None = None,
    splits: dict[str, dict[str, list[int]]] | None = None,
) -> Schedule:
    """A complete schedule for ``assignment``: per-device order (``order`` where given, else topological),
    crossbar placement, and the contention-free predicted times of :func:`~hetsim.sim.analytic.list_schedule`
    (every op as early as its inputs and its device's order allow, so a solver's slack is removed).
    ``splits`` (op -> {device: channel indices}, seed 002) puts a split op in the order of every device holding
    one of its parts; ``assignment`` must name one of them.

    Raises:
        ScheduleError: ``order`` contradicts the data dependencies or the assignment.
        MappingError: a crossbar budget is exceeded.
    """
    topo = costs.workload.topological_order()
    given = order or {}
    order = {d: list(given[d]) if d in given else [] for d in costs.platform.devices}
    splits = {k: {d: list(ch) for d, ch in v.items()} for k, v in (splits or {}).items()}
    for v in topo:
        for d in (splits[v] if v in splits else [assignment[v]]):
            if d not in given:
                order[d].append(v)
    placement = place(costs, {v: d for v, d in assignment.items() if v not in splits})
    start, finish, makespan = list_schedule(costs, assignment, order, splits)
    return Schedule(
        mapper=mapper,
        workload=costs.workload.name,
        platform=costs.platform.name,
        assignment=dict(assignment),
        order=order,
        placement=placement,
        start_s=start,
        finish_s=finish,
        makespan_s=makespan,
        stats=dict(stats or {}),
        splits=splits,
    )
