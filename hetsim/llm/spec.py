"""A decoder-only transformer described by its numbers (``workloads/llm/*.llm.yaml``), and the arithmetic that
needs nothing but those numbers: learned parameters, weight bytes per device class, KV-cache bytes.

The description is validated like a platform file (:func:`hetsim.platform.read_yaml_model`): an unknown field, a
missing one or a value out of range is one line naming the field, and the command exits with code 2. Units are in
the field names where a field has one (``..._tokens``); sizes are element counts, precisions names
(:data:`PRECISION_BITS`).

Example (GPT-2 small, ``workloads/llm/gpt2-small.llm.yaml``)::

    name: gpt2-small
    source: https://huggingface.co/openai-community/gpt2/blob/main/config.json
    layers: 12
    d_model: 768
    heads: 12
    kv_heads: 12
    head_dim: 64
    d_ff: 3072
    activation: gelu
    norm: layernorm
    positions: learned
    bias: all
    fused_qkv: true
    vocab: 50257
    tied_embeddings: true
    max_context_tokens: 1024
    precision: {weights: {host: fp32, npu: int8}, kv_cache: fp32}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hetsim.errors import WorkloadError
from hetsim.input_files import read_input_bytes

#: bits per element of each precision a description may name
PRECISION_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "int8": 8, "int4": 4}
Precision = Literal["fp32", "fp16", "bf16", "int8", "int4"]
#: the largest count any size field takes (far above any model's; keeps products within exact integers)
MAX_SIZE = 1 << 24
#: the largest context a description may declare (tokens)
MAX_CONTEXT_TOKENS = 1 << 22
#: bytes of a Hugging Face config.json read by :func:`load_hf_config`
MAX_HF_CONFIG_BYTES = 1 << 20


class LlmPrecision(BaseModel):
    """Precisions of a deployed model.

    Attributes:
        weights: device class -> the precision its copy of the weights is stored and multiplied at: ``host``
            (the platform's host CPU) and any other name (a device kind or device of a platform: ``npu``,
            ``puma``, ...). The graph is built for one class (:func:`hetsim.llm.graph.build_graph`'s
            ``device_class``, ``host`` by default): its ops carry that precision. An NPU or CIM device
            computes at its own ``element_bits`` whatever the graph says; its entry here is what
            :func:`weight_bytes` reports for it.
        kv_cache: the precision the keys and values are cached at.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: dict[str, Precision] = Field(min_length=1)
    kv_cache: Precision = "fp16"


