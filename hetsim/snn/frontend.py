"""The spiking-network front ends (``snn-spec`` and ``nir`` in :mod:`hetsim.workload.frontends`): a network read
with :func:`hetsim.snn.network.load_snn` and unrolled into the operator DAG (:func:`hetsim.snn.unroll.unroll`),
an :class:`~hetsim.snn.unroll.SnnWorkload` of kind ``snn``."""

from __future__ import annotations

from pathlib import Path


def is_snn_object(obj) -> bool:
    """An in-memory :class:`~hetsim.snn.network.SNN`."""
    from hetsim.snn.network import SNN

    return isinstance(obj, SNN)


def load_spec(source):
    """An SNN spec (``.yaml`` with its weights and recorded activity), or an in-memory ``SNN``, unrolled.

    Raises:
        WorkloadError: whatever :func:`~hetsim.snn.network.load_snn` refuses.
    """
    from hetsim.snn.network import SNN, load_snn
    from hetsim.snn.unroll import unroll

    return unroll(source if isinstance(source, SNN) else load_snn(Path(source)))


def load_nir_graph(source, spikes=None):
    """A NIR graph (``.nir``) run on ``spikes``, the ``.npz`` of its input raster, unrolled.

    Raises:
        WorkloadError: whatever :func:`~hetsim.snn.network.load_snn` refuses (a graph without ``spikes``).
    """
    from hetsim.snn.nir import load_nir
    from hetsim.snn.unroll import unroll

    return unroll(load_nir(Path(source), spikes))
