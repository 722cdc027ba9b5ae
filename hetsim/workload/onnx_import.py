"""Read an ONNX model into a :class:`~hetsim.workload.op.Workload` (one :class:`Op` per ONNX node).

Pipeline of :func:`load_onnx`:

1. read and decode the protobuf (external tensor data is *not* loaded: only shapes and element types are
   needed, never weight values);
2. structural checks on the raw graph: no control flow (subgraph attributes), every tensor produced once,
   every consumed tensor produced by a node, an initializer or a graph input, producer->consumer graph
   acyclic;
3. ``onnx.shape_inference.infer_shapes`` (non-strict, with data propagation); every tensor a node reads or
   writes must then have a static shape. When some have none (typically ops of another domain, e.g.
   onnxruntime's ``com.microsoft`` QLinearConv/QGemm/QLinearAdd in graphs saved after its optimisations) and
   the graph inputs are static, the model is run once in onnxruntime (imported only then) and every node
   output takes the shape and element type observed there (:mod:`hetsim.workload._ort_shapes`);
4. constant propagation (initializers, ``Constant`` outputs, outputs of nodes whose inputs are all
   constant);
5. per node: runtime/constant input split, sizes, precision (QDQ detection) and, for MVM-capable ops, the
   GEMM view of the CPU-CIM ILP paper, Sec. IV-A2, Eq. 1 (convolutions through im2col).

Units: shapes and element counts are in elements, sizes in bytes (``ceil(elements * bits / 8)`` per tensor,
at the tensor's ONNX element type), precision in bits, MACs in multiply-accumulates.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import networkx as nx
import onnx
from google.protobuf.message import DecodeError
from onnx import AttributeProto, TensorProto

from hetsim.errors import WorkloadError
from hetsim.input_files import MAX_MODEL_BYTES, read_input_bytes
from hetsim.workload._ort_shapes import DATA_DEPENDENT_OPS, ShapeRecoveryError, observe_shapes
from hetsim.workload.op import GemmView, Op, Workload

__all__ = ["AbsentWeights", "WeightsAbsentWarning", "absent_weights", "dtype_bits", "load_onnx"]

# Bits per element of each ONNX element type (names missing from older onnx releases are skipped).
_BITS_BY_TYPE_NAME = {
    "FLOAT": 32, "UINT8": 8, "INT8": 8, "UINT16": 16, "INT16": 16, "INT32": 32, "INT64": 64, "BOOL": 8,
    "FLOAT16": 16, "DOUBLE": 64, "UINT32": 32, "UINT64": 64, "COMPLEX64": 64, "COMPLEX128": 128,
    "BFLOAT16": 16, "FLOAT8E4M3FN": 8, "FLOAT8E4M3FNUZ": 8, "FLOAT8E5M2": 8, "FLOAT8E5M2FNUZ": 8,
    "FLOAT8E8M0": 8, "UINT4": 4, "INT4": 4, "FLOAT4E2M1": 4, "UINT2": 2, "INT2": 2,
}  # fmt: skip
_ELEM_BITS: dict[int, int] = {
    getattr(TensorProto, k): v for k, v in _BITS_BY_TYPE_NAME.items() if hasattr(TensorProto, k)
}
_DTYPE_NAMES = {TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64"}

_DEFAULT_DOMAINS = ("", "ai.onnx")
_MS_DOMAIN = "com.microsoft"
# MVM-capable ops: (domain, op_type) -> (kind, activation input index, weight input index); domain "" is the
# default domain. The com.microsoft forms are onnxruntime's contrib ops: QLinearConv has the inputs of the
# standard one (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B) plus a ``channels_last`` attribute
# (x and y NHWC, the weight still (C_out, C_in/g, k_1..k_r)); QGemm's inputs are A, a_scale, a_zp, B,
# b_scale, b_zp, C, y_scale, y_zp with Gemm's transA/transB.
_MVM_OPS = {
    ("", "Conv"): ("conv", 0, 1),
    ("", "ConvInteger"): ("conv", 0, 1),
    ("", "QLinearConv"): ("conv", 0, 3),
    ("", "Gemm"): ("gemm", 0, 1),
    ("", "MatMul"): ("matmul", 0, 1),
    ("", "MatMulInteger"): ("matmul", 0, 1),
    ("", "QLinearMatMul"): ("matmul", 0, 3),
    (_MS_DOMAIN, "QLinearConv"): ("conv", 0, 3),
    (_MS_DOMAIN, "QGemm"): ("gemm", 0, 3),
}
# Ops whose precision is that of their first input, whatever feeds it.
_INPUT_PRECISION_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
                        "ConvInteger", "MatMulInteger"}  # fmt: skip
# Ops without inputs that are nevertheless not constants.
_NONDETERMINISTIC_SOURCES = {"RandomNormal", "RandomUniform"}
#: the most elements one tensor of a model may have (2**40, 4 TiB at 32 bits: far above any real model's largest
#: tensor, ~1e9; our bound): the cost model and the memory accounting count elements, bytes and MACs in int64,
#: which a tensor of 1e24 elements (a graph input of dims [1e12, 1e12]) overflows
MAX_TENSOR_ELEMENTS = 2**40


@dataclass(frozen=True)
class _Tensor:
    """Static facts about one tensor: shape (elements per dim) and ONNX element type."""

    shape: tuple[int, ...]
    elem_type: int

    @property
    def bits(self) -> int:
        return _ELEM_BITS[self.elem_type]

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return -(-self.elements * self.bits // 8)


def load_frontend(path: str | Path, input_shape: Mapping[str, Sequence[int]] | None = None) -> Workload:
    """The ``onnx`` front end's loader (:mod:`hetsim.workload.frontends`): :func:`load_onnx`."""
    return load_onnx(path, input_shapes=input_shape)


