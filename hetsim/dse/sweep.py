"""``hetsim sweep SWEEP.yaml``: a grid of design points, run in parallel, appended to a results table as
each point finishes, resumable after a kill.

A sweep file::

    name: seed000
    workloads: [../workloads/paper/resnet18_int8_ort.onnx, ...]   # paths relative to this file
    platforms: [../platforms/puma.yaml, ../platforms/puma-x86.yaml]
    parameters:                                                   # dotted platform paths -> values
      devices.cim.crossbars: [25, 50, 100, 200]
      devices.cim.t_mvm_ns: [50, 100, 500, 1000]
    mappers: [cpsat]
    mapper_options: {time_limit_s: 30}
    contention: none
    output: ../results/seed000.csv                                # default: results/<name>.csv

Points = workloads x platforms x the parameter grid x mappers. Each point is identified by a key made of
its workload file, platform file, parameter values and mapper; a point whose key is already in the output
table is not run again, so a killed sweep resumes where it stopped without duplicates. Every finished point
is appended at once as one CSV line (written with a single ``write`` and ``fsync``; a torn last line from
a kill is dropped on resume).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hetsim.errors import InputError

RESULT_COLUMNS = [
    "key", "workload", "platform", "host", "mapper", "operators", "makespan_s", "baseline_makespan_s", "speedup",
    "energy_j", "ops_offloaded", "crossbars_used", "crossbars_available", "host_busy_s", "accel_busy_s",
    "host_ops", "accel_ops", "status", "solve_time_s", "mip_gap", "incumbent_s", "bound_s", "variables",
    "constraints", "predicted_makespan_s", "error",
]


class SweepSpec(BaseModel):
    """A sweep file (see the module docstring). Paths are resolved against the file's folder."""

    model_config = ConfigDict(extra="forbid")

    name: str
    workloads: list[Path] = Field(min_length=1)
    platforms: list[Path] = Field(min_length=1)
    parameters: dict[str, list] = Field(default_factory=dict)
    mappers: list[str] = Field(default_factory=lambda: ["cpsat"], min_length=1)
    mapper_options: dict = Field(default_factory=dict)
    contention: str = "none"
    output: Path | None = None

    @field_validator("parameters")
    @classmethod
    def _nonempty(cls, v: dict[str, list]) -> dict[str, list]:
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"parameter {k!r} has an empty list of values")
        return v


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file: the files it names exist, every parameter path exists on every platform,
    the mappers are registered.

    Raises:
        InputError: missing file, YAML error, unknown field, empty grid, unknown parameter path or mapper.
    """
    from hetsim.mappers import MAPPERS
    from hetsim.platform import _format_validation_error, load_platform, read_yaml
    from hetsim.sim.engine import parse_contention

    p = Path(path)
    data = read_yaml(p, InputError, "sweep file")
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a mapping with workloads, platforms, parameters, mappers")
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as err:
        raise InputError(_format_validation_error(err, str(p))) from None
    base = p.parent
    spec.workloads = [(base / w).resolve() for w in spec.workloads]
    spec.platforms = [(base / w).resolve() for w in spec.platforms]
    spec.output = (base / spec.output).resolve() if spec.output else Path("results") / f"{spec.name}.csv"
    for f in [*spec.workloads, *spec.platforms]:
        if not f.is_file():
            raise InputError(f"{p}: {str(f)!r} does not exist")
    for m in spec.mappers:
        if m not in MAPPERS:
            raise InputError(f"{p}: mappers: unknown mapper {m!r}; available: {', '.join(sorted(MAPPERS))}")
    parse_contention(spec.contention)
    for plat in spec.platforms:
        platform = load_platform(plat)
        for key, values in spec.parameters.items():
            try:
                platform.with_overrides({key: values[0]})
            except InputError as err:
                raise InputError(f"{p}: parameters: {key!r} does not apply to {plat.name}: {err}") from None
    return spec


def expand_points(spec: SweepSpec) -> list[dict]:
    """Every design point of ``spec``, in a deterministic order, each with its ``key``."""
    names = list(spec.parameters)
    grid = list(itertools.product(*(spec.parameters[n] for n in names))) or [()]
    points = []
    for w, p, values, m in itertools.product(spec.workloads, spec.platforms, grid, spec.mappers):
        params = dict(zip(names, values, strict=True))
        key = json.dumps([w.name, p.name, params, m], sort_keys=True, separators=(",", ":"))
        points.append({"key": key, "workload": str(w), "platform": str(p), "params": params, "mapper": m,
                       "mapper_options": spec.mapper_options, "contention": spec.contention})
    return points


@lru_cache(maxsize=16)
def _workload(path: str):
    from hetsim.workload import load_onnx

    return load_onnx(path)


@lru_cache(maxsize=8)
def _platform(path: str):
    from hetsim.platform import load_platform

    return load_platform(path)


def run_point(point: dict) -> dict:
    """Run one design point; returns its result row (``error`` set, numbers empty, when it failed)."""
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.report.metrics import device_table
    from hetsim.sim import simulate
    from hetsim.sim.engine import parse_contention

    row = {c: "" for c in RESULT_COLUMNS}
    row.update({"key": point["key"], "workload": Path(point["workload"]).name, "mapper": point["mapper"]})
    row.update(point["params"])
    try:
        plat = _platform(point["platform"])
        if point["params"]:
            plat = plat.with_overrides(point["params"])
        row.update({"platform": plat.name, "host": plat.host})
        costs = CostModel(_workload(point["workload"]), plat)
        contention = parse_contention(point["contention"])
        sched = get_mapper(point["mapper"], **point["mapper_options"]).map(costs)
        res = simulate(costs, sched, contention)
        base = simulate(costs, get_mapper(plat.baseline).map(costs), contention)
        dev = device_table(costs, res)
        host = dev[dev["device"] == costs.host]
        accel = dev[(dev["device"] != costs.host) & (dev["kind"] != "link")]
        cim = {n: d for n, d in plat.devices.items() if d.kind == "puma"}
        used = sum(costs.n_crossbar[v][d] for v, d in sched.assignment.items() if d in cim)
        st = sched.stats
        row.update({
            "operators": len(costs.workload), "makespan_s": res.makespan_s, "baseline_makespan_s": base.makespan_s,
            "speedup": base.makespan_s / res.makespan_s if res.makespan_s > 0 else "",
            "energy_j": float(dev["energy_j"].sum()),
            "ops_offloaded": sum(1 for d in sched.assignment.values() if d != costs.host),
            "crossbars_used": used, "crossbars_available": sum(d.crossbars for d in cim.values()),
            "host_busy_s": float(host["busy_s"].sum()), "accel_busy_s": float(accel["busy_s"].sum()),
            "host_ops": int(host["ops"].sum()), "accel_ops": int(accel["ops"].sum()),
            "predicted_makespan_s": sched.makespan_s,
        })
        for k in ("status", "solve_time_s", "mip_gap", "incumbent_s", "bound_s", "variables", "constraints"):
            if st.get(k) is not None:
                row[k] = st[k]
    except Exception as err:  # recorded in the table: a sweep keeps going
        row["error"] = f"{type(err).__name__}: {err}"
    return row


def _read_done(path: Path) -> set[str]:
    """Keys already in the results table; drops a torn last line left by a kill."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)
    with path.open(newline="") as f:
        return {r["key"] for r in csv.DictReader(f) if r.get("key")}


