"""The sweep points of spiking networks: (SNN specs, NIR graphs and generated networks) x platforms x the parameter
grid x mappers x execution modes x reorder, each run by :func:`hetsim.pipeline.run` and recorded as one row of
:data:`SNN_RESULT_COLUMNS` (the file format and the columns: :mod:`hetsim.dse.sweep`, "SNN sweeps")."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from hetsim.devices.fields import MAX_COUNT
from hetsim.dse.points import (
    SweepKind,
    SweepSpec,
    _as_list,
    _combinations,
    _key_value,
    _platform,
    _platform_sha256,
    _stamp,
    file_sha256,
    point_key,
)
from hetsim.errors import InputError
from hetsim.snn.evaluate import BASELINE_CONFIG, TABLE_I
from hetsim.workload.kinds import SNN


def _column(config: str) -> str:
    """A configuration's name in a column name: ``all-m33`` -> ``all_m33``."""
    return config.replace("-", "_")


#: columns of an SNN sweep's rows after the synthetic arguments and the sweep parameters (module docstring)
SNN_RESULT_COLUMNS = [
    "density_measured", "latency_ms", *(f"latency_ms_{_column(c)}" for c in TABLE_I), "speedup", "energy_uj",
    f"energy_uj_{_column(BASELINE_CONFIG)}",
    "engines", "sram_kib", "launches_per_t", "solve_time_s", "error",
]


#: columns that identify an SNN point: before the synthetic arguments
SNN_ID_COLUMNS = ["key", "workload", "platform", "mapper", "mode", "reorder"]


#: ``synthetic_snn`` arguments a sweep may grid over: always columns (and in keys) ...
SYNTHETIC_COLUMNS = ["layers", "timesteps", "density", "clustering", "seed", "samples"]


#: ... and columns (and in keys) only when given
SYNTHETIC_OPTIONAL = ["beta", "threshold", "shuffle", "group_size"]


_SYNTHETIC_FLOATS = {"density", "clustering", "beta", "threshold"}


#: ... and of an SNN sweep's (mode, reorder and the synthetic arguments are in the key)
SNN_SETTINGS_COLUMNS = ["workload_sha256", "platform_sha256", "hetsim_version"]


#: upper bound of a synthetic network's ``samples`` (per split)
MAX_SYNTHETIC_SAMPLES = 10**6


def _synthetic_grid(raw: object) -> dict[str, list]:
    """The ``synthetic`` section as ``{argument: [values]}`` in :data:`SYNTHETIC_COLUMNS` then
    :data:`SYNTHETIC_OPTIONAL` order, defaults filled in, numbers normalised (so keys do not depend on how a
    value was written); idempotent. Every combination is checked as :func:`synthetic_snn` would.

    Raises:
        ValueError: an unknown or missing argument, an empty list, or a combination out of range; the message
            starts with the argument's name.
    """
    import inspect

    from hetsim.errors import WorkloadError
    from hetsim.snn.network import MAX_TIMESTEPS
    from hetsim.snn.synthetic import _validate, synthetic_snn

    if not isinstance(raw, dict):
        raise ValueError(f"expected a mapping of synthetic_snn arguments ({', '.join(SYNTHETIC_COLUMNS)}), got "
                         f"{type(raw).__name__}")
    allowed = SYNTHETIC_COLUMNS + SYNTHETIC_OPTIONAL
    for k in raw:
        if k not in allowed:
            raise ValueError(f"{k}: unknown field; allowed: {', '.join(allowed)}")
    defaults = {k: v.default for k, v in inspect.signature(synthetic_snn).parameters.items()}
    grid: dict[str, list] = {}
    for k in allowed:
        if k not in raw:
            if k in ("layers", "timesteps"):
                raise ValueError(f"{k}: required field is missing")
            if k in SYNTHETIC_COLUMNS:
                grid[k] = [defaults[k]]
            continue
        v = raw[k]
        if k == "layers" and isinstance(v, list) and v and not any(isinstance(x, list) for x in v):
            v = [v]  # one network
        vals = _as_list(v)
        if not vals:
            raise ValueError(f"{k}: empty list of values")
        grid[k] = [_norm_synthetic(k, x) for x in vals]
    for k, hi in (("timesteps", MAX_TIMESTEPS), ("samples", MAX_SYNTHETIC_SAMPLES), ("seed", 2**63 - 1),
                  ("group_size", MAX_COUNT)):
        for x in grid.get(k, ()):
            if isinstance(x, bool) or not isinstance(x, int) or not (0 if k == "seed" else 1) <= x <= hi:
                shown = repr(x) if len(repr(x)) <= 40 else f"an integer of {len(str(x))} digits"
                raise ValueError(f"{k} must be an integer in [{0 if k == 'seed' else 1}, {hi}], got {shown}")
    for layers in grid["layers"]:
        if isinstance(layers, list) and any(isinstance(w, int) and not isinstance(w, bool) and w > MAX_COUNT
                                            for w in layers):
            raise ValueError(f"layers: a width is above {MAX_COUNT}: {layers}")
    if "shuffle" in grid and any(not isinstance(x, bool) for x in grid["shuffle"]):
        raise ValueError(f"shuffle must be true or false, got {grid['shuffle']!r}")
    from hetsim.dse.bounds import check_count

    try:  # before building any combination
        check_count(math.prod(len(v) for v in grid.values()), "the grid")
    except InputError as err:
        raise ValueError(str(err)) from None
    for args in _combinations(grid):
        try:
            _validate(args["layers"], args["timesteps"], args["density"], args["clustering"], args["samples"],
                      defaults["splits"], args.get("beta", defaults["beta"]),
                      args.get("threshold", defaults["threshold"]), args.get("group_size"))
        except WorkloadError as err:
            raise ValueError(str(err)) from None
    return grid


