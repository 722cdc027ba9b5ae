"""Per-op host latencies measured with ONNX Runtime (CPU-CIM ILP, Sec. IV-A1).

``hetsim profile MODEL.onnx -o profiles/NAME.csv`` measures every node as the paper does (``warmup`` untimed
runs, then ``runs`` timed runs, the median per op: Sec. IV-A1; its hosts are single-core, Sec. V) with settings
the paper does not state, hetsim's choice: one thread (intra- and inter-op threads 1, sequential execution, no
spinning) and graph optimisations off; per node the median of its ``*_kernel_time`` events (``cat == "Node"``)
of ORT's profiler over the timed runs, with the inter-quartile range. The CSV is what a ``cpu`` device's
``latency_model: table`` reads (columns ``op``, ``latency_s``).

Graph optimisations are off by default so ORT's nodes are the ONNX nodes one to one (ORT still inserts
duplicated DequantizeLinear nodes into QDQ graphs unless ``session.disable_quant_qdq`` is set, which it
is; any ``<name>/duplicated`` kernel is charged to ``<name>``). With ``optimize=True`` ORT runs its full
optimisation (as for the paper's model-level numbers) and fused kernels are mapped back to the ONNX ops they
absorbed: an op missing from the optimised graph belongs to the optimised node that produces its output
tensor, or, following its consumers in the original graph, the first such producer downstream; a kernel's
time is split among its ops in proportion to their MACs (equally when none has MACs). Profiles are
machine-specific: ``NAME.meta.json`` beside ``NAME.csv`` (:func:`meta_path`) records the CPU model, ORT
version, settings and the whole-model latency, so that the CSV itself is a plain table
(``pandas.read_csv(path)`` reads it as it is). Profiles of older hetsim versions carried these as ``#`` lines at
the top of the CSV; :func:`read_profile_meta` reads both, and the latency-table reader skips such lines.
"""

from __future__ import annotations

import io
import json
import os
import platform
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hetsim.errors import InputError, WorkloadError
from hetsim.input_files import MAX_TEXT_TABLE_BYTES, read_input_text
from hetsim.workload import Workload

DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
          "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
          "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def cpu_model() -> str:
    """The CPU's model string (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass
class Profile:
    """A measured profile.

    Attributes:
        rows: one dict per ONNX op: ``op``, ``op_type``, ``latency_s`` (median), ``iqr_s``, ``runs``
            (timed samples), ``source``: ``measured``, ``fused`` (share of a fused kernel), ``constant`` (a
            ``Constant`` node: ORT makes it an initializer at load, it never runs) or ``missing`` (no kernel).
        whole_model_s: median wall time of a whole ``session.run`` (without the profiler), seconds.
        meta: machine, ORT version, settings.
    """

    rows: list[dict]
    whole_model_s: float
    meta: dict

    @property
    def per_op_sum_s(self) -> float:
        return float(sum(r["latency_s"] for r in self.rows))

    def to_csv(self) -> str:
        """CSV text: a header row (``op,op_type,latency_s,iqr_s,runs,source``) and one row per op; the
        metadata is :meth:`meta_json`'s."""
        buf = io.StringIO()
        buf.write("op,op_type,latency_s,iqr_s,runs,source\n")
        for r in self.rows:
            name = r["op"].replace('"', '""')
            buf.write(f'"{name}",{r["op_type"]},{r["latency_s"]:.9g},{r["iqr_s"]:.9g},{r["runs"]},{r["source"]}\n')
        return buf.getvalue()

    def meta_json(self) -> str:
        """The side file's text (:func:`meta_path`): :attr:`meta` plus ``whole_model_median_s`` and
        ``per_op_sum_s``."""
        meta = {**self.meta, "whole_model_median_s": float(f"{self.whole_model_s:.9g}"),
                "per_op_sum_s": float(f"{self.per_op_sum_s:.9g}")}
        return json.dumps(meta, indent=1) + "\n"

    def write(self, path: str | Path) -> list[Path]:
        """Write the CSV to ``path`` and the metadata to :func:`meta_path` of it, each atomically; returns
        both paths."""
        from hetsim.files import atomic_write_text

        path = Path(path)
        atomic_write_text(path, self.to_csv())
        atomic_write_text(meta_path(path), self.meta_json())
        return [path, meta_path(path)]


def meta_path(csv_path: str | Path) -> Path:
    """Where a profile's metadata lives: ``NAME.meta.json`` beside ``NAME.csv``."""
    p = Path(csv_path)
    return p.with_name(f"{p.stem}.meta.json")


