"""Build the shipped transformer workloads as ONNX graphs, written here with ``onnx.helper`` (no torch needed).

* ``vit_b16.onnx``: ViT-B/16 at 224x224 (Dosovitskiy et al., ICLR 2021, Table 1 "ViT-Base": 12 layers, width 768,
  MLP 3072, 12 heads, patch 16; a class token, learned position embeddings, pre-LayerNorm blocks, a 1000-class
  head on the class token), about 86 M parameters.
* ``bert_base_encoder.onnx``: a BERT-base-style encoder at sequence 128 (Devlin et al., NAACL 2019: 12 layers,
  width 768, 12 heads, MLP 3072, vocabulary 30522, 512 positions, 2 token types, post-LayerNorm, GELU (erf form)
  and the tanh pooler), about 110 M parameters. No padding mask (every token attends to every token).
* ``gpt2_small_prefill.onnx`` and ``gpt2_small_decode.onnx``: a GPT-2-small-style decoder (Radford et al. 2019:
  12 layers, width 768, 12 heads, vocabulary 50257, 1024 positions, pre-LayerNorm, GELU (tanh form), the LM head
  tied to the token embedding), about 124 M parameters. *Prefill* reads 128 prompt tokens (causal mask) and
  returns the next-token logits of the last position and the KV cache (``present_key_<l>``/``present_value_<l>``,
  ``[1, 12, 128, 64]`` each); *decode* reads one token at position 128 and the 128-token KV cache as graph inputs
  (``past_key_<l>``/``past_value_<l>``) and returns its logits and the 129-token cache (``Concat`` on the
  sequence axis).

Every weight is an initializer whose data lives in an *external data file* (``<name>.weights`` beside the model):
its shape and element type are in the ``.onnx`` file, its values are not. By default the script writes only the
``.onnx`` files (tens of kB each), which is what hetsim reads: a simulator needs the structure, not the values
(``hetsim.workload.load_onnx`` reports the missing weights in one line). ``--weights`` also writes the external
files, seeded random fp32 values (hundreds of MB), so that onnxruntime can run the models. Small constants (shape
vectors for ``Reshape``, split sizes, scalars) stay inside the ``.onnx`` file, so shape inference needs no weight.

Run: ``python workloads/scripts/transformers.py workloads/`` (or ``--weights DIR`` to write the weights too).
The builders take their sizes as arguments, so a test can build a two-layer model with its weights and run it.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as h
from onnx import numpy_helper as nh

OPSET = 20  # Gelu (opset 20) for GPT-2's tanh form; LayerNormalization from opset 17
INLINE_MAX_BYTES = 1024  # constants at most this big stay in the .onnx file (shape vectors, scalars)


@dataclass
class Graph:
    """A graph under construction: nodes, initializers (kept as shapes and, lazily, values), inputs, outputs."""

    name: str
    seed: int = 0
    nodes: list = field(default_factory=list)
    inits: list = field(default_factory=list)  # (name, np.ndarray | (shape, init kind))
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    _n: int = 0

    def weight(self, name: str, shape: tuple[int, ...], kind: str = "normal") -> str:
        """A float32 weight (its values drawn only when the weights are written): ``normal`` (std 0.02, as
        GPT-2's and BERT's initialisation), ``ones``, ``zeros``."""
        self.inits.append((name, (tuple(shape), kind)))
        return name

    def const(self, name: str, value, dtype=np.int64) -> str:
        """A constant with its value (shape vectors, split sizes, scalars, masks)."""
        self.inits.append((name, np.asarray(value, dtype=dtype)))
        return name

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, name: str | None = None, **attrs) -> list[str]:
        self._n += 1
        base = name or f"{op_type}_{self._n}"
        outs = [f"{base}_out{i}" if n_out > 1 else f"{base}_out" for i in range(n_out)]
        self.nodes.append(h.make_node(op_type, inputs, outs, name=base, **attrs))
        return outs

    def op1(self, op_type: str, inputs: list[str], name: str | None = None, **attrs) -> str:
        return self.op(op_type, inputs, 1, name, **attrs)[0]

    def rename(self, old: str, new: str) -> str:
        """Give tensor ``old`` the name ``new`` everywhere (graph outputs named as a runtime names them)."""
        for n in self.nodes:
            for lst in (n.input, n.output):
                for i, t in enumerate(lst):
                    if t == old:
                        lst[i] = new
        return new

    def model(self, weights_file: str) -> tuple[onnx.ModelProto, list[tuple[str, np.ndarray | tuple]]]:
        """The model, its big initializers pointing into ``weights_file`` (external data, contiguous, 64-byte
        aligned offsets), and the list of what goes into that file, in order."""
        tensors, external, offset = [], [], 0
        for name, v in self.inits:
            if isinstance(v, np.ndarray) and v.nbytes <= INLINE_MAX_BYTES:
                tensors.append(nh.from_array(v, name))
                continue
            shape, dtype = (v.shape, v.dtype) if isinstance(v, np.ndarray) else (v[0], np.dtype(np.float32))
            t = TensorProto(name=name, dims=list(shape), data_type=h.np_dtype_to_tensor_dtype(np.dtype(dtype)))
            length = math.prod(shape) * np.dtype(dtype).itemsize
            t.data_location = TensorProto.EXTERNAL
            for k, val in (("location", weights_file), ("offset", str(offset)), ("length", str(length))):
                e = t.external_data.add()
                e.key, e.value = k, val
            tensors.append(t)
            external.append((name, v, offset))
            offset += -(-length // 64) * 64
        g = h.make_graph(self.nodes, self.name, self.inputs, self.outputs, tensors)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)], producer_name="hetsim workloads/scripts",
                         producer_version="transformers.py")
        m.ir_version = 10
        return m, external


def write_weights(path: Path, external, seed: int) -> None:
    """Write the external data file: seeded random values (``normal``: std 0.02), ones, zeros, or the constant's
    own values, each at its offset."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        for _name, v, offset in external:
            if isinstance(v, np.ndarray):
                arr = v
            else:
                shape, kind = v
                arr = (np.ones(shape, np.float32) if kind == "ones" else np.zeros(shape, np.float32) if kind == "zeros"
                       else (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)))
            f.seek(offset)
            f.write(np.ascontiguousarray(arr).tobytes())