def _norm_synthetic(field: str, x):
    """Floats as floats (``0`` -> ``0.0``) so that equal values give equal keys; anything else as given."""
    def f(v):
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else v

    if field in _SYNTHETIC_FLOATS:
        return [f(v) for v in x] if isinstance(x, list) else f(x)
    return x


def _synthetic_name(args: dict) -> str:
    d = args["density"]
    dens = "-".join(f"{x:g}" for x in d) if isinstance(d, list) else f"{d:g}"
    extra = "".join(f"_{k}{args[k]}" for k in SYNTHETIC_OPTIONAL if k in args)
    return (f"synthetic_{'-'.join(map(str, args['layers']))}_T{args['timesteps']}_d{dens}_c{args['clustering']:g}"
            f"_s{args['seed']}_n{args['samples']}{extra}")


def _synthetic_cells(args: dict) -> dict:
    """The synthetic arguments as table cells (``layers`` as ``24-192-192-27``, a per-layer density as
    ``0.1;0.2;...``)."""
    cells = dict(args)
    cells["layers"] = "-".join(map(str, args["layers"]))
    if isinstance(args["density"], list):
        cells["density"] = ";".join(f"{x:g}" for x in args["density"])
    return cells


class SnnSweep(SweepKind):
    """A sweep of spiking networks: :class:`~hetsim.dse.points.SweepKind` for kind ``snn``."""

    kind: ClassVar[str] = SNN
    label: ClassVar[str] = "SNN"
    plural: ClassVar[str] = "spiking networks"
    noun: ClassVar[str] = "spiking network"
    fields: ClassVar[tuple[str, ...]] = ("mode", "reorder", "spikes", "synthetic")
    implied_by: ClassVar[tuple[str, ...]] = ("synthetic",)
    implied_phrase: ClassVar[str] = "a synthetic grid"

    def check(self, p: Path, spec: SweepSpec, mixing: str) -> None:
        """Modes, reorder flags, NIR rasters and the synthetic grid.

        Raises:
            InputError: an unknown mode, an empty list, a NIR graph without ``spikes``, a bad synthetic argument.
        """
        from hetsim.mappers.spikeduet import MODES
        from hetsim.workload.frontends import frontend_for

        for m in _as_list(spec.mode or "async"):
            if m not in MODES:
                raise InputError(f"{p}: mode: unknown execution mode {m!r}; allowed: {', '.join(MODES)}")
        if spec.mode == [] or spec.reorder == []:
            raise InputError(f"{p}: {'mode' if spec.mode == [] else 'reorder'}: empty list of values")
        for w in spec.workloads:
            fe = frontend_for(w)
            if "spikes" in fe.options and str(w) not in (spec.spikes or {}):
                raise InputError(f"{p}: workloads: {w.name} is {fe.description}: give its input raster under "
                                 f"spikes, e.g. spikes: {{{w.name}: INPUT.npz}}")
            if "spikes" not in fe.options and str(w) in (spec.spikes or {}):
                raise InputError(f"{p}: spikes: {w.name} is {fe.description}, which carries its own activity")
        if spec.synthetic is not None:
            try:
                spec.synthetic = _synthetic_grid(spec.synthetic)
            except ValueError as err:
                raise InputError(f"{p}: synthetic: {err}") from None

    def check_platform(self, p: Path, platform, where: str) -> None:
        from hetsim.snn.activity_costs import engines_of

        try:
            engines_of(platform)
        except InputError as err:
            raise InputError(f"{p}: platforms: {err}") from None

    def count_points(self, spec: SweepSpec, grid: int) -> int:
        nets = len(spec.workloads) + (synthetic_count(spec.synthetic) if spec.synthetic is not None else 0)
        modes = len(spec.mode) if isinstance(spec.mode, list) and spec.mode else 1
        reorders = len(spec.reorder) if isinstance(spec.reorder, list) and spec.reorder else 1
        return nets * len(spec.platforms) * grid * len(spec.mappers) * modes * reorders

    def expand(self, spec: SweepSpec, names: list[str], grid: list[tuple]) -> list[dict]:
        """(spec files, then synthetic networks) x platforms x grid x mappers x modes x reorder."""
        from hetsim import __version__

        spikes = spec.spikes or {}
        nets = [(w.name, {"workload": str(w), "name": w.name, "synthetic": None,
                          **({"spikes": str(spikes[str(w)])} if str(w) in spikes else {})}) for w in spec.workloads]
        if spec.synthetic is not None:
            nets += [({"synthetic": a}, {"workload": None, "name": _synthetic_name(a), "synthetic": a})
                     for a in _combinations(_synthetic_grid(spec.synthetic))]
        modes, reorders = _as_list(spec.mode or "async"), _as_list(False if spec.reorder is None else spec.reorder)
        points = []
        for (wid, net), p, values, m, mode, reo in itertools.product(nets, spec.platforms, grid, spec.mappers, modes,
                                                                    reorders):
            params = dict(zip(names, values, strict=True))
            key = point_key(_workload_id(wid), p.name, params, m, mode, f"reorder={_key_value(reo)}")
            settings = {"workload_sha256": _snn_sha256(net) if net["workload"] else "",
                        "platform_sha256": _platform_sha256(p, params), "hetsim_version": __version__}
            points.append({"key": key, **net, "platform": str(p), "params": params, "mapper": m,
                           "mode": mode, "reorder": reo, "settings": settings})
        return points

    def result_columns(self, spec: SweepSpec) -> list[str]:
        optional = [c for c in SYNTHETIC_OPTIONAL if spec.synthetic and c in spec.synthetic]
        return [*SNN_ID_COLUMNS, *SYNTHETIC_COLUMNS, *optional, *spec.parameters, *SNN_RESULT_COLUMNS,
                *SNN_SETTINGS_COLUMNS]

    def settings_columns(self, spec: SweepSpec) -> list[str]:
        return SNN_SETTINGS_COLUMNS

    def run_point(self, point: dict) -> dict:
        return run_snn_point(point)

    def legacy_key(self, old: list) -> str | None:
        """An older hetsim's SNN key, ``[workload, platform, params, mapper, mode, reorder]``."""
        if len(old) != 6:
            return None
        return point_key(_workload_id(old[0]), old[1], old[2], old[3], old[4], f"reorder={_key_value(old[5])}")


