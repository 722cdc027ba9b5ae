"""The earlier name of :mod:`hetsim.analysis.footprint`: importing it gives that module itself."""

import sys

from hetsim.analysis import footprint

sys.modules[__name__] = footprint