# ------------------------------------------------------------------------------------------------ blocks


def layer_norm(g: Graph, x: str, d: int, prefix: str, eps: float) -> str:
    return g.op1("LayerNormalization", [x, g.weight(f"{prefix}.weight", (d,), "ones"),
                                        g.weight(f"{prefix}.bias", (d,), "zeros")],
                 name=prefix, axis=-1, epsilon=eps)


def linear(g: Graph, x: str, d_in: int, d_out: int, prefix: str) -> str:
    y = g.op1("MatMul", [x, g.weight(f"{prefix}.weight", (d_in, d_out))], name=f"{prefix}.MatMul")
    return g.op1("Add", [y, g.weight(f"{prefix}.bias", (d_out,), "zeros")], name=f"{prefix}.Add")


def gelu(g: Graph, x: str, prefix: str, form: str) -> str:
    """GELU: ``erf`` as torch exports ``nn.GELU()`` at opset < 20 (``x * 0.5 * (1 + erf(x / sqrt 2))``), ``tanh``
    as the opset-20 ``Gelu`` op with ``approximate="tanh"`` (GPT-2's ``gelu_new``)."""
    if form == "tanh":
        return g.op1("Gelu", [x], name=f"{prefix}.Gelu", approximate="tanh")
    s = g.op1("Div", [x, g.const(f"{prefix}.sqrt2", math.sqrt(2.0), np.float32)], name=f"{prefix}.Div")
    e = g.op1("Erf", [s], name=f"{prefix}.Erf")
    a = g.op1("Add", [e, g.const(f"{prefix}.one", 1.0, np.float32)], name=f"{prefix}.Add")
    m = g.op1("Mul", [x, a], name=f"{prefix}.Mul")
    return g.op1("Mul", [m, g.const(f"{prefix}.half", 0.5, np.float32)], name=f"{prefix}.Mul_half")


def heads(g: Graph, x: str, s: int, n_heads: int, dh: int, prefix: str, perm=(0, 2, 1, 3)) -> str:
    """``[1, s, n_heads * dh] -> [1, n_heads, s, dh]`` (``perm`` (0, 2, 3, 1): ``[1, n_heads, dh, s]``)."""
    r = g.op1("Reshape", [x, g.const(f"{prefix}.shape", [1, s, n_heads, dh])], name=f"{prefix}.Reshape")
    return g.op1("Transpose", [r], name=f"{prefix}.Transpose", perm=list(perm))