#: the kind's sweep (:attr:`hetsim.snn.kind.SnnKind.sweep`)
SNN_SWEEP = SnnSweep()


def _workload_id(workload: str | dict) -> str:
    """A point key's workload: a file's name, or a synthetic network (``{"synthetic": args}``) written
    ``synthetic(layers=[...],timesteps=...,...)`` with its arguments in :data:`SYNTHETIC_COLUMNS` then
    :data:`SYNTHETIC_OPTIONAL` order."""
    if not isinstance(workload, dict):
        return workload
    args = workload["synthetic"]
    order = [k for k in SYNTHETIC_COLUMNS + SYNTHETIC_OPTIONAL if k in args] + sorted(
        k for k in args if k not in SYNTHETIC_COLUMNS + SYNTHETIC_OPTIONAL)
    return "synthetic(" + ",".join(f"{k}={_key_value(args[k])}" for k in order) + ")"


def synthetic_count(raw) -> int:
    """Networks in a ``synthetic`` grid (a mapping of lists or scalars; ``layers`` a list of widths is one
    network); 0 for anything else (its validation says what is wrong)."""
    if not isinstance(raw, dict):
        return 0
    n = 1
    for k, v in raw.items():
        if k == "layers" and isinstance(v, list) and v and not any(isinstance(x, list) for x in v):
            continue
        n *= len(v) if isinstance(v, list) else 1
    return n