def load_onnx(path: str | Path, input_shapes: Mapping[str, Sequence[int]] | None = None, *,
              data: bytes | None = None) -> Workload:
    """Read an ONNX file into a :class:`Workload` with one :class:`Op` per ONNX node.

    Every node of ``model.graph.node`` becomes exactly one op, named after the node (``f"{op_type}_{i}"``
    when unnamed, a ``_{i}`` suffix when the name is taken), with ``Op.index`` = node position. A graph edge
    ``producer -> consumer`` aggregates all tensors the consumer reads from the producer: ``tensors`` (names),
    ``elements`` and ``bytes`` (sums over those tensors, each tensor counted once), ``param`` (True iff the
    producer is a constant op: it computes weights, not activations).

    Per op (see :class:`Op`): ``input_shapes``, ``n_in`` and ``in_bytes`` cover the distinct runtime
    (non-constant) inputs; ``output_shapes``, ``n_out``, ``out_bytes`` the outputs; ``weight_elements`` the
    distinct constant inputs (weights, biases, scales, zero points, shape tensors); ``weight_shape`` is the
    shape of the constant weight operand of an MVM op (Conv/ConvInteger input 1, QLinearConv input 3, Gemm B,
    the constant operand of MatMul/MatMulInteger/QLinearMatMul), else ``None``.

    GEMM view (CPU-CIM ILP Sec. IV-A2, Eq. 1; convolutions via im2col), set when the weight is constant:

    * Conv of any spatial rank, W ``(C_out, C_in/g, k_1..k_r)``, Y ``(B, C_out, o_1..o_r)``:
      ``m_v = C_out/g``, ``n_v = (C_in/g) * prod(k)``, ``n_mvm = B * prod(o)``, ``groups = g``, ``kernel = k``,
      ``out_spatial = o``, ``stride`` = the ``strides`` attribute (default 1 per dim). The same for
      ConvInteger, QLinearConv (weight = input 3) and onnxruntime's ``com.microsoft`` QLinearConv, whose
      ``channels_last=1`` form has NHWC input/output, Y ``(B, o_1..o_r, C_out)``, and the same weight layout.
    * Gemm with ``A`` ``(M, K)`` after ``transA`` and ``B`` ``(K, N)`` after ``transB``: constant B gives
      ``m_v = N, n_v = K, n_mvm = M``; otherwise a constant A gives ``m_v = M, n_v = K, n_mvm = N``
      (the columns of B are the input vectors). ``com.microsoft`` QGemm (A = input 0, B = input 3) alike.
    * MatMul with a constant 2-D second operand ``(K, N)`` (1-D ``(K,)``: N = 1): ``m_v = N, n_v = K,
      n_mvm = prod(A.shape[:-1])``; otherwise a constant 2-D first operand ``(M, K)``: ``m_v = M, n_v = K,
      n_mvm = prod(B.shape[:-2]) * B.shape[-1]``. Batched (>2-D) constant operands get no view.

    ``macs`` is ``gemm.macs``; Conv/Gemm/MatMul (and their integer/QLinear forms) whose weight is not
    constant still get their MAC count (``prod(Y.shape) * n_v``) with ``gemm=None``; other ops have 0.

    Precision ``bits``: Q/DQ, QLinear* and *Integer ops take the element size of their first input
    (``com.microsoft`` QLinear* and QGemm: of their first runtime input, e.g. 8 for uint8). An op
    whose data inputs (its runtime inputs plus its constant MVM weight) are all outputs of
    ``DequantizeLinear`` nodes is QDQ-quantized: bits = the largest element size of those DQ nodes' ``x``
    inputs (8 for int8/uint8, 16 for int16). Otherwise bits = element size of the first runtime input, or of
    the first output when there is none (fp32 -> 32).

    Validation beyond ``onnx.checker`` (each a one-line :class:`WorkloadError`): every graph output is produced,
    every tensor is defined once (node outputs, initializers, graph inputs), graph inputs and outputs have no
    zero-size or negative dims, no tensor a node uses or produces has more than :data:`MAX_TENSOR_ELEMENTS`
    elements, every default-domain op type exists in the declared opset, and Conv/Gemm/MatMul
    (and their integer/QLinear forms) have operand shapes consistent with the op. Ops of a domain other than
    the ONNX ones and ``com.microsoft`` are costed as host ops, with a warning; an IR or default-domain opset
    version newer than the installed ``onnx`` knows is a warning.

    Args:
        path: an ONNX protobuf file (``.onnx``).
        input_shapes: graph input name -> static shape, fixing the dynamic (symbolic or unknown) dims of those
            inputs (the CLI's ``--input-shape name=1,3,224,224``); a given dim that the model fixes must agree.
            A graph input left with a dynamic dim is refused, the message says which shape to give.
        data: the model's bytes, when it is in memory (an exported PyTorch program); ``path`` then only names
            it (the workload's name is its stem) and is not read.

    Returns:
        The workload; ``name`` = file stem, ``source`` = ``str(path)``, ``meta`` = ``producer`` (name and
        version), ``ir_version``, ``opset`` (domain -> version, ``"ai.onnx"`` for the default domain),
        ``inputs`` / ``outputs`` (``name``, ``dtype``, ``shape`` of the graph's runtime inputs and its
        outputs), ``nodes`` (ONNX node count), ``shapes`` (``"onnx.shape_inference"``, or a description of
        the onnxruntime run the shapes were observed in).

    Raises:
        WorkloadError: (one line, naming the file and the offending node/tensor) when the path does not
            exist or is unreadable; the file is not an ONNX model (protobuf decode error, no graph nodes, no
            IR version); a node has a subgraph attribute (If/Loop/Scan control flow); a tensor is produced
            twice, or consumed but never produced; the node graph has a cycle; shape inference fails; a tensor
            used or produced by a node has no static shape after shape inference (missing shape, symbolic or
            unknown dim) or an element type without a fixed size (STRING), and the onnxruntime fallback could
            not supply it (symbolic graph input, an op with data-dependent output shape such as NonZero,
            onnxruntime not installed, failing to load or run the model, or dropping a tensor of the file); a Conv's
            channels do not divide by its group count or do not match its input/output shapes.
    """
    p = Path(path)
    model, raw = _read_model(p, data)
    nodes = list(model.graph.node)
    names = _unique_names(nodes)
    _reject_control_flow(p, nodes, names)
    _check_versions(p, model)
    _check_op_types(p, model, nodes, names)

    graph = model.graph
    absent = absent_weights(p, graph)  # the notice comes once the model is read: an error is then alone
    from hetsim.workload.dynamic import free_minus_one_dims

    if free_minus_one_dims(graph):  # paddle2onnx's -1 dims are dynamic dims, as onnxruntime reads them
        raw = model.SerializeToString()
    _check_unique_definitions(p, graph)
    _check_initializer_sizes(p, graph)
    initializers = {t.name for t in graph.initializer} | {t.values.name for t in graph.sparse_initializer}
    runtime_inputs = [vi for vi in graph.input if vi.name not in initializers]
    if input_shapes:
        _apply_input_shapes(p, runtime_inputs, input_shapes)
        raw = model.SerializeToString()
    producers = _producers(p, nodes, names, initializers, {vi.name for vi in runtime_inputs})
    _check_graph_outputs(p, graph, producers, initializers, {vi.name for vi in runtime_inputs})
    _check_dynamic_inputs(p, runtime_inputs, nodes, names)

    deps = nx.DiGraph()
    deps.add_nodes_from(range(len(nodes)))
    for i, node in enumerate(nodes):
        for t in node.input:
            if t and t in producers:
                deps.add_edge(producers[t], i)
    if not nx.is_directed_acyclic_graph(deps):
        cycle = nx.find_cycle(deps)
        chain_names = " -> ".join(repr(names[u]) for u, _ in cycle[:8])
        more = " -> ..." if len(cycle) > 8 else f" -> {names[cycle[0][0]]!r}"
        raise WorkloadError(f"{p}: the ONNX graph is not a DAG: cycle {chain_names}{more}")
    order = list(nx.lexicographical_topological_sort(deps))

    inferred = _infer_shapes(p, model, raw, order)
    infos = _tensor_infos(inferred.graph)
    shapes_from = "onnx.shape_inference"
    missing = _first_missing(infos, nodes, names)
    if missing is not None:
        if absent is not None:  # onnxruntime would need the weight values to run the model
            t, role, node_name, reason = missing
            raise WorkloadError(
                f"{p}: tensor {t!r} ({role} of node {node_name!r}) {reason}, and its weights are absent "
                f"({absent.describe()}): shapes that ONNX shape inference cannot infer are observed by running the "
                "model in onnxruntime, which needs the weight values; give the external data file(s), or a model "
                "whose shape constants are stored in the .onnx file")
        infos, shapes_from = _recover_shapes(p, model, raw, runtime_inputs, infos, nodes, names, missing)
    _check_node_types(p, model, nodes, names, infos)
    _check_broadcasts(p, model, nodes, names, infos)

    constants = set(initializers)
    const_node = [False] * len(nodes)
    for i in order:
        node = nodes[i]
        ins = [t for t in node.input if t]
        if all(t in constants for t in ins) and (ins or node.op_type not in _NONDETERMINISTIC_SOURCES):
            const_node[i] = True
            constants.update(t for t in node.output if t)

    ops = [
        _make_op(p, i, names[i], node, infos, constants, producers, nodes, const_node[i])
        for i, node in enumerate(nodes)
    ]

    g = nx.DiGraph()
    for op in ops:
        g.add_node(op.name, op=op)
    runtime_names = {vi.name for vi in runtime_inputs}
    readers: dict[str, list[str]] = {}  # graph input -> the ops reading it, in node order
    for i, node in enumerate(nodes):
        for t in _distinct(node.input):
            j = producers.get(t)
            if j is None:
                if t in runtime_names:
                    readers.setdefault(t, []).append(names[i])
                continue
            u, v, info = names[j], names[i], infos[t]
            if g.has_edge(u, v):
                data = g.edges[u, v]
                data["tensors"].append(t)
                data["elements"] += info.elements
                data["bytes"] += info.nbytes
            else:
                g.add_edge(u, v, tensors=[t], elements=info.elements, bytes=info.nbytes, param=const_node[j])

    meta = {
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "ir_version": int(model.ir_version),
        "opset": {imp.domain or "ai.onnx": int(imp.version) for imp in model.opset_import},
        "inputs": [_describe(vi, infos) for vi in inferred.graph.input if vi.name not in initializers],
        "outputs": [_describe(vi, infos) for vi in inferred.graph.output],
        "nodes": len(nodes),
        "shapes": shapes_from,
        # which ops read each graph input and which op writes each graph output (tensor lifetimes,
        # hetsim.analysis.footprint)
        "input_readers": readers,
        "output_producers": {vi.name: names[producers[vi.name]] for vi in graph.output if vi.name in producers},
    }
    if absent is not None:
        meta["weights_absent"] = absent.to_dict()
        warnings.warn(absent.notice(p), WeightsAbsentWarning, stacklevel=3)
    return Workload(name=p.stem, graph=g, source=str(path), meta=meta)


