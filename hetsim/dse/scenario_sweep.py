"""``hetsim sweep`` over a scenario's parameters: the latency-vs-offered-load curve of a SoC.

A scenario sweep file names one scenario and grids over its parameters (dotted paths into the scenario file,
``streams.<name>.arrival.rate_hz``, ``streams.<name>.arrival.period_s``, ``dispatch``, ``seed``, ...) and the
platform's (``devices.cim.crossbars``: dotted platform paths, as in an ONNX sweep)::

    name: two-models-load
    scenario: ../scenarios/two-models-puma.yaml
    platforms: [../platforms/puma.yaml]
    parameters:
      streams.resnet.arrival.rate_hz: [2, 4, 6, 8, 10, 12]
    mappers: [heft]                   # default: the scenario's mapper
    objectives: [latency, throughput] # default: the scenario's objective
    output: ../results/two-models-load.csv

Points = platforms x the grid x mappers x objectives; each is one :func:`hetsim.scenario.run.run_scenario` (no
comparison replay), one row of the results table (:func:`result_columns`): the key, the parameters, and per stream
``<stream>.offered_hz``, ``.throughput_hz``, ``.latency_p50_s``, ``.latency_p99_s``, ``.latency_mean_s``,
``.deadline_miss``, ``.saturated``; then the mapping's analytic ``bottleneck_load`` (the busiest resource at the
offered rates) and ``bottleneck_resource``, ``saturated`` (any stream), ``energy_per_request_j``, ``error``, and
the settings (:data:`SETTINGS_COLUMNS`: ``scenario_sha256`` of the scenario file and of the files the point's
scenario names, :func:`scenario_sha256`; ``platform_sha256`` of the platform after the point's overrides;
``hetsim_version``). ``hetsim plot`` draws the table as latency (p50, p99)
against the offered rate, the saturation point marked (:func:`hetsim.report.dse_plots.plot_latency_vs_load`).

The sweep runs on the ordinary sweep's machinery (:mod:`hetsim.dse.sweep`), with its guarantees:

- **Bounds.** The points are counted from the file's lists before any is built or checked
  (:func:`hetsim.dse.bounds.count_points`): more than the limit (100,000; ``--max-points N``) is refused.
- **One writer per table.** The output is checked (:func:`hetsim.dse.lock.check_output`: not a folder, in a folder
  hetsim can write) and locked for the whole run (:func:`hetsim.dse.lock.results_lock`): a second sweep into the
  same table is refused in one line naming the holder.
- **Resume, never reuse under other settings.** Each finished point is appended at once as one fsynced line
  (:func:`hetsim.dse.store._append`); a torn last line left by a kill is dropped on resume. A row already in the
  table with the same key and settings is not run again; a row of this sweep's point computed under other settings
  is recomputed and its old row moved to ``<output name>.replaced.csv`` (:func:`hetsim.dse.store._reconcile`).
  The finished table is rewritten in the sweep's point order.
- **Stopping.** Points run in worker processes (also with ``--workers 1``; ``workers=0`` runs them in this process);
  SIGINT and SIGTERM stop the sweep within seconds, keep the finished rows, terminate the workers and raise
  :class:`~hetsim.dse.sweep.SweepInterrupted` (``hetsim sweep`` exits 130 or 143 with one line). ``--scheduler``
  runs the points on a Dask cluster, as for an ONNX sweep.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hetsim.errors import InputError
from hetsim.input_files import check_input_file, resolved_path
from hetsim.schedule import OBJECTIVES

__all__ = ["ScenarioSweep", "is_scenario_sweep", "load_scenario_sweep", "result_columns", "run_scenario_sweep",
           "scenario_points"]

#: per-stream columns of a row (``<stream>.<column>``)
STREAM_COLUMNS = ("offered_hz", "throughput_hz", "latency_mean_s", "latency_p50_s", "latency_p99_s",
                  "deadline_miss", "saturated")
#: the settings a row was computed under: the last columns of the table
SETTINGS_COLUMNS = ("scenario_sha256", "platform_sha256", "hetsim_version")
#: the columns after the per-stream ones
TAIL_COLUMNS = ("bottleneck_load", "bottleneck_resource", "saturated", "energy_per_request_j", "simulated_s",
                "error", *SETTINGS_COLUMNS)
#: the columns that identify a point, before the parameters
ID_COLUMNS = ("key", "scenario", "platform", "mapper", "objective")


class ScenarioSweep(BaseModel):
    """A scenario sweep file (module doc); paths resolved against the file's folder."""

    model_config = ConfigDict(extra="forbid")

    name: str
    scenario: Path
    platforms: list[Path] = Field(min_length=1)
    parameters: dict[str, list] = Field(default_factory=dict)
    mappers: list[str] | None = None
    objectives: list[str] | None = None
    output: Path | None = None


