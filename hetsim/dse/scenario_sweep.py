"""``hetsim sweep`` over a scenario's parameters (issue 23): the latency-vs-offered-load curve of a SoC.

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
comparison replay), one row of the results table: the key, the parameters, and per stream ``<stream>.offered_hz``,
``.throughput_hz``, ``.latency_p50_s``, ``.latency_p99_s``, ``.latency_mean_s``, ``.deadline_miss``,
``.saturated``; then the mapping's analytic ``bottleneck_load`` (the busiest resource at the offered rates) and
``bottleneck_resource``, ``saturated`` (any stream), ``energy_per_request_j``, ``error``, and the settings
(``scenario_sha256`` of the scenario file, ``platform_sha256``, ``hetsim_version``). A row already in the table
with the same key and settings is not run again (a killed sweep resumes; changed settings recompute).
``hetsim plot`` draws the table as latency (p50, p99) against the offered rate, the saturation point marked
(:func:`hetsim.report.dse_plots.plot_latency_vs_load`).
"""

from __future__ import annotations

import itertools
import json
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hetsim.errors import InputError
from hetsim.schedule import OBJECTIVES

__all__ = ["ScenarioSweep", "is_scenario_sweep", "load_scenario_sweep", "run_scenario_sweep",
           "scenario_points"]

#: per-stream columns of a row (``<stream>.<column>``)
STREAM_COLUMNS = ("offered_hz", "throughput_hz", "latency_mean_s", "latency_p50_s", "latency_p99_s",
                  "deadline_miss", "saturated")
#: the columns after the per-stream ones
TAIL_COLUMNS = ("bottleneck_load", "bottleneck_resource", "saturated", "energy_per_request_j", "simulated_s",
                "error", "scenario_sha256", "platform_sha256", "hetsim_version")


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
    """Read and check a scenario sweep file: the scenario and platforms exist and load, every scenario parameter
    path exists in the scenario and gives a valid scenario, every platform parameter exists on every platform.

    Raises:
        InputError: a missing file, an unknown field or parameter path, an invalid value.
    """
    from hetsim.platform import load_platform, read_yaml_model
    from hetsim.scenario.spec import load_scenario

    p = Path(path)
    spec = read_yaml_model(p, ScenarioSweep, InputError, "sweep file", "scenario, platforms, parameters")
    base = p.parent
    spec.scenario = (base / spec.scenario).resolve()
    spec.platforms = [(base / x).resolve() for x in spec.platforms]
    spec.output = (base / spec.output).resolve() if spec.output else Path("results") / f"{spec.name}.csv"
    for f in [spec.scenario, *spec.platforms]:
        if not f.is_file():
            raise InputError(f"{p}: {str(f)!r} does not exist")
    for k, vals in spec.parameters.items():
        if not isinstance(vals, list) or not vals:
            raise InputError(f"{p}: parameters: {k!r} needs a non-empty list of values")
    sc, _ = load_scenario(spec.scenario)
    for objective in spec.objectives or []:
        if objective not in OBJECTIVES:
            raise InputError(f"{p}: objectives: {objective!r} is not {' or '.join(OBJECTIVES)}")
    sc_params, plat_params = _split(spec.parameters)
    for point in _grid(sc_params):  # every scenario the grid makes is valid
        _scenario_with(sc, point, str(p))
    for plat in spec.platforms:
        pl = load_platform(plat)
        for point in _grid(plat_params):
            try:
                pl.with_overrides(point, name=pl.name)
            except (InputError, ValueError) as err:
                raise InputError(f"{p}: parameters: {err}") from None
    return spec


def _grid(params: dict) -> list[dict]:
    names = sorted(params)
    return [dict(zip(names, vals, strict=True)) for vals in itertools.product(*(params[n] for n in names))]


