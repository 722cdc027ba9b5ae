"""Observe tensor shapes by running an ONNX model once in onnxruntime (private helper of ``onnx_import``).

Used by :func:`hetsim.workload.onnx_import.load_onnx` when ``onnx.shape_inference`` leaves tensors without a
static shape, typically because the graph uses operators of another domain (onnxruntime's ``com.microsoft``
QLinearConv in NHWC, QGemm, QLinearAdd, ..., as in graphs saved by onnxruntime after its optimisations), whose
shape functions the ``onnx`` package does not have.

The model is run exactly as saved: CPU execution provider, one thread, graph optimisations disabled and the
QDQ-specific level-0 rewrite (``EnsureUniqueDQForNodeUnit``, which otherwise duplicates DequantizeLinear nodes
whose output becomes a graph output) switched off with ``session.disable_quant_qdq``. Every node output is
added as a graph output, and the graph onnxruntime actually executed is saved and its *tensors* are matched with
the file's: even with optimisations disabled onnxruntime legitimately rewrites a graph (``Constant`` nodes become
initializers, ``CastLike`` becomes ``Cast``, function ops are inlined into their bodies) while every tensor the
file names keeps its name and value, so each node output of the file must still exist in the executed graph (as
a node output, an initializer or a graph input); a file tensor that no longer exists is an error. onnxruntime is
imported here, lazily: plain ONNX files whose shapes ``onnx`` infers never load it. Its log is set to errors
only (session and default logger), so none of its lines precede hetsim's one-line error.

``onnxruntime.tools.symbolic_shape_infer`` was not used: it stops at the first ``com.microsoft`` QLinearConv
("Incomplete symbolic shape inference") in each of the paper graphs (``workloads/paper/``).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto
from onnx.external_data_helper import load_external_data_for_model
from onnx.helper import tensor_dtype_to_np_dtype

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


def _type_name(elem_type: int) -> str:
    return TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() else "?"


def _feeds(ort, inputs: Iterable[tuple[str, tuple[int, ...], int]]) -> dict:
    """Deterministic inputs: standard normal (seed :data:`SEED`) for float inputs, zeros otherwise.

    Zeros for integer and bool inputs keep index-like inputs (token ids, ...) in range. Element types numpy
    has no native dtype for (bfloat16, float8, int4, ...) are fed as zero bytes of the right size, wrapped in an
    ``OrtValue`` of that ONNX type.
    """
    rng = np.random.default_rng(SEED)
    feeds: dict = {}
    for name, shape, elem_type in inputs:
        try:
            dtype = np.dtype(tensor_dtype_to_np_dtype(elem_type))
        except (KeyError, TypeError, ValueError):
            dtype = None
        if dtype is not None and dtype.kind in "fc" and dtype.type.__module__ == "numpy":
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        elif dtype is not None and dtype.kind in "biu" and dtype.type.__module__ == "numpy":
            feeds[name] = np.zeros(shape, dtype=dtype)
        elif elem_type == TensorProto.STRING:
            feeds[name] = np.full(shape, "", dtype=object)
        else:
            feeds[name] = _ort_value(ort, name, shape, elem_type)
    return {k: v if isinstance(v, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(v) for k, v in feeds.items()}


def _ort_value(ort, name: str, shape: tuple[int, ...], elem_type: int):
    """Zeros of an element type numpy lacks (bfloat16, float8) as an ``OrtValue`` of that ONNX type."""
    kind = _type_name(elem_type)
    bits = 16 if kind == "BFLOAT16" else 8 if kind.startswith("FLOAT8") else None
    if bits is None:
        raise ShapeRecoveryError(f"graph input {name!r} has element type {kind}, which cannot be fed")
    try:
        data = np.zeros(shape, dtype=np.uint16 if bits == 16 else np.uint8)
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(data, elem_type)
    except Exception as e:  # an onnxruntime build without this type
        raise ShapeRecoveryError(f"graph input {name!r} of element type {kind} cannot be fed: {_one_line(e)}") from None


def _elem_type(ort_type: str) -> int | None:
    """ONNX element type of an onnxruntime type string such as ``tensor(bfloat16)``, or ``None``."""
    if not (ort_type.startswith("tensor(") and ort_type.endswith(")")):
        return None
    name = ort_type[len("tensor(") : -1].upper()
    return int(getattr(TensorProto, name)) if isinstance(getattr(TensorProto, name, None), int) else None


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
            in which a node output of the file no longer exists.
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
    feeds = _feeds(ort, inputs)
    with contextlib.suppress(Exception):  # an older onnxruntime without it: only its log is louder
        ort.set_default_logger_severity(4)  # fatal only: no warning or error lines before hetsim's one-line error

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4  # fatal only: hetsim reports a failure itself, in one line
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

    # Match tensors, not nodes: every node output of the file must still be a tensor of the executed graph.
    exists = {t for n in executed.graph.node for t in n.output} | {t.name for t in executed.graph.initializer}
    exists |= {vi.name for vi in executed.graph.input} | {s.values.name for s in executed.graph.sparse_initializer}
    gone = [(n, t) for n in graph.node for t in n.output if t and t not in exists]
    if gone:
        node, t = gone[0]
        raise ShapeRecoveryError(
            f"onnxruntime {version} changed the graph before running it: {len(gone)} tensor(s) of the file no "
            f"longer exist, e.g. {t!r} (output of a {node.op_type} node), so their shapes cannot be observed"
        )

    outputs = sess.get_outputs()
    names = [o.name for o in outputs]
    try:
        results = sess.run_with_ort_values(names, feeds)
    except Exception as e:
        raise ShapeRecoveryError(f"onnxruntime {version} failed to run the model: {_one_line(e)}") from None

    observed: dict[str, tuple[tuple[int, ...], int]] = {}
    for out, value in zip(outputs, results, strict=True):
        try:
            if not value.is_tensor():
                continue  # sequence or map output: no tensor shape
            shape = tuple(int(d) for d in value.shape())
        except Exception:  # noqa: S112 - not a tensor
            continue
        elem_type = _elem_type(out.type)
        if elem_type is not None:
            observed[out.name] = (shape, elem_type)
    how = (
        f"onnxruntime {version} (one run: CPU, 1 thread, optimisations disabled, float inputs standard normal "
        f"with seed {SEED}, other inputs zero)"
    )
    return observed, how
