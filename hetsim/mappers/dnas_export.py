"""``dnas-export``: replay the channel-wise assignment a DNAS search (ODiMO) made, read from a file.

Three formats are read (:func:`read_export` tells them apart by content):

(a) **hetsim's channel-split JSON** (written by :func:`to_hetsim_json`)::

        {"format": "hetsim-channel-split", "version": 1, "workload": "resnet20_cifar10",
         "layers": [{"name": "conv1", "op": "/stem/stem.0/Conv",            # "op" optional
                     "c_out": 16, "c_in": 3, "kernel": [3, 3], "groups": 1,  # shape, for matching
                     "channels": {"digital": [0, 1, 2, 3], "aimc": [4, 5, ..., 15]}}, ...]}

    ``channels`` maps a device (``"digital"``, ``"aimc"`` - DIANA's two accelerators, whatever their names in
    the platform - or a device name of the platform) to output-channel indices; together they must cover
    ``0..c_out-1`` once. ``c_in``, ``kernel`` and ``groups`` are optional; ``op`` pins the layer to an op by name.

(b) **ODiMO's per-layer summary JSON** (eml-eda/odimo ``models/summarize_model.py``): an object layer name ->
    ``{"op": "CONV", "ch_in", "ch_out", "groups", "k_x", "k_y", "stride", "padding", "in_shape", "out_shape",
    "prev_layer", "digital_ch", "analog_ch"}``; entries whose ``op`` is not ``CONV`` (``ADD``, ``AVG_POOL``) are
    skipped. Channels are assigned as contiguous blocks: ``0..digital_ch-1`` digital, the next ``analog_ch``
    on the AIMC (ODiMO Fig. 3). ``k_x``/``k_y`` are ODiMO's ``kernel_size[0]``/``[1]`` (height, width).

(c) **an ODiMO/PLiNIO PyTorch checkpoint** (``.pth``/``.pth.tar``; read with ``torch.load(weights_only=True)``
    only when ``torch`` is installed: ``pip install 'hetsim[torch]'``) whose ``state_dict`` (or the object
    itself) holds ``<layer>.mix_weight.alpha_weight`` of shape ``[n_accelerators, C_out]``: channel ``c`` goes to
    ``argmax(alpha[:, c])`` (first maximum on ties), index 0 = 8-bit digital, 1 = ternary AIMC (ODiMO Sec.
    III-A: "for each channel, we select the accelerator corresponding to the largest alpha"). A ``[1, C_out]``
    alpha is a layer searched at a single precision: index 0, i.e. digital (ODiMO records which precision in the
    model definition, not in the checkpoint; for the published checkpoints it is 8 bit). ``<layer>.mix_weight.
    conv.weight`` ``(C_out, C_in/groups, k_h, k_w)``, when present, gives the shape to match.

**Matching.** Export layers are matched to the workload's Conv/FC ops (ops with a GEMM view whose type the
digital accelerator runs, in topological order) by order and shape: each export layer, in file order, takes the
first op not yet taken whose ``C_out``, ``C_in`` (or ``C_in/groups``), kernel and ``groups`` equal the values the
layer gives (a Gemm/MatMul is a 1x1 kernel, so ODiMO's 1x1-conv classifier matches an ONNX Gemm). Layers of
equal shape thus keep their order, and a layer may come before an op of another shape (ODiMO lists a ResNet
block's shortcut after its second conv; torchvision's ONNX export puts it before). An export layer that fits no
remaining op, or an op left without a layer, is a :class:`~hetsim.errors.MappingError` naming the first one.
The layers include those whose weights exceed the digital accelerator's weight memory (they may still be split
or run on the AIMC); an export that puts more of a layer's channels on the digital accelerator than its 64 KiB
weight memory holds is a :class:`~hetsim.errors.MappingError` naming the layer, the weight KiB and the capacity.

**Non-contiguous channels.** A search may give a device any set of a layer's channels (a checkpoint's argmax
interleaves them). The schedule's parts are contiguous channel ranges: each device's channels become one block,
the blocks in the order of each device's lowest channel, so a contiguous export is kept as it is. This is ODiMO's
function-preserving reordering (Fig. 3: permute the layer's output channels, and the next layer's input
channels to match); the cost models depend only on the counts, so latency and energy do not change. The
channels as the export gave them are kept in ``schedule.stats["export_channels"]`` (op -> {device: channels},
for the reordered layers only: the part of device ``d`` computes, in order, the channels
``export_channels[op][d]``), and :func:`to_hetsim_json` writes them back, so an export round-trips.
"""