def attention(g: Graph, q: str, k: str, v: str, s_q: int, d: int, n_heads: int, prefix: str,
              mask: str | None = None) -> str:
    """Scaled dot-product attention on ``[1, H, s, dh]`` heads (``k`` given as ``[1, H, s_k, dh]``); returns the
    merged ``[1, s_q, d]`` context. The two MatMuls here multiply two activations: no constant weight."""
    dh = d // n_heads
    kt = g.op1("Transpose", [k], name=f"{prefix}.k_T", perm=[0, 1, 3, 2])
    sc = g.op1("MatMul", [q, kt], name=f"{prefix}.scores")
    sc = g.op1("Mul", [sc, g.const(f"{prefix}.scale", 1.0 / math.sqrt(dh), np.float32)], name=f"{prefix}.scale")
    if mask is not None:
        sc = g.op1("Add", [sc, mask], name=f"{prefix}.mask")
    p = g.op1("Softmax", [sc], name=f"{prefix}.Softmax", axis=-1)
    o = g.op1("MatMul", [p, v], name=f"{prefix}.context")
    o = g.op1("Transpose", [o], name=f"{prefix}.merge_T", perm=[0, 2, 1, 3])
    return g.op1("Reshape", [o, g.const(f"{prefix}.merge_shape", [1, s_q, d])], name=f"{prefix}.merge")


def fused_qkv(g: Graph, x: str, s: int, d: int, n_heads: int, prefix: str) -> tuple[str, str, str]:
    """One ``[d, 3d]`` projection split into q, k, v heads (ViT's ``qkv``, GPT-2's ``c_attn``)."""
    qkv = linear(g, x, d, 3 * d, f"{prefix}.qkv")
    parts = g.op("Split", [qkv, g.const(f"{prefix}.split", [d, d, d])], 3, name=f"{prefix}.split", axis=-1)
    return tuple(heads(g, t, s, n_heads, d // n_heads, f"{prefix}.{n}") for t, n in zip(parts, "qkv", strict=True))


def pre_ln_block(g: Graph, x: str, s: int, d: int, n_heads: int, ffn: int, prefix: str, eps: float, act: str,
                 mask: str | None = None, past: tuple[str, str] | None = None) -> tuple[str, str, str]:
    """A pre-LayerNorm transformer block (ViT, GPT-2); returns ``(y, k, v)`` (the block's keys and values, after
    the ``Concat`` with ``past`` when given: the KV cache)."""
    hdn = layer_norm(g, x, d, f"{prefix}.ln_1", eps)
    q, k, v = fused_qkv(g, hdn, s, d, n_heads, f"{prefix}.attn")
    if past is not None:
        k = g.op1("Concat", [past[0], k], name=f"{prefix}.attn.k_cache", axis=2)
        v = g.op1("Concat", [past[1], v], name=f"{prefix}.attn.v_cache", axis=2)
    a = attention(g, q, k, v, s, d, n_heads, f"{prefix}.attn", mask)
    a = linear(g, a, d, d, f"{prefix}.attn.proj")
    x = g.op1("Add", [x, a], name=f"{prefix}.residual_1")
    hdn = layer_norm(g, x, d, f"{prefix}.ln_2", eps)
    hdn = gelu(g, linear(g, hdn, d, ffn, f"{prefix}.mlp.fc"), f"{prefix}.mlp.act", act)
    hdn = linear(g, hdn, ffn, d, f"{prefix}.mlp.proj")
    return g.op1("Add", [x, hdn], name=f"{prefix}.residual_2"), k, v


# ---------------------------------------------------------------------------------------------- models


def vit(layers: int = 12, d: int = 768, n_heads: int = 12, ffn: int = 3072, image: int = 224, patch: int = 16,
        classes: int = 1000, name: str = "vit_b16") -> Graph:
    """ViT (module docstring); input ``pixel_values`` ``[1, 3, image, image]``, output ``logits`` ``[1, classes]``."""
    g = Graph(name)
    n = (image // patch) ** 2
    g.inputs.append(h.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [1, 3, image, image]))
    x = g.op1("Conv", ["pixel_values", g.weight("patch_embed.weight", (d, 3, patch, patch)),
                       g.weight("patch_embed.bias", (d,), "zeros")], name="patch_embed", kernel_shape=[patch, patch],
              strides=[patch, patch])
    x = g.op1("Reshape", [x, g.const("patch_embed.flat", [1, d, n])], name="patch_embed.flatten")
    x = g.op1("Transpose", [x], name="patch_embed.transpose", perm=[0, 2, 1])
    x = g.op1("Concat", [g.weight("cls_token", (1, 1, d)), x], name="cls_concat", axis=1)
    x = g.op1("Add", [x, g.weight("pos_embed", (1, n + 1, d))], name="pos_embed")
    for i in range(layers):
        x, _, _ = pre_ln_block(g, x, n + 1, d, n_heads, ffn, f"blocks.{i}", 1e-6, "erf")
    x = layer_norm(g, x, d, "norm", 1e-6)
    cls = g.op1("Gather", [x, g.const("cls_index", 0)], name="cls_pool", axis=1)
    g.rename(linear(g, cls, d, classes, "head"), "logits")
    g.outputs.append(h.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes]))
    return g


