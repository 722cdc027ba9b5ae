"""LLM descriptions (hetsim/llm/): the description, its arithmetic (parameters, KV-cache bytes) worked by hand, and
its prefill and decode graphs, which for GPT-2 small equal the shipped ONNX files op for op."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from hetsim.cli._main import main
from hetsim.errors import InputError, WorkloadError
from hetsim.llm import (
    build_graph,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    load_hf_config,
    load_llm_spec,
    parameters,
    weight_bytes,
)
from hetsim.workload import frontends as fe

ROOT = Path(__file__).resolve().parents[1]
LLM = ROOT / "workloads" / "llm"
GPT2 = LLM / "gpt2-small.llm.yaml"
LLAMA = LLM / "llama-3.2-1b.llm.yaml"
QWEN = LLM / "qwen2.5-0.5b.llm.yaml"


def _onnx(name: str):
    from hetsim.workload.onnx_import import WeightsAbsentWarning, load_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeightsAbsentWarning)
        return load_onnx(ROOT / "workloads" / name)


@pytest.mark.parametrize(("phase", "onnx"), [("prefill", "gpt2_small_prefill.onnx"),
                                             ("decode", "gpt2_small_decode.onnx")])
def test_gpt2_graphs_equal_the_shipped_onnx(phase, onnx):
    """workloads/README.md: prefill of P = 128 tokens, decode at L = 128; every op (type, shapes, bytes, weight
    tensors, MACs, GEMM view, folding), every edge and the graph's inputs and outputs are the importer's."""
    a, b = _onnx(onnx), build_graph(load_llm_spec(GPT2), phase)
    assert b.summary()["op_types"] == a.summary()["op_types"]
    assert b.summary()["macs"] == a.summary()["macs"]
    assert b.ops == a.ops
    assert {(u, v): d for u, v, d in b.graph.edges(data=True)} == {(u, v): d for u, v, d in a.graph.edges(data=True)}
    for key in ("inputs", "outputs", "input_readers", "output_producers"):
        assert b.meta[key] == a.meta[key]


def test_gpt2_numbers_by_hand():
    spec = load_llm_spec(GPT2)
    # Hugging Face gpt2: 124,439,808 parameters = wte 50257 x 768 + wpe 1024 x 768 + 12 blocks + ln_f
    block = (768 * 2304 + 2304) + (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 4 * 768
    assert parameters(spec) == 50257 * 768 + 1024 * 768 + 12 * block + 2 * 768 == 124_439_808
    decode = build_graph(spec, "decode", context_tokens=128)
    assert decode.summary()["macs"] == 125_909_760  # 125.9 M MACs per decoded token
    # = every weight matrix once (the tied LM head included) + Q K^T and P V over 129 keys in 12 heads x 12 layers
    assert 12 * (768 * 2304 + 768 * 768 + 2 * 768 * 3072) + 768 * 50257 + 2 * 12 * 12 * 129 * 64 == 125_909_760
    assert weight_bytes(spec, "host") == 4 * 124_439_808 and weight_bytes(spec, "npu") == 124_439_808


def test_kv_cache_bytes_by_hand():
    gpt2, llama, qwen = (load_llm_spec(p) for p in (GPT2, LLAMA, QWEN))
    assert kv_cache_bytes_per_token(gpt2) == 2 * 12 * 12 * 64 * 4 == 73_728  # fp32, 12 KV heads
    assert kv_cache_bytes(gpt2, 1024) == 75_497_472  # a full 1024-token context: 72 MiB
    assert kv_cache_bytes_per_token(llama) == 2 * 16 * 8 * 64 * 2 == 32_768  # fp16, GQA: 8 KV heads, not 32
    assert kv_cache_bytes(llama, 128 + 128) == 8_388_608  # a 128-token prompt and 128 new tokens: 8 MiB
    assert kv_cache_bytes_per_token(qwen) == 2 * 24 * 2 * 64 * 2 == 12_288  # 2 KV heads for 14 query heads
    int4 = llama.model_copy(update={"precision": llama.precision.model_copy(update={"kv_cache": "int4"})})
    assert kv_cache_bytes_per_token(int4) == 2 * 16 * 8 * 64 // 2 == 8_192
    with pytest.raises(WorkloadError, match="outside 0..1024"):
        kv_cache_bytes(gpt2, 1025)


@pytest.mark.parametrize("path", [GPT2, LLAMA, QWEN])
@pytest.mark.parametrize("context", [1, 200])
def test_the_decode_graph_holds_the_cache(path, context):
    """The Concats of a decode step write exactly the request's cache after the step (an independent path to
    kv_cache_bytes: the graph's own tensor bytes)."""
    spec = load_llm_spec(path)
    wl = build_graph(spec, "decode", context_tokens=context)
    cache = [o for o in wl.ops.values() if o.op_type == "Concat"]
    assert len(cache) == 2 * spec.layers
    assert sum(o.out_bytes for o in cache) == kv_cache_bytes(spec, context + 1) == wl.meta["llm"]["kv_cache_bytes"]
    past = sum(t["shape"][2] * t["shape"][1] * t["shape"][3] * 2 for t in wl.meta["inputs"][1:])  # fp16 past K, V
    if spec.precision.kv_cache == "fp16":
        assert past == kv_cache_bytes(spec, context)