class LlmSpec(BaseModel):
    """A decoder-only transformer (module docstring): the numbers of its public configuration, no weights.

    Attributes:
        name: the model's name.
        source: where the numbers come from (a configuration file's address, a paper).
        layers: transformer blocks.
        d_model: width of the residual stream.
        heads: query heads.
        kv_heads: key/value heads (grouped-query attention when fewer than ``heads``; must divide it).
        head_dim: width of one head (``heads * head_dim`` need not equal ``d_model``).
        d_ff: the feed-forward network's inner width.
        activation: ``gelu`` (fc -> GELU -> proj) or ``swiglu`` (down(SiLU(gate x) * up x)).
        norm: ``layernorm`` (scale and bias) or ``rmsnorm`` (scale only).
        positions: ``learned`` (a position embedding table added to the token embedding) or ``rotary`` (RoPE
            applied to queries and keys in every block).
        bias: which projections carry a bias: ``none`` (Llama), ``qkv`` (Qwen2: q, k and v only), ``all`` (GPT-2).
        fused_qkv: one projection of width ``(heads + 2 kv_heads) head_dim`` then a Split (GPT-2's ``c_attn``),
            rather than three.
        vocab: vocabulary size.
        tied_embeddings: the LM head reads the token embedding's matrix (transposed) instead of its own.
        max_context_tokens: the longest context the model takes (its positions).
        precision: :class:`LlmPrecision`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=200)
    source: str = Field("", max_length=2000)
    layers: int = Field(ge=1, le=4096)
    d_model: int = Field(ge=1, le=MAX_SIZE)
    heads: int = Field(ge=1, le=4096)
    kv_heads: int | None = Field(None, ge=1, le=4096)
    head_dim: int | None = Field(None, ge=1, le=65536)
    d_ff: int = Field(ge=1, le=MAX_SIZE)
    activation: Literal["gelu", "swiglu"]
    norm: Literal["layernorm", "rmsnorm"]
    positions: Literal["rotary", "learned"]
    bias: Literal["none", "qkv", "all"] = "none"
    fused_qkv: bool = False
    vocab: int = Field(ge=1, le=MAX_SIZE)
    tied_embeddings: bool
    max_context_tokens: int = Field(ge=1, le=MAX_CONTEXT_TOKENS)
    precision: LlmPrecision

    @model_validator(mode="after")
    def _check(self) -> LlmSpec:
        kv = self.kv_heads if self.kv_heads is not None else self.heads
        if self.heads % kv:
            raise ValueError(f"kv_heads ({kv}) must divide heads ({self.heads}): each key/value head serves a "
                             "whole group of query heads")
        if self.head_dim is None and self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) does not divide into {self.heads} heads: give head_dim")
        if self.positions == "rotary" and self.dh % 2:
            raise ValueError(f"rotary positions rotate pairs of elements: head_dim {self.dh} must be even")
        return self

    @property
    def kv(self) -> int:
        """Key/value heads (``kv_heads``, else ``heads``)."""
        return self.kv_heads if self.kv_heads is not None else self.heads

    @property
    def dh(self) -> int:
        """Head width (``head_dim``, else ``d_model / heads``)."""
        return self.head_dim if self.head_dim is not None else self.d_model // self.heads

    @property
    def group(self) -> int:
        """Query heads per key/value head (1: multi-head attention)."""
        return self.heads // self.kv


def precision_bits(spec: LlmSpec, device_class: str = "host") -> int:
    """Bits per weight element the description gives ``device_class``.

    Raises:
        WorkloadError: the description names no precision for that class (the message lists those it names).
    """
    p = spec.precision.weights.get(device_class)
    if p is None:
        raise WorkloadError(f"LLM description {spec.name!r} gives no weight precision for device class "
                            f"{device_class!r} (it gives {', '.join(sorted(spec.precision.weights))})")
    return PRECISION_BITS[p]


def kv_cache_bits(spec: LlmSpec) -> int:
    """Bits per cached key or value element (``precision.kv_cache``)."""
    return PRECISION_BITS[spec.precision.kv_cache]


def kv_cache_bytes_per_token(spec: LlmSpec) -> int:
    """Bytes one token adds to the KV cache::

        2 x layers x kv_heads x head_dim x bits / 8

    (a key and a value vector of ``kv_heads x head_dim`` elements per layer, at ``precision.kv_cache``; grouped-
    query attention caches ``kv_heads``, not ``heads``: Ainslie et al., "GQA", EMNLP 2023). Always a whole number
    of bytes: ``2 x ... x 4 / 8`` is whole even at int4.

    E.g. GPT-2 small at fp32: 2 x 12 x 12 x 64 x 4 = 73,728 B; Llama-3.2-1B at fp16: 2 x 16 x 8 x 64 x 2 =
    32,768 B.
    """
    return 2 * spec.layers * spec.kv * spec.dh * kv_cache_bits(spec) // 8


def kv_cache_bytes(spec: LlmSpec, tokens: int) -> int:
    """Bytes of the KV cache of one request holding ``tokens`` tokens (prompt and generated):
    ``tokens x`` :func:`kv_cache_bytes_per_token`.

    Raises:
        WorkloadError: ``tokens`` negative or beyond ``max_context_tokens``.
    """
    if not 0 <= tokens <= spec.max_context_tokens:
        raise WorkloadError(f"{spec.name}: {tokens} tokens is outside 0..{spec.max_context_tokens} (its context)")
    return tokens * kv_cache_bytes_per_token(spec)


def _norm_params(spec: LlmSpec) -> int:
    return spec.d_model * (2 if spec.norm == "layernorm" else 1)


def layer_parameters(spec: LlmSpec) -> int:
    """Learned parameters of one transformer block::

        attention  d (H + 2 Hkv) dh  + H dh d            (q, k, v, o; + (H + 2 Hkv) dh biases with bias qkv or all,
                                                           + d with all)
        MLP        2 d d_ff (gelu) or 3 d d_ff (swiglu)  (+ d_ff + d biases (gelu), 2 d_ff + d (swiglu) with all)
        norms      2 x (2 d layernorm, d rmsnorm)
    """
    d, dh, h, kv, f = spec.d_model, spec.dh, spec.heads, spec.kv, spec.d_ff
    qkv = d * (h + 2 * kv) * dh
    attn = qkv + h * dh * d
    mlp = (2 if spec.activation == "gelu" else 3) * d * f
    if spec.bias in ("qkv", "all"):
        attn += (h + 2 * kv) * dh
    if spec.bias == "all":
        attn += d
        mlp += (f if spec.activation == "gelu" else 2 * f) + d
    return attn + mlp + 2 * _norm_params(spec)


def parameters(spec: LlmSpec) -> int:
    """Learned parameters of the model: the token embedding (``vocab x d``), the position embedding with learned
    positions (``max_context_tokens x d``), ``layers x`` :func:`layer_parameters`, the final norm, and the LM head
    (``d x vocab``) unless it is tied to the token embedding (then counted once).

    E.g. GPT-2 small 124,439,808 (Hugging Face ``gpt2``), Llama-3.2-1B 1,235,814,400, Qwen2.5-0.5B 494,032,768.
    """
    n = spec.vocab * spec.d_model + spec.layers * layer_parameters(spec) + _norm_params(spec)
    if spec.positions == "learned":
        n += spec.max_context_tokens * spec.d_model
    if not spec.tied_embeddings:
        n += spec.d_model * spec.vocab
    return n


def weight_bytes(spec: LlmSpec, device_class: str = "host") -> int:
    """Bytes of the weights stored for ``device_class``: ``parameters x bits / 8`` (rounded up) at that class's
    precision (:func:`precision_bits`): what a decode step reads when every weight streams from memory.

    Raises:
        WorkloadError: no precision for that class.
    """
    return -(-parameters(spec) * precision_bits(spec, device_class) // 8)


# ------------------------------------------------------------------------------------------------ reading


def load_llm_spec(path: str | Path) -> LlmSpec:
    """Read and validate an LLM description (``.llm.yaml``).

    Raises:
        WorkloadError: a missing, special or oversized file, not YAML, not a mapping, an unknown or missing field,
            a value out of range, ``kv_heads`` not dividing ``heads`` (one line each).
    """
    from hetsim.platform import read_yaml_model

    return read_yaml_model(Path(path), LlmSpec, WorkloadError, "LLM description",
                           "an LLM description: layers, d_model, heads, ...")


#: Hugging Face ``config.json`` keys -> description fields (the numbers only)
_HF_KEYS = {
    "layers": ("num_hidden_layers", "n_layer"),
    "d_model": ("hidden_size", "n_embd"),
    "heads": ("num_attention_heads", "n_head"),
    "kv_heads": ("num_key_value_heads",),
    "head_dim": ("head_dim",),
    "d_ff": ("intermediate_size", "n_inner"),
    "vocab": ("vocab_size",),
    "max_context_tokens": ("max_position_embeddings", "n_positions"),
}
#: model_type -> (activation, norm, positions, bias, fused_qkv) of the architectures read
_HF_ARCHITECTURES = {
    "gpt2": ("gelu", "layernorm", "learned", "all", True),
    "llama": ("swiglu", "rmsnorm", "rotary", "none", False),
    "mistral": ("swiglu", "rmsnorm", "rotary", "none", False),
    "qwen2": ("swiglu", "rmsnorm", "rotary", "qkv", False),
}


def _hf_value(cfg: dict, field: str):
    for key in _HF_KEYS[field]:
        if cfg.get(key) is not None:
            return cfg[key]
    return None


def load_hf_config(path: str | Path, precision: dict | None = None, name: str | None = None) -> LlmSpec:
    """An LLM description from a Hugging Face ``config.json`` (numbers only; nothing in it is run).

    Reads ``model_type`` (``gpt2``, ``llama``, ``mistral``, ``qwen2``: each fixes the activation, norm, positions,
    biases and QKV layout of its architecture), the sizes (``num_hidden_layers``/``n_layer``,
    ``hidden_size``/``n_embd``, ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``,
    ``intermediate_size`` (GPT-2: ``n_inner``, default ``4 n_embd``), ``vocab_size``,
    ``max_position_embeddings``/``n_positions``), ``tie_word_embeddings`` (default true, as in transformers),
    ``attention_bias``/``mlp_bias`` where given.

    Args:
        path: the ``config.json``.
        precision: :class:`LlmPrecision` fields (default: fp16 weights on the ``host``, fp16 KV cache).
        name: the model's name (default: the folder holding the file).

    Raises:
        WorkloadError: unreadable or oversized file, not JSON, a ``model_type`` not listed, a size missing or
            out of range (one line).
    """
    p = Path(path)
    raw = read_input_bytes(p, "Hugging Face config", MAX_HF_CONFIG_BYTES, WorkloadError)
    try:
        cfg = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise WorkloadError(f"{p}: not a JSON config file ({err})") from None
    if not isinstance(cfg, dict):
        raise WorkloadError(f"{p}: expected a JSON object (a Hugging Face config.json)")
    arch = _HF_ARCHITECTURES.get(str(cfg.get("model_type")))
    if arch is None:
        raise WorkloadError(f"{p}: model_type {cfg.get('model_type')!r} is not one hetsim reads "
                            f"({', '.join(sorted(_HF_ARCHITECTURES))})")
    act, norm, positions, bias, fused = arch
    if cfg.get("attention_bias") is True:
        bias = "qkv" if bias == "none" else bias
    if cfg.get("mlp_bias") is True:
        bias = "all"
    data = {f: _hf_value(cfg, f) for f in _HF_KEYS}
    data = {k: v for k, v in data.items() if v is not None}
    if "d_ff" not in data and cfg.get("model_type") == "gpt2" and isinstance(data.get("d_model"), int):
        data["d_ff"] = 4 * data["d_model"]  # GPT-2: n_inner null means 4 x n_embd
    data.update(name=name or p.resolve().parent.name or p.stem, source=str(p), activation=act, norm=norm,
                positions=positions, bias=bias, fused_qkv=fused,
                tied_embeddings=cfg.get("tie_word_embeddings", True) is not False,
                precision=precision or {"weights": {"host": "fp16"}, "kv_cache": "fp16"})
    try:
        return LlmSpec.model_validate(data)
    except ValidationError as err:
        e = err.errors()[0]
        field = str(e["loc"][0]) if e["loc"] else ""
        keys = f" ({' or '.join(_HF_KEYS[field])})" if field in _HF_KEYS else ""
        raise WorkloadError(f"{p}: {field or 'config'}{keys}: {e['msg']}") from None