def _meta_value(text: str):
    """A ``#`` line's value: an int or float when it reads as one, else the text."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def read_profile_meta(csv_path: str | Path) -> dict:
    """A profile's metadata: its ``NAME.meta.json``, else the ``# key: value`` lines at the top of an older
    profile's CSV (numbers as numbers); ``{}`` when it has neither."""
    side = meta_path(csv_path)
    if side.is_file():
        return json.loads(side.read_text())
    meta = {}
    for line in read_input_text(csv_path, "profile", MAX_TEXT_TABLE_BYTES).splitlines():
        if not line.startswith("#"):
            break
        key, _, value = line[1:].partition(":")
        meta[key.strip()] = _meta_value(value.strip())
    return meta


def upgrade_profile(csv_path: str | Path) -> bool:
    """Move the ``#`` lines of an older profile's CSV to its ``NAME.meta.json`` (the data rows are kept byte for
    byte); ``False`` when the CSV has none (nothing to do).

    Raises:
        InputError: the CSV has ``#`` lines and a ``NAME.meta.json`` already exists.
    """
    from hetsim.files import atomic_write_text

    path = Path(csv_path)
    lines = read_input_text(path, "profile", MAX_TEXT_TABLE_BYTES).splitlines(keepends=True)
    if not lines or not lines[0].startswith("#"):
        return False
    if meta_path(path).exists():
        raise InputError(f"{path} has '#' lines and {meta_path(path)} exists: merge them by hand")
    meta = read_profile_meta(path)
    atomic_write_text(meta_path(path), json.dumps(meta, indent=1) + "\n")
    atomic_write_text(path, "".join(ln for ln in lines if not ln.startswith("#")))
    return True


