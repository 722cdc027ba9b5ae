"""How big a sweep may be: its points counted from the sweep file's lists before any point is built.

A grid is the product of its lists, so a few lines of YAML can ask for 10^6 points, and expanding them (a key, a
settings hash and a dict per point) would run for minutes and fill memory before the first point starts.
:func:`count_points` multiplies the list lengths (no expansion); :func:`check_count` refuses past the limit, in
one line with the number and the limit. The limit is ours: :data:`MAX_POINTS` (100,000 points: the CPU-CIM ILP
paper's sweep has 128, and at a second a point 100,000 take more than a day); ``hetsim sweep --max-points N``
(:func:`max_points` in Python) sets another for one sweep.
"""

from __future__ import annotations

import math

from hetsim.errors import InputError
from hetsim.size_limit import SizeLimit

#: most points one sweep may have unless ``--max-points`` says otherwise
MAX_POINTS = 100_000
_POINTS = SizeLimit("hetsim_max_points", "--max-points", MAX_POINTS)


def max_points(n: int | None):
    """Within the block (a context manager), sweeps may have up to ``n`` points (``None``: :data:`MAX_POINTS`).

    Raises:
        InputError: ``n`` is not a positive integer.
    """
    return _POINTS.lifted_to(n)


def point_limit() -> int:
    """The limit in force (:func:`max_points`)."""
    return _POINTS.get()


def check_count(n: int, what: str) -> None:
    """Refuse ``n`` points past the limit in force.

    Raises:
        InputError: ``n`` exceeds :func:`point_limit` (the message gives both and how to lift it).
    """
    limit = point_limit()
    if n > limit:
        raise InputError(f"{what} has {n:,} points; hetsim runs at most {limit:,} in one sweep: shorten its lists, "
                         "or pass --max-points N (max_points(N) in Python) to lift the limit")


def count_points(spec) -> int:
    """The number of points :func:`~hetsim.dse.sweep.expand_points` would make of ``spec`` (a
    :class:`~hetsim.dse.sweep.SweepSpec`), or :func:`~hetsim.dse.scenario_sweep.scenario_points` of a
    :class:`~hetsim.dse.scenario_sweep.ScenarioSweep`, from the lengths of its lists alone."""
    grid = math.prod(len(v) for v in spec.parameters.values())
    if getattr(spec, "scenario", None) is not None:  # platforms x grid x mappers x objectives (one by default)
        return len(spec.platforms) * grid * len(spec.mappers or [None]) * len(spec.objectives or [None])
    return spec.sweep_kind.count_points(spec, grid)  # the kind's own count (hetsim.dse.points.SweepKind)