# ---------------------------------------------------------------------------------------------- reading


class WeightsAbsentWarning(UserWarning):
    """A model's weights are absent (its external data files are missing): hetsim reads its structure only."""


@dataclass(frozen=True)
class AbsentWeights:
    """Initializers stored as external data whose file is missing: their shapes and element types are in the
    model, their values are not (a model shipped without its weights, e.g. ``workloads/vit_b16.onnx``).

    Attributes:
        tensors: how many initializers have no data.
        elements: their elements in all.
        nbytes: their bytes at their element types.
        files: the missing external data files, as the model names them (relative to its folder).
    """

    tensors: int
    elements: int
    nbytes: int
    files: tuple[str, ...]

    def describe(self) -> str:
        shown = ", ".join(self.files[:3]) + (f" and {len(self.files) - 3} more" if len(self.files) > 3 else "")
        return (f"{self.tensors:,} initializers, {self.elements:,} elements ({self.nbytes / 1e6:,.1f} MB), in "
                f"{shown}, not found")

    def notice(self, p: Path) -> str:
        """The one-line notice :func:`load_onnx` gives."""
        return (f"{p}: weights absent ({self.describe()}); reading the model's structure only (shapes and element "
                "types): costs, mapping and replay need nothing more, profiling with onnxruntime does")

    def to_dict(self) -> dict:
        return {"tensors": self.tensors, "elements": self.elements, "bytes": self.nbytes, "files": list(self.files)}


