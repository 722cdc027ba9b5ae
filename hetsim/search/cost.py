"""The search's cost regulariser: hetsim's own DIANA models (``hetsim/devices/diana.py``) evaluated by torch on
relaxed channel counts (ODiMO Eq. 3 and 4).

Each Conv/FC layer of the network is matched to its op in the network's ONNX export (by order and shape, as
``dnas-export`` matches), which gives the :class:`~hetsim.devices.diana.LayerGeometry` the simulator uses. For a
layer with ``p = softmax(alpha / tau)`` the relaxed channel counts are ``n_d = sum_c p[0, c]`` and ``n_a =
sum_c p[1, c]``; the part latencies are the devices' ``cycles_xp(geometry, n, TORCH_OPS) / F`` and

* latency (Eq. 3): ``M = max(L_d, L_a)``, in training a smooth max: ``softmax-mean`` (default, the ODiMO code's
  ``dot(softmax(L), L)`` over the two parts' cycle counts, i.e. ``sum_i softmax(L / t)_i L_i`` with ``t`` = 1
  cycle) or ``logsumexp`` (hetsim's earlier form, ``t * logsumexp(L / t)`` with ``t`` 2 % of the layer's
  all-8bit latency);
* energy (Eq. 4): :meth:`~hetsim.costs.CostModel.layer_energy` of the two parts over the span ``M``; with
  ``softmax-mean`` the span is ``L_d + L_a - m``, ``m`` the softmin-weighted mean (the code's smooth overlap
  ``min(L_d, L_a)``; ``max + min = L_d + L_a`` exactly, so this is the code's ``p_hyb m + p_ana (L_a - m) + p_dig
  (L_d - m)``), with ``logsumexp`` ``M`` as for latency.

``L_R`` is the sum over layers, in the code's units (cycles; mW x cycles) with ``normalise = "none"`` (default)
or divided by the all-8bit cost with ``normalise = "all-8bit"`` (:mod:`hetsim.search.recipe`).

At integer counts with the exact max these equal the simulator's per-layer numbers (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hetsim.costs import CostModel
from hetsim.devices.diana import LayerGeometry, layer_geometry
from hetsim.mappers._diana import diana_devices, layers
from hetsim.mappers.dnas_export import ExportLayer, match_layers
from hetsim.search.nets import AIMC, DIGITAL, QLayer, ResNet

SMOOTH_FRACTION = 0.02
"""The smooth max's temperature, as a fraction of the layer's all-8bit latency."""


class _CeilDivSTE(torch.autograd.Function):
    """``floor((x + n - 1) / n)`` forward, identity gradient (the ODiMO code's ``FloorSTE``)."""

    @staticmethod
    def forward(ctx, x, n):
        return torch.floor((x + n - 1) / n)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _GateSTE(torch.autograd.Function):
    """``x >= 1`` forward; gradient passed only for ``0 < x < 1`` (a part appearing or vanishing; the ODiMO code's
    ``GateSTE`` masks the same range)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x >= 1).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ((x > 0) & (x < 1)).to(grad.dtype)


class _TorchOps:
    """The torch evaluator of the DIANA formulas (``hetsim.devices.diana.NUMPY_OPS`` is the numpy one)."""

    @staticmethod
    def ceil_div(x, n):
        if torch.is_tensor(x):
            return _CeilDivSTE.apply(x, n)
        return float((x + n - 1) // n)

    @staticmethod
    def gate(x):
        return _GateSTE.apply(x) if torch.is_tensor(x) else float(x >= 1)

    @staticmethod
    def where(cond, a, b):
        if torch.is_tensor(cond):
            return torch.where(cond, torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64))
        return a if cond else b

    @staticmethod
    def maximum(a, b):
        if torch.is_tensor(a):
            return torch.clamp_min(a, b) if not torch.is_tensor(b) else torch.maximum(a, b)
        return max(a, b)


TORCH_OPS = _TorchOps()


@dataclass
class LayerCost:
    """One layer's geometry and op, for the regulariser."""

    name: str
    op: str
    geometry: LayerGeometry
    layer: QLayer
    ref_latency_s: float  # all-8bit


def onnx_bytes(net: ResNet, input_shape: tuple[int, ...]) -> bytes:
    """The network in ``export`` mode as ONNX (legacy exporter, opset 13; input ``input``, output ``logits``)."""
    import io
    import warnings

    was = [(m, m.mode) for m in net.modules() if hasattr(m, "mode")]
    for _, m in net.qlayers():
        m.freeze()
    net.set_mode("export")
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.zeros(input_shape), buf, dynamo=False, opset_version=13,
                          input_names=["input"], output_names=["logits"])
    for m, mode in was:
        m.mode = mode
    return buf.getvalue()


