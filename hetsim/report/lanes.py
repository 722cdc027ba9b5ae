"""The earlier name of :mod:`hetsim.analysis.lanes`: importing it gives that module itself."""

import sys

from hetsim.analysis import lanes

sys.modules[__name__] = lanes