def bert(layers: int = 12, d: int = 768, n_heads: int = 12, ffn: int = 3072, seq: int = 128, vocab: int = 30522,
         positions: int = 512, types: int = 2, name: str = "bert_base_encoder") -> Graph:
    """BERT-base-style encoder (module docstring); input ``input_ids`` ``[1, seq]`` (int64), outputs
    ``last_hidden_state`` ``[1, seq, d]`` and ``pooler_output`` ``[1, d]``."""
    g = Graph(name)
    g.inputs.append(h.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq]))
    eps, dh = 1e-12, d // n_heads
    w = g.op1("Gather", [g.weight("embeddings.word_embeddings", (vocab, d)), "input_ids"], name="embeddings.word")
    # position and token-type lookups read constants only: ONNX Runtime folds them (hetsim: folded ops)
    pos = g.op1("Gather", [g.weight("embeddings.position_embeddings", (positions, d)),
                           g.const("embeddings.position_ids", np.arange(seq)[None, :])], name="embeddings.position")
    typ = g.op1("Gather", [g.weight("embeddings.token_type_embeddings", (types, d)),
                           g.const("embeddings.token_type_ids", np.zeros((1, seq)))], name="embeddings.token_type")
    x = g.op1("Add", [w, pos], name="embeddings.add_position")
    x = g.op1("Add", [x, typ], name="embeddings.add_type")
    x = layer_norm(g, x, d, "embeddings.LayerNorm", eps)
    for i in range(layers):
        p = f"encoder.layer.{i}"
        q, k, v = (heads(g, linear(g, x, d, d, f"{p}.attention.{t}"), seq, n_heads, dh, f"{p}.attention.{t}.heads")
                   for t in ("query", "key", "value"))
        a = linear(g, attention(g, q, k, v, seq, d, n_heads, f"{p}.attention"), d, d, f"{p}.attention.output")
        x = layer_norm(g, g.op1("Add", [a, x], name=f"{p}.attention.residual"), d, f"{p}.attention.LayerNorm", eps)
        f = linear(g, gelu(g, linear(g, x, d, ffn, f"{p}.intermediate"), f"{p}.intermediate.act", "erf"), ffn, d,
                   f"{p}.output")
        x = layer_norm(g, g.op1("Add", [f, x], name=f"{p}.output.residual"), d, f"{p}.output.LayerNorm", eps)
    x = g.rename(x, "last_hidden_state")
    cls = g.op1("Gather", [x, g.const("pooler.cls_index", 0)], name="pooler.cls", axis=1)
    g.rename(g.op1("Tanh", [linear(g, cls, d, d, "pooler.dense")], name="pooler.Tanh"), "pooler_output")
    g.outputs += [h.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, d]),
                  h.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [1, d])]
    return g


