"""Decoder-only transformers described by their numbers (``workloads/llm/*.llm.yaml``): the description and its
arithmetic (:mod:`hetsim.llm.spec`: parameters, weight and KV-cache bytes, a Hugging Face ``config.json`` reader)
and the op graphs of a prefill and of one decode step (:mod:`hetsim.llm.graph`), read by the ``llm`` front end
(:mod:`hetsim.workload.frontends`: ``.llm.yaml`` files, options ``phase``, ``prompt_tokens``,
``context_tokens``)."""

from __future__ import annotations

from pathlib import Path

from hetsim.llm.graph import PHASES, build_graph
from hetsim.llm.spec import (
    PRECISION_BITS,
    LlmPrecision,
    LlmSpec,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    layer_parameters,
    load_hf_config,
    load_llm_spec,
    parameters,
    precision_bits,
    weight_bytes,
)

__all__ = ["PHASES", "PRECISION_BITS", "LlmPrecision", "LlmSpec", "build_graph", "kv_cache_bytes",
           "kv_cache_bytes_per_token", "layer_parameters", "load_frontend", "load_hf_config", "load_llm_spec",
           "parameters", "precision_bits", "weight_bytes"]


def load_frontend(path: str | Path, phase: str | None = None, prompt_tokens: int | None = None,
                  context_tokens: int | None = None):
    """The ``llm`` front end's loader: the description at ``path`` built as a prefill or a decode step
    (:func:`~hetsim.llm.graph.build_graph`; default: a decode step at context 128, or a prefill when only
    ``prompt_tokens`` is given). The workload's ``source`` is the path.

    Raises:
        WorkloadError: a bad description (:func:`~hetsim.llm.spec.load_llm_spec`) or options (:func:`build_graph`).
    """
    spec = load_llm_spec(path)
    if phase is None:
        phase = "prefill" if prompt_tokens is not None else "decode"
    wl = build_graph(spec, phase, prompt_tokens, context_tokens)
    wl.source = str(path)
    return wl