def _append(path: Path, columns: list[str], row: dict) -> None:
    new = not path.exists() or path.stat().st_size == 0
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    if new:
        w.writeheader()
    w.writerow(row)
    with path.open("a", newline="") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())


def run_sweep(
    spec: SweepSpec,
    output: Path | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int, int, dict], None] | None = None,
) -> tuple[Path, int, int]:
    """Run the points of ``spec`` not yet in ``output``, appending each result as it finishes.

    Args:
        output: results CSV (default: ``spec.output``).
        workers: local worker processes (default: CPU count); 1 runs in this process.
        scheduler: address of a Dask distributed scheduler (``tcp://HOST:PORT``) to run the points on instead.
        progress: called with (done, total, row) after each point.

    Returns:
        ``(output path, points run now, points skipped because already done)``.

    Raises:
        InputError: the output table exists with other columns (another sweep's table).
    """
    out = Path(output or spec.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    columns = ["key", *spec.parameters, *[c for c in RESULT_COLUMNS if c != "key"]]
    if out.exists() and out.stat().st_size:
        with out.open(newline="") as f:
            header = next(csv.reader(f), [])
        if header != columns:
            raise InputError(f"{out} holds a results table with other columns; choose another output")
    done = _read_done(out)
    points = [p for p in expand_points(spec) if p["key"] not in done]
    skipped = len(expand_points(spec)) - len(points)
    total = len(points)
    finished = 0

    def record(row: dict) -> None:
        nonlocal finished
        _append(out, columns, row)
        finished += 1
        if progress:
            progress(finished, total, row)

    if not points:
        return out, 0, skipped
    if scheduler:
        try:
            from distributed import Client
            from distributed import as_completed as dask_completed
        except ImportError:
            raise InputError("--scheduler needs dask.distributed: pip install 'hetsim[dask]'") from None
        try:
            client = Client(scheduler, timeout="10s")
        except OSError as err:
            raise InputError(f"cannot reach the Dask scheduler at {scheduler}: {err}") from None
        with client:
            keys = [f"hetsim-{hashlib.sha1(p['key'].encode()).hexdigest()[:16]}" for p in points]
            futures = client.map(run_point, points, key=keys)
            for fut in dask_completed(futures):
                record(fut.result())
    elif (workers or os.cpu_count() or 1) <= 1:
        for p in points:
            record(run_point(p))
    else:
        with ProcessPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
            futures = [pool.submit(run_point, p) for p in points]
            for fut in as_completed(futures):
                record(fut.result())
    _sort_table(out, [p["key"] for p in expand_points(spec)])
    return out, total, skipped


def _sort_table(path: Path, order: list[str]) -> None:
    """Rewrite the finished table in the sweep's point order (atomically), so the file does not depend on
    which worker finished first."""
    from hetsim.report.export import atomic_write_text

    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    rank = {k: i for i, k in enumerate(order)}
    rows.sort(key=lambda r: rank.get(r["key"], len(rank)))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())