def gpt2(step: str, layers: int = 12, d: int = 768, n_heads: int = 12, ffn: int = 3072, seq: int = 128,
         vocab: int = 50257, positions: int = 1024, name: str | None = None) -> Graph:
    """GPT-2-small-style decoder (module docstring). ``step="prefill"``: ``input_ids`` ``[1, seq]`` -> ``logits``
    ``[1, 1, vocab]`` (last position) and ``present_key_<l>``/``present_value_<l>`` ``[1, H, seq, dh]``;
    ``step="decode"``: ``input_ids`` ``[1, 1]`` at position ``seq`` and ``past_key_<l>``/``past_value_<l>``
    ``[1, H, seq, dh]`` -> ``logits`` ``[1, 1, vocab]`` and the ``[1, H, seq + 1, dh]`` cache."""
    if step not in ("prefill", "decode"):
        raise ValueError(f"step is 'prefill' or 'decode', not {step!r}")
    g = Graph(name or f"gpt2_small_{step}")
    dh, eps = d // n_heads, 1e-5
    s = seq if step == "prefill" else 1
    g.inputs.append(h.make_tensor_value_info("input_ids", TensorProto.INT64, [1, s]))
    wte = g.weight("wte", (vocab, d))
    tok = g.op1("Gather", [wte, "input_ids"], name="wte")
    first = 0 if step == "prefill" else seq
    pos = g.op1("Gather", [g.weight("wpe", (positions, d)), g.const("position_ids", np.arange(first, first + s)[None])],
                name="wpe")  # constants only: folded
    x = g.op1("Add", [tok, pos], name="embed")
    mask = None
    if step == "prefill":  # causal: -1e4 above the diagonal, as GPT-2's masked_bias (a constant, shape [1,1,s,s])
        mask = g.const("causal_mask", np.triu(np.full((s, s), -1e4, np.float32), 1)[None, None], np.float32)
    for i in range(layers):
        past = None
        if step == "decode":
            past = (f"past_key_{i}", f"past_value_{i}")
            g.inputs += [h.make_tensor_value_info(t, TensorProto.FLOAT, [1, n_heads, seq, dh]) for t in past]
        x, k, v = pre_ln_block(g, x, s, d, n_heads, ffn, f"h.{i}", eps, "tanh", mask, past)
        for t, kind in ((k, "key"), (v, "value")):
            g.rename(t, f"present_{kind}_{i}")
            g.outputs.append(h.make_tensor_value_info(f"present_{kind}_{i}", TensorProto.FLOAT,
                                                      [1, n_heads, seq + (step == "decode"), dh]))
    x = layer_norm(g, x, d, "ln_f", eps)
    if step == "prefill":  # only the last position's logits: what generating the next token needs
        x = g.op1("Gather", [x, g.const("last_index", [s - 1])], name="last_token", axis=1)
    wte_t = g.op1("Transpose", [wte], name="lm_head.tied_T", perm=[1, 0])  # tied LM head: a constant op, folded
    g.rename(g.op1("MatMul", [x, wte_t], name="lm_head"), "logits")
    g.outputs.insert(0, h.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1, vocab]))
    return g


MODELS = {
    "vit_b16": lambda: vit(),
    "bert_base_encoder": lambda: bert(),
    "gpt2_small_prefill": lambda: gpt2("prefill"),
    "gpt2_small_decode": lambda: gpt2("decode"),
}


def parameters(model: onnx.ModelProto) -> int:
    """Elements of every float initializer (the weights; a tied weight counted once)."""
    return sum(math.prod(t.dims) for t in model.graph.initializer if t.data_type == TensorProto.FLOAT)


def check_structure(model: onnx.ModelProto) -> None:
    """``onnx.checker`` and strict shape inference on the graph with its external initializers turned into graph
    inputs of the same type and shape (the checker insists the external files exist; their values are not what
    is checked)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    ext = [t for t in m.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    for t in ext:
        m.graph.input.append(h.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    keep = [t for t in m.graph.initializer if t.data_location != TensorProto.EXTERNAL]
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    onnx.checker.check_model(m, full_check=True)


def save(g: Graph, out_dir: Path, weights: bool = False, seed: int = 0) -> Path:
    """Write ``<out_dir>/<name>.onnx`` (and, with ``weights``, ``<name>.weights``); returns the model's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    wfile = f"{g.name}.weights"
    model, external = g.model(wfile)
    check_structure(model)
    path = out_dir / f"{g.name}.onnx"
    onnx.save(model, path)
    if weights:
        write_weights(out_dir / wfile, external, seed)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder for the .onnx files")
    ap.add_argument("--weights", action="store_true", help="also write the external weight files (random, seeded)")
    ap.add_argument("--only", choices=sorted(MODELS), action="append", help="build only these models")
    args = ap.parse_args(argv)
    for name in args.only or MODELS:
        g = MODELS[name]()
        path = save(g, args.out, args.weights)
        m = onnx.load(path, load_external_data=False)
        print(f"{path}: {len(m.graph.node)} nodes, {parameters(m):,} parameters, {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