def absent_weights(p: Path, graph: onnx.GraphProto) -> AbsentWeights | None:
    """The initializers of ``graph`` (read from ``p``) whose external data file is missing, or ``None`` when every
    weight is in the file or its external data is there. Files are resolved as ONNX does, relative to the model's
    folder; nothing is read from them."""
    missing: dict[str, None] = {}
    n = elements = nbytes = 0
    for t in chain(graph.initializer, (s.values for s in graph.sparse_initializer)):
        if t.data_location != TensorProto.EXTERNAL:
            continue
        loc = next((e.value for e in t.external_data if e.key == "location"), "")
        if loc and (p.parent / loc).is_file():
            continue
        missing[loc or "(no location)"] = None
        k = math.prod(t.dims)
        n, elements = n + 1, elements + k
        nbytes += -(-k * _ELEM_BITS.get(t.data_type, 8) // 8)
    return AbsentWeights(n, elements, nbytes, tuple(missing)) if n else None


def _read_model(p: Path, raw: bytes | None = None) -> tuple[onnx.ModelProto, bytes]:
    """Decode ``p`` (or ``raw``, its bytes, when given) as an ONNX ``ModelProto``; returns the model and the raw
    bytes."""
    if raw is None:
        if not p.exists() and not p.is_symlink():
            raise WorkloadError(f"ONNX model not found: {p}")
        if p.is_dir():
            raise WorkloadError(f"ONNX model path is a directory, not a file: {p}")
        raw = read_input_bytes(p, "ONNX model", MAX_MODEL_BYTES, WorkloadError)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(raw)
    except (DecodeError, ValueError, RuntimeError):
        raise WorkloadError(f"{p} is not an ONNX model: protobuf decoding failed") from None
    if not model.HasField("graph") or len(model.graph.node) == 0:
        raise WorkloadError(f"{p} is not an ONNX model: it has no graph nodes")
    if model.ir_version <= 0:
        raise WorkloadError(f"{p} is not an ONNX model: it has no IR version")
    _check_utf8(p, model)
    return model, raw


def _check_utf8(p: Path, model: onnx.ModelProto) -> None:
    """Names, op types and domains are text: protobuf hands a string field that is not valid UTF-8 over as bytes."""
    g = model.graph
    fields = [("opset domain", imp.domain) for imp in model.opset_import]
    for i, node in enumerate(g.node):
        what = f"node {i}"
        fields += [(f"{what} name", node.name), (f"{what} op type", node.op_type), (f"{what} domain", node.domain)]
        fields += [(f"{what} tensor name", t) for t in chain(node.input, node.output)]
        fields += [(f"{what} attribute name", a.name) for a in node.attribute]
    fields += [("initializer name", t.name) for t in g.initializer]
    fields += [("graph input/output name", vi.name) for vi in chain(g.input, g.output, g.value_info)]
    for what, value in fields:
        if not isinstance(value, str):
            raise WorkloadError(f"{p} is not a valid ONNX model: a {what} is not valid UTF-8 ({value[:40]!r})")


def _check_versions(p: Path, model: onnx.ModelProto) -> None:
    """Refuse an IR or default-domain opset version newer than the installed ``onnx`` knows (onnxruntime is
    built against the same ONNX release, so it knows no newer one): its semantics are unknown to both."""
    from hetsim.workload.versions import refuse_newer

    refuse_newer(p, model)


def _check_op_types(p: Path, model: onnx.ModelProto, nodes: list[onnx.NodeProto], names: list[str]) -> None:
    """Default-domain op types must exist in the declared opset; other domains (not ONNX's nor onnxruntime's
    ``com.microsoft``) are costed as host ops, with a warning."""
    opsets = {("" if imp.domain in _DEFAULT_DOMAINS else imp.domain): int(imp.version) for imp in model.opset_import}
    functions = {(f.domain, f.name) for f in model.functions}
    custom: dict[str, list[str]] = {}
    for node, name in zip(nodes, names, strict=True):
        domain = _domain(node)
        if (node.domain, node.op_type) in functions:
            continue
        if domain == "":
            if "" not in opsets:
                raise WorkloadError(f"{p}: node {name!r} ({node.op_type}) is in the default domain, which the "
                                    "model does not import (no opset_import for ai.onnx)")
            version = min(opsets[""], int(onnx.defs.onnx_opset_version()))
            if not onnx.defs.has(node.op_type, version, ""):
                later = onnx.defs.has(node.op_type, "")
                hint = ("; it exists in a later opset: export with a newer opset" if later
                        else "; no ONNX opset defines it (a custom op belongs in its own domain)")
                raise WorkloadError(f"{p}: node {name!r} has op type {node.op_type!r}, which ONNX opset "
                                    f"{opsets['']} does not define{hint}")
        elif domain not in (_MS_DOMAIN, "ai.onnx.ml", "ai.onnx.preview.training"):
            custom.setdefault(domain, []).append(node.op_type)
    for domain, types in custom.items():
        shown = ", ".join(dict.fromkeys(types))
        warnings.warn(
            f"{p}: {len(types)} node(s) of custom domain {domain!r} ({shown}) are costed as host ops "
            "(no accelerator runs them; their cost is the host's per-op estimate)",
            stacklevel=3,
        )


def _check_unique_definitions(p: Path, graph: onnx.GraphProto) -> None:
    """Initializer and graph input names are unique (an initializer may also be listed as a graph input)."""
    seen: set[str] = set()
    for t in chain((t.name for t in graph.initializer), (s.values.name for s in graph.sparse_initializer)):
        if t in seen:
            raise WorkloadError(f"{p}: tensor {t!r} is defined by two initializers")
        seen.add(t)
    inputs: set[str] = set()
    for vi in graph.input:
        if vi.name in inputs:
            raise WorkloadError(f"{p}: graph input {vi.name!r} is declared twice")
        inputs.add(vi.name)


def _check_initializer_sizes(p: Path, graph: onnx.GraphProto) -> None:
    """An initializer's stored data (``raw_data`` or its typed field) holds exactly ``prod(dims)`` elements."""
    typed = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data")
    for t in graph.initializer:
        if t.data_location == TensorProto.EXTERNAL or t.data_type not in _ELEM_BITS:
            continue
        n, bits = math.prod(t.dims), _ELEM_BITS[t.data_type]
        if any(d < 0 for d in t.dims):
            raise WorkloadError(f"{p}: initializer {t.name!r} has a negative dim: {list(t.dims)}")
        if t.raw_data:
            have, want, unit = len(t.raw_data), -(-n * bits // 8), "bytes"
        else:
            counts = [len(getattr(t, f)) for f in typed if len(getattr(t, f))]
            if not counts or bits < 8 or t.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
                continue
            have, want, unit = counts[0], n, "values"
        if have != want:
            raise WorkloadError(f"{p}: initializer {t.name!r} with dims {list(t.dims)} "
                                f"({_dtype_name(t.data_type)}) needs {want} {unit} of data, it holds {have}")


def _check_graph_outputs(
    p: Path, graph: onnx.GraphProto, producers: dict[str, int], initializers: set[str], inputs: set[str]
) -> None:
    """Every graph output is produced (by a node, an initializer or a graph input) and has no zero/negative dim."""
    for vi in graph.output:
        if vi.name not in producers and vi.name not in initializers and vi.name not in inputs:
            raise WorkloadError(
                f"{p}: graph output {vi.name!r} is not produced by any node, initializer or graph input"
            )
    for kind, vis in (("input", graph.input), ("output", graph.output)):
        for vi in vis:
            if vi.name in initializers:
                continue
            for k, d in enumerate(vi.type.tensor_type.shape.dim):
                if d.WhichOneof("value") == "dim_value" and d.dim_value <= 0:
                    size = "zero-size" if d.dim_value == 0 else f"negative ({d.dim_value})"
                    raise WorkloadError(f"{p}: graph {kind} {vi.name!r} has a {size} dim {k}; a tensor needs "
                                        "positive dims")


def _apply_input_shapes(
    p: Path, runtime_inputs: list[onnx.ValueInfoProto], input_shapes: Mapping[str, Sequence[int]]
) -> None:
    """Fix the dims of the named graph inputs (in place) to ``input_shapes``; checks names, ranks, known dims."""
    by_name = {vi.name: vi for vi in runtime_inputs}
    for name, shape in input_shapes.items():
        vi = by_name.get(name)
        if vi is None:
            have = ", ".join(repr(n) for n in by_name) or "none"
            raise WorkloadError(f"{p}: --input-shape {name}=...: the model has no graph input {name!r} "
                                f"(its inputs: {have})")
        try:
            dims = [int(d) for d in shape]
            if any(isinstance(d, bool) or int(d) != d for d in shape):
                raise ValueError
        except (TypeError, ValueError):
            raise WorkloadError(f"{p}: input shape of {name!r} must be a list of integers, not {shape!r}") from None
        if not dims or any(d <= 0 for d in dims):
            raise WorkloadError(f"{p}: input shape {dims} of {name!r} needs at least one dim, every dim positive")
        tt = vi.type.tensor_type
        if vi.type.WhichOneof("value") != "tensor_type":
            raise WorkloadError(f"{p}: graph input {name!r} is not a tensor; it has no shape to give")
        declared = list(tt.shape.dim) if tt.HasField("shape") else None
        if declared is not None:
            if len(declared) != len(dims):
                raise WorkloadError(f"{p}: graph input {name!r} has {len(declared)} dims, the given shape {dims} "
                                    f"has {len(dims)}")
            for k, (d, v) in enumerate(zip(declared, dims, strict=True)):
                if d.WhichOneof("value") == "dim_value" and d.dim_value > 0 and d.dim_value != v:
                    raise WorkloadError(f"{p}: graph input {name!r} has dim {k} = {d.dim_value} in the model, the "
                                        f"given shape {dims} says {v}")
        tt.shape.Clear()
        for v in dims:
            tt.shape.dim.add().dim_value = v


def _check_dynamic_inputs(
    p: Path, runtime_inputs: list[onnx.ValueInfoProto], nodes: list[onnx.NodeProto], names: list[str]
) -> None:
    """A graph input read by a node must have static dims; the refusal says which ``--input-shape`` to give."""
    readers: dict[str, str] = {}
    for node, name in zip(nodes, names, strict=True):
        for t in node.input:
            readers.setdefault(t, name)
    for vi in runtime_inputs:
        if vi.name not in readers or vi.type.WhichOneof("value") != "tensor_type":
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = list(tt.shape.dim)
        for k, d in enumerate(dims):
            which = d.WhichOneof("value")
            if which == "dim_value" and d.dim_value > 0:
                continue
            from hetsim.workload.dynamic import describe_free, suggest_shape

            label = repr(d.dim_param) if which == "dim_param" else "(unnamed)"
            how = "symbolic" if which == "dim_param" else "unknown"
            example, free = suggest_shape(vi)
            choose = "" if free == [0] else f"; choose {describe_free(vi, free)} to match your data"
            raise WorkloadError(
                f"{p}: input {vi.name!r} has a dynamic dimension {label} (dim {k} is {how}; node "
                f"{readers[vi.name]!r} needs a static shape): give e.g. --input-shape {vi.name}={example}{choose} "
                f"(hetsim.run(..., input_shape={{{vi.name!r}: [...]}}) in Python, input_shape: in a sweep file)"
            )


def _unique_names(nodes: list[onnx.NodeProto]) -> list[str]:
    """Node names, non-empty (``f"{op_type}_{i}"`` fallback) and unique (``_{i}`` suffix on clashes)."""
    used: set[str] = set()
    out = []
    for i, node in enumerate(nodes):
        base = node.name or f"{node.op_type}_{i}"
        name, k = base, 0
        while name in used:
            k += 1
            name = f"{base}_{i}" if k == 1 else f"{base}_{i}_{k}"
        used.add(name)
        out.append(name)
    return out


def _reject_control_flow(p: Path, nodes: list[onnx.NodeProto], names: list[str]) -> None:
    for node, name in zip(nodes, names, strict=True):
        for a in node.attribute:
            if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) or a.HasField("g") or len(a.graphs):
                raise WorkloadError(
                    f"{p}: node {name!r} ({node.op_type}) has a subgraph attribute {a.name!r}; control flow "
                    "(If/Loop/Scan) is not supported, export the model with static control flow"
                )


def _producers(
    p: Path, nodes: list[onnx.NodeProto], names: list[str], initializers: set[str], inputs: set[str]
) -> dict[str, int]:
    """Tensor name -> index of the node producing it; checks single assignment and dangling inputs."""
    producers: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for t in node.output:
            if not t:
                continue
            if t in producers:
                raise WorkloadError(
                    f"{p}: tensor {t!r} is produced by two nodes, {names[producers[t]]!r} and {names[i]!r}"
                )
            if t in initializers or t in inputs:
                kind = "an initializer" if t in initializers else "a graph input"
                raise WorkloadError(f"{p}: tensor {t!r} produced by node {names[i]!r} is also {kind}")
            producers[t] = i
    for i, node in enumerate(nodes):
        for t in node.input:
            if t and t not in producers and t not in initializers and t not in inputs:
                raise WorkloadError(
                    f"{p}: tensor {t!r} used by node {names[i]!r} is not produced by any node, initializer "
                    "or graph input"
                )
    return producers


def _infer_shapes(p: Path, model: onnx.ModelProto, raw: bytes, order: list[int]) -> onnx.ModelProto:
    """Run ONNX shape inference (non-strict: a node it cannot handle just leaves its outputs unknown).

    Nodes are presented in topological order (a copy is reordered if the file's order is not topological).
    """
    src: onnx.ModelProto | bytes = raw
    if order != sorted(order):
        src = onnx.ModelProto()
        src.CopyFrom(model)
        nodes = [onnx.NodeProto() for _ in order]
        for dst, i in zip(nodes, order, strict=True):
            dst.CopyFrom(model.graph.node[i])
        del src.graph.node[:]
        src.graph.node.extend(nodes)
    err: Exception | None = None
    for data_prop in (True, False):
        try:
            return onnx.shape_inference.infer_shapes(src, check_type=False, strict_mode=False, data_prop=data_prop)
        except Exception as e:  # onnx raises InferenceError, ValidationError, RuntimeError, ValueError
            err = e
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    raise WorkloadError(f"{p}: ONNX shape inference failed: {msg}")


# ------------------------------------------------------------------------------------------ node checks

_VARIADIC = onnx.defs.OpSchema.FormalParameterOption.Variadic


def _schema(model_opsets: dict[str, int], node: onnx.NodeProto) -> onnx.defs.OpSchema | None:
    """The ONNX schema of a node of an ONNX domain at the model's opset, or ``None`` (other domains, unknown)."""
    domain = _domain(node)
    if domain not in ("", "ai.onnx.ml") or domain not in model_opsets:
        return None
    version = model_opsets[domain] if domain else min(model_opsets[""], int(onnx.defs.onnx_opset_version()))
    try:
        return onnx.defs.get_schema(node.op_type, version, domain)
    except onnx.defs.SchemaError:
        return None


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    return {("" if imp.domain in _DEFAULT_DOMAINS else imp.domain): int(imp.version) for imp in model.opset_import}


def _type_str(elem_type: int) -> str:
    """ONNX's type string of a tensor element type (``tensor(float)``, ``tensor(int64)``, ...)."""
    return f"tensor({TensorProto.DataType.Name(elem_type).lower()})"


def _check_node_types(
    p: Path, model: onnx.ModelProto, nodes: list[onnx.NodeProto], names: list[str], infos: dict[str, _Tensor | str]
) -> None:
    """Input element types of every ONNX-domain node satisfy its schema's type constraints.

    What ONNX Runtime checks when it loads a model ("Type Error: Type 'tensor(int64)' of input parameter ...")
    and ``onnx.shape_inference`` checks only in strict mode: each input's type is one its formal parameter allows,
    and inputs bound to the same type parameter (``T`` of Conv's X, W and B) have the same type (a heterogeneous
    variadic parameter excepted). Inputs of unknown type are skipped.
    """
    opsets = _opsets(model)
    for node, name in zip(nodes, names, strict=True):
        schema = _schema(opsets, node)
        if schema is None or not schema.inputs:
            continue
        allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
        bound: dict[str, tuple[str, str]] = {}
        formals = list(schema.inputs)
        for k, t in enumerate(node.input):
            if not t:
                continue
            if k >= len(formals) and formals[-1].option != _VARIADIC:
                raise WorkloadError(f"{p}: node {name!r} ({node.op_type}) has {len(node.input)} inputs; opset "
                                    f"{schema.since_version} defines at most {len(formals)}")
            formal = formals[min(k, len(formals) - 1)]
            info = infos.get(t)
            if not isinstance(info, _Tensor) or info.elem_type not in TensorProto.DataType.values():
                continue
            have = _type_str(info.elem_type)
            ok = allowed.get(formal.type_str, {formal.type_str})
            if have not in ok:
                raise WorkloadError(
                    f"{p}: node {name!r} ({node.op_type}): input {t!r} ({formal.name}) has type {have}, which "
                    f"{node.op_type}-{schema.since_version} does not take (allowed: {', '.join(sorted(ok))})"
                )
            homogeneous = formal.option != _VARIADIC or formal.is_homogeneous
            if formal.type_str in allowed and homogeneous:
                first = bound.setdefault(formal.type_str, (t, have))
                if first[1] != have:
                    raise WorkloadError(
                        f"{p}: node {name!r} ({node.op_type}): inputs {first[0]!r} ({first[1]}) and {t!r} ({have}) "
                        f"must have the same type ({formal.type_str})"
                    )


# Element-wise ops with (multidirectional, numpy) broadcasting from opset 7 on; before, Add/Sub/Mul/Div/Pow/And/
# Or/Xor/Equal/Greater/Less took a ``broadcast`` flag (B broadcast to A's shape only, aligned at ``axis``).
_BROADCAST_OPS = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "And", "Or", "Xor", "Equal", "Greater", "Less",
                  "GreaterOrEqual", "LessOrEqual", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Max",
                  "Min", "Sum", "Mean", "Where"}  # fmt: skip


