"""An SNN as a workload: its layers x timesteps unrolled into the common operator DAG.

Ops (:class:`~hetsim.workload.op.Op`, in program order: timestep by timestep, layer by layer):
``program_l[t]`` (``op_type`` ``Program``: the host core's work of programming the MVP launches of
``affine_l[t]``, which it does while those launches run - SpikeDuet chains launches by polling - so it runs
alongside ``affine_l[t]``, not before it; it costs nothing when the layer runs on the host), ``affine_l[t]``
(``Affine``: ``W_l @ S_{l-1}[t]``, stateless; the Cortex-M or the MVP runs it), ``lif_l[t]`` (``LIF``: the
membrane update of layer ``l``) and ``readout[t]`` (``Readout``: spike-count or membrane accumulation of the
output layer). Dependencies::

    affine_l[t] <- lif_{l-1}[t]   (l > 1; layer 1 reads the buffered input)
    affine_l[t] <- lif_l[t-2]     (double-buffered affine output: the buffer of t-2 must have been consumed)
    program_l[t] <- the same two;  lif_l[t] <- program_l[t]
    lif_l[t]    <- affine_l[t], lif_l[t-1]
    readout[t]  <- lif_L[t], readout[t-1]

Edges carry spike vectors (one element per neuron); on the EFR32MG24 both engines share the SRAM, so nothing
moves between them. What an op costs depends on each sample's recorded activity (the active input columns of
``affine_l[t]``): :class:`hetsim.snn.activity_costs.ActivityCostModel` prices it per sample of a split.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from hetsim.snn.network import SNN
from hetsim.workload.op import Op, Workload

PROGRAM, AFFINE, LIF, READOUT = "Program", "Affine", "LIF", "Readout"


@dataclass(frozen=True)
class SnnStep:
    """What an unrolled op is: ``kind`` (``program`` | ``affine`` | ``lif`` | ``readout``), its layer 1..L (L for
    the readout) and its timestep ``t``."""

    kind: str
    layer: int
    t: int

    @property
    def name(self) -> str:
        return f"readout[{self.t}]" if self.kind == "readout" else f"{self.kind}_{self.layer}[{self.t}]"


@dataclass
class SnnWorkload(Workload):
    """The unrolled operator DAG of an SNN (module docstring) with the network and its recorded activity.

    Attributes:
        snn: the network (weights, LIF parameters, recorded rasters per split).
        steps: op name -> its :class:`SnnStep`, in program order.
    """

    snn: SNN | None = None
    steps: dict[str, SnnStep] = field(default_factory=dict)
    kind = "snn"


def program(n_layers: int, timesteps: int) -> list[SnnStep]:
    """The unrolled ops in program order: per timestep, per layer ``program``, ``affine``, ``lif``; then
    ``readout``."""
    out = []
    for t in range(timesteps):
        for layer in range(1, n_layers + 1):
            out += [SnnStep("program", layer, t), SnnStep("affine", layer, t), SnnStep("lif", layer, t)]
        out.append(SnnStep("readout", n_layers, t))
    return out


def data_edges(n_layers: int, timesteps: int) -> list[tuple[SnnStep, SnnStep]]:
    """The dependencies of the module docstring, as ``(producer, consumer)`` pairs."""
    L, T = n_layers, timesteps
    edges = []
    for t in range(T):
        for layer in range(1, L + 1):
            p, a, f = SnnStep("program", layer, t), SnnStep("affine", layer, t), SnnStep("lif", layer, t)
            edges += [(a, f), (p, f)]
            if layer > 1:
                edges += [(SnnStep("lif", layer - 1, t), p), (SnnStep("lif", layer - 1, t), a)]
            if t >= 1:
                edges.append((SnnStep("lif", layer, t - 1), f))
            if t >= 2:
                edges += [(SnnStep("lif", layer, t - 2), p), (SnnStep("lif", layer, t - 2), a)]
        edges.append((SnnStep("lif", L, t), SnnStep("readout", L, t)))
        if t >= 1:
            edges.append((SnnStep("readout", L, t - 1), SnnStep("readout", L, t)))
    return edges


def unroll(snn: SNN) -> SnnWorkload:
    """The SNN's layers x timesteps as an operator DAG (module docstring), named after the network.

    Op sizes: ``n_in`` / ``n_out`` are the widths of the layer's input and output (an affine op's
    ``weight_shape`` is ``(n_out, n_in)``); edges carry one element per neuron of the producer.
    """
    sizes = snn.layer_sizes
    g = nx.DiGraph()
    steps = program(snn.n_layers, snn.timesteps)
    for i, s in enumerate(steps):
        n_in, n_out = (sizes[s.layer - 1], sizes[s.layer]) if s.kind in ("affine", "program") else (sizes[s.layer],) * 2
        if s.kind == "affine":
            op = Op(s.name, AFFINE, index=i, n_in=n_in, n_out=n_out, weight_shape=(n_out, n_in),
                    weight_elements=n_in * n_out, macs=n_in * n_out, input_shapes=((n_in,),),
                    output_shapes=((n_out,),))
        else:
            kind = {"program": PROGRAM, "lif": LIF, "readout": READOUT}[s.kind]
            op = Op(s.name, kind, index=i, n_in=n_in, n_out=n_out, input_shapes=((n_in,),), output_shapes=((n_out,),))
        g.add_node(s.name, op=op)
    for u, v in data_edges(snn.n_layers, snn.timesteps):
        n = sizes[u.layer - 1] if u.kind == "program" else sizes[u.layer]
        g.add_edge(u.name, v.name, tensors=[f"{u.name}->{v.name}"], elements=n, bytes=n, param=False)
    return SnnWorkload(name=snn.name, graph=g, source=None if snn.source is None else str(snn.source),
                       meta={"layers": sizes, "timesteps": snn.timesteps}, snn=snn,
                       steps={s.name: s for s in steps})