def _inputs(sess, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    feed = {}
    for i in sess.get_inputs():
        if any(not isinstance(d, int) for d in i.shape):
            raise WorkloadError(f"input {i.name!r} has a dynamic shape {i.shape}; profiling needs static shapes")
        dt = DTYPES.get(i.type)
        if dt is None:
            raise WorkloadError(f"input {i.name!r} has unsupported type {i.type}")
        feed[i.name] = (rng.standard_normal(i.shape) if np.issubdtype(dt, np.floating)
                        else np.zeros(i.shape)).astype(dt)
    return feed


def _session_options(ort, optimize: bool, profile_prefix: str | None, optimized_path: str | None):
    so = ort.SessionOptions()
    so.log_severity_level = 3  # errors only: the NCHWc serialisation warning is expected here
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    if optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if optimized_path:
            so.optimized_model_filepath = optimized_path
    else:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.add_session_config_entry("session.disable_quant_qdq", "1")
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return so


def _absorption(wl: Workload, optimized_nodes: list) -> dict[str, str]:
    """Original op name -> name of the optimised node whose kernel time it shares (see module docstring)."""
    kept = {n.name for n in optimized_nodes}
    producer = {out: n.name for n in optimized_nodes for out in n.output}
    g = wl.graph
    outputs = {v: [t for _, _, d in g.out_edges(v, data=True) for t in d["tensors"]] for v in g}
    owner: dict[str, str] = {}
    for v in reversed(wl.topological_order()):  # successors are resolved first
        if v in kept:
            owner[v] = v
            continue
        tensors = set(outputs[v]) | {f"{v}:out"}
        hit = next((producer[t] for t in sorted(tensors) if t in producer), None)
        if hit is None:
            hit = next((owner[s] for s in g.successors(v) if owner.get(s)), None)
        if hit is not None:
            owner[v] = hit
    return owner


def profile_model(
    model: str | Path, warmup: int = 5, runs: int = 20, optimize: bool = False, seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Profile:
    """Measure per-op host latencies of ``model`` with ONNX Runtime on this machine.

    Args:
        model: ONNX file.
        warmup: untimed runs before measuring.
        runs: timed runs (the median per op is taken over these).
        optimize: measure ORT's optimised graph (fused kernels mapped back to ONNX ops, see module doc).
        seed: seed of the random input.
        progress: called with (done, total) after every run.

    Returns:
        :class:`Profile` with one row per ONNX node of ``model``.

    Raises:
        WorkloadError: the model cannot be imported or run by ONNX Runtime.
        InputError: ``runs`` < 1 or ``warmup`` < 0.
    """
    if runs < 1 or warmup < 0:
        raise InputError("profile needs runs >= 1 and warmup >= 0")
    try:
        import onnxruntime as ort
    except ImportError:
        raise WorkloadError("profiling needs onnxruntime: pip install onnxruntime") from None
    from hetsim.workload.frontends import frontend_for, get_frontend

    fe = frontend_for(model)
    if fe is not get_frontend("onnx"):  # ONNX Runtime runs the file itself
        raise InputError(f"profile measures an ONNX model with ONNX Runtime; {model} is {fe.description}")
    import warnings

    from hetsim.workload.onnx_import import WeightsAbsentWarning

    with warnings.catch_warnings():  # refused below in one line, not noticed first
        warnings.simplefilter("ignore", WeightsAbsentWarning)
        wl = fe.read(Path(model))
    absent = wl.meta.get("weights_absent")
    if absent:
        raise WorkloadError(f"{model}: cannot profile a model whose weights are absent ({absent['tensors']:,} "
                            f"initializers in {', '.join(absent['files'])}, not found): onnxruntime runs the model "
                            "and needs their values; write them (e.g. workloads/scripts/transformers.py --weights) "
                            "or use the roofline host model (latency_model: roofline)")
    total = 2 * warmup + 2 * runs
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    with tempfile.TemporaryDirectory(prefix="hetsim-profile-") as tmp:
        opt_path = os.path.join(tmp, "optimized.onnx") if optimize else None
        try:
            sess = ort.InferenceSession(str(model), _session_options(ort, optimize, os.path.join(tmp, "prof"),
                                                                     opt_path), providers=["CPUExecutionProvider"])
            feed = _inputs(sess, seed)
            for _ in range(warmup):
                sess.run(None, feed)
                tick()
            marks = []
            for _ in range(runs):
                t0 = time.perf_counter_ns()
                sess.run(None, feed)
                marks.append(t0)
                tick()
            prof_file = sess.end_profiling()
            events = json.loads(Path(prof_file).read_text())
            # whole-model latency without the profiler's overhead
            plain = ort.InferenceSession(str(model), _session_options(ort, optimize, None, None),
                                         providers=["CPUExecutionProvider"])
            for _ in range(warmup):
                plain.run(None, feed)
                tick()
            whole = []
            for _ in range(runs):
                t0 = time.perf_counter()
                plain.run(None, feed)
                whole.append(time.perf_counter() - t0)
                tick()
            opt_nodes = None
            if optimize:
                import onnx

                opt_nodes = list(onnx.load(opt_path, load_external_data=False).graph.node)
        except WorkloadError:
            raise
        except Exception as err:  # onnxruntime raises its own exception types
            raise WorkloadError(f"{model}: onnxruntime could not run the model: {err}") from None

    # ORT's profiler writes one model_run event per session.run: keep the kernels of the timed runs
    run_events = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    timed = run_events[warmup:]
    windows = [(e["ts"], e["ts"] + e["dur"]) for e in timed]
    per_node: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(windows))
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        name = name.removesuffix("/duplicated")
        for i, (a, b) in enumerate(windows):
            if a <= e["ts"] <= b:
                per_node[name][i] += e["dur"] * 1e-6
                break
    owner = {v: v for v in wl.graph} if opt_nodes is None else _absorption(wl, opt_nodes)
    groups: dict[str, list[str]] = defaultdict(list)
    for v, k in owner.items():
        groups[k].append(v)
    rows = []
    for v in wl.topological_order():
        op = wl.op(v)
        k = owner.get(v)
        samples = per_node.get(k) if k is not None else None
        if samples is None:  # ORT turns Constant nodes into initializers at load: they never run
            rows.append({"op": v, "op_type": op.op_type, "latency_s": 0.0, "iqr_s": 0.0, "runs": 0,
                         "source": "constant" if op.op_type == "Constant" else "missing"})
            continue
        members = groups[k]
        macs = [wl.op(m).macs for m in members]
        share = (op.macs / sum(macs)) if sum(macs) > 0 else 1.0 / len(members)
        vals = sorted(x * share for x in samples)
        q = np.percentile(vals, [25, 75]) if len(vals) > 1 else (vals[0], vals[0])
        rows.append({"op": v, "op_type": op.op_type, "latency_s": float(statistics.median(vals)),
                     "iqr_s": float(q[1] - q[0]), "runs": len(vals),
                     "source": "measured" if len(members) == 1 and k == v else "fused"})
    meta = {"model": Path(model).name, "machine": cpu_model(), "platform": platform.platform(),
            "onnxruntime": ort.__version__, "threads": 1, "graph_optimizations": "all" if optimize else "disabled",
            "warmup_runs": warmup, "timed_runs": runs, "date": time.strftime("%Y-%m-%d")}
    return Profile(rows=rows, whole_model_s=float(statistics.median(whole)), meta=meta)