def is_scenario_sweep(path: str | Path) -> bool:
    """True for a sweep file whose top level names a ``scenario``."""
    from hetsim.platform import read_yaml

    try:
        data = read_yaml(Path(path), InputError, "sweep file")
    except InputError:
        return False
    return isinstance(data, dict) and "scenario" in data


def _set(tree: dict, dotted: str, value, what: str) -> None:
    """``tree[a][b][c] = value`` for ``a.b.c``; the path must exist (the closest key suggested)."""
    from hetsim.errors import did_you_mean

    keys = dotted.split(".")
    node = tree
    for i, k in enumerate(keys):
        if not isinstance(node, dict) or (k not in node and i < len(keys) - 1):
            raise InputError(f"{what}: {dotted!r}: no {'.'.join(keys[:i + 1])!r}"
                             + (did_you_mean(k, list(node)) if isinstance(node, dict) else ""))
        if i == len(keys) - 1:
            node[k] = value
        else:
            node = node[k]


def _split(params: dict) -> tuple[dict, dict]:
    """The scenario's parameters (``streams.*`` and the scenario's own top-level fields) and the platform's."""
    from hetsim.scenario.spec import Scenario

    own = set(Scenario.model_fields)
    sc = {k: v for k, v in params.items() if k.split(".")[0] in own}
    return sc, {k: v for k, v in params.items() if k not in sc}


def load_scenario_sweep(path: str | Path) -> ScenarioSweep:
    """Read and check a scenario sweep file: not more points than the limit (:mod:`hetsim.dse.bounds`, counted
    first), the scenario and platforms exist and load, every scenario parameter path exists in the scenario and
    gives a valid scenario whose streams' model files exist and are tensor-operator models, every platform
    parameter exists on every platform.

    Raises:
        InputError: a missing file, an unknown field or parameter path, an invalid value, a stream's missing or
            unreadable model, ``mapper`` or ``objective`` as a parameter (the sweep's ``mappers`` and
            ``objectives`` lists say them), more points than the limit.
    """
    from hetsim.dse.bounds import check_count, count_points
    from hetsim.dse.points import _platform, default_output
    from hetsim.platform import read_yaml_model
    from hetsim.scenario.spec import load_scenario

    p = Path(path)
    spec = read_yaml_model(p, ScenarioSweep, InputError, "sweep file", "scenario, platforms, parameters")
    base = p.parent
    spec.scenario = resolved_path(base / spec.scenario, f"{p}: scenario")
    spec.platforms = [resolved_path(base / x, f"{p}: platform") for x in spec.platforms]
    spec.output = resolved_path(base / spec.output, f"{p}: output") if spec.output else default_output(p, spec.name)
    for k, vals in spec.parameters.items():
        if not isinstance(vals, list) or not vals:
            raise InputError(f"{p}: parameters: {k!r} needs a non-empty list of values")
        if k in ("mapper", "objective"):
            raise InputError(f"{p}: parameters: {k!r}: give the sweep's {k}s list instead ({k}s: [...])")
    check_count(count_points(spec), f"sweep {spec.name!r}")  # before any point is built or checked
    for f in [spec.scenario, *spec.platforms]:
        check_input_file(f, f"{p}:")  # missing, a folder, a FIFO, a device, a symbolic link loop
    sc, folder = load_scenario(spec.scenario)
    for objective in spec.objectives or []:
        if objective not in OBJECTIVES:
            raise InputError(f"{p}: objectives: {objective!r} is not {' or '.join(OBJECTIVES)}")
    _check_mappers(p, spec, sc)
    sc_params, plat_params = _split(spec.parameters)
    seen: set[Path] = set()
    for point in _grid(sc_params):  # every scenario the grid makes is valid, and its models are there
        _check_models(_scenario_with(sc, point, str(p)), folder, seen, str(p))
    from hetsim.mappers.base import check_baseline

    for plat in spec.platforms:
        pl = _platform(str(plat))
        check_baseline(pl, f"{p}: platforms: {plat}")
        for point in _grid(plat_params):
            try:
                changed = pl.with_overrides(point, name=pl.name)
            except (InputError, ValueError) as err:
                raise InputError(f"{p}: parameters: {err}") from None
            check_baseline(changed, f"{p}: parameters")
    return spec


