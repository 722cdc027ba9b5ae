"""The operator type names a device's ``supported_ops`` may list: ONNX's operator set (``onnx.defs``, every
domain it defines) and onnxruntime's ``com.microsoft`` contrib operators (``QGemm``, ``QLinearAdd``, ... as in
graphs saved after onnxruntime's optimisations, which :mod:`hetsim.workload.onnx_import` reads).

A name outside them can never match an op of an ONNX model, so a device listing only such names would run
nothing, silently; :func:`check_op_types` refuses it with the closest known name (a typo such as ``Cnv``, a case
slip such as ``conv``).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from hetsim.errors import did_you_mean

#: onnxruntime's com.microsoft contrib operator types (onnxruntime 1.32,
#: ``onnxruntime.capi.onnxruntime_pybind11_state.get_all_operator_schema()``; a test compares it with the
#: installed onnxruntime). Stored so that loading a platform does not import onnxruntime.
ORT_CONTRIB_OP_TYPES = frozenset({
    'Attention', 'AttnLSTM', 'BeamSearch', 'BiasAdd', 'BiasDropout', 'BiasGelu', 'BiasSoftmax', 'BiasSplitGelu',
    'BifurcationDetector', 'BitmaskBiasDropout', 'BitmaskDropout', 'BranchwiseRMSNorm', 'CDist',
    'CausalConvWithState', 'ComplexMul', 'ComplexMulConj', 'ConvStateReplay', 'ConvTransposeWithDynamicPads',
    'CropAndResize', 'DecoderAttention', 'DecoderMaskedMultiHeadAttention', 'DecoderMaskedSelfAttention',
    'DequantizeBFP', 'DequantizeLinear', 'DequantizeWithOrder', 'DynamicQuantizeLSTM', 'DynamicQuantizeMatMul',
    'DynamicSparseAttention', 'DynamicTimeWarping', 'EPContext', 'EmbedLayerNormalization', 'EngramGate',
    'ExpandDims', 'FastGelu', 'FusedConv', 'FusedGemm', 'FusedMatMul', 'FusedMatMulActivation', 'GatedAdd',
    'GatedDeltaNet', 'GatedDeltaNetStateReplay', 'GatedRMSNorm', 'GatedRelativePositionBias',
    'GatherBlockQuantized', 'GatherND', 'GatherPacked', 'Gelu', 'GemmFastGelu', 'GemmFloat8',
    'GemmaRotaryEmbedding', 'GreedySearch', 'GridSample', 'GroupNorm', 'GroupQueryAttention',
    'HyperConnectionLowRankMix', 'HyperConnectionPostMix', 'HyperConnectionPreMix', 'Inverse', 'Irfft',
    'IsAllFinite', 'LinearAttention', 'LinearAttentionGate', 'LongformerAttention', 'MRotaryEmbedding',
    'Mamba2Verify', 'MatMulBlockQuantizedFp4Weight', 'MatMulBlockQuantizedFp8Weight', 'MatMulBnb4', 'MatMulFpQ4',
    'MatMulInteger16', 'MatMulIntegerToFloat', 'MatMulNBits', 'MatMulNBitsMlp', 'MatMulNBitsQLoRA',
    'MatMulNBitsQkv', 'MatMulPacked', 'MaxpoolWithMask', 'MoE', 'MoEGroupRouter', 'MoEPacked', 'MulInteger',
    'MultiHeadAttention', 'MurmurHash3', 'NGramHashMapping', 'NGramRepeatBlock', 'NhwcConv', 'NhwcFusedConv',
    'NhwcMaxPool', 'PackedAttention', 'PackedMultiHeadAttention', 'PackedSparseAttentionIndexer',
    'PackedSparseAttentionIndexerMerge', 'Pad', 'PagedAttention', 'QAttention', 'QEmbedLayerNormalization', 'QGemm',
    'QLinearAdd', 'QLinearAveragePool', 'QLinearConcat', 'QLinearConv', 'QLinearGlobalAveragePool',
    'QLinearLeakyRelu', 'QLinearMul', 'QLinearReduceMean', 'QLinearSigmoid', 'QLinearSoftmax', 'QLinearWhere',
    'QMoE', 'QOrderedAttention', 'QOrderedGelu', 'QOrderedLayerNormalization', 'QOrderedLongformerAttention',
    'QOrderedMatMul', 'QuantizeBFP', 'QuantizeLinear', 'QuantizeWithOrder', 'QuickGelu', 'RMSNormRotary', 'Range',
    'ReduceSumInteger', 'RelativePositionBias', 'RemovePadding', 'RestorePadding', 'Rfft', 'RotaryEmbedding',
    'RouterGateUpProj', 'SampleOp', 'Sampling', 'ScaledSiLU', 'SkipGroupNorm', 'SkipLayerNormalization',
    'SkipSimplifiedLayerNormalization', 'Snpe', 'SparseAttention', 'SparseAttentionIndexer', 'SparsePagedAttention',
    'SparseToDenseMatMul', 'SpeculativePrefixCommit', 'SwiGLU', 'Tokenizer', 'TorchEmbedding', 'TransposeMatMul',
    'Trilu', 'UnfoldTensor', 'Unique', 'VarlenCausalConvWithState', 'VarlenNGramHashMapping', 'WhisperBeamSearch',
    'WordConvEmbedding'
})


@lru_cache(maxsize=1)
def known_op_types() -> frozenset[str]:
    """Every operator type name of ONNX's operator set (all domains of ``onnx.defs``) and of
    :data:`ORT_CONTRIB_OP_TYPES`."""
    import onnx.defs

    return frozenset(s.name for s in onnx.defs.get_all_schemas_with_history()) | ORT_CONTRIB_OP_TYPES


def check_op_types(names: Iterable[str], where: str) -> None:
    """Refuse names in ``names`` that are no ONNX or onnxruntime operator type.

    Raises:
        ValueError: ``"<where>: unknown op type 'Cnv' (not an ONNX or onnxruntime operator); did you mean
            'Conv'?"``, for the first unknown name.
    """
    known = known_op_types()
    for n in names:
        if n not in known:
            hint = did_you_mean(n, sorted(known))
            raise ValueError(f"{where}: unknown op type {n!r} (not an ONNX or onnxruntime operator){hint}")