class Regulariser:
    """``L_R`` of ODiMO Eq. 2 for ``net`` on the platform of ``costs`` (``costs.workload`` = the net's ONNX).

    Raises:
        MappingError: the platform has no DIANA digital + AIMC pair, or a layer matches no op.
    """

    def __init__(self, net: ResNet, costs: CostModel, objective: str, smooth_max: str = "softmax-mean",
                 normalise: str = "none"):
        self.costs, self.objective = costs, objective
        self.smooth_max, self.normalise = smooth_max, normalise
        self.digital, self.aimc = diana_devices(costs, "search")
        self.dev_d, self.dev_a = costs.devices[self.digital], costs.devices[self.aimc]
        export = []
        for name, m in net.qlayers():
            kernel = (1, 1) if m.linear else (m.k, m.k)
            export.append(ExportLayer(name=name, c_out=m.c_out, channels={}, c_in=m.c_in, kernel=kernel,
                                      groups=m.groups))
        matched = match_layers(costs, layers(costs, self.digital), export)
        by_name = {lay.name: op for op, lay in matched.items()}
        self.layers = []
        for name, m in net.qlayers():
            op = by_name[name]
            g = layer_geometry(costs.workload.op(op))
            ref = float(self.dev_d.cycles_xp(g)) / (self.dev_d.clock_mhz * 1e6)
            self.layers.append(LayerCost(name, op, g, m, ref))
        self.reference = None
        self.reference = float(self.total(counts={lc.name: lc.layer.c_out for lc in self.layers}, exact=True))

    def part_seconds(self, lc: LayerCost, n_d, n_a):
        """``(L_d, L_a)`` in seconds for ``n_d`` digital and ``n_a`` AIMC channels (tensors or numbers)."""
        f_d, f_a = self.dev_d.clock_mhz * 1e6, self.dev_a.clock_mhz * 1e6
        l_d = self.dev_d.cycles_xp(lc.geometry, n_d, TORCH_OPS) / f_d
        l_a = self.dev_a.cycles_xp(lc.geometry, n_a, TORCH_OPS) / f_a if lc.layer.searchable else 0.0
        return l_d, l_a

    def layer_cost(self, lc: LayerCost, n_d, n_a, exact: bool):
        """The layer's latency (s) or energy (J) for relaxed or integer counts; ``exact``: the true max."""
        l_d, l_a = self.part_seconds(lc, n_d, n_a)
        l_d = torch.as_tensor(l_d, dtype=torch.float64)
        l_a = torch.as_tensor(l_a, dtype=torch.float64)
        if exact:
            m = torch.maximum(l_d, l_a)
        elif self.smooth_max == "logsumexp":
            t = SMOOTH_FRACTION * lc.ref_latency_s
            m = t * torch.logsumexp(torch.stack([l_d, l_a]) / t, dim=0)
        else:  # the ODiMO code's softmax-weighted mean over cycle counts (temperature 1 cycle)
            parts = torch.stack([l_d, l_a])
            cyc = parts * self.dev_d.clock_mhz * 1e6
            if self.objective == "latency":
                m = torch.dot(torch.softmax(cyc, dim=0), parts)
            else:
                m = l_d + l_a - torch.dot(torch.softmax(-cyc, dim=0), parts)
        if self.objective == "latency":
            return m
        return self.costs.layer_energy({self.digital: l_d, self.aimc: l_a}, span_s=m, xp=TORCH_OPS)

    def counts(self, lc: LayerCost, relaxed: bool):
        """``(n_d, n_a)``: relaxed (``softmax`` sums, float64 tensors) or discrete (argmax)."""
        m = lc.layer
        if not m.searchable:
            return torch.tensor(float(m.c_out), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64)
        if relaxed:
            p = m.probs().to(torch.float64)
            return p[DIGITAL].sum(), p[AIMC].sum()
        n_a = int((m.assign == AIMC).sum())
        return torch.tensor(float(m.c_out - n_a), dtype=torch.float64), torch.tensor(float(n_a), dtype=torch.float64)

    def total(self, counts: dict[str, int] | None = None, relaxed: bool = False, exact: bool = True):
        """The network's cost (sum over layers; seconds or joules), from ``counts`` (layer -> digital channels),
        the relaxed alphas, or the layers' assignments."""
        tot = torch.tensor(0.0, dtype=torch.float64)
        for lc in self.layers:
            if counts is not None:
                n_d = torch.tensor(float(counts[lc.name]), dtype=torch.float64)
                n_a = torch.tensor(float(lc.layer.c_out - counts[lc.name] if lc.layer.searchable else 0),
                                   dtype=torch.float64)
            else:
                n_d, n_a = self.counts(lc, relaxed)
            tot = tot + self.layer_cost(lc, n_d, n_a, exact)
        return tot

    @property
    def unit(self) -> float:
        """Factor from seconds (latency) or joules (energy) to the regulariser's units: the ODiMO code's cycles at
        the accelerators' clock, or mW x cycles (``normalise = "none"``); ``1 / L_R(all-8bit)`` (``all-8bit``)."""
        if self.normalise == "all-8bit":
            return 1.0 / self.reference
        f = self.dev_d.clock_mhz * 1e6
        return f if self.objective == "latency" else 1e3 * f

    def loss(self):
        """``L_R`` in the units of :attr:`unit` (``lambda`` multiplies it)."""
        return self.total(relaxed=True, exact=False) * self.unit

    def relative(self) -> float:
        """The relaxed cost over the all-8bit cost (for progress lines, whatever the normalisation)."""
        with torch.no_grad():
            return float(self.total(relaxed=True, exact=False) / self.reference)

    def model_numbers(self) -> tuple[float, float]:
        """``(latency_s, energy_j)`` of the discrete assignment, layer-sequential (ODiMO's model)."""
        obj = self.objective
        try:
            self.objective = "latency"
            lat = float(self.total())
            self.objective = "energy"
            en = float(self.total())
        finally:
            self.objective = obj
        return lat, en