def _check_mappers(p: Path, spec: ScenarioSweep, sc) -> None:
    """Every mapper of the sweep (its ``mappers``, else the scenario's) is registered, maps tensor-operator models,
    and has a throughput method when an objective is ``throughput`` (as :func:`hetsim.scenario.run.map_streams`
    requires).

    Raises:
        InputError: an unknown mapper (the closest name suggested), an SNN mapper, or one without a throughput
            method.
    """
    from hetsim.mappers import MAPPERS
    from hetsim.mappers.base import _mapper_class
    from hetsim.workload.kinds import DAG, kinds_of

    mappers = spec.mappers or [sc.mapper]
    if any(m not in MAPPERS for m in mappers):  # maybe a plugin's (hetsim/plugins.py)
        from hetsim.plugins import load_plugins

        load_plugins()
    where = "mappers" if spec.mappers else f"the scenario's mapper ({spec.scenario.name})"
    for m in mappers:
        try:
            cls = _mapper_class(m)
        except InputError as err:
            raise InputError(f"{p}: {where}: {err}") from None
        if DAG not in kinds_of(cls):
            raise InputError(f"{p}: {where}: {m!r} maps spiking networks; a scenario's streams are tensor-operator "
                             "models")
        if "throughput" in (spec.objectives or [sc.objective]) and getattr(cls, "throughput_method", None) is None:
            raise InputError(f"{p}: {where}: {m!r} has no throughput objective (cpsat solves it exactly; heft and "
                             "greedy have a heuristic); objectives: [latency] or another mapper")


def _check_models(sc, folder: Path, seen: set[Path], what: str) -> None:
    """Every stream's model file of ``sc`` exists and is a tensor-operator model (``seen``: paths checked).

    Raises:
        InputError: a missing model file, or one no front end reads as a tensor-operator model.
    """
    from hetsim.scenario.run import model_frontend

    for name, st in sc.streams.items():
        path = resolved_path(folder / st.model, f"{what}: scenario {sc.name!r}, stream {name!r}: model")
        if path in seen:
            continue
        try:
            model_frontend(path)
        except InputError as err:
            raise InputError(f"{what}: scenario {sc.name!r}, stream {name!r}: {err}") from None
        check_input_file(path, f"{what}: scenario {sc.name!r}, stream {name!r}: model")
        seen.add(path)


def _grid(params: dict) -> list[dict]:
    """Every combination of ``params`` (name -> values), the names sorted (:func:`hetsim.dse.points._combinations`)."""
    from hetsim.dse.points import _combinations

    return _combinations({n: params[n] for n in sorted(params)})


def _scenario_with(sc, params: dict, what: str):
    from pydantic import ValidationError

    from hetsim.platform import _shown_loc
    from hetsim.scenario.spec import Scenario

    if not params:
        return sc
    data = sc.model_dump(mode="json")
    for k, v in params.items():
        _set(data, k, v, f"{what}: parameters")
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        raise InputError(f"{what}: parameters {params}: {'.'.join(_shown_loc(Scenario, first['loc']))}: "
                         f"{first['msg']}") from None


def _stream_names(spec: ScenarioSweep, sc) -> list[str]:
    """The streams of every scenario the grid makes, in order of appearance: the scenario's own, then any a
    parameter adds (``streams.<new>: [{...}]``) or brings with a whole new stream set (``streams: [{...}]``), so
    that every point's per-stream results have their columns (a name missing here would have its cells dropped)."""
    names = dict.fromkeys(sc.streams)
    scenario_params = {k: v for k, v in spec.parameters.items() if k == "streams" or k.startswith("streams.")}
    for point in _grid(scenario_params):
        names.update(dict.fromkeys(_scenario_with(sc, point, spec.name).streams))
    return list(names)


def result_columns(spec: ScenarioSweep) -> list[str]:
    """The columns of the sweep's results table, in order: :data:`ID_COLUMNS`, the parameters (sorted), the
    :data:`STREAM_COLUMNS` of each stream, :data:`TAIL_COLUMNS` (the settings last)."""
    sc, _ = _scenario(str(spec.scenario))
    return [*ID_COLUMNS, *sorted(spec.parameters),
            *(f"{s}.{c}" for s in _stream_names(spec, sc) for c in STREAM_COLUMNS), *TAIL_COLUMNS]


