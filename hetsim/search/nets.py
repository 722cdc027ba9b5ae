"""The searchable networks of ``hetsim search`` (ODiMO, Sec. III): Conv/FC layers with a fake-quantised weight copy
per DIANA accelerator format and per-channel architecture parameters.

Every Conv/FC layer is a :class:`QLayer` and every activation a :class:`ActQ`. A layer has four modes:

* ``float``: full-precision weights and BatchNorm (the warm-up, ODiMO's pre-trained floating-point network);
* ``search``: BatchNorm folded into the weights (ODiMO Sec. III-B), the weights fake-quantised twice with
  ODiMO Eq. 5 (``Q(W) = s * round(clamp(W / s, -1, 1) * n) / n``, ``n = 2^(b-1) - 1``, trainable scale ``s =
  exp(log_s)``: b = 8 per layer for the digital accelerator, b = 2, i.e. ternary, per channel for the AIMC, as in
  the authors' code), and combined per output channel ``c`` by ODiMO Eq. 1: ``W_c = sum_i softmax(alpha_c /
  tau)_i * Q_i(W_c)``; activations are fake-quantised on 7 bits (the worst of the two formats, Sec. III-B);
* ``fixed``: one accelerator per channel (``assign``: 0 = digital 8-bit, 1 = AIMC ternary), exact formats for the
  fine-tuning: activations stored on 8 bits, the AIMC channels reading their input and producing their output on
  7 bits (its D/A and A/D converters: "effectively truncating the LSB", Sec. III-B);
* ``export``: the weights of ``fixed`` frozen into constants and activations as a clip, so that the ONNX export
  is a plain Conv/Gemm network (no fake-quantisation ops, which hetsim would price as host ops).

Depthwise/grouped layers have only the 8-bit copy (DIANA runs them on the digital accelerator only).

Tensor shapes are PyTorch's (NCHW); alpha is ``[2, C_out]`` (row 0 digital, row 1 AIMC: the layout of the
ODiMO checkpoints ``dnas-export`` reads).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

DIGITAL, AIMC = 0, 1
MODES = ("float", "search", "fixed", "export")


def round_ste(x: torch.Tensor) -> torch.Tensor:
    """``round(x)`` with the straight-through gradient (identity)."""
    return x + (torch.round(x) - x).detach()


def floor_ste(x: torch.Tensor) -> torch.Tensor:
    """``floor(x)`` with the straight-through gradient (identity)."""
    return x + (torch.floor(x) - x).detach()


def fake_quant_weight(w: torch.Tensor, log_s: torch.Tensor, bits: int) -> torch.Tensor:
    """ODiMO Eq. 5: ``s * round(clamp(w / s, -1, 1) * n) / n`` with ``n = 2^(bits-1) - 1`` (bits = 2: ternary) and
    ``s = exp(log_s)`` (one per layer, or one per output channel: ``log_s`` of shape ``[C_out]``)."""
    n = 2 ** (bits - 1) - 1
    s = torch.exp(log_s).view(-1, *([1] * (w.dim() - 1)))
    return round_ste(torch.clamp(w / s, -1.0, 1.0) * n) / n * s


class ActQ(nn.Module):
    """ReLU activation fake-quantised to ``bits`` unsigned bits on ``[0, s]`` with a trainable ``s = exp(log_s)``
    (PACT-like, as the authors' ``FQActQuantization``; init ``s = 6``). ``bits = None``: plain ReLU.

    Input and output: any shape.
    """

    def __init__(self, init_scale: float = 6.0, trainable: bool = True, relu: bool = True):
        super().__init__()
        self.log_s = nn.Parameter(torch.tensor(math.log(init_scale)), requires_grad=trainable)
        self.bits: int | None = None
        self.relu = relu
        self.mode = "float"

    def step(self, bits: int) -> torch.Tensor:
        """The quantisation step of ``bits`` bits: ``s / (2^bits - 1)``."""
        return torch.exp(self.log_s) / (2 ** bits - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.relu:
            x = F.relu(x)
        if self.mode == "export":
            return torch.clamp(x, 0.0, float(torch.exp(self.log_s)))
        if self.bits is None:
            return x
        s = torch.exp(self.log_s)
        n = 2 ** self.bits - 1
        return round_ste(torch.clamp(x / s, 0.0, 1.0) * n) / n * s

    def truncate(self, x: torch.Tensor, bits: int) -> torch.Tensor:
        """``x`` (an output of this quantiser on ``self.bits`` bits) with its least significant bits dropped to keep
        ``bits``: the AIMC's D/A converters read the 8-bit activations on 7 bits."""
        if self.bits is None or bits >= self.bits:
            return x
        step = self.step(self.bits) * 2 ** (self.bits - bits)
        return floor_ste(x / step + 1e-6) * step


class QLayer(nn.Module):
    """A Conv2d (or, with ``linear=True``, a Linear on ``[N, C_in]``) whose output channels are searched between
    DIANA's two accelerators (module docstring).

    Args:
        c_in, c_out, k, stride, groups: the convolution (padding ``k // 2``).
        linear: a fully connected layer (``k = 1``).
        bn: a BatchNorm after it during the warm-up (folded by :meth:`fold_bn`).
    """

    def __init__(self, c_in: int, c_out: int, k: int = 1, stride: int = 1, groups: int = 1, linear: bool = False,
                 bn: bool = True):
        super().__init__()
        self.c_in, self.c_out, self.k, self.stride, self.groups, self.linear = c_in, c_out, k, stride, groups, linear
        shape = (c_out, c_in) if linear else (c_out, c_in // groups, k, k)
        self.weight = nn.Parameter(torch.empty(shape))
        nn.init.kaiming_normal_(self.weight, nonlinearity="relu")
        self.bias = nn.Parameter(torch.zeros(c_out))
        self.bn = nn.BatchNorm2d(c_out) if bn and not linear else None
        self.searchable = groups == 1
        self.alpha = nn.Parameter(torch.full((2 if self.searchable else 1, c_out), 0.01))
        self.log_s8 = nn.Parameter(torch.zeros(1))
        self.log_s2 = nn.Parameter(torch.zeros(c_out))
        self.log_s_out7 = nn.Parameter(torch.zeros(1))
        self.register_buffer("assign", torch.zeros(c_out, dtype=torch.long))
        self.frozen = torch.zeros(0)  # a plain tensor, not state: the export's constants
        self.mode = "float"
        self.tau = 1.0
        self.in_q: ActQ | None = None  # the quantiser of this layer's input (for the AIMC's 7-bit D/A)
        self._out7_ready = False

    # ------------------------------------------------------------------------------------------ weights

    @torch.no_grad()
    def fold_bn(self) -> None:
        """Fold the BatchNorm into the weights and bias (ODiMO Sec. III-B: DIANA has no BatchNorm) and initialise
        the scales: 8-bit per layer at ``max |W|``, ternary per channel so that the three levels are about
        equiprobable for Gaussian weights (threshold ``s / 2 = 0.43 std``, the authors' initialisation)."""
        if self.bn is not None:
            bn = self.bn
            g = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            self.weight.mul_(g.view(-1, *([1] * (self.weight.dim() - 1))))
            self.bias.copy_((self.bias - bn.running_mean) * g + bn.bias)
            self.bn = None
        w = self.weight.reshape(self.c_out, -1)
        self.log_s8.fill_(math.log(float(w.abs().max()) + 1e-12))
        self.log_s2.copy_(torch.log(0.86 * w.std(dim=1, unbiased=False) + 1e-12))

    def probs(self) -> torch.Tensor:
        """``softmax(alpha / tau)`` over the accelerators, ``[n_acc, C_out]`` (ODiMO Eq. 1)."""
        return F.softmax(self.alpha / self.tau, dim=0)

    def quantised(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The 8-bit and the ternary fake-quantised copies of the weights (``None`` for a digital-only layer)."""
        w8 = fake_quant_weight(self.weight, self.log_s8, 8)
        return w8, (fake_quant_weight(self.weight, self.log_s2, 2) if self.searchable else None)

    def effective_weight(self) -> torch.Tensor:
        """The weights the layer computes with in its mode (module docstring)."""
        if self.mode == "float":
            return self.weight
        if self.mode == "export":
            return self.frozen
        w8, w2 = self.quantised()
        if w2 is None:
            return w8
        shape = (-1, *([1] * (self.weight.dim() - 1)))
        if self.mode == "search":
            p = self.probs()
            return p[DIGITAL].view(shape) * w8 + p[AIMC].view(shape) * w2
        return torch.where((self.assign == DIGITAL).view(shape), w8, w2)

    @torch.no_grad()
    def freeze(self) -> None:
        """Store the exact-format weights (``fixed`` mode) as the constants of the ``export`` mode."""
        mode, self.mode = self.mode, "fixed"
        self.frozen = self.effective_weight().detach().clone()
        self.mode = mode

    # ------------------------------------------------------------------------------------------ forward

    def _op(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if self.linear:
            return F.linear(x, w, self.bias)
        return F.conv2d(x, w, self.bias, self.stride, self.k // 2, 1, self.groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.effective_weight()
        if self.mode != "fixed" or not self.searchable or not bool((self.assign == AIMC).any()):
            y = self._op(x, w)
            return self.bn(y) if self.bn is not None else y
        # exact formats: the AIMC channels read 7-bit inputs and produce 7-bit outputs
        x7 = self.in_q.truncate(x, 7) if self.in_q is not None else x
        y8, y7 = self._op(x, w), self._op(x7, w)
        shape = (1, -1) + (1,) * (y8.dim() - 2)
        if not self._out7_ready:  # calibrate the AIMC output range on the first batch
            with torch.no_grad():
                self.log_s_out7.fill_(math.log(float(y7.abs().max()) + 1e-6))
            self._out7_ready = True
        n = 2 ** 6 - 1
        s = torch.exp(self.log_s_out7)
        y7 = round_ste(torch.clamp(y7 / s, -1.0, 1.0) * n) / n * s
        return torch.where((self.assign == AIMC).view(shape), y7, y8)

    # --------------------------------------------------------------------------------------- reordering

    @torch.no_grad()
    def permute_outputs(self, perm: torch.Tensor) -> None:
        """Reorder the output channels (weights, bias, alpha, per-channel scales, assignment) by ``perm``."""
        for name in ("weight", "bias", "log_s2"):
            getattr(self, name).copy_(getattr(self, name)[perm])
        self.alpha.copy_(self.alpha[:, perm])
        self.assign.copy_(self.assign[perm])
        if self.frozen.numel():
            self.frozen = self.frozen[perm].clone()

    @torch.no_grad()
    def permute_inputs(self, perm: torch.Tensor) -> None:
        """Reorder the input channels of the weights by ``perm`` (the producer's outputs were permuted)."""
        self.weight.copy_(self.weight[:, perm])
        if self.frozen.numel():
            self.frozen = self.frozen[:, perm].clone()


class Block(nn.Module):
    """A ResNet basic block: ``act(conv2(act(conv1(x))) + shortcut(x))``, the shortcut a 1x1 conv where the shape
    changes (as ODiMO's ResNet-20)."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = QLayer(c_in, c_out, 3, stride)
        self.act1 = ActQ()
        self.conv2 = QLayer(c_out, c_out, 3)
        self.shortcut = QLayer(c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else None
        self.act2 = ActQ()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(self.act1(self.conv1(x)))
        return self.act2(y + (x if self.shortcut is None else self.shortcut(x)))


class ResNet(nn.Module):
    """A CIFAR-style ResNet: 3x3 stem, stages of basic blocks (the first block of each later stage halves the
    resolution), global average pool, FC.

    Args:
        in_ch: input channels; widths: channels per stage; blocks: blocks per stage; num_classes: outputs.

    Input ``[N, in_ch, H, W]`` in ``[0, 1]``, output logits ``[N, num_classes]``.
    """

    def __init__(self, in_ch: int, widths: tuple[int, ...], blocks: tuple[int, ...], num_classes: int):
        super().__init__()
        self.in_q = ActQ(1.0, trainable=False, relu=False)  # the input image on 8 bits, range [0, 1]
        self.stem = QLayer(in_ch, widths[0], 3)
        self.stem_act = ActQ()
        layers, c = [], widths[0]
        for i, (w, n) in enumerate(zip(widths, blocks, strict=True)):
            for j in range(n):
                layers.append(Block(c, w, 2 if (i > 0 and j == 0) else 1))
                c = w
        self.blocks = nn.Sequential(*layers)
        self.fc = QLayer(c, num_classes, linear=True, bn=False)
        # each layer's input quantiser (the AIMC reads it on 7 bits)
        self.stem.in_q = self.in_q
        prev = self.stem_act
        for b in self.blocks:
            b.conv1.in_q = prev
            b.conv2.in_q = b.act1
            if b.shortcut is not None:
                b.shortcut.in_q = prev
            prev = b.act2
        self.fc.in_q = None  # after the average pool the input is no longer on the quantiser's grid

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem_act(self.stem(self.in_q(x)))
        x = self.blocks(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)

    def qlayers(self) -> list[tuple[str, QLayer]]:
        """The Conv/FC layers with their module names, in forward order."""
        return [(n, m) for n, m in self.named_modules() if isinstance(m, QLayer)]

    def chains(self) -> list[tuple[QLayer, QLayer]]:
        """``(producer, consumer)`` pairs where the producer's output feeds only the consumer (through an
        activation): the layers whose output channels can be reordered without changing the function (ODiMO
        Fig. 3). Outputs that join a residual sum (stem, a block's second conv, its shortcut) or are the logits
        are not reordered."""
        return [(b.conv1, b.conv2) for b in self.blocks]

    def reset_calibration(self) -> None:
        """Calibrate the AIMC output ranges again on the next ``fixed`` forward (after loading another state)."""
        for _, m in self.qlayers():
            m._out7_ready = False

    def set_mode(self, mode: str, act_bits: int | None = None, tau: float = 1.0) -> None:
        """Put every layer in ``mode`` (module docstring) and every activation on ``act_bits`` bits."""
        assert mode in MODES
        for m in self.modules():
            if isinstance(m, QLayer):
                m.mode, m.tau = mode, tau
            elif isinstance(m, ActQ):
                m.mode = mode
                if m is not self.in_q:
                    m.bits = act_bits
        self.in_q.bits = None if mode == "float" else 8


NETS = {
    "digits-resnet": dict(in_ch=1, widths=(16, 32), blocks=(1, 1), num_classes=10),
    "resnet20": dict(in_ch=3, widths=(16, 32, 64), blocks=(3, 3, 3), num_classes=10),
}
"""The networks ``--model`` names: a small residual CNN for the 8x8 digits (6 Conv + 1 FC layers) and ResNet-20
for CIFAR-10 (ODiMO's network: 21 Conv + 1 FC)."""


def build(name: str, in_ch: int | None = None, num_classes: int | None = None) -> ResNet:
    """The network ``name`` of :data:`NETS`."""
    kw = dict(NETS[name])
    if in_ch is not None:
        kw["in_ch"] = in_ch
    if num_classes is not None:
        kw["num_classes"] = num_classes
    return ResNet(**kw)
