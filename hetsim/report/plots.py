"""The earlier name of :mod:`hetsim.analysis.plots`: importing it gives that module itself."""

import sys

from hetsim.analysis import plots

sys.modules[__name__] = plots