def _scenario_with(sc, params: dict, what: str):
    from pydantic import ValidationError

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
        raise InputError(f"{what}: parameters {params}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def scenario_points(spec: ScenarioSweep) -> list[dict]:
    """The points of the sweep, each a dict: ``key``, ``platform``, ``params``, ``mapper``, ``objective``."""
    from hetsim.scenario.spec import load_scenario

    sc, _ = load_scenario(spec.scenario)
    mappers = spec.mappers or [sc.mapper]
    objectives = spec.objectives or [sc.objective]
    out = []
    for plat, params, mapper, obj in itertools.product(spec.platforms, _grid(spec.parameters), mappers, objectives):
        key = "|".join([spec.scenario.name, plat.name, ",".join(f"{k}={json.dumps(v)}" for k, v in
                                                                  sorted(params.items())), mapper, obj])
        out.append({"key": key, "scenario": str(spec.scenario), "platform": str(plat), "params": params,
                    "mapper": mapper, "objective": obj})
    return out


def run_scenario_point(point: dict) -> dict:
    """One point: the scenario with its parameters on the platform with its own; the row (module doc)."""
    from hetsim import __version__
    from hetsim.dse.sweep import file_sha256, platform_sha256
    from hetsim.platform import load_platform
    from hetsim.scenario.run import run_scenario
    from hetsim.scenario.spec import load_scenario

    sc, folder = load_scenario(point["scenario"])
    sc_params, plat_params = _split(point["params"])
    plat = load_platform(point["platform"])
    if plat_params:
        plat = plat.with_overrides(plat_params, name=plat.name)
    row = {"key": point["key"], "scenario": Path(point["scenario"]).name, "platform": Path(point["platform"]).name,
           "mapper": point["mapper"], "objective": point["objective"], **point["params"]}
    settings = {"scenario_sha256": file_sha256(point["scenario"]), "platform_sha256": platform_sha256(plat),
                "hetsim_version": __version__}
    try:
        r = run_scenario(plat, _scenario_with(sc, sc_params, point["key"]), mapper=point["mapper"],
                         objective=point["objective"], folder=folder, compare=False)
    except InputError as err:
        return {**row, "error": str(err), **settings}
    for st in r.streams.to_dict(orient="records"):
        for c in STREAM_COLUMNS:
            row[f"{st['stream']}.{c}"] = st[c]
    b = r.summary["bottleneck"]
    row.update({"bottleneck_load": b["load"], "bottleneck_resource": b["resource"],
                "saturated": r.summary["saturated"], "energy_per_request_j": r.summary["energy_per_request_j"],
                "simulated_s": r.summary["simulated_s"], "error": None, **settings})
    return row


def run_scenario_sweep(spec: ScenarioSweep, output: Path | None = None, workers: int | None = None,
                       progress=None) -> tuple[Path, int, int]:
    """Run the points not already in the table under the same settings, appending each row as it finishes
    (:func:`hetsim.dse.sweep._append`: one write, fsynced). Returns ``(table, points run, points kept)``."""
    import pandas as pd

    from hetsim.dse.sweep import _append, available_cores, file_sha256, platform_sha256

    out = Path(output or spec.output)
    points = scenario_points(spec)
    done: set[str] = set()
    old_cols: list[str] | None = None
    if out.is_file() and out.stat().st_size:
        old = pd.read_csv(out)
        old_cols = list(old.columns)
        from hetsim import __version__
        from hetsim.platform import load_platform

        sc_sha = file_sha256(spec.scenario)
        for rec in old.to_dict(orient="records"):
            if rec.get("scenario_sha256") == sc_sha and rec.get("hetsim_version") == __version__:
                done.add(rec["key"])
        want = {}
        for pt in points:  # a platform changed since: recompute its points
            if pt["key"] in done:
                _, plat_params = _split(pt["params"])
                pl = load_platform(pt["platform"])
                want[pt["key"]] = platform_sha256(pl.with_overrides(plat_params, name=pl.name) if plat_params
                                                  else pl)
        shas = dict(zip(old["key"], old.get("platform_sha256", pd.Series(dtype=str)), strict=False))
        done = {k for k in done if shas.get(k) == want.get(k)}
    todo = [pt for pt in points if pt["key"] not in done]
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    n_workers = max(1, min(workers or available_cores(), len(todo) or 1))
    cols = old_cols

    def record(row: dict) -> None:
        nonlocal cols
        rows.append(row)
        if cols is None:
            cols = list(row)
        if set(row) <= set(cols):  # crash-safe as it goes; the table is rewritten whole at the end
            _append(out, cols, row)
        if progress is not None:
            progress(len(rows), len(todo), row)

    if n_workers == 1:
        for pt in todo:
            record(run_scenario_point(pt))
    else:
        with ProcessPoolExecutor(n_workers) as pool:
            for fut in as_completed([pool.submit(run_scenario_point, pt) for pt in todo]):
                record(fut.result())
    from hetsim.report.export import atomic_path

    prev = pd.read_csv(out) if out.is_file() and out.stat().st_size else pd.DataFrame({"key": []})
    new_keys = {r["key"] for r in rows}
    order = {pt["key"]: i for i, pt in enumerate(points)}
    table = pd.concat([prev[~prev["key"].isin(new_keys)], pd.DataFrame(rows)], ignore_index=True)
    table = table.drop_duplicates("key", keep="last")
    table = table.sort_values("key", key=lambda k: k.map(lambda x: order.get(x, len(order))), kind="stable")
    with atomic_path(out) as tmp:
        table.to_csv(tmp, index=False)
    return out, len(todo), len(points) - len(todo)