def scenario_points(spec: ScenarioSweep) -> list[dict]:
    """The points of the sweep, each a dict: ``key``, ``scenario``, ``platform``, ``params``, ``mapper``,
    ``objective``, and ``settings`` (the :data:`SETTINGS_COLUMNS` cells it is computed under; each platform loaded
    once, its hash computed once per set of platform overrides).

    Raises:
        InputError: more points than the limit in force (:mod:`hetsim.dse.bounds`), counted before any is built.
    """
    from hetsim import __version__
    from hetsim.dse.bounds import check_count, count_points
    from hetsim.dse.points import _platform_sha256

    check_count(count_points(spec), f"sweep {spec.name!r}")
    sc, folder = _scenario(str(spec.scenario))
    mappers = spec.mappers or [sc.mapper]
    objectives = spec.objectives or [sc.objective]
    plat_shas: dict[tuple[Path, str], str] = {}
    sc_shas: dict[str, str] = {}
    out = []
    for plat, params, mapper, obj in itertools.product(spec.platforms, _grid(spec.parameters), mappers, objectives):
        key = "|".join([spec.scenario.name, plat.name, ",".join(f"{k}={json.dumps(v)}" for k, v in
                                                                  sorted(params.items())), mapper, obj])
        sc_params, plat_params = _split(params)
        at = (plat, json.dumps(plat_params, sort_keys=True))
        if at not in plat_shas:
            plat_shas[at] = _platform_sha256(plat, plat_params)
        sc_at = json.dumps(sc_params, sort_keys=True)
        if sc_at not in sc_shas:
            sc_shas[sc_at] = scenario_sha256(spec.scenario, _scenario_with(sc, sc_params, spec.name), folder)
        settings = {"scenario_sha256": sc_shas[sc_at], "platform_sha256": plat_shas[at],
                    "hetsim_version": __version__}
        out.append({"key": key, "scenario": str(spec.scenario), "platform": str(plat), "params": params,
                    "mapper": mapper, "objective": obj, "settings": settings})
    from hetsim.dse.points import unique_keys

    unique_keys(out)
    return out


