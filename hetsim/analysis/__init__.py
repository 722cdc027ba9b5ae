"""A run's numbers and figures, computed from its replay: per-device and per-op tables, energy, utilisation and
the summary (:mod:`~hetsim.analysis.metrics`), the activation footprint (:mod:`~hetsim.analysis.footprint`), the
timeline and breakdown figures (:mod:`~hetsim.analysis.plots`) and the lanes of overlapping intervals they share
with the trace export (:mod:`~hetsim.analysis.lanes`). Below the pipeline, the result and the report writers
(:mod:`hetsim.report`), which import it; it imports none of them."""
