"""Host CPU: roofline latency model, or a table of measured per-op latencies with roofline fallback."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from hetsim.devices.base import DeviceBase, Peaks
from hetsim.devices.fields import (
    MAX_BANDWIDTH_GB_S,
    MAX_CLOCK_GHZ,
    MAX_CORES,
    MAX_PER_CYCLE,
    MAX_TIME_US,
    Flag,
    Integer,
    RateByBits,
    Real,
)
from hetsim.errors import PlatformError
from hetsim.input_files import MAX_TEXT_TABLE_BYTES, check_input_file, csv_rows, read_input_text
from hetsim.workload.op import Op

#: lookups: what they read of a constant table is at most what they return (ours: the roofline's weight bytes
#: of a Gather are capped at its output bytes)
GATHER_OP_TYPES = frozenset({"Gather", "GatherElements", "GatherND"})

#: the op types a host with ``folds_qdq`` runs as one int8 kernel with the activation QuantizeLinear after them
#: (a QDQ node unit): the types ONNX Runtime's QDQ selector-action transformer turns into QLinearConv,
#: QLinearMatMul, QGemm, QLinearAdd, QLinearMul, QLinearConcat, QLinearSigmoid, QLinearLeakyRelu,
#: QLinearSoftmax, QLinearAveragePool, QLinearGlobalAveragePool, or whose Q/DQ it drops as the op runs on the
#: int8 tensor as it is (MaxPool, Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Resize, Gather, Split,
#: Slice); source: microsoft/onnxruntime, onnxruntime/core/optimizer/qdq_transformer/selectors_actions
QDQ_UNIT_OP_TYPES = frozenset({
    "Conv", "ConvTranspose", "MatMul", "Gemm", "Add", "Mul", "Concat", "Sigmoid", "LeakyRelu", "Softmax",
    "AveragePool", "GlobalAveragePool", "MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
    "Resize", "Gather", "Split", "Slice",
})


def roofline_bytes(op: Op) -> float:
    """The bytes ``op`` moves in the CPU roofline (:class:`CpuDevice`; ``hetsim calibrate`` fits the same
    model): ``in_bytes + out_bytes + weight_elements * bits / 8``, the weight term of a lookup
    (:data:`GATHER_OP_TYPES`) capped at ``out_bytes`` (ours: it reads the rows it returns, not the whole
    table)."""
    weight_bytes = op.weight_elements * op.bits / 8
    if op.op_type in GATHER_OP_TYPES:
        weight_bytes = min(weight_bytes, op.out_bytes)
    return op.in_bytes + op.out_bytes + weight_bytes


class CpuDevice(DeviceBase):
    """A host CPU (``kind: cpu``). Runs every operator type unless ``supported_ops`` restricts it.

    Latency (``latency_model: roofline``), per op on one core (CPU-CIM ILP runs its experiments "on two
    single-core hosts", Sec. V)::

        T = op_overhead + max(T_compute, bytes / mem_bandwidth)
        T_compute = macs / (clock * macs_per_cycle[bits])          if macs > 0
                  = n_out / (clock * elementwise_per_cycle)         otherwise
        bytes     = in_bytes + out_bytes + weight_elements * bits / 8
                    (a Gather from a constant table, an embedding lookup: min(that, out_bytes), the rows it reads)

    This is the classic roofline bound (Williams et al., CACM 2009) plus a fixed per-op dispatch cost.
    ``macs_per_cycle`` is looked up for the op's bit width; a width missing from the table uses the next
    wider one listed (e.g. 16-bit ops use the 32-bit rate when only 8 and 32 are given).

    With ``latency_model: table``, ``latency_table`` is a CSV with at least the columns ``op`` (op name) and
    ``latency_s`` (``hetsim profile`` writes them), or a folder of such CSVs named ``<workload>.csv``; ops
    missing from the table fall back to the roofline, and the report counts them.

    Power fields are per core: a busy core draws ``active_w``, an idle one ``idle_w``.

    With ``folds_qdq`` the host folds a QDQ model's activation QuantizeLinear/DequantizeLinear pairs as ONNX
    Runtime's CPU provider does at its default optimisation level (``docs/models.md``, "QDQ folding on the
    host"): a QuantizeLinear after an op of :data:`QDQ_UNIT_OP_TYPES` runs fused into that op's launch (the int8
    kernel writes its requantised output), and a DequantizeLinear after a QuantizeLinear fused into the Q (the
    pair cancels: the next int8 kernel reads the int8 tensor); :meth:`fused_epilogue_s`.
    """

    can_host: ClassVar[bool] = True

    kind: Literal["cpu"] = "cpu"
    cores: Integer = Field(1, ge=1, le=MAX_CORES, description="cores usable for inference; ops are single-threaded")
    clock_ghz: Real = Field(gt=0, le=MAX_CLOCK_GHZ)
    macs_per_cycle: RateByBits = Field(description="peak MACs per cycle per core, by bit width")
    elementwise_per_cycle: Real = Field(4.0, gt=0, le=MAX_PER_CYCLE, description="elements per cycle for non-GEMM ops")
    mem_bandwidth_gb_s: Real = Field(gt=0, le=MAX_BANDWIDTH_GB_S,
                                     description="sustained memory bandwidth, GB/s (1e9 B/s)")
    op_overhead_us: Real = Field(0.0, ge=0, le=MAX_TIME_US, description="fixed dispatch cost per op, microseconds")
    latency_model: Literal["roofline", "table"] = "roofline"
    latency_table: Path | None = None
    supported_ops: list[str] | None = Field(
        None, description="op types this CPU runs; null (default) = every op type"
    )
    folds_qdq: Flag = Field(
        False, description="fold the activation Quantize/DequantizeLinear of a QDQ model into the int8 ops, as "
        "ONNX Runtime does at its default optimisation level (a deployed runtime); false: every Q/DQ is an op, "
        "as profiled with optimisations off")
    free_ops: list[str] = Field(
        default_factory=list,
        description="op types that cost nothing here (latency 0): fused into a neighbouring accelerator layer "
        "or done offline at deployment (e.g. Relu and Quantize/DequantizeLinear on DIANA)",
    )

    @model_validator(mode="after")
    def _check(self) -> CpuDevice:
        if not self.macs_per_cycle:
            raise ValueError("macs_per_cycle must list at least one bit width, e.g. {8: 8, 32: 4}")
        if any(v <= 0 for v in self.macs_per_cycle.values()) or any(k <= 0 for k in self.macs_per_cycle):
            raise ValueError("macs_per_cycle keys (bit widths) and values (MACs/cycle) must be > 0")
        if self.latency_model == "table" and self.latency_table is None:
            raise ValueError("latency_model 'table' needs latency_table: path to a CSV with op,latency_s")
        return self

    @property
    def units(self) -> int:
        return self.cores

    @property
    def serial(self) -> bool:
        return True

    def _mac_rate(self, bits: int) -> float:
        widths = sorted(self.macs_per_cycle)
        wider = [w for w in widths if w >= bits]
        w = wider[0] if wider else widths[-1]
        return self.clock_ghz * 1e9 * self.macs_per_cycle[w]

    def peaks(self) -> Peaks:
        """``cores x clock x macs_per_cycle[bits]`` MAC/s per bit width listed; the memory port at
        ``mem_bandwidth_gb_s`` (the roofline's bound, per core)."""
        hz = self.clock_ghz * 1e9
        return Peaks({f"{b}-bit": self.cores * hz * r for b, r in sorted(self.macs_per_cycle.items())},
                     {"memory": self.mem_bandwidth_gb_s * 1e9}, hz, "cores x clock x macs_per_cycle")

    def roofline_latency(self, op: Op) -> float:
        """Roofline latency of ``op`` in seconds (formula in the class docstring)."""
        if op.macs > 0:
            t_compute = op.macs / self._mac_rate(op.bits)
        else:
            t_compute = op.n_out / (self.clock_ghz * 1e9 * self.elementwise_per_cycle)
        t_mem = roofline_bytes(op) / (self.mem_bandwidth_gb_s * 1e9)
        return self.op_overhead_us * 1e-6 + max(t_compute, t_mem)

    def fused_epilogue_s(self, producer: Op, consumer: Op) -> float | None:
        """With ``folds_qdq``: a QuantizeLinear ``consumer`` of a ``producer`` in :data:`QDQ_UNIT_OP_TYPES` adds
        ``n_out / (clock * elementwise_per_cycle)`` (the requantisation of each output element as the int8
        kernel writes it: no dispatch, no memory traffic of its own; ours, assumed), a DequantizeLinear
        ``consumer`` of a QuantizeLinear adds 0 s (the Q -> DQ pair cancels). ``None`` otherwise, and always
        without ``folds_qdq``."""
        if not self.folds_qdq:
            return None
        if consumer.op_type == "QuantizeLinear" and producer.op_type in QDQ_UNIT_OP_TYPES:
            return consumer.n_out / (self.clock_ghz * 1e9 * self.elementwise_per_cycle)
        if consumer.op_type == "DequantizeLinear" and producer.op_type == "QuantizeLinear":
            return 0.0
        return None

    def for_workload(self, workload: str) -> CpuDevice:
        """This device with its latency table chosen for ``workload``: when ``latency_table`` is a folder of
        profiles, the file ``<folder>/<workload>.csv`` (as ``hetsim profile`` names them).

        Raises:
            PlatformError: the folder holds no profile for ``workload``.
        """
        if self.latency_model != "table" or self.latency_table is None or not Path(self.latency_table).is_dir():
            return self
        path = Path(self.latency_table) / f"{workload}.csv"
        if not path.exists() and not path.is_symlink():
            raise PlatformError(
                f"device {self.name!r}: no profile {str(path)!r} for workload {workload!r}; measure it with "
                f"'hetsim profile MODEL.onnx -o {path}' on the host it describes"
            )
        check_input_file(path, f"device {self.name!r}: latency_table", PlatformError)  # a FIFO, a folder, ...
        return self.model_copy(update={"latency_table": path})

    @property
    def table(self) -> dict[str, float]:
        """Measured latencies, op name -> seconds (empty for the roofline model).

        Raises:
            PlatformError: the CSV is missing, lacks the ``op``/``latency_s`` columns, or has a bad value; or
                ``latency_table`` is a folder (see :meth:`for_workload`).
        """
        if self.latency_model != "table" or self.latency_table is None:
            return {}
        path = Path(self.latency_table)
        if path.is_dir():
            raise PlatformError(f"device {self.name!r}: latency_table {str(path)!r} is a folder of profiles: "
                                "pick the workload's with for_workload()")
        check_input_file(path, f"device {self.name!r}: latency_table", PlatformError, MAX_TEXT_TABLE_BYTES)
        st = path.stat()
        return _read_table(str(path), st.st_mtime_ns, st.st_size, self.name)

    def latency(self, op: Op) -> float | None:
        """Latency of ``op`` in seconds: 0 for a type in ``free_ops``, else the table's value if listed, else the
        roofline; ``None`` when ``supported_ops`` is set and does not list the op's type."""
        if self.supported_ops is not None and op.op_type not in self.supported_ops:
            return None
        if op.op_type in self.free_ops:
            return 0.0
        t = self.table.get(op.name)
        return t if t is not None else self.roofline_latency(op)

    def uses_fallback(self, op: Op) -> bool:
        """True when a ``table`` model has no entry for ``op`` that this CPU runs (its roofline latency is
        used)."""
        if (self.supported_ops is not None and op.op_type not in self.supported_ops) or op.op_type in self.free_ops:
            return False
        return self.latency_model == "table" and op.name not in self.table


@lru_cache(maxsize=64)
def _read_table(path: str, _mtime_ns: int, _size: int, device: str) -> dict[str, float]:
    """Read a latency CSV (cached per file version). See :attr:`CpuDevice.table`.

    A plain CSV, as ``hetsim profile`` writes it today (its metadata in ``NAME.meta.json``, which this does not
    need); the ``#`` lines at the top of an older profile are skipped, and error messages give line numbers in
    the file as it is."""
    out: dict[str, float] = {}
    text = read_input_text(path, f"device {device!r}: latency_table", MAX_TEXT_TABLE_BYTES, PlatformError)
    # keep each data row's line number in the file (comment lines are skipped, not renumbered)
    numbered = [(i, line) for i, line in enumerate(text.splitlines(keepends=True), start=1)
                if line.strip() and not line.startswith("#")]
    rows = csv_rows((line for _, line in numbered), str(path), PlatformError, None)
    header = [h.strip() for h in rows[0]] if rows else []
    if "op" not in header or "latency_s" not in header:
        raise PlatformError(f"device {device!r}: latency_table {path!r} needs columns 'op' and 'latency_s'")
    i_op, i_lat = header.index("op"), header.index("latency_s")
    for (lineno, _), row in zip(numbered[1:], rows[1:], strict=True):
        cell = row[i_lat] if i_lat < len(row) else ""
        try:
            val = float(cell)
        except ValueError:
            raise PlatformError(f"{path}:{lineno}: latency_s {cell!r} is not a number") from None
        if not val >= 0:
            raise PlatformError(f"{path}:{lineno}: latency_s must be >= 0, got {cell}")
        out[row[i_op]] = val
    return out