def scenario_sha256(path: str | Path, sc, folder: Path) -> str:
    """A point's ``scenario_sha256``: the first 16 hex digits of the SHA-256 of the scenario file's and of the bytes
    of every file the point's scenario ``sc`` names (each stream's model; the files its arrival process reads, a
    trace's), so an edited model recomputes its rows as an edited scenario does (as
    :func:`hetsim.snn.sweep.snn_spec_sha256` covers an SNN spec's npz files). A missing file is named so (the point
    records the error). ``folder``: where the scenario's relative paths are."""
    import hashlib

    from hetsim.dse.points import file_sha256

    def sha(f: Path) -> str:
        return file_sha256(f) if f.is_file() else "missing"

    parts = [file_sha256(path)]
    for name, st in sc.streams.items():
        parts.append(f"{name}:{sha(folder / st.model)}")
        for label, file in st.arrival.files().items():  # the files its arrival process reads (a trace's)
            parts.append(f"{name}.{label}:{sha(folder / file)}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _scenario(path: str):
    """The scenario at ``path`` and its folder, cached while the file is unchanged."""
    from hetsim.dse.points import _stamp

    return _scenario_at(*_stamp(path))


@lru_cache(maxsize=8)
def _scenario_at(path: str, _mtime_ns: int, _size: int):
    from hetsim.scenario.spec import load_scenario

    return load_scenario(path)


def _cell(x):
    """A value as a table cell: a missing number (``None``, NaN) empty, as pandas writes it."""
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else x


def run_scenario_point(point: dict) -> dict:
    """One point (:func:`scenario_points`): the scenario with its parameters on the platform with its own; the row
    (module doc), ``error`` set and the numbers empty when it failed."""
    from hetsim.dse.points import _platform
    from hetsim.scenario.run import run_scenario
    from hetsim.scenario.spec import max_ops

    row = {"key": point["key"], "scenario": Path(point["scenario"]).name, "platform": Path(point["platform"]).name,
           "mapper": point["mapper"], "objective": point["objective"], **point["params"], **point["settings"]}
    try:
        sc, folder = _scenario(point["scenario"])
        sc_params, plat_params = _split(point["params"])
        plat = _platform(point["platform"])
        if plat_params:
            plat = plat.with_overrides(plat_params, name=plat.name)
        with max_ops(point.get("max_ops")):  # the sweep's bound, in the worker process too
            r = run_scenario(plat, _scenario_with(sc, sc_params, point["key"]), mapper=point["mapper"],
                             objective=point["objective"], folder=folder, compare=False)
    except InputError as err:
        return {**row, "error": str(err)}
    except Exception as err:  # recorded in the table: a sweep keeps going (as hetsim.dse.runner.run_point)
        return {**row, "error": f"{type(err).__name__}: {err}"}
    for st in r.streams.to_dict(orient="records"):
        for c in STREAM_COLUMNS:
            row[f"{st['stream']}.{c}"] = _cell(st[c])
    b = r.summary["bottleneck"]
    row.update({"bottleneck_load": _cell(b["load"]), "bottleneck_resource": b["resource"],
                "saturated": r.summary["saturated"], "energy_per_request_j": _cell(r.summary["energy_per_request_j"]),
                "simulated_s": _cell(r.summary["simulated_s"]), "error": ""})
    return row


def run_scenario_sweep(spec: ScenarioSweep, output: Path | None = None, workers: int | None = None,
                       progress: Callable[[int, int, dict], None] | None = None,
                       notify: Callable[[str], None] | None = None, scheduler: str | None = None,
                       max_points: int | None = None) -> tuple[Path, int, int]:
    """Run the points of ``spec`` not yet in ``output`` under today's settings, appending each row as it finishes
    (module doc: bounds, lock, resume, stopping; the machinery of :func:`hetsim.dse.sweep.run_sweep`).

    Args:
        output: results CSV (default: ``spec.output``).
        workers: local worker processes (default: the available cores, at most one per point); 0 runs the points in
            this process (a signal then stops the sweep only between points).
        progress: called with (done, total, row) after each point.
        notify: called with a message when points are recomputed because their settings changed (default: a
            :class:`UserWarning`).
        scheduler: address of a Dask distributed scheduler (``tcp://HOST:PORT``) to run the points on instead.
        max_points: refuse a sweep of more points (default :data:`hetsim.dse.bounds.MAX_POINTS`).

    Returns:
        ``(output path, points run now, points kept because already done under the same settings)``.

    Raises:
        InputError: more points than the limit; the output is a folder, cannot be written, holds another table, or
            another sweep is writing it (:mod:`hetsim.dse.lock`).
        SweepInterrupted: SIGINT or SIGTERM (when run in the main thread): the points finished so far are in the
            table, local workers are terminated.
    """
    from hetsim.dse import bounds
    from hetsim.dse.lock import check_output, results_lock

    out = Path(output or spec.output)
    with bounds.max_points(max_points):
        bounds.check_count(bounds.count_points(spec), f"sweep {spec.name!r}")
    check_output(out)
    with results_lock(out) as table, bounds.max_points(max_points):  # one writer per file (hetsim.dse.lock)
        return out, *_run_locked(spec, table, workers, progress, notify, scheduler)[1:]


def _check_work(spec: ScenarioSweep, todo: list[dict]) -> None:
    """Refuse the sweep before its first point when a point's replay would pass the work bound in force
    (:func:`hetsim.scenario.run.check_work`, ``--max-ops``), and give each point that bound (its worker process
    has the default)."""
    from hetsim.scenario.run import _read_once, check_work
    from hetsim.scenario.spec import ops_limit

    sc, folder = _scenario(str(spec.scenario))
    models, read = {}, _read_once(folder)
    for pt in todo:
        check_work(_scenario_with(sc, _split(pt["params"])[0], pt["key"]), folder,
                   f"sweep {spec.name!r}, point {pt['key']}", models, read)
        pt["max_ops"] = ops_limit()


def _run_locked(spec: ScenarioSweep, out: Path, workers: int | None,
                progress: Callable[[int, int, dict], None] | None, notify: Callable[[str], None] | None,
                scheduler: str | None) -> tuple[Path, int, int]:
    """:func:`run_scenario_sweep`'s work, with the lock on ``out`` held."""
    import warnings

    from hetsim.dse.runner import SweepInterrupted, _run_points, _stop_on_signals, available_cores
    from hetsim.dse.store import _reconcile, _Recorder, _sort_table

    columns = result_columns(spec)
    every = scenario_points(spec)
    done = _reconcile(out, list(SETTINGS_COLUMNS), columns, every,
                      notify or (lambda msg: warnings.warn(msg, stacklevel=3)))
    todo = [pt for pt in every if pt["key"] not in done]
    _check_work(spec, todo)
    total = len(todo)
    record = _Recorder(out, columns, total, progress)
    if not todo:
        return out, 0, len(every)
    if workers is None:
        workers = max(1, min(available_cores(), total))
    try:
        with _stop_on_signals():
            _run_points(todo, record, workers, scheduler, run=run_scenario_point)
    except SweepInterrupted as stop:
        stop.output, stop.finished = out, record.finished
        raise
    _sort_table(out, [pt["key"] for pt in every])
    return out, total, len(every) - total