def test_public_parameter_counts_by_hand():
    """Llama-3.2-1B: 1.23 B (Meta's model card); Qwen2.5-0.5B: 0.49 B, 0.36 B without the embedding (Qwen's)."""
    llama_block = 2048 * 2048 * 2 + 2048 * 512 * 2 + 3 * 2048 * 8192 + 2 * 2048
    assert parameters(load_llm_spec(LLAMA)) == 128256 * 2048 + 16 * llama_block + 2048 == 1_235_814_400
    qwen_block = (896 * 896 + 896) + 2 * (896 * 128 + 128) + 896 * 896 + 3 * 896 * 4864 + 2 * 896
    qwen = load_llm_spec(QWEN)
    assert parameters(qwen) == 151936 * 896 + 24 * qwen_block + 896 == 494_032_768
    assert round((parameters(qwen) - 151936 * 896) / 1e9, 2) == 0.36


@pytest.mark.parametrize("path", [LLAMA, QWEN])
def test_graph_reads_every_parameter_once(path):
    """The learned weights the decode graph's ops read (projections, norms, biases, the tied LM head) are the
    description's parameter count: the graph and the formula agree."""
    spec = load_llm_spec(path)
    wl = build_graph(spec, "decode", context_tokens=16)
    read = sum(e for o in wl.ops.values() if not o.is_constant for n, e in o.weight_tensors
               if n.endswith((".weight", ".bias")) or n == "lm_head.tied_T_out")
    assert read == parameters(spec)


def test_grouped_query_attention_shapes_and_macs():
    spec = load_llm_spec(LLAMA)  # 32 query heads share 8 key/value heads: groups of 4
    wl = build_graph(spec, "decode", context_tokens=100)
    scores = wl.op("h.0.attn.scores")
    assert scores.input_shapes == ((1, 8, 4, 1, 64), (1, 8, 1, 64, 101))
    assert scores.macs == 32 * 101 * 64 and scores.gemm is None  # two activations: no weight, no GEMM view
    assert wl.op("h.0.attn.context").macs == 32 * 101 * 64
    assert wl.op("h.0.attn.k_cache").out_bytes == 8 * 101 * 64 * 2  # the cache holds 8 heads, not 32
    gemm = sum(o.macs for o in wl.ops.values() if o.gemm is not None)
    for n in (100, 500):  # each decoded token: every weight once + attention over n + 1 keys
        macs = build_graph(spec, "decode", context_tokens=n).summary()["macs"]
        assert macs == gemm + 2 * 16 * 32 * (n + 1) * 64
    prefill = build_graph(spec, "prefill", prompt_tokens=8)
    assert prefill.op("h.0.attn.mask").weight_tensors == (("causal_mask", 64),)
    assert prefill.op("h.3.attn.q.rope").op_type == "RotaryEmbedding"


def test_precision_reaches_the_cpu_roofline():
    """int4 weights on the CPU: a projection carries 4 bits, so the CPU reads half a byte per weight."""
    from hetsim.devices.cpu import roofline_bytes

    wl = build_graph(load_llm_spec(LLAMA), "decode", context_tokens=8)
    op = wl.op("h.0.mlp.up.MatMul")
    assert op.bits == 4 and op.gemm.m_v == 8192 and op.gemm.n_v == 2048
    assert roofline_bytes(op) == op.in_bytes + op.out_bytes + 2048 * 8192 // 2
    assert op.in_bytes == 2048 * 2  # activations at fp16
    assert wl.op("h.0.attn.Softmax").bits == 16
    with pytest.raises(WorkloadError, match="no weight precision for device class 'dsp'"):
        build_graph(load_llm_spec(LLAMA), "decode", device_class="dsp")


