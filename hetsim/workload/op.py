"""Core workload objects: :class:`Op` (one operator) and :class:`Workload` (the operator DAG).

A workload is a :class:`networkx.DiGraph` whose nodes are op names (each carrying an :class:`Op` under the
``"op"`` attribute) and whose edges carry the tensors flowing between ops (``tensors``: names, ``elements``,
``bytes``). Edges whose producer only computes constants (weights, folded shapes) are marked ``param=True``:
they order execution but move no data at inference time (weights are resident: programmed into the crossbars
before inference on a weight-stationary CIM device, in memory on the host).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import networkx as nx

from hetsim.errors import WorkloadError


@dataclass(frozen=True)
class GemmView:
    """The matrix view of an MVM-capable operator (CPU-CIM ILP, Sec. IV-A2, Eq. 1).

    The operator is ``groups`` independent GEMMs, each with an ``m_v x n_v`` weight matrix applied to
    ``n_mvm`` input vectors.

    Attributes:
        m_v: rows of one group's weight matrix = output channels per group (Conv: C_out/groups; Gemm: N).
        n_v: columns = input vector length per group (Conv via im2col: C_in*k_h*k_w/groups; Gemm: K).
        n_mvm: input vectors applied per group (Conv: H_out*W_out*batch; Gemm/MatMul: rows of the input).
        groups: number of independent GEMMs (Conv ``group`` attribute; 1 otherwise).
        kernel: a convolution's kernel size per spatial dim, e.g. ``(k_h, k_w)``; ``()`` for Gemm/MatMul.
        out_spatial: a convolution's output size per spatial dim, e.g. ``(H_out, W_out)``; ``()`` otherwise.
        stride: a convolution's stride per spatial dim; ``()`` otherwise.

    ``kernel``, ``out_spatial`` and ``stride`` are what layer-level cost models (DIANA, ODiMO) need beyond
    the GEMM shape; they default to ``()`` and take no part in ``==`` (two views of the same GEMM compare
    equal), so that views built without them keep working.
    """

    m_v: int
    n_v: int
    n_mvm: int
    groups: int = 1
    kernel: tuple[int, ...] = field(default=(), compare=False)
    out_spatial: tuple[int, ...] = field(default=(), compare=False)
    stride: tuple[int, ...] = field(default=(), compare=False)

    @property
    def c_out(self) -> int:
        """Output channels of the whole operator: ``groups * m_v``."""
        return self.groups * self.m_v

    @property
    def c_in(self) -> int:
        """Input channels of the whole operator: ``groups * n_v / prod(kernel)`` (Gemm/MatMul: ``K = n_v``)."""
        return self.groups * self.n_v // max(1, math.prod(self.kernel))

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the whole operator: groups * m_v * n_v * n_mvm."""
        return self.groups * self.m_v * self.n_v * self.n_mvm

    def n_crossbar(self, rows: int, cols: int) -> int:
        """Crossbars needed to hold the weights, CPU-CIM ILP Eq. 1, counted per group.

        ``N_crossbar = groups * ceil(M_v / M) * ceil(N_v / N)`` with ``M``, ``N`` the crossbar's output
        (``rows``) and input (``cols``) dimensions; each group of a grouped/depthwise conv occupies its own
        crossbars, which is why depthwise layers map badly onto crossbars (CPU-CIM ILP, Sec. V-A).
        """
        return self.groups * math.ceil(self.m_v / rows) * math.ceil(self.n_v / cols)


