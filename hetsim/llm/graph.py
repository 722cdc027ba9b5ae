"""The op graph of a decoder-only transformer (:class:`~hetsim.llm.spec.LlmSpec`): a prefill of ``P`` tokens, or
one decode step at context length ``L``, as a :class:`~hetsim.workload.op.Workload` of kind ``dag`` (structure
only, no weights).

Every op is what :func:`hetsim.workload.onnx_import.load_onnx` makes of the ONNX node a runtime would run (ONNX
operator types, the same shapes, ``n_in``/``n_out``, bytes, ``weight_tensors``, MACs and GEMM views, constant ops
folded, parameter edges), so every device model, mapper and fusion rule takes it unchanged. The layout follows
the GPT-2 graphs of ``workloads/scripts/transformers.py``: for GPT-2 small the two graphs equal
``workloads/gpt2_small_prefill.onnx`` (P = 128) and ``workloads/gpt2_small_decode.onnx`` (L = 128) op for op.

One block (``h.<i>.``), ``s`` new tokens (``P``, or 1 in a decode step), ``T`` keys (``P``, or ``L + 1``)::

    ln_1        LayerNormalization | RMSNormalization                       [1, s, d]
    attn.qkv    MatMul (+ Add bias) + Split            (fused_qkv)
    attn.q_proj, k_proj, v_proj  MatMul (+ Add bias)   (otherwise)
    attn.q/k/v  Reshape [1, s, n, dh] + Transpose      -> [1, n, s, dh]  (n = heads, or kv_heads for k, v)
    attn.q/k.rope   RotaryEmbedding                    (rotary positions)
    attn.q.group    Reshape [1, Hkv, G, s, dh]         (grouped-query attention, G = heads / kv_heads > 1)
    attn.k_cache, v_cache  Concat(past, new) on the sequence axis     (decode: the cache grows by one token)
    attn.k_T    Transpose -> [1, Hkv, dh, T]  (+ Unsqueeze to [1, Hkv, 1, dh, T] with G > 1; v likewise)
    attn.scores MatMul -> [1, H, s, T]; attn.scale Mul; attn.mask Add (prefill: the causal mask); Softmax
    attn.context MatMul -> [1, H, s, dh]; attn.merge_T Transpose, attn.merge Reshape -> [1, s, H dh]
    attn.proj   MatMul (+ Add bias); residual_1 Add; ln_2
    mlp         fc MatMul (+ Add) -> Gelu -> proj MatMul (+ Add)           (gelu)
                gate, up MatMul -> act Sigmoid, Mul (SiLU) -> gate_up Mul -> down MatMul   (swiglu)
    residual_2  Add

Around the blocks: ``wte`` Gather (the token embedding), with learned positions ``wpe`` Gather (constant
positions: folded) and ``embed`` Add; ``ln_f``; in prefill ``last_token`` Gather (only the last position's
logits are needed to generate); ``lm_head`` MatMul (tied: on ``lm_head.tied_T``, a folded Transpose of ``wte``).

Precision: the graph is built for one device class (``host``, the platform's host CPU, by default): an op with a
constant weight matrix carries that class's weight precision as its ``bits`` (what the CPU roofline multiplies and
reads its weights at), activations are fp32 when the weights are, fp16 otherwise (weight-only quantisation computes
in fp16: ours, assumed), the KV cache at ``precision.kv_cache``, token ids int64. An NPU or CIM device costs every
op at its own ``element_bits``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx

from hetsim.errors import WorkloadError
from hetsim.llm.spec import LlmSpec, kv_cache_bits, kv_cache_bytes, precision_bits
from hetsim.workload.op import GemmView, Op, Workload

PHASES = ("prefill", "decode")
_DTYPES = {64: "int64", 32: "float32", 16: "float16", 8: "int8", 4: "int4"}


@dataclass(frozen=True)
class _T:
    """A tensor of the graph under construction: its shape, bits per element, producer (an op, or ``None`` for an
    initializer or a graph input) and whether it is constant (an initializer or a folded op's output)."""

    name: str
    shape: tuple[int, ...]
    bits: int
    const: bool
    producer: str | None = None

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return -(-self.elements * self.bits // 8)


@dataclass
class _Graph:
    """The op DAG being built, op by op, with the importer's rules (:func:`hetsim.workload.onnx_import.load_onnx`)."""

    name: str
    g: nx.DiGraph = field(default_factory=nx.DiGraph)
    inputs: list[_T] = field(default_factory=list)
    readers: dict[str, list[str]] = field(default_factory=dict)
    outputs: dict[str, _T] = field(default_factory=dict)

    def const(self, name: str, shape: tuple[int, ...], bits: int = 64) -> _T:
        return _T(name, tuple(shape), bits, True)

    def input(self, name: str, shape: tuple[int, ...], bits: int) -> _T:
        t = _T(name, tuple(shape), bits, False)
        self.inputs.append(t)
        return t

    def op(self, op_type: str, name: str, ins: list[_T], shapes: list[tuple[int, ...]], bits: int | None = None,
           outs: list[str] | None = None, op_bits: int | None = None) -> list[_T]:
        """Add one op reading ``ins``, writing tensors of ``shapes`` (at ``bits``, default the first input's);
        ``outs`` names them (default ``<name>_out``, ``<name>_out<i>``); ``op_bits`` is the op's precision (default
        the importer's: its first runtime input's, else its first output's)."""
        distinct = list(dict.fromkeys(ins))
        runtime = [t for t in distinct if not t.const]
        consts = [t for t in distinct if t.const]
        constant = bool(distinct) and not runtime
        out_bits = bits if bits is not None else ins[0].bits
        names = outs or ([f"{name}_out"] if len(shapes) == 1 else [f"{name}_out{i}" for i in range(len(shapes))])
        out = [_T(n, tuple(s), out_bits, constant, name) for n, s in zip(names, shapes, strict=True)]
        view, macs, weight = (None, 0, None)
        if op_type == "MatMul":
            view, macs, weight = _matmul(ins[0], ins[1], out[0])
        op = Op(name=name, op_type=op_type, index=len(self.g), input_shapes=tuple(t.shape for t in runtime),
                output_shapes=tuple(t.shape for t in out), n_in=sum(t.elements for t in runtime),
                n_out=sum(t.elements for t in out), weight_shape=weight.shape if weight is not None else None,
                weight_elements=sum(t.elements for t in consts),
                weight_tensors=tuple((t.name, t.elements) for t in consts), macs=macs,
                bits=op_bits or (runtime[0].bits if runtime else out[0].bits), in_bytes=sum(t.nbytes for t in runtime),
                out_bytes=sum(t.nbytes for t in out), gemm=view, is_constant=constant)
        self.g.add_node(name, op=op)
        for t in distinct:
            if t.producer is None:
                if not t.const:
                    self.readers.setdefault(t.name, []).append(name)
                continue
            if self.g.has_edge(t.producer, name):
                e = self.g.edges[t.producer, name]
                e["tensors"].append(t.name)
                e["elements"] += t.elements
                e["bytes"] += t.nbytes
            else:
                self.g.add_edge(t.producer, name, tensors=[t.name], elements=t.elements, bytes=t.nbytes,
                                param=t.const)
        return out

    def op1(self, op_type: str, name: str, ins: list[_T], shape: tuple[int, ...], bits: int | None = None,
            out: str | None = None, op_bits: int | None = None) -> _T:
        return self.op(op_type, name, ins, [shape], bits, [out] if out else None, op_bits)[0]

    def rename(self, t: _T, new: str) -> _T:
        """Call ``t`` ``new`` (a graph output, named as a runtime names it) on every edge carrying it."""
        for _, _, e in self.g.out_edges(t.producer, data=True):
            e["tensors"] = [new if n == t.name else n for n in e["tensors"]]
        return _T(new, t.shape, t.bits, t.const, t.producer)


def _matmul(a: _T, b: _T, y: _T) -> tuple[GemmView | None, int, _T | None]:
    """GEMM view, MACs and constant weight of a MatMul, as the ONNX importer sets them (numpy matmul semantics:
    ``MACs = prod(Y) x K``; a view when the second operand is a constant 2-D matrix)."""
    k = a.shape[-1]
    if (b.shape[-2] if len(b.shape) >= 2 else b.shape[0]) != k:
        raise WorkloadError(f"MatMul {y.producer!r}: inner dimensions differ: {a.shape} x {b.shape}")
    macs = math.prod(y.shape) * k
    if b.const and len(b.shape) == 2:
        view = GemmView(m_v=b.shape[1], n_v=b.shape[0], n_mvm=math.prod(a.shape[:-1]))
        return view, view.macs, b
    return None, macs, None


@dataclass(frozen=True)
class _Bits:
    weights: int  # an op with a weight matrix
    act: int  # activations
    kv: int  # cached keys and values


def _linear(gr: _Graph, x: _T, d_in: int, d_out: int, prefix: str, bias: bool, b: _Bits) -> _T:
    w = gr.const(f"{prefix}.weight", (d_in, d_out), b.weights)
    # the op multiplies at the weights' precision (module docstring)
    y = gr.op1("MatMul", f"{prefix}.MatMul", [x, w], (*x.shape[:-1], d_out), b.act, op_bits=b.weights)
    if bias:
        y = gr.op1("Add", f"{prefix}.Add", [y, gr.const(f"{prefix}.bias", (d_out,), b.act)], y.shape)
    return y


def _norm(gr: _Graph, spec: LlmSpec, x: _T, prefix: str, b: _Bits) -> _T:
    d = spec.d_model
    if spec.norm == "layernorm":
        ins = [x, gr.const(f"{prefix}.weight", (d,), b.act), gr.const(f"{prefix}.bias", (d,), b.act)]
        return gr.op1("LayerNormalization", prefix, ins, x.shape)
    return gr.op1("RMSNormalization", prefix, [x, gr.const(f"{prefix}.weight", (d,), b.act)], x.shape)


def _heads(gr: _Graph, x: _T, n: int, dh: int, prefix: str) -> _T:
    """``[1, s, n dh] -> [1, n, s, dh]``."""
    s = x.shape[1]
    r = gr.op1("Reshape", f"{prefix}.Reshape", [x, gr.const(f"{prefix}.shape", (4,))], (1, s, n, dh))
    return gr.op1("Transpose", f"{prefix}.Transpose", [r], (1, n, s, dh))


@dataclass(frozen=True)
class _Step:
    """What one graph computes: ``s`` new tokens at positions ``first .. first + s - 1`` after ``past`` cached."""

    phase: str
    s: int
    past: int

    @property
    def total(self) -> int:
        return self.past + self.s


def _qkv(gr: _Graph, spec: LlmSpec, x: _T, p: str, b: _Bits) -> tuple[_T, _T, _T]:
    d, dh, h, kv = spec.d_model, spec.dh, spec.heads, spec.kv
    qkv_bias = spec.bias in ("qkv", "all")
    if spec.fused_qkv:
        y = _linear(gr, x, d, (h + 2 * kv) * dh, f"{p}.attn.qkv", qkv_bias, b)
        widths = (h * dh, kv * dh, kv * dh)
        parts = gr.op("Split", f"{p}.attn.split", [y, gr.const(f"{p}.attn.split", (3,))],
                      [(*y.shape[:-1], w) for w in widths])
    else:
        parts = [_linear(gr, x, d, n * dh, f"{p}.attn.{t}_proj", qkv_bias, b)
                 for t, n in (("q", h), ("k", kv), ("v", kv))]
    return tuple(_heads(gr, t, n, dh, f"{p}.attn.{name}")
                 for t, n, name in zip(parts, (h, kv, kv), "qkv", strict=True))


def _rope(gr: _Graph, spec: LlmSpec, t: _T, prefix: str, b: _Bits) -> _T:
    """RoPE on ``[1, n, s, dh]`` (ONNX RotaryEmbedding without ``position_ids``: the cosines and sines of this
    step's ``s`` positions, ``[1, s, dh / 2]`` each, the rows a runtime slices from its table, so an op reads
    what it uses and not the whole context's table)."""
    rows = (1, t.shape[2], spec.dh // 2)
    cos, sin = gr.const("rope.cos", rows, b.act), gr.const("rope.sin", rows, b.act)
    return gr.op1("RotaryEmbedding", f"{prefix}.rope", [t, cos, sin], t.shape)


def _attention(gr: _Graph, spec: LlmSpec, x: _T, p: str, step: _Step, aux: dict, b: _Bits) -> tuple[_T, _T, _T]:
    """The attention half of block ``p``; returns ``(output [1, s, d], present key, present value)``."""
    h, kv, dh, g, s, n_keys = spec.heads, spec.kv, spec.dh, spec.group, step.s, step.total
    q, k, v = _qkv(gr, spec, x, p, b)
    if spec.positions == "rotary":
        q = _rope(gr, spec, q, f"{p}.attn.q", b)
        k = _rope(gr, spec, k, f"{p}.attn.k", b)
    if step.phase == "decode":
        past_k = gr.input(f"past_key_{p.split('.')[-1]}", (1, kv, step.past, dh), b.kv)
        past_v = gr.input(f"past_value_{p.split('.')[-1]}", (1, kv, step.past, dh), b.kv)
        k = gr.op1("Concat", f"{p}.attn.k_cache", [past_k, k], (1, kv, n_keys, dh), b.kv)
        v = gr.op1("Concat", f"{p}.attn.v_cache", [past_v, v], (1, kv, n_keys, dh), b.kv)
    present = (k, v)
    kt = gr.op1("Transpose", f"{p}.attn.k_T", [k], (1, kv, dh, n_keys))
    lead = (1, h)
    if g > 1:  # grouped-query attention: each key/value head serves g query heads, read once
        lead = (1, kv, g)
        q = gr.op1("Reshape", f"{p}.attn.q.group", [q, gr.const(f"{p}.attn.q.group_shape", (5,))], (*lead, s, dh))
        axes = gr.const(f"{p}.attn.group_axes", (1,))
        kt = gr.op1("Unsqueeze", f"{p}.attn.k_T.group", [kt, axes], (1, kv, 1, dh, n_keys))
        v = gr.op1("Unsqueeze", f"{p}.attn.v.group", [v, axes], (1, kv, 1, n_keys, dh))
    sc = gr.op1("MatMul", f"{p}.attn.scores", [q, kt], (*lead, s, n_keys), b.act)
    sc = gr.op1("Mul", f"{p}.attn.scale", [sc, gr.const(f"{p}.attn.scale", (), b.act)], sc.shape)
    if step.phase == "prefill":
        sc = gr.op1("Add", f"{p}.attn.mask", [sc, aux["mask"]], sc.shape)
    pr = gr.op1("Softmax", f"{p}.attn.Softmax", [sc], sc.shape)
    o = gr.op1("MatMul", f"{p}.attn.context", [pr, v], (*lead, s, dh), b.act)
    o = gr.op1("Transpose", f"{p}.attn.merge_T", [o], (1, s, *lead[1:], dh))
    o = gr.op1("Reshape", f"{p}.attn.merge", [o, gr.const(f"{p}.attn.merge_shape", (3,))], (1, s, h * dh))
    o = _linear(gr, o, h * dh, spec.d_model, f"{p}.attn.proj", spec.bias == "all", b)
    return o, *present


def _mlp(gr: _Graph, spec: LlmSpec, x: _T, p: str, b: _Bits) -> _T:
    d, f, bias = spec.d_model, spec.d_ff, spec.bias == "all"
    if spec.activation == "gelu":
        y = _linear(gr, x, d, f, f"{p}.mlp.fc", bias, b)
        y = gr.op1("Gelu", f"{p}.mlp.act.Gelu", [y], y.shape)
        return _linear(gr, y, f, d, f"{p}.mlp.proj", bias, b)
    gate = _linear(gr, x, d, f, f"{p}.mlp.gate", bias, b)
    up = _linear(gr, x, d, f, f"{p}.mlp.up", bias, b)
    sig = gr.op1("Sigmoid", f"{p}.mlp.act.Sigmoid", [gate], gate.shape)
    silu = gr.op1("Mul", f"{p}.mlp.act.Mul", [gate, sig], gate.shape)
    y = gr.op1("Mul", f"{p}.mlp.gate_up", [silu, up], gate.shape)
    return _linear(gr, y, f, d, f"{p}.mlp.down", bias, b)


def _embed(gr: _Graph, spec: LlmSpec, step: _Step, b: _Bits) -> tuple[_T, _T, dict]:
    """Token (and learned position) embedding; returns ``(x, the token table, aux tensors for the blocks)``."""
    d, s = spec.d_model, step.s
    ids = gr.input("input_ids", (1, s), 64)
    wte = gr.const("wte", (spec.vocab, d), b.weights)
    x = gr.op1("Gather", "wte", [wte, ids], (1, s, d), b.act)
    positions = gr.const("position_ids", (1, s))
    aux: dict = {}
    if spec.positions == "learned":
        pos = gr.op1("Gather", "wpe", [gr.const("wpe", (spec.max_context_tokens, d), b.weights), positions],
                     (1, s, d), b.act)
        x = gr.op1("Add", "embed", [x, pos], x.shape)
    if step.phase == "prefill":
        lead = (1, 1) if spec.group == 1 else (1, 1, 1)
        aux["mask"] = gr.const("causal_mask", (*lead, s, s), b.act)
    return x, wte, aux


def _head(gr: _Graph, spec: LlmSpec, x: _T, wte: _T, step: _Step, b: _Bits) -> _T:
    d = spec.d_model
    x = _norm(gr, spec, x, "ln_f", b)
    if step.phase == "prefill":
        x = gr.op1("Gather", "last_token", [x, gr.const("last_index", (1,))], (1, 1, d))
    if spec.tied_embeddings:
        w = gr.op1("Transpose", "lm_head.tied_T", [wte], (d, spec.vocab), b.weights)
    else:
        w = gr.const("lm_head.weight", (d, spec.vocab), b.weights)
    return gr.op1("MatMul", "lm_head", [x, w], (1, 1, spec.vocab), b.act, out="logits", op_bits=b.weights)


def _step(spec: LlmSpec, phase: str, prompt_tokens: int | None, context_tokens: int | None) -> _Step:
    if phase not in PHASES:
        raise WorkloadError(f"{spec.name}: phase is prefill or decode, not {phase!r}")
    if phase == "prefill":
        if context_tokens is not None:
            raise WorkloadError("context_tokens sets a decode step's context; a prefill takes prompt_tokens")
        p = 128 if prompt_tokens is None else prompt_tokens
        if not 1 <= p <= spec.max_context_tokens:
            raise WorkloadError(f"{spec.name}: prompt_tokens {p} is outside 1..{spec.max_context_tokens} (its "
                                "context)")
        return _Step("prefill", p, 0)
    if prompt_tokens is not None:
        raise WorkloadError("prompt_tokens sets a prefill's prompt; a decode step takes context_tokens")
    n = 128 if context_tokens is None else context_tokens
    if not 1 <= n < spec.max_context_tokens:
        raise WorkloadError(f"{spec.name}: context_tokens {n} is outside 1..{spec.max_context_tokens - 1} (the "
                            "decoded token must fit in its context)")
    return _Step("decode", 1, n)


def _meta(gr: _Graph, spec: LlmSpec, step: _Step, device_class: str, b: _Bits) -> dict:
    def describe(t: _T) -> dict:
        return {"name": t.name, "dtype": _DTYPES.get(t.bits, f"{t.bits}-bit"), "shape": list(t.shape)}

    return {
        "producer": "hetsim LLM description",
        "inputs": [describe(t) for t in gr.inputs],
        "outputs": [describe(t) for t in gr.outputs.values()],
        "nodes": len(gr.g),
        "shapes": "hetsim.llm (from the description)",
        "input_readers": gr.readers,
        "output_producers": {n: t.producer for n, t in gr.outputs.items()},
        "llm": {"model": spec.name, "phase": step.phase, "new_tokens": step.s, "context_tokens": step.past,
                "device_class": device_class, "weight_bits": b.weights, "kv_cache_bits": b.kv,
                "kv_cache_bytes": kv_cache_bytes(spec, step.total)},
    }


def build_graph(spec: LlmSpec, phase: str = "decode", prompt_tokens: int | None = None,
                context_tokens: int | None = None, device_class: str = "host", name: str | None = None) -> Workload:
    """The op graph of a prefill of ``prompt_tokens`` tokens or of one decode step at context ``context_tokens``
    (module docstring).

    Args:
        spec: the model.
        phase: ``prefill`` (``prompt_tokens`` new tokens, causal mask, last position's logits; default 128) or
            ``decode`` (one new token at position ``context_tokens``, the ``context_tokens``-token KV cache as
            graph inputs ``past_key_<l>``/``past_value_<l>``; default 128).
        device_class: whose weight precision the ops carry (``precision.weights``).
        name: the workload's name (default ``<model>_prefill_<P>`` / ``<model>_decode_<L>``).

    Returns:
        The workload; ``meta`` as the ONNX importer's (``inputs``, ``outputs``, ``input_readers``,
        ``output_producers``) plus ``meta["llm"]``: model, phase, new tokens, context tokens, precisions, and the
        request's KV-cache bytes after this step.

    Raises:
        WorkloadError: an unknown phase, a token count outside the model's context, the option of the other
            phase, no precision for ``device_class``.
    """
    step = _step(spec, phase, prompt_tokens, context_tokens)
    wb = precision_bits(spec, device_class)
    b = _Bits(weights=wb, act=32 if wb == 32 else 16, kv=kv_cache_bits(spec))
    tokens = step.s if phase == "prefill" else step.past
    gr = _Graph(name or f"{spec.name}_{phase}_{tokens}")
    x, wte, aux = _embed(gr, spec, step, b)
    present: list[tuple[str, _T]] = []
    for i in range(spec.layers):
        p = f"h.{i}"
        hn = _norm(gr, spec, x, f"{p}.ln_1", b)
        a, k, v = _attention(gr, spec, hn, p, step, aux, b)
        x = gr.op1("Add", f"{p}.residual_1", [x, a], x.shape)
        y = _mlp(gr, spec, _norm(gr, spec, x, f"{p}.ln_2", b), p, b)
        x = gr.op1("Add", f"{p}.residual_2", [x, y], x.shape)
        present += [(f"present_key_{i}", gr.rename(k, f"present_key_{i}")),
                    (f"present_value_{i}", gr.rename(v, f"present_value_{i}"))]
    logits = _head(gr, spec, x, wte, step, b)
    gr.outputs = {"logits": logits, **dict(present)}
    return Workload(name=gr.name, graph=gr.g, source=None, meta=_meta(gr, spec, step, device_class, b))