def _check_broadcasts(
    p: Path, model: onnx.ModelProto, nodes: list[onnx.NodeProto], names: list[str], infos: dict[str, _Tensor | str]
) -> None:
    """Operand shapes of element-wise ops broadcast (ONNX Broadcasting.md; ``onnx.shape_inference`` reports an
    incompatible pair only in strict mode, and not at all for the opset-1..6 ``broadcast`` attribute form)."""
    opsets = _opsets(model)
    for node, name in zip(nodes, names, strict=True):
        if _domain(node) != "" or node.op_type not in _BROADCAST_OPS:
            continue
        shapes = [(t, infos[t].shape) for t in _distinct(node.input) if isinstance(infos.get(t), _Tensor)]
        if len(shapes) < 2:
            continue
        schema = _schema(opsets, node)
        if schema is not None and schema.since_version < 7 and "broadcast" in schema.attributes:
            (ta, a), (tb, b) = shapes[0], shapes[1]
            if _attr_int(node, "broadcast", 0) == 0:
                ok = a == b
            else:
                axis = _attr_int(node, "axis", len(a) - len(b))
                axis = axis + len(a) if axis < 0 else axis
                ok = 0 <= axis <= len(a) - len(b) and all(
                    db in (1, da) for da, db in zip(a[axis:axis + len(b)], b, strict=True))
            if not ok:
                raise WorkloadError(
                    f"{p}: node {name!r} ({node.op_type}-{schema.since_version}, broadcast="
                    f"{_attr_int(node, 'broadcast', 0)}): operand shapes {a} ({ta!r}) and {b} ({tb!r}) do not match "
                    "(opset 6 and older broadcast only B onto A, and only with broadcast=1)"
                )
            continue
        rank = max(len(s) for _, s in shapes)
        for k in range(1, rank + 1):
            dims = {s[-k] for _, s in shapes if len(s) >= k} - {1}
            if len(dims) > 1:
                shown = ", ".join(f"{t!r} {s}" for t, s in shapes)
                raise WorkloadError(f"{p}: node {name!r} ({node.op_type}): operand shapes do not broadcast: {shown}")


