"""Mappers, one module each, registered by name (see :mod:`hetsim.mappers.base`).

A new mapper is one module with a class decorated by ``@register("name")`` and an import line here.
"""

# the DIANA mappers of ODiMO (registration side effects)
import hetsim.mappers.all_8bit
import hetsim.mappers.all_ternary
import hetsim.mappers.dnas_export
import hetsim.mappers.io8_backbone_ternary
import hetsim.mappers.min_cost  # noqa: F401
from hetsim.mappers import all_host, cpsat, greedy, heft, ilp  # noqa: F401  (registration side effects)
from hetsim.mappers.base import MAPPERS, Mapper, get_mapper, make_schedule, register

__all__ = ["MAPPERS", "Mapper", "get_mapper", "make_schedule", "register"]
