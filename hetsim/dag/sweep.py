"""The sweep points of a DAG of tensor operators: workloads x platforms x the parameter grid x mappers, each run by
:func:`hetsim.pipeline.run` and recorded as one row of :data:`RESULT_COLUMNS` then :data:`SETTINGS_COLUMNS` (the
file format and the columns: :mod:`hetsim.dse.sweep`)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from hetsim.devices.link import LINK_KIND
from hetsim.dse.points import (
    SweepKind,
    SweepSpec,
    _key_value,
    _platform,
    _platform_sha256,
    _workload,
    file_sha256,
    options_for,
    point_key,
)
from hetsim.errors import InputError
from hetsim.workload.kinds import DAG

RESULT_COLUMNS = [
    "key", "workload", "platform", "host", "mapper", "operators", "makespan_s", "baseline_makespan_s", "speedup",
    "energy_j", "ops_offloaded", "crossbars_used", "crossbars_available", "host_busy_s", "accel_busy_s",
    "host_ops", "accel_ops", "status", "solve_time_s", "mip_gap", "incumbent_s", "bound_s", "variables",
    "constraints", "predicted_makespan_s", "peak_activation_bytes", "activation_fits", "ops_streamed",
    "ops_reprogrammed", "weight_read_bytes", "error", "baseline_error",
]


#: result columns added after tables without them were written: such a table is brought to today's columns and
#: its rows recomputed (their values for these columns were never computed)
ADDED_RESULT_COLUMNS = ["peak_activation_bytes", "activation_fits", "ops_streamed", "ops_reprogrammed",
                        "weight_read_bytes", "baseline_error"]


#: added columns whose value an older row already implies, so it is filled in rather than recomputed: a row with a
#: speed-up had its baseline, one with an ``error`` never got as far; either way no ``baseline_error``
_IMPLIED_WHEN_ADDED = {"baseline_error": lambda r: "" if (r.get("speedup") or r.get("error")) else None}


#: the settings a row was computed under (module docstring, "Settings"): the last columns of an ONNX sweep's table
SETTINGS_COLUMNS = ["workload_sha256", "platform_sha256", "mapper_options", "contention", "fold_constants",
                    "hetsim_version"]


class DagSweep(SweepKind):
    """A sweep of ONNX models (tensor-operator DAGs): :class:`~hetsim.dse.points.SweepKind` for kind ``dag``."""

    kind: ClassVar[str] = DAG
    label: ClassVar[str] = "ONNX"
    plural: ClassVar[str] = "ONNX models"
    noun: ClassVar[str] = "ONNX model"
    fields: ClassVar[tuple[str, ...]] = ("contention", "mapper_options", "fold_constants", "input_shape")
    solver_threads: ClassVar[bool] = True
    added_columns: ClassVar[dict] = {c: _IMPLIED_WHEN_ADDED.get(c) for c in ADDED_RESULT_COLUMNS}

    def check(self, p: Path, spec: SweepSpec, mixing: str) -> None:
        """Contention, mapper options (each mapper gets the options it takes; an option no mapper of the sweep
        takes is a typo, and a bad value fails here, not in every point) and every workload read (with
        ``input_shape``).

        Raises:
            InputError: bad contention, an option no mapper takes or a value one refuses, a workload its front
                end refuses.
        """
        from hetsim.mappers import get_mapper
        from hetsim.mappers.base import did_you_mean, mapper_option_names
        from hetsim.sim.engine import parse_contention

        parse_contention(spec.contention)
        takes = {m: mapper_option_names(m) for m in spec.mappers}
        known = {k for names in takes.values() for k in (names or ())}
        for k in spec.mapper_options:
            if k not in known and all(names is not None for names in takes.values()):
                raise InputError(f"{p}: mapper_options: no mapper of this sweep ({', '.join(spec.mappers)}) takes "
                                 f"option {k!r}{did_you_mean(k, known)}; they take: {', '.join(sorted(known))}")
        for m in spec.mappers:
            try:
                get_mapper(m, **options_for(m, spec.mapper_options))
            except InputError as err:
                raise InputError(f"{p}: mapper_options: {err}") from None
        _check_workloads(p, spec)

    def check_platform(self, p: Path, platform, where: str) -> None:
        _runs_dags(platform, where)

    def check_changed_platform(self, platform, where: str) -> None:
        _runs_dags(platform, where)  # a parameter may change the host

    def expand(self, spec: SweepSpec, names: list[str], grid: list[tuple]) -> list[dict]:
        """workloads x platforms x grid x mappers."""
        import itertools

        from hetsim import __version__
        from hetsim.sim.engine import parse_contention

        contention = ",".join(sorted(parse_contention(spec.contention))) or "none"
        points = []
        for w, p, values, m in itertools.product(spec.workloads, spec.platforms, grid, spec.mappers):
            params = dict(zip(names, values, strict=True))
            key = point_key(w.name, p.name, params, m, input_shape=spec.input_shape)
            options = options_for(m, spec.mapper_options)
            settings = {"workload_sha256": file_sha256(w), "platform_sha256": _platform_sha256(p, params),
                        "mapper_options": ",".join(f"{k}={_key_value(options[k])}" for k in sorted(options)),
                        "contention": contention, "fold_constants": str(spec.fold_constants).lower(),
                        "hetsim_version": __version__}
            points.append({"key": key, "workload": str(w), "platform": str(p), "params": params, "mapper": m,
                           "mapper_options": options, "contention": spec.contention,
                           "fold_constants": spec.fold_constants, "input_shape": spec.input_shape,
                           "settings": settings})
        return points

    def result_columns(self, spec: SweepSpec) -> list[str]:
        return ["key", *spec.parameters, *[c for c in RESULT_COLUMNS if c != "key"], *SETTINGS_COLUMNS]

    def settings_columns(self, spec: SweepSpec) -> list[str]:
        return SETTINGS_COLUMNS

    def run_point(self, point: dict) -> dict:
        """One point through :func:`hetsim.pipeline.run` as a row of :meth:`result_columns`."""
        from hetsim.pipeline import run
        from hetsim.sim.engine import parse_contention

        row = {c: "" for c in RESULT_COLUMNS}
        row.update({"key": point["key"], "workload": Path(point["workload"]).name, "mapper": point["mapper"]})
        row.update(point["params"])
        row.update(point.get("settings", {}))
        try:
            plat = _platform(point["platform"])
            if point["params"]:
                plat = plat.with_overrides(point["params"], name=plat.name)
            row.update({"platform": plat.name, "host": plat.host})
            options = dict(point["mapper_options"])
            if point.get("threads"):  # the runner's choice (run_sweep), not a setting of the row
                options.setdefault("threads", point["threads"])
            r = run(plat, _workload(point["workload"], point.get("input_shape")), mapper=point["mapper"],
                    contention=parse_contention(point["contention"]), mapper_options=options,
                    fold_constants=point.get("fold_constants", True))
            s, dev = r.summary, r.devices
            host = dev[dev["device"] == plat.host]
            accel = dev[(dev["device"] != plat.host) & (dev["kind"] != LINK_KIND)]
            st = r.schedule.stats
            row.update({
                "operators": s["operators"], "makespan_s": s["makespan_s"],
                "baseline_makespan_s": "" if s["baseline_makespan_s"] is None else s["baseline_makespan_s"],
                "speedup": "" if s["speedup"] is None else s["speedup"],
                "baseline_error": s.get("baseline_error") or "",
                "energy_j": s["energy_j"],
                "ops_offloaded": s["ops_offloaded"]["count"],
                "crossbars_used": sum(c["used"] for c in s["crossbars"].values()),
                "crossbars_available": sum(c["available"] for c in s["crossbars"].values()),
                "host_busy_s": float(host["busy_s"].sum()), "accel_busy_s": float(accel["busy_s"].sum()),
                "host_ops": int(host["ops"].sum()), "accel_ops": int(accel["ops"].sum()),
                "predicted_makespan_s": r.schedule.makespan_s,
                **_memory_columns(s),
            })
            for k in ("status", "solve_time_s", "mip_gap", "incumbent_s", "bound_s", "variables", "constraints"):
                if st.get(k) is not None:
                    row[k] = st[k]
        except Exception as err:  # recorded in the table: a sweep keeps going
            row["error"] = f"{type(err).__name__}: {err}"
            from hetsim.analysis.footprint import MemoryCapacityError

            if isinstance(err, MemoryCapacityError):  # the live activations do not fit: a row that says so
                row["activation_fits"] = False
        return row


#: the kind's sweep (:attr:`hetsim.dag.DagKind.sweep`)
DAG_SWEEP = DagSweep()


def _runs_dags(platform, where: str) -> None:
    """As the cost model of every point would refuse a platform whose host runs only spiking networks.

    Raises:
        InputError: ``where`` and the reason.
    """
    from hetsim.costs import check_runs_dags

    try:
        check_runs_dags(platform)
    except InputError as err:
        raise InputError(f"{where}: {err}") from None


def _check_workloads(p: Path, spec: SweepSpec) -> None:
    """Every ONNX workload reads (with ``input_shape``), here, not in every point: a malformed model, one with a
    dynamic dim ``input_shape`` does not fix, or a wrong input name or rank in ``input_shape``. Each is read once
    (the points of this process reuse it, :func:`_workload`; worker processes read it again).

    Raises:
        InputError: a workload its front end refuses (``input_shape:`` in the message when the sweep gives one).
    """
    from hetsim.errors import WorkloadError

    for w in spec.workloads:
        try:
            _workload(str(w), spec.input_shape)
        except WorkloadError as err:
            raise InputError(f"{p}: {'workloads' if spec.input_shape is None else 'input_shape'}: {err}") from None


def _memory_columns(summary: dict) -> dict:
    """A run's memory figures for its sweep row: the largest activation peak of any memory (bytes;
    :mod:`hetsim.analysis.footprint`), whether every memory with a capacity holds its peak (empty when none has
    one), and, on a platform whose devices read weights from a memory (``weights_for``), the ops streamed and
    reprogrammed and the weight bytes read from the memories that hold weights, per inference (empty elsewhere)."""
    mems = (summary.get("memory") or {}).get("memories") or {}
    checked = [m["fits"] for m in mems.values() if m.get("checked")]
    weights = summary.get("weights")
    pol = (weights or {}).get("policies", {})
    return {
        "peak_activation_bytes": max((int(m["peak_bytes"]) for m in mems.values()), default=""),
        "activation_fits": all(checked) if checked else "",
        "ops_streamed": pol.get("streamed", 0) if weights else "",
        "ops_reprogrammed": pol.get("reprogrammed", 0) if weights else "",
        "weight_read_bytes": (int(sum(m["bytes"] for m in weights.get("memories", {}).values()))
                                 if weights else ""),
    }
