"""Mappers, one module each, registered by name (see :mod:`hetsim.mappers.base`).

A new mapper is one module with a class decorated by ``@register("name")`` and an import line here.
"""

from hetsim.mappers import all_host, greedy, heft  # noqa: F401  (registration side effects)
from hetsim.mappers.base import MAPPERS, Mapper, get_mapper, make_schedule, register

__all__ = ["MAPPERS", "Mapper", "get_mapper", "make_schedule", "register"]