# ---------------------------------------------------------------------------------------------- tensors


def _tensor_info(tp: onnx.TypeProto) -> _Tensor | str:
    """Static shape and type of a value, or a phrase saying why there is none."""
    if tp.WhichOneof("value") != "tensor_type":
        return f"is not a tensor ({tp.WhichOneof('value') or 'no type'})"
    tt = tp.tensor_type
    if tt.elem_type not in _ELEM_BITS:
        kind = TensorProto.DataType.Name(tt.elem_type) if tt.elem_type in TensorProto.DataType.values() else "?"
        return f"has element type {kind} (no fixed size)"
    if not tt.HasField("shape"):
        return "has no shape (shape inference could not infer it)"
    dims = []
    for k, d in enumerate(tt.shape.dim):
        which = d.WhichOneof("value")
        if which == "dim_value" and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        elif which == "dim_param":
            return f"has no static shape: dim {k} is symbolic ({d.dim_param!r})"
        else:
            return f"has no static shape: dim {k} is unknown"
    return _Tensor(tuple(dims), int(tt.elem_type))


def _tensor_infos(graph: onnx.GraphProto) -> dict[str, _Tensor | str]:
    """Name -> :class:`_Tensor` (or the reason it has no static shape) for every value of the graph."""
    infos: dict[str, _Tensor | str] = {}
    for vi in chain(graph.input, graph.output, graph.value_info):
        info = _tensor_info(vi.type)
        if isinstance(info, _Tensor) or vi.name not in infos:
            infos[vi.name] = info
    for t in graph.initializer:
        infos[t.name] = _Tensor(tuple(int(d) for d in t.dims), int(t.data_type))
    for s in graph.sparse_initializer:
        infos[s.values.name] = _Tensor(tuple(int(d) for d in s.dims), int(s.values.data_type))
    for name, info in list(infos.items()):
        if isinstance(info, _Tensor) and info.elem_type not in _ELEM_BITS:
            infos[name] = "has an element type without a fixed size"
    return infos


def _static(p: Path, infos: dict[str, _Tensor | str], t: str, role: str, node: str) -> _Tensor:
    info = infos.get(t, "has no shape information (shape inference could not infer it)")
    if isinstance(info, str):
        raise WorkloadError(f"{p}: tensor {t!r} ({role} of node {node!r}) {info}")
    if info.elements > MAX_TENSOR_ELEMENTS:
        raise WorkloadError(f"{p}: tensor {t!r} ({role} of node {node!r}) of shape {list(info.shape)} has "
                            f"{info.elements:.3g} elements; hetsim takes at most 2**40 ({MAX_TENSOR_ELEMENTS:.3g}) "
                            "per tensor")
    return info


def _first_missing(
    infos: dict[str, _Tensor | str], nodes: list[onnx.NodeProto], names: list[str]
) -> tuple[str, str, str, str] | None:
    """``(tensor, role, node name, reason)`` of the first node input/output without a static shape, in the order
    :func:`_make_op` reads them (so the error is the one it would raise), or ``None``."""
    for node, name in zip(nodes, names, strict=True):
        for role, tensors in (("input", node.input), ("output", node.output)):
            for t in _distinct(tensors):
                info = infos.get(t, "has no shape information (shape inference could not infer it)")
                if isinstance(info, str):
                    return t, role, name, info
    return None


def _recover_shapes(
    p: Path,
    model: onnx.ModelProto,
    raw: bytes,
    runtime_inputs: list[onnx.ValueInfoProto],
    infos: dict[str, _Tensor | str],
    nodes: list[onnx.NodeProto],
    names: list[str],
    missing: tuple[str, str, str, str],
) -> tuple[dict[str, _Tensor | str], str]:
    """Shapes of every node output observed in one onnxruntime run (see :mod:`hetsim.workload._ort_shapes`).

    Called when ONNX shape inference left a tensor without a static shape (``missing``, the first such tensor).
    The observed shape and element type replace the inferred ones for every node output (what the graph
    computes wins over stale ``value_info`` entries); graph inputs and initializers keep their declared ones.

    Returns:
        The completed ``infos`` and a description of where the shapes came from.

    Raises:
        WorkloadError: the graph has a symbolic/unknown input shape or an op whose output shape depends on input
            values (one run would not give static shapes), onnxruntime is missing or cannot load/run the model,
            or a tensor is still without a static shape afterwards. The message starts with the ``missing``
            tensor's problem.
    """
    tensor, role, node_name, reason = missing
    base = f"{p}: tensor {tensor!r} ({role} of node {node_name!r}) {reason}"
    graph_inputs = {vi.name for vi in runtime_inputs}
    if tensor in graph_inputs:
        raise WorkloadError(base)  # a symbolic or unknown graph input: nothing to run the model on
    feeds = []
    for vi in runtime_inputs:
        info = infos.get(vi.name, "has no shape")
        if isinstance(info, str):
            raise WorkloadError(
                f"{base}; recovering shapes by running the model in onnxruntime needs static graph inputs, and "
                f"input {vi.name!r} {info}"
            )
        feeds.append((vi.name, info.shape, info.elem_type))
    dynamic = sorted({n.op_type for n in nodes if n.domain in _DEFAULT_DOMAINS and n.op_type in DATA_DEPENDENT_OPS})
    if dynamic:
        raise WorkloadError(
            f"{base}; not recovered by running the model in onnxruntime: the output shape of "
            f"{', '.join(dynamic)} depends on the input values"
        )
    try:
        observed, how = observe_shapes(model, raw, p.parent, feeds)
    except ShapeRecoveryError as e:
        raise WorkloadError(f"{base}; recovering shapes by running the model in onnxruntime failed: {e}") from None

    infos = dict(infos)
    for node in nodes:
        for t in _distinct(node.output):
            if t in observed:
                shape, elem_type = observed[t]
                infos[t] = (
                    _Tensor(shape, elem_type) if elem_type in _ELEM_BITS else "has an element type without a fixed size"
                )
    still = _first_missing(infos, nodes, names)
    if still is not None:
        t, r, n, why = still
        raise WorkloadError(f"{p}: tensor {t!r} ({r} of node {n!r}) {why}, and {how} did not produce it either")
    return infos, how