from __future__ import annotations

import io
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.input_files import MAX_MODEL_BYTES, read_input_bytes
from hetsim.mappers._diana import channel_schedule, channel_stats, diana_devices, layers
from hetsim.mappers.base import register
from hetsim.schedule import Schedule

HETSIM_FORMAT = "hetsim-channel-split"
ROLES = ("digital", "aimc")
ORIGINAL_KEY = "export_channels"
"""``Schedule.stats`` key of the channels as the export assigned them, for the layers the import reordered."""
ALPHA_SUFFIX = ".mix_weight.alpha_weight"
WEIGHT_SUFFIX = ".mix_weight.conv.weight"


@dataclass
class ExportLayer:
    """One layer of a DNAS export.

    Attributes:
        name: the layer's name in the export.
        c_out: output channels.
        channels: device or role (``"digital"``/``"aimc"``) -> output-channel indices.
        c_in, c_in_per_group, kernel, groups: shape facts given by the export (``None`` = not given); ``kernel``
            is ``(k_h, k_w)``.
        op: the op name this layer is pinned to (hetsim format only).
    """

    name: str
    c_out: int
    channels: dict[str, list[int]]
    c_in: int | None = None
    c_in_per_group: int | None = None
    kernel: tuple[int, int] | None = None
    groups: int | None = None
    op: str | None = None
    extra: dict = field(default_factory=dict)

    def describe(self) -> str:
        facts = [f"C_out {self.c_out}"]
        if self.c_in is not None:
            facts.append(f"C_in {self.c_in}")
        elif self.c_in_per_group is not None:
            facts.append(f"C_in/groups {self.c_in_per_group}")
        if self.kernel is not None:
            facts.append(f"kernel {self.kernel[0]}x{self.kernel[1]}")
        if self.groups is not None:
            facts.append(f"groups {self.groups}")
        return f"{self.name!r} ({', '.join(facts)})"


# ------------------------------------------------------------------------------------------------ reading


def read_export(path: str | Path) -> tuple[str, list[ExportLayer]]:
    """Read a DNAS export in any of the three formats of the module docstring.

    Returns:
        ``(format, layers)`` with format ``"hetsim"``, ``"odimo-summary"`` or ``"checkpoint"``.

    Raises:
        MappingError: the file is missing or unreadable, in none of the formats, malformed (the message names
            the layer and field), or a checkpoint and ``torch`` is not installed.
    """
    p = Path(path)
    raw = read_input_bytes(p, "dnas-export: export file", MAX_MODEL_BYTES, MappingError)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        doc = None
    if doc is None:
        return "checkpoint", _read_checkpoint(p, raw)
    if isinstance(doc, dict) and isinstance(doc.get("layers"), list):
        return "hetsim", _read_hetsim(p, doc)
    if isinstance(doc, dict) and doc and all(isinstance(v, dict) and "op" in v for v in doc.values()):
        return "odimo-summary", _read_summary(p, doc)
    raise MappingError(
        f"dnas-export: {p} is JSON but neither hetsim's channel-split format (an object with a 'layers' list) nor "
        "ODiMO's layer summary (an object of layers, each with an 'op' field)"
    )


