"""The earlier name of :mod:`hetsim.analysis.metrics`: importing it gives that module itself."""

import sys

from hetsim.analysis import metrics

sys.modules[__name__] = metrics