def _distinct(names) -> list[str]:
    """Non-empty names, first occurrence order."""
    return list(dict.fromkeys(t for t in names if t))


def _describe(vi: onnx.ValueInfoProto, infos: dict[str, _Tensor | str]) -> dict:
    """``{"name", "dtype", "shape"}`` of a graph input/output (symbolic dims as strings, unknown as None)."""
    tt = vi.type.tensor_type
    shape: list[int | str | None] = []
    for d in tt.shape.dim:
        which = d.WhichOneof("value")
        shape.append(int(d.dim_value) if which == "dim_value" else d.dim_param if which == "dim_param" else None)
    info = infos.get(vi.name)
    if isinstance(info, _Tensor):
        shape = list(info.shape)
    return {"name": vi.name, "dtype": _dtype_name(tt.elem_type), "shape": shape}


def _dtype_name(elem_type: int) -> str:
    if elem_type in _DTYPE_NAMES:
        return _DTYPE_NAMES[elem_type]
    if elem_type in TensorProto.DataType.values():
        return TensorProto.DataType.Name(elem_type).lower()
    return f"type{elem_type}"


_BITS_BY_DTYPE = {_dtype_name(t): b for t, b in _ELEM_BITS.items()}


def dtype_bits(dtype: str) -> int | None:
    """Bits per element of an element type named as ``Workload.meta["inputs"]`` / ``["outputs"]`` name it
    (``float32``, ``int8``, ``bool``, ...: the ONNX type's name in lower case, ``float32`` / ``float64`` for
    FLOAT / DOUBLE); ``None`` for a type without a fixed size (``string``) or an unknown name."""
    return _BITS_BY_DTYPE.get(dtype)


# -------------------------------------------------------------------------------------------------- ops