def test_front_end_by_the_longest_suffix():
    assert fe.frontend_for("m.llm.yaml").name == "llm" and fe.frontend_for("M.LLM.YML").name == "llm"
    assert fe.frontend_for("braille.yaml").name == "snn-spec"
    wl = fe.load_workload(GPT2, phase="prefill", prompt_tokens=16)
    assert wl.meta["llm"]["phase"] == "prefill" and wl.op("wte").output_shapes == ((1, 16, 768),)
    assert fe.load_workload(GPT2).meta["llm"]["context_tokens"] == 128  # a decode step at 128 by default
    with pytest.raises(InputError, match="context_tokens sets a decode step's context"):
        fe.load_workload(GPT2, phase="prefill", context_tokens=4)
    with pytest.raises(InputError, match=r"context_tokens .* not of an ONNX model"):
        fe.load_workload(ROOT / "workloads" / "resnet20_cifar10.onnx", context_tokens=4)
    with pytest.raises(WorkloadError, match="outside 1..1023"):
        fe.load_workload(GPT2, context_tokens=1024)
    from hetsim.pipeline import run

    with pytest.raises(InputError, match="phase .* not of an SNN spec"):  # refused, not ignored, on a spiking network
        run(ROOT / "platforms" / "efr32mg24.yaml", ROOT / "workloads" / "snn" / "braille384.yaml",
            workload_options={"phase": "decode"})


@pytest.mark.parametrize(("edit", "match"), [
    ({"heads_per_layer": 3}, "heads_per_layer"),
    ({"kv_heads": 5}, "kv_heads .5. must divide heads .12."),
    ({"activation": "relu"}, "activation"),
    ({"precision": {"weights": {"host": "fp8"}}}, "fp8"),
])
def test_bad_descriptions_are_one_line(tmp_path, edit, match):
    import yaml

    data = yaml.safe_load(GPT2.read_text())
    data.update(edit)
    p = tmp_path / "bad.llm.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(WorkloadError, match=match) as err:
        load_llm_spec(p)
    assert "\n" not in str(err.value)


def test_cli_inspect_and_errors(tmp_path, capsys):
    assert main(["inspect", str(GPT2), "--phase", "prefill", "--prompt-tokens", "32"]) == 0
    out = capsys.readouterr().out
    assert "gpt2-small_prefill_32: 343 operators" in out and "input_ids int64[1, 32]" in out
    bad = tmp_path / "x.llm.yaml"
    bad.write_text("name: x\nlayers: 2\n")
    assert main(["inspect", str(bad)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()  # one line per problem, as for a platform file
    assert lines[0].startswith("hetsim: error:") and "d_model: required field is missing" in lines[0]
    assert all(str(bad) in line for line in lines) and len(lines) == 10
    assert main(["inspect", str(ROOT / "workloads" / "resnet20_cifar10.onnx"), "--phase", "decode"]) == 2
    assert "--phase picks the prefill or a decode step" in capsys.readouterr().err


def test_hugging_face_config(tmp_path):
    """Meta's Llama-3.2-1B config.json (its numbers) gives the shipped description's model."""
    cfg = {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048, "num_attention_heads": 32,
           "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256,
           "max_position_embeddings": 131072, "tie_word_embeddings": True, "attention_bias": False,
           "mlp_bias": False, "hidden_act": "silu", "rope_theta": 500000.0}
    (tmp_path / "Llama-3.2-1B").mkdir()
    p = tmp_path / "Llama-3.2-1B" / "config.json"
    p.write_text(json.dumps(cfg))
    spec = load_hf_config(p, precision={"weights": {"host": "int4", "npu": "int8"}, "kv_cache": "fp16"})
    shipped = load_llm_spec(LLAMA)
    assert spec.model_dump(exclude={"name", "source"}) == shipped.model_dump(exclude={"name", "source"})
    assert spec.name == "Llama-3.2-1B"
    gpt2 = tmp_path / "gpt2.json"
    gpt2.write_text(json.dumps({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "n_inner": None,
                                "vocab_size": 50257, "n_positions": 1024}))
    assert parameters(load_hf_config(gpt2)) == 124_439_808
    p.write_text(json.dumps({**cfg, "model_type": "mamba"}))
    with pytest.raises(WorkloadError, match="model_type 'mamba' is not one hetsim reads"):
        load_hf_config(p)
    p.write_text(json.dumps({k: v for k, v in cfg.items() if k != "hidden_size"}))
    with pytest.raises(WorkloadError, match=r"d_model \(hidden_size or n_embd\): Field required"):
        load_hf_config(p)


def test_a_sweep_of_llm_descriptions_is_a_dag_sweep(tmp_path):
    """A .llm.yaml ends in .yaml like an SNN spec: a sweep asks its front end, not its last suffix."""
    from hetsim.dse.sweep import load_sweep

    p = tmp_path / "s.yaml"
    p.write_text(f"name: s\nworkloads: [{GPT2}]\nplatforms: [{ROOT / 'platforms' / 'edge-soc.yaml'}]\n"
                 "mappers: [all-host]\n")
    spec = load_sweep(p)
    assert spec.kind == "dag" and spec.mappers == ["all-host"]
