"""Mappers, one module each, registered by name (see :mod:`hetsim.mappers.base`).

A new mapper is one module with a class decorated by ``@register("name")`` and an import line here (and,
optionally, a one-line description in :data:`DESCRIPTIONS`).

This package is also callable: ``hetsim.mappers()`` is :func:`available` (name -> description).
"""

import sys
import types

# the DIANA mappers of ODiMO (registration side effects)
import hetsim.mappers.all_8bit
import hetsim.mappers.all_ternary
import hetsim.mappers.dnas_export
import hetsim.mappers.io8_backbone_ternary
import hetsim.mappers.min_cost  # noqa: F401
from hetsim.mappers import all_host, cpsat, greedy, heft, ilp, spikeduet  # noqa: F401  (registration side effects)
from hetsim.mappers.base import (
    MAPPERS,
    Mapper,
    check_mapper_options,
    did_you_mean,
    get_mapper,
    make_schedule,
    mapper_option_names,
    register,
)

#: one line per mapper, for :func:`hetsim.mappers` (``hetsim.mappers()``); a mapper missing here is described
#: by the first sentence of its docstring
DESCRIPTIONS = {
    "all-host": "every op on the host CPU: the baseline of every speedup",
    "greedy": "offload the ops saving the most host time per share of an accelerator's capacity while it pays",
    "heft": "HEFT list scheduling (upward rank, earliest finish time) within every device's capacity",
    "ilp": "the CPU-CIM ILP's MILP (Eq. 5-14), generalised to k accelerators, on HiGHS (or solver='gurobi'); exact",
    "cpsat": "the CPU-CIM ILP's problem (any number of accelerators) as a CP-SAT scheduling model; exact, fastest",
    "all-8bit": "DIANA: every Conv/FC layer on the digital accelerator",
    "all-ternary": "DIANA: every groups=1 layer on the AIMC, depthwise on the digital accelerator",
    "io8-backbone-ternary": "DIANA: first and last layer digital, the rest on the AIMC",
    "min-cost": "DIANA: per layer the channel split minimising objective='latency' or 'energy' (exact)",
    "dnas-export": "DIANA: the channel split of a DNAS search read from path=FILE (hetsim or ODiMO export)",
    "spikeduet": "SNNs: per affine layer the engine (sparse M33, dense or range-sparse MVP) and weight residency "
                 "minimising mean latency (exact; mode='async' or 'blocking')",
    "all-m33": "SNNs: every affine layer on the sparse Cortex-M33 (best residency): the baseline of SNN speed-ups",
    "all-dense-mvp": "SNNs: every affine layer on the dense MVP (best residency)",
}


def describe(name: str) -> str:
    """One line about mapper ``name``: :data:`DESCRIPTIONS`, else the first sentence of its docstring."""
    if name in DESCRIPTIONS:
        return DESCRIPTIONS[name]
    import inspect

    doc = " ".join((inspect.getdoc(MAPPERS[name]) or "").split("\n\n")[0].split())
    return doc.split(". ")[0].rstrip(".") + "." if doc else ""


def available() -> dict[str, str]:
    """The registered mappers, name -> one-line description (:func:`describe`), sorted by name."""
    return {name: describe(name) for name in sorted(MAPPERS)}


class _CallableModule(types.ModuleType):
    """``hetsim.mappers`` is the package and ``hetsim.mappers()`` lists the mappers: the package takes the name
    the Python API gives the listing, and a module attribute cannot be both."""

    def __call__(self) -> dict[str, str]:
        return available()


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["DESCRIPTIONS", "MAPPERS", "Mapper", "available", "check_mapper_options", "describe", "did_you_mean",
           "get_mapper", "make_schedule", "mapper_option_names", "register"]
