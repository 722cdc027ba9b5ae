"""Workload kinds: what a workload *is*, whichever file it was read from.

* :data:`DAG`: a DAG of tensor operators (:class:`~hetsim.workload.op.Workload`): ONNX models, exported PyTorch
  programs, synthetic graphs; priced by :class:`~hetsim.costs.CostModel`.
* :data:`SNN`: a spiking network unrolled over its timesteps (:class:`~hetsim.snn.unroll.SnnWorkload`), priced per
  sample by :class:`~hetsim.snn.activity_costs.ActivityCostModel`.

Device kinds (``DeviceBase.workloads``), mappers (their ``workloads`` class attribute) and front ends
(:mod:`hetsim.workload.frontends`) name the kinds they handle. The old spelling ``"onnx"`` (for :data:`DAG`) is
still read, so plug-in device kinds and mappers written for an earlier hetsim keep working.
"""

from __future__ import annotations

from collections.abc import Iterable

DAG = "dag"
SNN = "snn"
#: older spellings -> the kind they name
ALIASES = {"onnx": DAG}
#: how messages name each kind
DESCRIPTIONS = {DAG: "a DAG of tensor operators (an ONNX model, an exported PyTorch program)",
                SNN: "a spiking network (an SNN spec .yaml, a NIR graph .nir)"}


def kind_name(kind: str) -> str:
    """``kind`` in today's spelling (``"onnx"`` -> ``"dag"``)."""
    return ALIASES.get(kind, kind)


def kinds(names: Iterable[str]) -> frozenset[str]:
    """A set of kinds in today's spelling."""
    return frozenset(kind_name(k) for k in names)


def kinds_of(obj, default: Iterable[str] = (DAG,)) -> frozenset[str]:
    """The workload kinds a device kind, mapper or mapper class handles (its ``workloads`` attribute, normalised;
    ``default`` when it has none)."""
    return kinds(getattr(obj, "workloads", default))


def describe(kind: str) -> str:
    """A phrase naming ``kind`` for messages."""
    k = kind_name(kind)
    return DESCRIPTIONS.get(k, f"a {k!r} workload")