def _int(p: Path, layer: str, key: str, value, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise MappingError(f"dnas-export: {p}: layer {layer!r}: {key!r} must be an integer >= {minimum}, got "
                           f"{value!r}")
    return value


def _read_hetsim(p: Path, doc: dict) -> list[ExportLayer]:
    fmt = doc.get("format", HETSIM_FORMAT)
    if fmt != HETSIM_FORMAT:
        raise MappingError(f"dnas-export: {p}: 'format' is {fmt!r}, expected {HETSIM_FORMAT!r}")
    out = []
    for i, entry in enumerate(doc["layers"]):
        if not isinstance(entry, dict):
            raise MappingError(f"dnas-export: {p}: layers[{i}] is not an object")
        name = str(entry.get("name", entry.get("op", f"layers[{i}]")))
        chans = entry.get("channels")
        if not isinstance(chans, dict) or not chans:
            raise MappingError(f"dnas-export: {p}: layer {name!r} has no 'channels' object (device -> channel list)")
        channels = {}
        for dev, ch in chans.items():
            if not isinstance(ch, list):
                raise MappingError(f"dnas-export: {p}: layer {name!r}: channels of {dev!r} are not a list")
            channels[str(dev)] = [_int(p, name, f"channels.{dev}", c) for c in ch]
        n = sum(len(ch) for ch in channels.values())
        c_out = _int(p, name, "c_out", entry["c_out"], 1) if "c_out" in entry else n
        kernel = entry.get("kernel")
        if kernel is not None:
            if not isinstance(kernel, list) or not 1 <= len(kernel) <= 2:
                raise MappingError(f"dnas-export: {p}: layer {name!r}: 'kernel' must be [k_h, k_w], got {kernel!r}")
            kernel = tuple(_int(p, name, "kernel", k, 1) for k in kernel)
            kernel = kernel if len(kernel) == 2 else (1, kernel[0])
        out.append(ExportLayer(
            name=name, c_out=c_out, channels=channels,
            c_in=_int(p, name, "c_in", entry["c_in"], 1) if entry.get("c_in") is not None else None,
            kernel=kernel,
            groups=_int(p, name, "groups", entry["groups"], 1) if entry.get("groups") is not None else None,
            op=str(entry["op"]) if entry.get("op") is not None else None,
        ))
    return out


def _read_summary(p: Path, doc: dict) -> list[ExportLayer]:
    out = []
    for name, entry in doc.items():
        if str(entry.get("op", "")).upper() not in ("CONV", "FC"):
            continue  # ODiMO also lists ADD and AVG_POOL layers
        for key in ("ch_out", "ch_in", "digital_ch", "analog_ch"):
            if key not in entry:
                raise MappingError(f"dnas-export: {p}: layer {name!r} lacks {key!r}")
        c_out = _int(p, name, "ch_out", entry["ch_out"], 1)
        d = _int(p, name, "digital_ch", entry["digital_ch"])
        a = _int(p, name, "analog_ch", entry["analog_ch"])
        if d + a != c_out:
            raise MappingError(f"dnas-export: {p}: layer {name!r}: digital_ch {d} + analog_ch {a} != ch_out {c_out}")
        kernel = None
        if "k_x" in entry and "k_y" in entry:
            kernel = (_int(p, name, "k_x", entry["k_x"], 1), _int(p, name, "k_y", entry["k_y"], 1))
        out.append(ExportLayer(
            name=name, c_out=c_out, channels={"digital": list(range(d)), "aimc": list(range(d, c_out))},
            c_in=_int(p, name, "ch_in", entry["ch_in"], 1), kernel=kernel,
            groups=_int(p, name, "groups", entry.get("groups", 1), 1),
        ))
    if not out:
        raise MappingError(f"dnas-export: {p}: the summary lists no CONV layer")
    return out


def _read_checkpoint(p: Path, raw: bytes) -> list[ExportLayer]:
    try:
        import torch
    except ImportError:
        raise MappingError(
            f"dnas-export: {p} is not JSON, so it is read as a PyTorch checkpoint, which needs torch: "
            "pip install 'hetsim[torch]'"
        ) from None
    try:
        # map_location keeps every tensor in host memory, whatever device it was saved from
        # weights_only: torch's restricted unpickler (tensors, containers, numbers), never a pickle's own code
        obj = torch.load(io.BytesIO(raw), map_location=lambda storage, _loc: storage, weights_only=True)
    except Exception as err:  # torch raises UnpicklingError, RuntimeError, EOFError, ...
        msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise MappingError(f"dnas-export: {p} is neither JSON nor a readable PyTorch checkpoint: {msg}") from None
    sd = obj.get("state_dict", obj) if isinstance(obj, dict) else None
    if not isinstance(sd, dict):
        raise MappingError(f"dnas-export: {p}: the checkpoint holds no state_dict")
    out = []
    for key, alpha in sd.items():
        if not str(key).endswith(ALPHA_SUFFIX):
            continue
        name = str(key)[: -len(ALPHA_SUFFIX)]
        if getattr(alpha, "ndim", None) != 2:
            raise MappingError(f"dnas-export: {p}: {key} has shape {tuple(getattr(alpha, 'shape', ()))}, expected "
                               "[n_accelerators, C_out]")
        n_acc, c_out = (int(x) for x in alpha.shape)
        if n_acc > len(ROLES):
            raise MappingError(f"dnas-export: {p}: {key} has {n_acc} rows; DIANA has {len(ROLES)} accelerators "
                               "(index 0 = 8-bit digital, 1 = ternary AIMC)")
        choice = alpha.detach().float().cpu().numpy().argmax(axis=0)
        channels = {role: [int(c) for c in range(c_out) if choice[c] == i] for i, role in enumerate(ROLES)}
        layer = ExportLayer(name=name, c_out=c_out, channels=channels)
        w = sd.get(name + WEIGHT_SUFFIX)
        if w is not None and getattr(w, "ndim", 0) >= 2:
            shape = tuple(int(x) for x in w.shape)
            layer.c_in_per_group = shape[1]
            k = shape[2:]
            layer.kernel = (math.prod(k[:-1]) if len(k) > 1 else 1, k[-1] if k else 1)
        out.append(layer)
    if not out:
        raise MappingError(f"dnas-export: {p}: the checkpoint has no '*{ALPHA_SUFFIX}' tensors (not an ODiMO/PLiNIO "
                           "search checkpoint)")
    return out


# ----------------------------------------------------------------------------------------------- matching


def op_shape(costs: CostModel, op: str) -> tuple[int, int, tuple[int, int], int]:
    """``(C_out, C_in, (k_h, k_w), groups)`` of a Conv/FC op; Gemm/MatMul are 1x1 kernels."""
    g = costs.workload.op(op).gemm
    k = g.kernel
    kernel = (math.prod(k[:-1]) if len(k) > 1 else 1, k[-1]) if k else (1, 1)
    return g.c_out, g.c_in, kernel, g.groups


def _describe_op(costs: CostModel, op: str) -> str:
    c_out, c_in, k, groups = op_shape(costs, op)
    return f"{op!r} (C_out {c_out}, C_in {c_in}, kernel {k[0]}x{k[1]}, groups {groups})"


def _fits(layer: ExportLayer, shape: tuple[int, int, tuple[int, int], int]) -> bool:
    c_out, c_in, kernel, groups = shape
    return (layer.c_out == c_out
            and (layer.c_in is None or layer.c_in == c_in)
            and (layer.c_in_per_group is None or layer.c_in_per_group * groups == c_in)
            and (layer.kernel is None or layer.kernel == kernel)
            and (layer.groups is None or layer.groups == groups))


def match_layers(costs: CostModel, ops: list[str], export: list[ExportLayer]) -> dict[str, ExportLayer]:
    """Op -> export layer, by order and shape (module docstring).

    Raises:
        MappingError: naming the first export layer that fits no remaining op, or the first op left over.
    """
    remaining = list(ops)
    matched: dict[str, ExportLayer] = {}
    wl = costs.workload.name
    for i, layer in enumerate(export):
        if layer.op is not None:
            j = remaining.index(layer.op) if layer.op in remaining else None
            if j is None or not _fits(layer, op_shape(costs, layer.op)):
                why = ("is not a Conv/FC op of the workload" if layer.op not in ops else
                       "is taken by an earlier layer" if layer.op in matched else
                       f"has another shape: {_describe_op(costs, layer.op)}")
                raise MappingError(f"dnas-export: export layer {i} {layer.describe()} is pinned to op {layer.op!r}, "
                                   f"which {why}")
        else:
            j = next((k for k, v in enumerate(remaining) if _fits(layer, op_shape(costs, v))), None)
            if j is None:
                nxt = (f"the next unmatched op is {_describe_op(costs, remaining[0])}" if remaining
                       else f"all {len(ops)} Conv/FC ops are already matched")
                raise MappingError(f"dnas-export: export layer {i} {layer.describe()} fits no remaining Conv/FC op of "
                                   f"{wl!r} ({nxt})")
        matched[remaining.pop(j)] = layer
    if remaining:
        raise MappingError(f"dnas-export: op {_describe_op(costs, remaining[0])} of {wl!r} has no layer in the export "
                           f"({len(export)} export layers for {len(ops)} Conv/FC ops)")
    return matched


# ----------------------------------------------------------------------------------------------- writing


def _role_names(costs: CostModel) -> dict[str, str]:
    """Platform device name -> role (``digital``, ``aimc``) for the two channel-splitting accelerators."""
    try:
        digital, aimc = diana_devices(costs, "dnas-export")
    except MappingError:
        return {}
    return {digital: "digital", aimc: "aimc"}


def _layer_channels(costs: CostModel, schedule: Schedule, op: str) -> dict[str, list[int]]:
    """Device -> output channels of ``op``: the channels an imported export gave (``stats[ORIGINAL_KEY]``) when
    the import reordered them and the schedule's parts still hold as many per device, else the parts' ranges."""
    c_out = costs.out_channels(op)
    parts = {p.device: list(range(*(p.channels or (0, c_out)))) for p in schedule.parts[op]}
    given = schedule.stats.get(ORIGINAL_KEY, {}).get(op)
    if isinstance(given, dict) and {d: len(ch) for d, ch in given.items()} == {d: len(ch) for d, ch in parts.items()}:
        return {d: [int(c) for c in ch] for d, ch in given.items()}
    return parts


def _export_ops(costs: CostModel) -> list[str]:
    roles = {r: n for n, r in _role_names(costs).items()}
    if "digital" in roles:
        return layers(costs, roles["digital"])
    return [v for v in costs.workload.topological_order() if costs.workload.op(v).gemm is not None]


def to_hetsim_json(costs: CostModel, schedule: Schedule) -> dict:
    """hetsim's channel-split JSON (format (a)) of ``schedule``'s Conv/FC layers; the DIANA accelerators are
    written as the roles ``digital``/``aimc``, other devices by name."""
    roles = _role_names(costs)
    out = []
    for v in _export_ops(costs):
        c_out, c_in, kernel, groups = op_shape(costs, v)
        chans = {roles.get(d, d): ch for d, ch in _layer_channels(costs, schedule, v).items()}
        out.append({"name": v, "op": v, "c_out": c_out, "c_in": c_in, "kernel": list(kernel), "groups": groups,
                    "channels": chans})
    return {"format": HETSIM_FORMAT, "version": 1, "workload": costs.workload.name, "mapper": schedule.mapper,
            "layers": out}


def to_odimo_summary(costs: CostModel, schedule: Schedule) -> dict:
    """ODiMO's per-layer summary JSON (format (b)) of ``schedule``'s Conv/FC layers (``op: CONV``, digital and
    analog channel counts; ``stride``, ``padding``, ``in_shape``, ``out_shape`` and ``prev_layer`` for
    completeness: padding assumes symmetric padding, ``prev_layer`` lists the nearest Conv/FC ancestors).

    Raises:
        MappingError: a layer has channels on a device that is neither DIANA accelerator.
    """
    roles = _role_names(costs)
    ops = _export_ops(costs)
    layer_set = set(ops)
    g = costs.workload.graph
    out = {}
    for v in ops:
        c_out, c_in, kernel, groups = op_shape(costs, v)
        counts = {"digital": 0, "aimc": 0}
        for d, ch in _layer_channels(costs, schedule, v).items():
            if d not in roles:
                raise MappingError(f"to_odimo_summary: layer {v!r} has channels on {d!r}, which is not a DIANA "
                                   "accelerator (ODiMO's summary knows only digital and analog channels)")
            counts[roles[d]] += len(ch)
        op = costs.workload.op(v)
        gv = op.gemm
        out_shape = list(gv.out_spatial) or [1, 1]
        in_shape = list(op.input_shapes[0][2:]) if op.input_shapes and len(op.input_shapes[0]) > 2 else [1, 1]
        stride = list(gv.stride) or [1, 1]
        # symmetric padding p with o = floor((i + 2p - k) / s) + 1: the smallest p, ceil(((o-1)*s + k - i) / 2)
        padding = [max(0, ((o - 1) * s + k - i + 1) // 2) for o, s, k, i in zip(out_shape, stride, kernel, in_shape,
                                                                                   strict=False)]
        prev, seen, stack = [], set(), list(g.predecessors(v))
        while stack:
            u = stack.pop(0)
            if u in seen:
                continue
            seen.add(u)
            if u in layer_set:
                prev.append(u)
            else:
                stack.extend(g.predecessors(u))
        out[v] = {"op": "CONV", "ch_in": c_in, "ch_out": c_out, "groups": groups, "k_x": kernel[0], "k_y": kernel[1],
                  "stride": stride, "padding": padding, "in_shape": in_shape, "out_shape": out_shape,
                  "prev_layer": prev or [None], "digital_ch": counts["digital"], "analog_ch": counts["aimc"]}
    return out


# ------------------------------------------------------------------------------------------------- mapper


@register("dnas-export")
class DnasExport:
    """Replay the channel-wise accelerator assignment of a DNAS search (ODiMO) read from ``path`` (formats,
    layer matching and the reordering of non-contiguous channels: module docstring). Each Conv/FC layer's
    channels go where the export puts them (a channel split when on both accelerators); other ops on the host.

    Source: M. Risso et al., ISLPED 2023, arXiv:2306.05060 (ODiMO), Sec. III-A; export formats of the
    authors' code (eml-eda/odimo).

    Args:
        path: the export file (CLI: ``--export FILE``).
    """

    def __init__(self, path: str | Path | None = None):
        self.path = path

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: no ``path``; the platform has no DIANA digital + AIMC pair; the export is unreadable or
                does not fit the workload (naming the first layer that does not fit); a layer's channels do not
                partition ``0..C_out-1``, or sit on a device that cannot run them (its kind does not run the layer,
                or they exceed a per-op capacity: DIANA's 64 KiB digital weight memory)."""
        if self.path is None:
            raise MappingError("dnas-export needs the export file: --export FILE (hetsim JSON, ODiMO summary JSON or "
                               "a PyTorch checkpoint)")
        t0 = time.perf_counter()
        digital, aimc = diana_devices(costs, self.name)
        fmt, export = read_export(self.path)
        matched = match_layers(costs, layers(costs, digital), export)
        role_dev = {"digital": digital, "aimc": aimc, "analog": aimc}
        chans: dict[str, dict[str, list[int]]] = {}
        original: dict[str, dict[str, list[int]]] = {}
        for v, layer in matched.items():
            parts: dict[str, list[int]] = {}
            for key, ch in layer.channels.items():
                dev = role_dev.get(key, key)
                if dev not in costs.platform.devices:
                    raise MappingError(f"dnas-export: layer {layer.name!r} names device {key!r}, which is neither "
                                       f"'digital', 'aimc' nor a device of {costs.platform.name!r}")
                parts.setdefault(dev, []).extend(ch)
            seen = sorted(c for ch in parts.values() for c in ch)
            if seen != list(range(layer.c_out)):
                raise MappingError(f"dnas-export: layer {layer.name!r}: its channel lists do not cover "
                                   f"0..{layer.c_out - 1} exactly once")
            given = {d: sorted(ch) for d, ch in parts.items() if ch}
            chans[v] = dict(sorted(given.items(), key=lambda dc: dc[1][0]))
            if any(ch != list(range(ch[0], ch[0] + len(ch))) for ch in given.values()):
                original[v] = chans[v]
        stats = {"status": "imported", "format": fmt, "export": str(self.path), "export_layers": len(export),
                 ORIGINAL_KEY: original}
        s = channel_schedule(costs, self.name, chans, stats)
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