def _snn_sha256(net: dict) -> str:
    """An SNN point's ``workload_sha256``: of its spec and npz files (:func:`snn_spec_sha256`), or of its NIR graph
    and input raster."""
    if not net.get("spikes"):
        return snn_spec_sha256(net["workload"])
    parts = f"{file_sha256(net['workload'])}|spikes={file_sha256(net['spikes'])}"
    return hashlib.sha256(parts.encode()).hexdigest()[:16]


def snn_spec_sha256(path: str | Path) -> str:
    """The first 16 hex digits of the SHA-256 of an SNN spec's bytes and of the ``weights`` and ``activity`` npz
    files it names (so a retrained network changes it)."""
    import yaml

    from hetsim.platform import YAML_MAX_BYTES, load_yaml_text

    p = Path(path)
    parts = [file_sha256(p)]
    try:  # the guarded loader: an alias bomb in a spec must not hang the sweep's expansion
        raw = load_yaml_text(p.read_text()) if p.stat().st_size <= YAML_MAX_BYTES else None
    except (OSError, ValueError, yaml.YAMLError):
        raw = None
    if isinstance(raw, dict):
        for field in ("weights", "activity"):
            f = raw.get(field)
            if isinstance(f, str) and (p.parent / f).is_file():
                parts.append(f"{field}={file_sha256(p.parent / f)}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _snn_file(path: str, spikes: str | None = None):
    return _snn_file_at(*_stamp(path), *(_stamp(spikes) if spikes else ()))


@lru_cache(maxsize=8)
def _snn_file_at(path: str, _mtime_ns: int, _size: int, spikes: str | None = None, *_spikes_stamp):
    from hetsim.workload.frontends import load_workload

    return load_workload(path, spikes=spikes).snn


@lru_cache(maxsize=8)
def _snn_synthetic(args_json: str, name: str):
    from hetsim.snn.synthetic import synthetic_snn

    return synthetic_snn(**json.loads(args_json), name=name)


def run_snn_point(point: dict) -> dict:
    """One SNN point (:func:`hetsim.pipeline.run`, the function behind ``hetsim run``) as a row (module
    docstring)."""
    import numpy as np

    from hetsim.pipeline import run

    row = {c: "" for c in SNN_RESULT_COLUMNS}
    row.update({"key": point["key"], "workload": point["name"], "mapper": point["mapper"], "mode": point["mode"],
                "reorder": point["reorder"]})
    syn = point["synthetic"]
    if syn is not None:
        row.update(_synthetic_cells(syn))
    row.update(point["params"])
    row.update(point.get("settings", {}))
    try:
        plat = _platform(point["platform"])
        if point["params"]:
            plat = plat.with_overrides(point["params"], name=plat.name)
        row["platform"] = plat.name
        if syn is not None:
            snn = _snn_synthetic(json.dumps(syn, sort_keys=True), point["name"])
        else:
            snn = _snn_file(point["workload"], point.get("spikes"))
            row.update({"layers": "-".join(map(str, snn.layer_sizes)), "timesteps": snn.timesteps})
        r = run(plat, snn, point["mapper"], mapper_options={"mode": point["mode"]}, reorder=point["reorder"],
                timeline=False)
        s, cf = r.summary, r.summary["configs"]
        rasters = r.snn.network.split("eval")
        hidden = rasters[1:-1] or rasters[:1]
        layers = s["per_layer"]
        row.update({
            "samples": row.get("samples") or s["samples"],
            "density_measured": float(np.mean([x.mean() for x in hidden])),
            "latency_ms": s["mean_latency_ms"],
            **{f"latency_ms_{_column(c)}": cf[c]["mean_latency_ms"] for c in TABLE_I},
            "speedup": s["speedup_vs_all_m33"], "energy_uj": s["mean_energy_uj"],
            f"energy_uj_{_column(BASELINE_CONFIG)}": cf[BASELINE_CONFIG]["mean_energy_uj"],
            "engines": ";".join(f"{x['engine']}/{x['residency']}" for x in layers),
            "sram_kib": s["sram_used_kib"],
            "launches_per_t": ";".join(f"{x['launches_per_t']:.4g}" for x in layers),
            "solve_time_s": s["plan_stats"].get("solve_time_s", ""),
        })
    except Exception as err:  # recorded in the table: a sweep keeps going
        row["error"] = f"{type(err).__name__}: {err}"
    return row