@dataclass(frozen=True)
class Op:
    """One operator of the workload (one ONNX node, or one unrolled SNN step).

    Attributes:
        name: unique name (the ONNX node name, made unique if needed).
        op_type: ONNX operator type, e.g. ``"Conv"``, ``"Gemm"``, ``"QuantizeLinear"``.
        index: position in the source graph (ONNX node order); used for deterministic tie-breaking.
        input_shapes: shapes of the runtime (non-constant) inputs, in input order.
        output_shapes: shapes of the outputs.
        n_in: elements of the runtime inputs (sum), the ``N_in`` of CPU-CIM ILP Eq. 3.
        n_out: elements of the outputs (sum), the ``N_out`` of CPU-CIM ILP Eq. 3/4.
        weight_shape: shape of the constant weight tensor, or ``None`` for weightless ops.
        weight_elements: elements of all constant inputs (weights, biases, tables).
        weight_tensors: ``(name, elements)`` of each constant input (an initializer, a ``Constant``'s or a folded
            op's output), in input order; elements sum to ``weight_elements``. Two ops naming one tensor read one
            initializer (tied weights): a memory holding it for both holds it once (:func:`hetsim.weights.memory_use`).
            Empty when not known (synthetic and SNN ops, older dumps).
        macs: multiply-accumulate count (0 for ops that are not GEMM-like).
        bits: arithmetic precision in bits (32 for fp32, 8 for int8-quantized ops).
        in_bytes, out_bytes: bytes of runtime inputs/outputs at their ONNX element types.
        gemm: the GEMM view (CPU-CIM ILP Eq. 1) for MVM-capable ops with a constant weight, else ``None``.
        is_constant: True when every input is a constant (the op computes parameters, not activations).
        domain: ONNX domain ("" for the default domain).
    """

    name: str
    op_type: str
    index: int = 0
    input_shapes: tuple[tuple[int, ...], ...] = ()
    output_shapes: tuple[tuple[int, ...], ...] = ()
    n_in: int = 0
    n_out: int = 0
    weight_shape: tuple[int, ...] | None = None
    weight_elements: int = 0
    weight_tensors: tuple[tuple[str, int], ...] = ()
    macs: int = 0
    bits: int = 32
    in_bytes: int = 0
    out_bytes: int = 0
    gemm: GemmView | None = None
    is_constant: bool = False
    domain: str = ""

    def to_dict(self) -> dict:
        """Plain-JSON form (tuples become lists)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Op:
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        d["input_shapes"] = tuple(tuple(s) for s in d.get("input_shapes", ()))
        d["output_shapes"] = tuple(tuple(s) for s in d.get("output_shapes", ()))
        d["weight_tensors"] = tuple((str(n), int(e)) for n, e in d.get("weight_tensors", ()))
        if d.get("weight_shape") is not None:
            d["weight_shape"] = tuple(d["weight_shape"])
        if d.get("gemm") is not None:
            g = dict(d["gemm"])
            for k in ("kernel", "out_spatial", "stride"):
                if k in g:
                    g[k] = tuple(g[k])
            d["gemm"] = GemmView(**g)
        return cls(**d)


@dataclass
class Workload:
    """An operator DAG.

    Attributes:
        name: workload name (the model file's stem).
        graph: ``networkx.DiGraph``; node = op name with attribute ``op`` (:class:`Op`); edge attributes
            ``tensors`` (list of tensor names), ``elements`` (int), ``bytes`` (int), ``param`` (bool).
        source: path of the file it was read from, if any.
        meta: free-form facts about the source (producer, opset, input shapes...).
        kind: (class attribute) the workload kind, ``"dag"`` (:mod:`hetsim.workload.kinds`).

    Raises:
        WorkloadError: from :meth:`check` when the graph is not a DAG or has an edge to an unknown op.
    """

    name: str
    graph: nx.DiGraph
    source: str | None = None
    meta: dict = field(default_factory=dict)
    #: the workload kind (:mod:`hetsim.workload.kinds`): a DAG of tensor operators
    kind = "dag"

    def __post_init__(self) -> None:
        self.check()
        self._topo: list[str] | None = None

    def check(self) -> None:
        """Raise :class:`WorkloadError` unless the graph is a DAG whose nodes all carry an :class:`Op`."""
        for n, data in self.graph.nodes(data=True):
            if not isinstance(data.get("op"), Op):
                raise WorkloadError(f"workload {self.name!r}: node {n!r} carries no Op")
        if not nx.is_directed_acyclic_graph(self.graph):
            cycle = nx.find_cycle(self.graph)
            path = " -> ".join(str(u) for u, _ in cycle[:6])
            raise WorkloadError(f"workload {self.name!r} is not a DAG: cycle through {path} -> ...")

    def __len__(self) -> int:
        return self.graph.number_of_nodes()

    @property
    def ops(self) -> dict[str, Op]:
        """Op name -> :class:`Op`, in graph insertion order."""
        return {n: d["op"] for n, d in self.graph.nodes(data=True)}

    def op(self, name: str) -> Op:
        return self.graph.nodes[name]["op"]

    def topological_order(self) -> list[str]:
        """A deterministic topological order: ties broken by source index (ONNX node order)."""
        if self._topo is None:
            idx = {n: d["op"].index for n, d in self.graph.nodes(data=True)}
            self._topo = list(nx.lexicographical_topological_sort(self.graph, key=lambda n: (idx[n], n)))
        return self._topo

    def sinks(self) -> list[str]:
        """Ops without successors (the terminal nodes of CPU-CIM ILP Eq. 6)."""
        return [n for n in self.graph.nodes if self.graph.out_degree(n) == 0]

    def summary(self) -> dict:
        """Counts used in reports: ops, edges, op types, MACs, weights."""
        ops = self.ops.values()
        hist: dict[str, int] = {}
        for o in ops:
            hist[o.op_type] = hist.get(o.op_type, 0) + 1
        return {
            "name": self.name,
            "operators": len(self),
            "edges": self.graph.number_of_edges(),
            "macs": int(sum(o.macs for o in ops)),
            # constant-producing ops (e.g. DequantizeLinear of int8 weights) hand their result to a compute
            # op that counts it again: count weights at the consumers only
            "weights": int(sum(o.weight_elements for o in ops if not o.is_constant)),
            "op_types": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        }

    @classmethod
    def from_ops(cls, name: str, ops: list[Op], edges: list[tuple[str, str, int]], **kw) -> Workload:
        """Build a workload from ops and ``(producer, consumer, bytes)`` edges (tests, synthetic DAGs).

        Edge element counts are taken equal to bytes (1-byte elements).
        """
        g = nx.DiGraph()
        for o in ops:
            g.add_node(o.name, op=o)
        for u, v, b in edges:
            if u not in g or v not in g:
                raise WorkloadError(f"edge {u!r} -> {v!r} names an unknown op")
            g.add_edge(u, v, tensors=[f"{u}->{v}"], elements=int(b), bytes=int(b), param=False)
        return cls(name=name, graph=g, **kw)


def foldable_ops(workload: Workload) -> frozenset[str]:
    """Ops a runtime computes once, before inference: every op computed only from initializers and constants.

    An op is foldable when it is :attr:`Op.is_constant` (the ONNX importer marks every op whose inputs are all
    constants, through chains of constant ops), or when it has predecessors, all of them foldable, and no runtime
    input of its own (``n_in == 0``: it reads no graph input), which closes chains in workloads built by hand.
    ONNX Runtime folds such ops once at session creation (weight ``DequantizeLinear`` in QDQ graphs,
    ``Slice``/``Concat``/``Unsqueeze``/``Reshape`` on weights).
    """
    g = workload.graph
    out: set[str] = set()
    for v in workload.topological_order():
        op = g.nodes[v]["op"]
        preds = list(g.predecessors(v))
        if op.is_constant or (preds and op.n_in == 0 and all(u in out for u in preds)):
            out.add(v)
    return frozenset(out)