def _attr_int(node: onnx.NodeProto, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def _attr_ints(node: onnx.NodeProto, name: str) -> tuple[int, ...]:
    for a in node.attribute:
        if a.name == name:
            return tuple(int(i) for i in a.ints)
    return ()


def _domain(node: onnx.NodeProto) -> str:
    """The node's domain, ``""`` for the default domain (also spelt ``"ai.onnx"``)."""
    return "" if node.domain in _DEFAULT_DOMAINS else node.domain


def _input(node: onnx.NodeProto, k: int) -> str | None:
    return node.input[k] if len(node.input) > k and node.input[k] else None


def _gemm_view(
    p: Path, name: str, node: onnx.NodeProto, infos: dict[str, _Tensor | str], constants: set[str]
) -> tuple[str | None, GemmView | None, int]:
    """``(constant weight tensor, GEMM view, MACs)`` of an MVM-capable node (CPU-CIM ILP Eq. 1, im2col).

    The view is returned only when the weight operand is constant; the MAC count always.
    """
    kind, a_idx, w_idx = _MVM_OPS[_domain(node), node.op_type]
    a_name, w_name = _input(node, a_idx), _input(node, w_idx)
    if a_name is None or w_name is None or not node.output or not node.output[0]:
        raise WorkloadError(f"{p}: node {name!r} ({node.op_type}) lacks its data or weight input or output")
    a, w = infos[a_name], infos[w_name]
    y = infos[node.output[0]]
    assert isinstance(a, _Tensor) and isinstance(w, _Tensor) and isinstance(y, _Tensor)
    a_const, w_const = a_name in constants, w_name in constants

    if kind == "conv":
        groups = _attr_int(node, "group", 1)
        # onnxruntime's com.microsoft QLinearConv with channels_last=1 reads and writes NHWC (channels last);
        # its weight keeps the ONNX layout (C_out, C_in/g, k_1..k_r).
        nhwc = _domain(node) == _MS_DOMAIN and _attr_int(node, "channels_last", 0) == 1
        layout = "channels-last" if nhwc else "channels-first"
        if len(w.shape) < 3 or len(y.shape) != len(w.shape) or len(a.shape) != len(w.shape):
            raise WorkloadError(
                f"{p}: node {name!r} ({node.op_type}): weight {w_name!r} shape {w.shape}, input shape {a.shape} "
                f"and output shape {y.shape} are not those of a convolution"
            )
        c_out = w.shape[0]
        if groups <= 0 or c_out % groups:
            raise WorkloadError(
                f"{p}: node {name!r} ({node.op_type}): {c_out} output channels do not divide into {groups} groups"
            )
        c_axis = -1 if nhwc else 1
        if y.shape[c_axis] != c_out or a.shape[c_axis] != w.shape[1] * groups or y.shape[0] != a.shape[0]:
            raise WorkloadError(
                f"{p}: node {name!r} ({node.op_type}): weight {w_name!r} {w.shape} with {groups} group(s) does not "
                f"match the {layout} input {a.shape} and output {y.shape}"
            )
        spatial = y.shape[1:-1] if nhwc else y.shape[2:]
        strides = _attr_ints(node, "strides") or (1,) * len(spatial)
        _check_conv_attributes(p, name, node, a.shape[1:-1] if nhwc else a.shape[2:], w.shape[2:], spatial)
        view = GemmView(
            m_v=c_out // groups,
            n_v=w.shape[1] * math.prod(w.shape[2:]),
            n_mvm=y.shape[0] * math.prod(spatial),
            groups=groups,
            kernel=tuple(w.shape[2:]),
            out_spatial=tuple(spatial),
            stride=tuple(strides),
        )
        return (w_name, view, view.macs) if w_const else (None, None, view.macs)

    if kind == "gemm":
        if len(a.shape) != 2 or len(w.shape) != 2:
            raise WorkloadError(f"{p}: node {name!r} ({node.op_type}): operands {a.shape} and {w.shape} are not 2-D")
        m, k = reversed(a.shape) if _attr_int(node, "transA", 0) else a.shape
        kb, n = reversed(w.shape) if _attr_int(node, "transB", 0) else w.shape
        if kb != k or y.shape != (m, n):
            raise WorkloadError(
                f"{p}: node {name!r} ({node.op_type}): operands {a.shape} and {w.shape} (transA="
                f"{_attr_int(node, 'transA', 0)}, transB={_attr_int(node, 'transB', 0)}) and output {y.shape} are "
                f"inconsistent: A gives K={k} and M={m}, B gives K={kb} and N={n}"
            )
        if w_const:
            view = GemmView(m_v=n, n_v=k, n_mvm=m)
            return w_name, view, view.macs
        if a_const:
            view = GemmView(m_v=m, n_v=k, n_mvm=n)
            return a_name, view, view.macs
        return None, None, m * n * k

    # MatMul family: numpy matmul semantics; K = last dim of A.
    k = a.shape[-1] if a.shape else 1
    kb = (w.shape[-2] if len(w.shape) >= 2 else w.shape[0]) if w.shape else 1
    if kb != k:
        raise WorkloadError(
            f"{p}: node {name!r} ({node.op_type}): inner dimensions differ: {a_name!r} {a.shape} has {k} columns, "
            f"{w_name!r} {w.shape} has {kb} rows"
        )
    macs = math.prod(y.shape) * k
    if w_const and len(w.shape) in (1, 2):
        n = w.shape[1] if len(w.shape) == 2 else 1
        view = GemmView(m_v=n, n_v=w.shape[0], n_mvm=math.prod(a.shape[:-1]))
        return w_name, view, view.macs
    if a_const and len(a.shape) in (1, 2):
        m = a.shape[0] if len(a.shape) == 2 else 1
        n_mvm = math.prod(w.shape[:-2]) * w.shape[-1] if len(w.shape) >= 2 else 1
        view = GemmView(m_v=m, n_v=a.shape[-1], n_mvm=n_mvm)
        return a_name, view, view.macs
    return None, None, macs


def _attr_str(node: onnx.NodeProto, name: str, default: str) -> str:
    for a in node.attribute:
        if a.name == name:
            return a.s.decode("utf-8", "replace") if isinstance(a.s, bytes) else str(a.s)
    return default


def _check_conv_attributes(
    p: Path, name: str, node: onnx.NodeProto, x_spatial: tuple[int, ...], kernel: tuple[int, ...],
    y_spatial: tuple[int, ...],
) -> None:
    """A convolution's attributes agree with its weight and its input/output sizes (ONNX Conv; what ONNX Runtime
    refuses at session creation or at run time, and ``onnx.shape_inference`` does not check).

    ``kernel_shape`` (when given) equals the weight's spatial dims; ``auto_pad`` other than ``NOTSET`` comes
    without ``pads``; ``strides``, ``dilations`` (positive) and ``pads`` (non-negative, begins then ends) have one
    entry per spatial dim; each output size is ``floor((x + pad_begin + pad_end - ((k - 1) * d + 1)) / s) + 1``
    (``NOTSET``), ``ceil(x / s)`` (``SAME_UPPER``/``SAME_LOWER``) or ``ceil((x - (k - 1) * d) / s)`` (``VALID``).
    """
    r = len(kernel)
    where = f"{p}: node {name!r} ({node.op_type})"
    ks = _attr_ints(node, "kernel_shape")
    if ks and tuple(ks) != tuple(kernel):
        raise WorkloadError(f"{where}: kernel_shape {list(ks)} does not match the weight's kernel {list(kernel)}")
    auto_pad = _attr_str(node, "auto_pad", "NOTSET")
    pads_given = any(a.name == "pads" for a in node.attribute)
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise WorkloadError(f"{where}: auto_pad {auto_pad!r} is none of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    if auto_pad != "NOTSET" and pads_given:
        raise WorkloadError(f"{where}: has both auto_pad {auto_pad} and pads; give one of them")
    strides = _attr_ints(node, "strides") or (1,) * r
    dilations = _attr_ints(node, "dilations") or (1,) * r
    pads = _attr_ints(node, "pads") or (0,) * (2 * r)
    if len(strides) != r or len(dilations) != r or len(pads) != 2 * r:
        raise WorkloadError(f"{where}: strides {list(strides)}, dilations {list(dilations)} and pads {list(pads)} "
                            f"do not fit a {r}-D kernel (strides and dilations need {r} entries, pads {2 * r})")
    if min(strides) <= 0 or min(dilations) <= 0 or min(pads) < 0:
        raise WorkloadError(f"{where}: strides {list(strides)} and dilations {list(dilations)} must be positive, "
                            f"pads {list(pads)} non-negative")
    if len(x_spatial) != r or len(y_spatial) != r:
        return
    want = []
    for i in range(r):
        x, k, s, d = x_spatial[i], kernel[i], strides[i], dilations[i]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            want.append(-(-x // s))
        elif auto_pad == "VALID":
            want.append(-(-(x - (k - 1) * d) // s))
        else:
            want.append((x + pads[i] + pads[i + r] - ((k - 1) * d + 1)) // s + 1)
    if tuple(want) != tuple(y_spatial) or min(want) <= 0:
        raise WorkloadError(
            f"{where}: input size {list(x_spatial)}, kernel {list(kernel)}, strides {list(strides)}, dilations "
            f"{list(dilations)}, pads {list(pads)} (auto_pad {auto_pad}) give output size {want}, the graph says "
            f"{list(y_spatial)}"
        )


def _make_op(
    p: Path,
    index: int,
    name: str,
    node: onnx.NodeProto,
    infos: dict[str, _Tensor | str],
    constants: set[str],
    producers: dict[str, int],
    nodes: list[onnx.NodeProto],
    is_constant: bool,
) -> Op:
    ins = _distinct(node.input)
    outs = _distinct(node.output)
    in_info = {t: _static(p, infos, t, "input", name) for t in ins}
    out_info = [_static(p, infos, t, "output", name) for t in outs]
    runtime = [t for t in ins if t not in constants]
    const = [t for t in ins if t in constants]

    weight, view, macs = None, None, 0
    if (_domain(node), node.op_type) in _MVM_OPS:
        weight, view, macs = _gemm_view(p, name, node, infos, constants)

    return Op(
        name=name,
        op_type=node.op_type,
        index=index,
        input_shapes=tuple(in_info[t].shape for t in runtime),
        output_shapes=tuple(o.shape for o in out_info),
        n_in=sum(in_info[t].elements for t in runtime),
        n_out=sum(o.elements for o in out_info),
        weight_shape=in_info[weight].shape if weight is not None else None,
        weight_elements=sum(in_info[t].elements for t in const),
        weight_tensors=tuple((t, in_info[t].elements) for t in const),
        macs=macs,
        bits=_bits(node, runtime, weight, infos, in_info, out_info, producers, nodes),
        in_bytes=sum(in_info[t].nbytes for t in runtime),
        out_bytes=sum(o.nbytes for o in out_info),
        gemm=view,
        is_constant=is_constant,
        domain=node.domain,
    )


def _bits(
    node: onnx.NodeProto,
    runtime: list[str],
    weight: str | None,
    infos: dict[str, _Tensor | str],
    in_info: dict[str, _Tensor],
    out_info: list[_Tensor],
    producers: dict[str, int],
    nodes: list[onnx.NodeProto],
) -> int:
    """Arithmetic precision of a node in bits (QDQ detection; see :func:`load_onnx`)."""
    if node.domain in _DEFAULT_DOMAINS and node.op_type in _INPUT_PRECISION_OPS:
        first = _input(node, 0)
        if first is not None:
            return in_info[first].bits
    if _domain(node) == _MS_DOMAIN and (node.op_type.startswith("QLinear") or node.op_type == "QGemm") and runtime:
        # onnxruntime's quantized contrib ops compute on their quantized data inputs (QLinearConcat's first
        # inputs are the output scale and zero point, hence the first *runtime* input)
        return in_info[runtime[0]].bits
    data = runtime + ([weight] if weight is not None and weight not in runtime else [])
    dq_bits = []
    for t in data:
        j = producers.get(t)
        dq = nodes[j] if j is not None else None
        if dq is None or dq.op_type != "DequantizeLinear" or dq.domain not in _DEFAULT_DOMAINS:
            break
        x = infos.get(dq.input[0]) if dq.input else None
        if not isinstance(x, _Tensor):
            break
        dq_bits.append(x.bits)
    else:
        if dq_bits:
            return max(dq_bits)
    if runtime:
        return in_info[runtime[0]].bits
    if out_info:
        return out_info[0].bits
    return 32
