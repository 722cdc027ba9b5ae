"""Observe tensor shapes by running an ONNX model once in onnxruntime (private helper of ``onnx_import``).

Used by :func:`hetsim.workload.onnx_import.load_onnx` when ``onnx.shape_inference`` leaves tensors without a
static shape, typically because the graph uses operators of another domain (onnxruntime's ``com.microsoft``
QLinearConv in NHWC, QGemm, QLinearAdd, ..., as in graphs saved by onnxruntime after its optimisations), whose
shape functions the ``onnx`` package does not have.

The model is run exactly as saved: CPU execution provider, one thread, graph optimisations disabled and the
QDQ-specific level-0 rewrite (``EnsureUniqueDQForNodeUnit``, which otherwise duplicates DequantizeLinear nodes
whose output becomes a graph output) switched off with ``session.disable_quant_qdq``. Every node output is
added as a graph output, and the graph onnxruntime actually executed is saved and compared with the file's
node set, so that the shapes are those of the file's tensors. onnxruntime is imported here, lazily: plain ONNX
files whose shapes ``onnx`` infers never load it.

``onnxruntime.tools.symbolic_shape_infer`` was not used: it stops at the first ``com.microsoft`` QLinearConv
("Incomplete symbolic shape inference") in each of the paper graphs (``workloads/paper/``).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto
from onnx.external_data_helper import load_external_data_for_model
from onnx.helper import np_dtype_to_tensor_dtype, tensor_dtype_to_np_dtype

__all__ = ["DATA_DEPENDENT_OPS", "SEED", "ShapeRecoveryError", "observe_shapes"]

# Default-domain ops whose output shape depends on input *values*: one run cannot give a static shape.
DATA_DEPENDENT_OPS = frozenset({"NonZero", "Unique", "NonMaxSuppression", "Compress"})
SEED = 0  # numpy default_rng seed of the float graph inputs
_DEFAULT_DOMAINS = ("", "ai.onnx")
_MSG_MAX = 300


class ShapeRecoveryError(Exception):
    """Why onnxruntime could not provide the shapes (a one-line phrase, completed by the caller)."""


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    text = text or type(e).__name__
    return text if len(text) <= _MSG_MAX else text[: _MSG_MAX - 3] + "..."


def _node_key(node: onnx.NodeProto) -> tuple:
    domain = "" if node.domain in _DEFAULT_DOMAINS else node.domain
    return domain, node.op_type, tuple(node.input), tuple(node.output)


def _feeds(inputs: Iterable[tuple[str, tuple[int, ...], int]]) -> dict[str, np.ndarray]:
    """Deterministic inputs: standard normal (seed :data:`SEED`) for float inputs, zeros otherwise.

    Zeros for integer and bool inputs keep index-like inputs (token ids, ...) in range.
    """
    rng = np.random.default_rng(SEED)
    feeds = {}
    for name, shape, elem_type in inputs:
        try:
            dtype = np.dtype(tensor_dtype_to_np_dtype(elem_type))
        except (KeyError, TypeError, ValueError):
            dtype = None
        if dtype is None or dtype.kind not in "biufc":
            kind = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() else "?"
            raise ShapeRecoveryError(f"graph input {name!r} has element type {kind}, which cannot be fed")
        if dtype.kind in "fc":
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[name] = np.zeros(shape, dtype=dtype)
    return feeds


def _model_bytes(model: onnx.ModelProto, raw: bytes, base_dir: Path, tensors: list[str]) -> bytes:
    """The model with ``tensors`` appended to the graph outputs, serialised.

    Protobuf parsing merges concatenated messages (repeated fields are appended), so the raw file bytes plus a
    ``ModelProto`` holding only the extra ``graph.output`` entries parse as the model with those outputs: no
    copy of the (possibly large) initializers is made. Models with external tensor data are copied with the
    data loaded, since onnxruntime cannot resolve external files of a model given as bytes.
    """
    extra = onnx.ModelProto()
    for t in tensors:
        extra.graph.output.add().name = t
    stored = [*model.graph.initializer, *(s.values for s in model.graph.sparse_initializer)]
    external = any(t.data_location == TensorProto.EXTERNAL for t in stored)
    if external:
        full = onnx.ModelProto()
        full.CopyFrom(model)
        try:
            load_external_data_for_model(full, str(base_dir))
        except (OSError, ValueError) as e:
            raise ShapeRecoveryError(f"its external tensor data cannot be read: {_one_line(e)}") from None
        raw = full.SerializeToString()
    return raw + extra.SerializeToString()


def observe_shapes(
    model: onnx.ModelProto,
    raw: bytes,
    base_dir: Path,
    inputs: list[tuple[str, tuple[int, ...], int]],
) -> tuple[dict[str, tuple[tuple[int, ...], int]], str]:
    """Run the model once in onnxruntime and return the shape and element type of every node output.

    Args:
        model: the decoded model (only read).
        raw: the file's bytes (``model`` serialised).
        base_dir: directory of the model file (for external tensor data).
        inputs: ``(name, static shape, ONNX element type)`` of every runtime graph input.

    Returns:
        ``(observed, how)``: ``observed`` maps each node output that onnxruntime returned as a tensor to
        ``(shape, ONNX element type)``; ``how`` describes the run (for ``Workload.meta``).

    Raises:
        ShapeRecoveryError: onnxruntime is not installed, cannot load or run the model, or executed a graph
            whose node set differs from the file's.
    """
    try:
        import onnxruntime as ort
    except ImportError:
        raise ShapeRecoveryError("onnxruntime is not installed (pip install 'onnxruntime>=1.17')") from None
    except Exception as e:  # a broken installation (missing shared library, ...)
        raise ShapeRecoveryError(f"onnxruntime cannot be imported: {_one_line(e)}") from None
    version = getattr(ort, "__version__", "?")

    graph = model.graph
    have = {o.name for o in graph.output}
    extra = list(dict.fromkeys(t for n in graph.node for t in n.output if t and t not in have))
    data = _model_bytes(model, raw, base_dir, extra)
    feeds = _feeds(inputs)

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3  # errors only
    so.add_session_config_entry("session.disable_quant_qdq", "1")
    with tempfile.TemporaryDirectory(prefix="hetsim_ort_") as tmp:
        executed_path = Path(tmp) / "executed.onnx"
        so.optimized_model_filepath = str(executed_path)
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "executed.data")
        so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        try:
            sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise ShapeRecoveryError(f"onnxruntime {version} cannot load the model: {_one_line(e)}") from None
        try:
            executed = onnx.load(str(executed_path), load_external_data=False)
        except Exception as e:
            raise ShapeRecoveryError(
                f"the graph onnxruntime {version} executed could not be read back: {_one_line(e)}"
            ) from None

    want, got = Counter(map(_node_key, graph.node)), Counter(map(_node_key, executed.graph.node))
    if want != got:
        removed, added = want - got, got - want
        example = next(iter(removed or added))
        raise ShapeRecoveryError(
            f"onnxruntime {version} changed the graph before running it ({sum(removed.values())} node(s) "
            f"removed or rewritten, {sum(added.values())} added, e.g. {example[1]} with outputs "
            f"{list(example[3])}), so its tensors are not the file's"
        )

    names = [o.name for o in sess.get_outputs()]
    try:
        results = sess.run(names, feeds)
    except Exception as e:
        raise ShapeRecoveryError(f"onnxruntime {version} failed to run the model: {_one_line(e)}") from None

    observed: dict[str, tuple[tuple[int, ...], int]] = {}
    for name, value in zip(names, results, strict=True):
        if not isinstance(value, np.ndarray):
            continue  # sequence or map output: no tensor shape
        try:
            elem_type = int(np_dtype_to_tensor_dtype(value.dtype))
        except (KeyError, TypeError, ValueError):
            continue
        observed[name] = (tuple(int(d) for d in value.shape), elem_type)
    how = (
        f"onnxruntime {version} (one run: CPU, 1 thread, optimisations disabled, float inputs standard normal "
        f"with seed {SEED}, other inputs zero)"
    )
    return observed, how
