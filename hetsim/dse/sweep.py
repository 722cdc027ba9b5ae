"""``hetsim sweep SWEEP.yaml``: a grid of design points, run in parallel, appended to a results table as
each point finishes, resumable after a kill.

A sweep file::

    name: cpu-cim-ilp
    workloads: [../workloads/paper/resnet18_int8_ort.onnx, ...]   # paths relative to this file
    platforms: [../platforms/puma.yaml, ../platforms/puma-x86.yaml]
    parameters:                                                   # dotted platform paths -> values
      devices.cim.crossbars: [25, 50, 100, 200]
      devices.cim.t_mvm_ns: [50, 100, 500, 1000]
    mappers: [cpsat]
    mapper_options: {work_limit: 2}
    contention: none
    output: ../results/cpu-cim-ilp.csv                            # default: results/<name>.csv

``input_shape: {x: [1, 3, 224, 224]}`` (or ``x: "1,3,224,224"``) fixes the dynamic dims of graph input ``x`` of
every workload, as ``hetsim run --input-shape x=1,3,224,224`` does (each workload must have that input; ONNX
sweeps only); it is part of each point's key.

Points = workloads x platforms x the parameter grid x mappers. Each point is identified by a key made of
its workload file, platform file, parameter values and mapper, the ``key`` column of the table
(:func:`point_key`): ``resnet18_int8_ort.onnx|puma.yaml|devices.cim.crossbars=25,devices.cim.t_mvm_ns=50|cpsat``
(parameters sorted by name), kept for humans. Every finished point is appended at once as one CSV line
(written with a single ``write`` and ``fsync``; a torn last line from a kill is dropped on resume). A table
written by an older hetsim, whose keys are JSON lists (``["resnet18_int8_ort.onnx","puma.yaml",{...},"cpsat"]``),
has its keys rewritten to this form when a sweep resumes it.

**Settings.** Each row also holds the settings it was computed under, as its last columns
(:data:`SETTINGS_COLUMNS`): ``workload_sha256`` (the first 16 hex digits of the SHA-256 of the workload file's
bytes), ``platform_sha256`` (of the platform's content after the point's overrides: the canonical JSON of the
platform model, latency table paths included, and the bytes of its latency tables), ``mapper_options`` (the options
this mapper got, ``work_limit=2``; a mapper's defaults are covered by the version), ``contention`` (normalised:
``cim-bus,links`` or ``none``), ``fold_constants`` (``true``; ``false`` when the sweep file says ``fold_constants:
false``, which charges ops computed only from constants) and ``hetsim_version``. SNN rows hold ``workload_sha256``
(of the spec file and the npz files it names, :func:`snn_spec_sha256`; empty for a synthetic network, whose
arguments are in the key), ``platform_sha256`` and ``hetsim_version`` (:data:`SNN_SETTINGS_COLUMNS`); their mode,
reorder and synthetic arguments are in the key. A point whose key is in the output table with the same settings is
not run again, so a killed sweep resumes where it stopped without duplicates. A row computed under other settings is
never reused: rerunning after a change of contention, of a mapper option, of the platform or workload file's
contents or of hetsim's version recomputes those points, says "3 points changed settings (changed contention):
recomputed", and moves their old rows to ``<output name>.replaced.csv`` beside the table (nothing computed is lost;
the table holds one row per point, all under today's settings). Rows of points no longer in the sweep stay. A table
of an older hetsim without these columns gets them; its rows, whose settings are unknown, are recomputed.

**ONNX rows** (:data:`RESULT_COLUMNS`) hold the run's summary: makespan, baseline and speed-up, energy, ops
offloaded, crossbars used and available, busy time and op counts of host and accelerators, the mapper's status,
solve time, MIP gap, incumbent, bound and model size, the predicted makespan, and its memory figures: the largest
activation peak of any memory (``peak_activation_bytes``), whether every memory with a capacity holds its peak
(``activation_fits``; empty when none has one; false on a point refused because they do not), and, on a
platform whose devices read weights from a memory, the ops streamed and reprogrammed and the weight bytes read
from such memories per inference (``weight_read_bytes``; empty elsewhere); then ``error`` (why the point failed)
and ``baseline_error``: why a point that ran has no baseline and so no speed-up (the baseline mapper's refusal, as
``baseline_error`` in a run's ``summary.json``, e.g. DIANA's ``all-8bit`` refusing a layer whose weights exceed the
digital accelerator's weight memory; empty when the baseline ran). A table written before these columns existed
(:data:`ADDED_RESULT_COLUMNS`) gets them, and its rows are recomputed; an added ``baseline_error`` is filled in
empty on rows that imply it (a speed-up, or an ``error``), and only the others are recomputed.

**Stopping.** SIGINT (Ctrl-C, or a job scheduler) and SIGTERM stop a sweep within a few seconds: points not
started are cancelled, local workers are terminated (a Dask client cancels its futures and closes), the
finished points stay in the table, and :class:`SweepInterrupted` is raised (``hetsim sweep`` exits with 130 or
143 and says how many points it kept; the same command resumes). Points always run in worker processes (also
with ``--workers 1``): a solve in progress (ortools' CP-SAT catches SIGINT itself and would end the solve as if
at its time limit) is terminated, never recorded.

**SNN sweeps.** A sweep is either all-ONNX or all-SNN (mixing is an :class:`~hetsim.errors.InputError`). It is
an SNN sweep when every workload is a spiking network (an SNN spec ``.yaml``, or a NIR graph ``.nir`` whose input
raster is given under ``spikes: {net.nir: input.npz}``; whatever a front end of kind ``snn`` reads,
:mod:`hetsim.workload.frontends`) and/or a ``synthetic`` grid is given, and then every mapper must be an SNN mapper
(the mappers of :mod:`hetsim.mappers.spikeduet`; default ``spikeduet``)::

    name: snn-crossover
    workloads: [../workloads/snn/braille192.yaml]   # SNN specs; may be omitted when synthetic is given
    synthetic:                       # a grid of generated networks (hetsim.snn.synthetic.synthetic_snn)
      layers: [[24, 192, 192, 27], [24, 384, 384, 27]]   # one network: [24, 192, 27]
      timesteps: [51]
      density: [0.05, 0.1, 0.2]      # a per-layer density (input included) is a list: [[0.1, 0.2, 0.2, 0.2]]
      clustering: [0.0, 0.5, 1.0]
      seed: [0]
      samples: 40                    # a scalar is the same for every network
    platforms: [../platforms/efr32mg24.yaml]
    parameters: {devices.mvp.launch_cycles: [1255, 2510]}
    mappers: [spikeduet]             # spikeduet | all-m33 | all-dense-mvp
    mode: async                      # execution mode of the chosen configuration: async | blocking, or a list
    reorder: [false, true]           # function-preserving neuron reordering first (hetsim.snn.reorder)

``synthetic`` takes the keyword arguments of ``synthetic_snn``: ``layers`` and ``timesteps`` (required),
``density``, ``clustering``, ``samples``, ``seed`` (defaults as there), and optionally ``beta``,
``threshold``, ``shuffle``, ``group_size``; each is a list of values (a grid) or one value, and every
combination is one workload. ``contention`` and ``mapper_options`` apply to ONNX sweeps only; ``mode`` and
``reorder`` to SNN sweeps only. Points = (spec files + synthetic networks) x platforms x the parameter grid x
mappers x modes x reorder. An SNN point's key adds the mode and ``reorder=true|false``; a synthetic network's
key holds its ``synthetic_snn`` arguments (the six above, plus any optional ones given), so a resumed sweep
regenerates exactly the networks it still needs (each worker process caches the networks it built)::

    synthetic(layers=[8,24,4],timesteps=6,density=0.1,clustering=0.0,seed=0,samples=4)|efr32mg24.yaml||spikeduet|...

SNN rows (:data:`SNN_RESULT_COLUMNS`, after ``key``, workload, platform, mapper, mode, reorder, the synthetic
arguments - ``layers`` as ``24-192-192-27``, a per-layer density as ``0.1;0.2;...``; for spec files
``layers``, ``timesteps`` and ``samples`` come from the network - and the sweep parameters) hold, from
:func:`hetsim.pipeline.run` on the eval split: the measured mean spike density of the hidden layers;
the mean latency (ms) of the chosen configuration and of each of SpikeDuet's Table I configurations (all-m33,
all-dense-mvp, spikeduet-blocking, spikeduet-async); the chosen configuration's speed-up over all-m33; mean
energy (uJ) of the chosen configuration and of all-m33; the chosen plan's ``engine/residency`` per affine
layer (``mvp-range/flash;m33/flash+hot;m33/sram``), its SRAM for weights (KiB), the mean MVP launches per
timestep of each layer (``;``-separated; as in ``hetsim run``'s layer table: what the layer's spikes need after
gap merging, also for layers on the M33) and the plan's solve time.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
import os
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, field_validator, model_validator

from hetsim.devices.fields import MAX_COUNT, Integer
from hetsim.devices.link import LINK_KIND
from hetsim.errors import InputError
from hetsim.input_files import check_input_file
from hetsim.snn.evaluate import BASELINE_CONFIG, TABLE_I
from hetsim.workload.kinds import SNN, kinds_of

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

def default_output(p: Path, name: str) -> Path:
    """``results/<name>.csv``, a sweep's table when its file gives no ``output``.

    Raises:
        InputError: a name that is not a plain file name (empty, ``.``/``..``, a ``/`` or ``\\`` in it: the
            table would land elsewhere, ``name: ../../x`` outside the project).
    """
    if name.strip() in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise InputError(f"{p}: name {name!r} names the default output results/<name>.csv: give a plain name "
                         "(no '/'), or an output: path")
    return Path("results") / f"{name}.csv"


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
#: the settings a row was computed under (module docstring, "Settings"): the last columns of an ONNX sweep's table
SETTINGS_COLUMNS = ["workload_sha256", "platform_sha256", "mapper_options", "contention", "fold_constants",
                    "hetsim_version"]
#: ... and of an SNN sweep's (mode, reorder and the synthetic arguments are in the key)
SNN_SETTINGS_COLUMNS = ["workload_sha256", "platform_sha256", "hetsim_version"]
#: upper bound of a synthetic network's ``samples`` (per split)
MAX_SYNTHETIC_SAMPLES = 10**6
#: most local worker processes a sweep starts (our bound: Python's process pool forks them all at once, so
#: ``--workers 100000`` had forked until the machine ran out of processes)
MAX_WORKERS = 1024


def _dims_from_text(value: object) -> object:
    """``"1,3,224,224"`` (the CLI's form) as ``[1, 3, 224, 224]``; anything else as given."""
    if isinstance(value, str):
        return [int(d) if d.strip().isdigit() else d for d in value.split(",")]
    return value


#: the dims of one graph input (``input_shape`` of a sweep file): positive integers, or ``"1,3,224,224"``
InputDims = Annotated[list[Annotated[Integer, Field(gt=0, le=MAX_COUNT)]], BeforeValidator(_dims_from_text),
                      Field(min_length=1)]


class SweepSpec(BaseModel):
    """A sweep file (see the module docstring). Paths are resolved against the file's folder."""

    model_config = ConfigDict(extra="forbid")

    name: str
    workloads: list[Path] = Field(default_factory=list)
    synthetic: dict[str, Any] | None = None
    platforms: list[Path] = Field(min_length=1)
    parameters: dict[str, list] = Field(default_factory=dict)
    mappers: Annotated[list[str], Field(min_length=1)] | None = None
    mapper_options: dict = Field(default_factory=dict)
    contention: str = "none"
    fold_constants: StrictBool = True
    input_shape: dict[str, InputDims] | None = None
    spikes: dict[str, Path] | None = None  # NIR workload (as written) -> its input raster (.npz)
    mode: list[str] | None = None       # a scalar in the file is a list of one
    reorder: list[StrictBool] | None = None
    output: Path | None = None

    @property
    def is_snn(self) -> bool:
        """An SNN sweep: a synthetic grid, or spiking networks (SNN specs ``.yaml``, NIR graphs ``.nir``: workloads
        whose front end makes an SNN, :mod:`hetsim.workload.frontends`) as workloads."""
        from hetsim.workload.frontends import suffixes

        snn = suffixes(SNN)
        return self.synthetic is not None or any(w.suffix.lower() in snn for w in self.workloads)

    @model_validator(mode="after")
    def _default_mappers(self) -> SweepSpec:
        if self.mappers is None:
            self.mappers = ["spikeduet"] if self.is_snn else ["cpsat"]
        return self

    @field_validator("mode", "reorder", mode="before")
    @classmethod
    def _scalar_to_list(cls, v: Any) -> Any:
        # one type, not a union: a bad value gets one error line, not one per union member
        return v if v is None or isinstance(v, list) else [v]

    @field_validator("parameters")
    @classmethod
    def _nonempty(cls, v: dict[str, list]) -> dict[str, list]:
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"parameter {k!r} has an empty list of values")
        return v


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


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


def _combinations(grid: dict[str, list]) -> list[dict]:
    names = list(grid)
    return [dict(zip(names, vals, strict=True)) for vals in itertools.product(*(grid[n] for n in names))]


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


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file: the files it names exist, every parameter path exists on every platform,
    the mappers are registered; the sweep is all-ONNX or all-SNN, and an SNN sweep's synthetic grid, modes
    and platforms are valid (see the module docstring). The steps: :func:`_read_spec` (paths),
    :func:`_check_kinds` (one workload kind), :func:`_check_snn_sweep` or :func:`_check_dag_sweep` (mappers
    and options of that kind), :func:`_check_workloads`, :func:`_check_platforms`.

    Raises:
        InputError: missing file, YAML error, unknown field, empty grid, unknown parameter path or mapper,
            a mapper option no mapper of the sweep takes (with the closest option name) or one refuses,
            ONNX and SNN workloads or mappers mixed, a workload no front end reads, a NIR graph without its
            ``spikes``, a bad synthetic argument (the message names it), a mode or a platform that cannot run
            SNNs.
    """
    from hetsim.mappers import MAPPERS

    p = Path(path)
    spec = _read_spec(p)
    snn_mappers = [m for m in sorted(MAPPERS) if SNN in kinds_of(MAPPERS[m])]
    mixing = _check_kinds(p, spec)
    if spec.is_snn:
        _check_snn_sweep(p, spec, snn_mappers, mixing)
    else:
        _check_dag_sweep(p, spec, snn_mappers, mixing)
    _check_workloads(p, spec)
    _check_platforms(p, spec)
    return spec


def _read_spec(p: Path) -> SweepSpec:
    """The sweep file, its paths resolved against its folder, every file it names present.

    Raises:
        InputError: a missing or malformed file, no workloads, a missing workload or platform, ``spikes`` for a
            workload that is not in the sweep.
    """
    from hetsim.platform import read_yaml_model

    spec = read_yaml_model(p, SweepSpec, InputError, "sweep file", "workloads, platforms, parameters, mappers")
    base = p.parent
    named = {str(w): (base / w).resolve() for w in spec.workloads}
    spec.workloads = list(named.values())
    spec.platforms = [(base / w).resolve() for w in spec.platforms]
    spec.output = (base / spec.output).resolve() if spec.output else default_output(p, spec.name)
    if not spec.workloads and spec.synthetic is None:
        raise InputError(f"{p}: workloads: give at least one workload (ONNX models, or SNN specs and/or a "
                         "synthetic grid)")
    spikes = {}
    for w, raster in (spec.spikes or {}).items():
        if w not in named:
            raise InputError(f"{p}: spikes: {w!r} is not one of the sweep's workloads")
        spikes[str(named[w])] = (base / raster).resolve()
    spec.spikes = spikes or None
    for f in [*spec.workloads, *spec.platforms, *spikes.values()]:
        check_input_file(f, f"{p}:")  # missing, a folder, a FIFO, a device, a symbolic link loop
    return spec


def _check_kinds(p: Path, spec: SweepSpec) -> str:
    """Every workload is read by a front end, and all of them are of one kind; returns the sentence that says
    so, for the other checks' messages.

    Raises:
        InputError: a workload no front end reads, or workloads of both kinds.
    """
    from hetsim.workload.frontends import kind_of

    try:
        kinds = {w: kind_of(w) for w in spec.workloads}
    except InputError as err:
        raise InputError(f"{p}: workloads: {err}") from None
    snn_files = [w for w, k in kinds.items() if k == SNN]
    onnx_files = [w for w in spec.workloads if w not in snn_files]
    mixing = "a sweep is either all-ONNX or all-SNN: put ONNX models and spiking networks in separate sweep files"
    if onnx_files and spec.is_snn:
        snn = snn_files[0].name if snn_files else "a synthetic grid"
        raise InputError(f"{p}: workloads: ONNX model {onnx_files[0].name} and spiking network ({snn}) in one "
                         f"sweep; {mixing}")
    return mixing


def _check_snn_sweep(p: Path, spec: SweepSpec, snn_mappers: list[str], mixing: str) -> None:
    """An SNN sweep's mappers, modes, reorder flags, NIR rasters and synthetic grid.

    Raises:
        InputError: a mapper that is not an SNN mapper, an ONNX-only field, an unknown mode, an empty list, a
            NIR graph without ``spikes``, a bad synthetic argument.
    """
    from hetsim.mappers import MAPPERS
    from hetsim.mappers.spikeduet import MODES
    from hetsim.workload.frontends import frontend_for

    for m in spec.mappers:
        if m not in snn_mappers:
            what = "maps ONNX models" if m in MAPPERS else "is unknown"
            raise InputError(f"{p}: mappers: {m!r} {what}, but this sweep's workloads are spiking networks "
                             f"({mixing}); SNN mappers: {', '.join(snn_mappers)}")
    for opt, given in (("contention", spec.contention != "none"), ("mapper_options", bool(spec.mapper_options)),
                       ("fold_constants", not spec.fold_constants), ("input_shape", spec.input_shape is not None)):
        if given:
            raise InputError(f"{p}: {opt}: applies to ONNX sweeps only; this sweep's workloads are spiking "
                             "networks")
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


def _check_dag_sweep(p: Path, spec: SweepSpec, snn_mappers: list[str], mixing: str) -> None:
    """An ONNX sweep's mappers, contention and mapper options (each mapper gets the options it takes; an
    option no mapper of the sweep takes is a typo, and a bad value fails here, not in every point).

    Raises:
        InputError: an SNN mapper or an unknown one, an SNN-only field, bad contention, an option no mapper
            takes or a value one refuses.
    """
    from hetsim.mappers import MAPPERS, get_mapper
    from hetsim.mappers.base import did_you_mean, mapper_option_names
    from hetsim.sim.engine import parse_contention

    onnx_mappers = [m for m in sorted(MAPPERS) if m not in snn_mappers]
    for m in spec.mappers:
        if m in snn_mappers:
            raise InputError(f"{p}: mappers: {m!r} maps spiking networks, but this sweep's workloads are "
                             f"ONNX models ({mixing}); available: {', '.join(onnx_mappers)}")
        if m not in MAPPERS:
            raise InputError(f"{p}: mappers: unknown mapper {m!r}; available: {', '.join(sorted(MAPPERS))}")
    for opt in ("mode", "reorder", "spikes"):
        if getattr(spec, opt) is not None:
            raise InputError(f"{p}: {opt}: applies to SNN sweeps only; this sweep's workloads are ONNX models")
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


def _check_workloads(p: Path, spec: SweepSpec) -> None:
    """Every ONNX workload reads (with ``input_shape``), here, not in every point: a malformed model, one with a
    dynamic dim ``input_shape`` does not fix, or a wrong input name or rank in ``input_shape``. Each is read once
    (the points of this process reuse it, :func:`_workload`; worker processes read it again).

    Raises:
        InputError: a workload its front end refuses (``input_shape:`` in the message when the sweep gives one).
    """
    if spec.is_snn:
        return
    from hetsim.errors import WorkloadError

    for w in spec.workloads:
        try:
            _workload(str(w), spec.input_shape)
        except WorkloadError as err:
            raise InputError(f"{p}: {'workloads' if spec.input_shape is None else 'input_shape'}: {err}") from None


def _check_platforms(p: Path, spec: SweepSpec) -> None:
    """Every platform loads (and runs SNNs, for an SNN sweep; ONNX models, for an ONNX sweep, with every
    parameter value: :func:`hetsim.costs.check_runs_dags`), names a known baseline mapper, and every value of
    every parameter applies to it (a boolean or an infinity among them, an unknown ``baseline``, fails here, not in
    a point).

    Raises:
        InputError: a bad platform, one without the SNN engines, an ONNX sweep's platform whose host runs spiking
            networks only, an unknown baseline, a parameter path or value it refuses.
    """
    from hetsim.costs import check_runs_dags
    from hetsim.mappers.base import check_baseline
    from hetsim.platform import load_platform

    def runs_dags(platform, where: str) -> None:
        try:
            check_runs_dags(platform)  # as the cost model of every point would refuse it (an SNN platform)
        except InputError as err:
            raise InputError(f"{where}: {err}") from None

    for plat in spec.platforms:
        platform = load_platform(plat)
        check_baseline(platform, f"{p}: platforms: {plat}")  # its name (a point checks its kind, after the platform's)
        if not spec.is_snn:
            runs_dags(platform, f"{p}: platforms: {plat}")
        if spec.is_snn:
            from hetsim.snn.activity_costs import engines_of

            try:
                engines_of(platform)
            except InputError as err:
                raise InputError(f"{p}: platforms: {err}") from None
        for key, values in spec.parameters.items():
            for value in values:
                try:
                    changed = platform.with_overrides({key: value})
                except InputError as err:
                    raise InputError(f"{p}: parameters: {key!r} does not apply to {plat.name}: {err}") from None
                check_baseline(changed, f"{p}: parameters")
                if not spec.is_snn:  # a parameter may change the host
                    runs_dags(changed, f"{p}: parameters: {key}={value!r}")


def _takes_threads(mapper: str) -> bool:
    from hetsim.mappers.base import mapper_option_names

    try:
        names = mapper_option_names(mapper)
    except InputError:
        return False
    return names is not None and "threads" in names


def options_for(mapper: str, options: dict) -> dict:
    """The ``options`` mapper ``mapper`` takes (all of them when it takes any keyword)."""
    from hetsim.mappers.base import mapper_option_names

    names = mapper_option_names(mapper)
    return dict(options) if names is None else {k: v for k, v in options.items() if k in names}


def expand_points(spec: SweepSpec) -> list[dict]:
    """Every design point of ``spec``, in a deterministic order, each with its ``key`` and its ``settings``
    (the :data:`SETTINGS_COLUMNS` or :data:`SNN_SETTINGS_COLUMNS` cells it will be computed under).

    Raises:
        InputError: more points than the limit in force (:mod:`hetsim.dse.bounds`), counted before any is built;
            two points with one key (:func:`unique_keys`).
    """
    from hetsim.dse.bounds import check_count, count_points

    check_count(count_points(spec), f"sweep {spec.name!r}")
    names = list(spec.parameters)
    grid = list(itertools.product(*(spec.parameters[n] for n in names))) or [()]
    if spec.is_snn:
        return unique_keys(_expand_snn(spec, names, grid))
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
    return unique_keys(points)


def unique_keys(points: list[dict]) -> list[dict]:
    """``points``, refused when two share a key: a key names files by their base name, so two files of one name
    in different folders would share their points' rows (one computed, one moved aside on every resume).

    Raises:
        InputError: one line naming the key and the two points' files.
    """
    seen: dict[str, dict] = {}
    for pt in points:
        other = seen.setdefault(pt["key"], pt)
        if other is not pt:
            diff = [f"{other[k]} and {pt[k]}" for k in ("workload", "platform", "scenario")
                    if k in pt and other.get(k) != pt.get(k)]
            why = (f"{'; '.join(diff)}: files of one name in different folders; give them different names" if diff
                   else "the sweep lists a file or value twice")
            raise InputError(f"two points have the key {pt['key']!r} ({why})")
    return points


def _expand_snn(spec: SweepSpec, names: list[str], grid: list[tuple]) -> list[dict]:
    """SNN points: (spec files, then synthetic networks) x platforms x grid x mappers x modes x reorder."""
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
        key = point_key(wid, p.name, params, m, mode, reo)
        settings = {"workload_sha256": _snn_sha256(net) if net["workload"] else "",
                    "platform_sha256": _platform_sha256(p, params), "hetsim_version": __version__}
        points.append({"kind": "snn", "key": key, **net, "platform": str(p), "params": params, "mapper": m,
                       "mode": mode, "reorder": reo, "settings": settings})
    return points


def _stamp(path: str | Path) -> tuple[str, int, int]:
    """``path`` with its modification time and size: a cache key that changes when the file does."""
    st = os.stat(path)
    return str(path), st.st_mtime_ns, st.st_size


def file_sha256(path: str | Path) -> str:
    """The first 16 hex digits of the SHA-256 of the file's bytes (cached while the file is unchanged).

    Raises:
        InputError: ``path`` is not a regular file (a FIFO or a device would never end).
    """
    check_input_file(path, "input file")
    return _file_sha256(*_stamp(path))


@lru_cache(maxsize=256)
def _file_sha256(path: str, _mtime_ns: int, _size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


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


def platform_sha256(platform) -> str:
    """The first 16 hex digits of the SHA-256 of a platform's content: the canonical JSON of its model (every
    field, overrides applied, latency table paths included) and the bytes of each latency table (every file
    of a folder of profiles)."""
    h = hashlib.sha256(json.dumps(platform.model_dump(mode="json"), sort_keys=True, separators=(",", ":"),
                                  default=str).encode())
    for name in sorted(platform.devices):
        table = getattr(platform.devices[name], "latency_table", None)
        if table is None:
            continue
        table = Path(table)
        files = sorted(f for f in table.iterdir() if f.is_file()) if table.is_dir() else [table]
        for f in files:
            h.update(f"{name}:{f.name}:{file_sha256(f) if f.is_file() else 'missing'};".encode())
    return h.hexdigest()[:16]


def _platform_sha256(path: Path, params: dict) -> str:
    plat = _platform(str(path))
    return platform_sha256(plat.with_overrides(params, name=plat.name) if params else plat)


def _key_value(v) -> str:
    """A value in a key: strings as they are, numbers and booleans as JSON writes them (``25``, ``25.0``,
    ``true``), lists as ``[a,b]``."""
    if isinstance(v, str):
        return v
    if isinstance(v, list | tuple):
        return "[" + ",".join(_key_value(x) for x in v) + "]"
    return json.dumps(v)


def point_key(workload: str | dict, platform: str, params: dict, mapper: str, *snn,
              input_shape: dict | None = None) -> str:
    """The ``key`` of a design point (module docstring): ``workload|platform|name=value,...|mapper``, the
    parameters sorted by name, and for SNN points (``snn`` = mode, reorder) ``|mode|reorder=false``; an ONNX
    point whose graph inputs are fixed by ``input_shape`` ends with ``|input_shape=x=[1,3,224,224]`` (inputs
    sorted by name; without it the key is as before, so older tables keep their rows). A synthetic
    network (``workload`` = ``{"synthetic": args}``) is written ``synthetic(layers=[...],timesteps=...,...)``
    with its arguments in :data:`SYNTHETIC_COLUMNS` then :data:`SYNTHETIC_OPTIONAL` order."""
    if isinstance(workload, dict):
        args = workload["synthetic"]
        order = [k for k in SYNTHETIC_COLUMNS + SYNTHETIC_OPTIONAL if k in args] + sorted(
            k for k in args if k not in SYNTHETIC_COLUMNS + SYNTHETIC_OPTIONAL)
        workload = "synthetic(" + ",".join(f"{k}={_key_value(args[k])}" for k in order) + ")"
    parts = [workload, platform, ",".join(f"{k}={_key_value(params[k])}" for k in sorted(params)), mapper]
    if snn:
        mode, reorder = snn
        parts += [mode, f"reorder={_key_value(reorder)}"]
    if input_shape:
        parts.append("input_shape=" + ",".join(f"{k}={_key_value(list(input_shape[k]))}" for k in sorted(input_shape)))
    return "|".join(parts)


def _key_from_json(key: str) -> str | None:
    """The key of an older hetsim's table (a JSON list, see the module docstring) in today's form; ``None``
    when ``key`` is not one."""
    if not key.startswith("["):
        return None
    try:
        old = json.loads(key)
    except ValueError:
        return None
    if isinstance(old, list) and len(old) in (4, 6) and isinstance(old[2], dict):
        return point_key(*old)
    return None


def result_columns(spec: SweepSpec) -> list[str]:
    """The columns of ``spec``'s results table, in order."""
    if not spec.is_snn:
        return ["key", *spec.parameters, *[c for c in RESULT_COLUMNS if c != "key"], *SETTINGS_COLUMNS]
    optional = [c for c in SYNTHETIC_OPTIONAL if spec.synthetic and c in spec.synthetic]
    return [*SNN_ID_COLUMNS, *SYNTHETIC_COLUMNS, *optional, *spec.parameters, *SNN_RESULT_COLUMNS,
            *SNN_SETTINGS_COLUMNS]


def settings_columns(spec: SweepSpec) -> list[str]:
    """The columns that hold the settings a row was computed under."""
    return SNN_SETTINGS_COLUMNS if spec.is_snn else SETTINGS_COLUMNS


# loaded files are cached while they are unchanged on disk (a long-lived process sees an edited file)
def _workload(path: str, input_shape: dict | None = None):
    shapes = json.dumps(input_shape, sort_keys=True) if input_shape else ""
    return _workload_at(*_stamp(path), shapes)


@lru_cache(maxsize=16)
def _workload_at(path: str, _mtime_ns: int, _size: int, input_shape_json: str = ""):
    from hetsim.workload.frontends import load_workload

    return load_workload(path, input_shape=json.loads(input_shape_json) if input_shape_json else None)


def _platform(path: str):
    return _platform_at(*_stamp(path))


@lru_cache(maxsize=8)
def _platform_at(path: str, _mtime_ns: int, _size: int):
    from hetsim.platform import load_platform

    return load_platform(path)


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


def _run_snn_point(point: dict) -> dict:
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


def run_point(point: dict) -> dict:
    """Run one design point through :func:`hetsim.pipeline.run`, the function behind ``hetsim run``; returns its
    result row (``error`` set, numbers empty, when it failed)."""
    if point.get("kind") == "snn":
        return _run_snn_point(point)
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


def _read_table(path: Path) -> tuple[list[str] | None, list[dict]]:
    """The results table's columns and rows (``None, []`` when there is none); drops a torn last line left by a
    kill, and rewrites the JSON keys of an older hetsim's table in today's form (:func:`point_key`).

    Raises:
        InputError: the table mixes JSON keys with keys that are not an older hetsim's.
    """
    if not path.exists() or path.stat().st_size == 0:
        return None, []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    if any(r.get("key", "").startswith("[") for r in rows):
        new = [_key_from_json(r["key"]) if r.get("key", "").startswith("[") else r.get("key") for r in rows]
        bad = [r["key"] for r, k in zip(rows, new, strict=True) if k is None and r.get("key")]
        if bad:
            raise InputError(f"{path}: key {bad[0]!r} is neither a point key nor an older hetsim's JSON key; "
                             "choose another output")
        for r, k in zip(rows, new, strict=True):
            r["key"] = k
        _write_rows(path, columns, rows)
    return columns, rows


def _reconcile(path: Path, settings: list[str], columns: list[str], every: list[dict],
               notify: Callable[[str], None]) -> set[str]:
    """The keys of the points already in the table at ``path`` under the settings they would be computed
    under now. Rows of this sweep's points computed under other settings are taken out of the table and
    appended to ``<name>.replaced.csv`` beside it (``notify`` says how many and which settings changed), so
    they are recomputed; rows of points no longer in the sweep stay. An older hetsim's table, without the
    settings columns, gets them (its rows: settings unknown, so recomputed). ``settings``: the columns that hold
    a row's settings (:func:`settings_columns`; a scenario sweep's, :mod:`hetsim.dse.scenario_sweep`), each point
    of ``every`` has them under ``settings``.

    Raises:
        InputError: the table has other columns (another sweep's table; the same columns in another order are
            accepted and the table rewritten in ``columns``' order).
    """
    header, rows = _read_table(path)
    if header is None:
        return set()
    added = [c for c in ADDED_RESULT_COLUMNS if c in columns and c not in header]  # an ONNX table's, from before
    if header != columns:
        # an older hetsim's table: without the settings columns, or without some (fold_constants), or without
        # the result columns added since; its columns in any order (rows are read by name and written back in
        # today's order); a repeated column name is another table
        if len(set(header)) != len(header) or set(header) != {
                c for c in columns if (c not in settings and c not in added) or c in header}:
            raise InputError(f"{path} holds a results table with other columns; choose another output")
        for r in rows:  # settings not recorded: recomputed
            r.update({c: "" for c in settings if c not in header})
    want = {p["key"]: p["settings"] for p in every}
    keep, stale, changed = [], [], set()
    for r in rows:
        now = want.get(r.get("key"))
        diff = [] if now is None else [c for c in settings if (r.get(c) or "") != str(now[c])]
        if now is not None and added and not diff:
            implied = {c: _IMPLIED_WHEN_ADDED[c](r) if c in _IMPLIED_WHEN_ADDED else None for c in added}
            if any(v is None for v in implied.values()):
                diff = ["columns"]  # computed before the added columns existed
            else:
                r.update(implied)
        (stale if diff else keep).append(r)
        changed.update(diff)
    if stale:
        replaced = path.with_name(f"{path.stem}.replaced{path.suffix or '.csv'}")
        old_header, old = _read_table(replaced)
        _write_rows(replaced, columns, (old if old_header is not None and sorted(old_header) == sorted(columns)
                                        else []) + stale)
        _write_rows(path, columns, keep)
        unknown = all(not any(r.get(c) for c in settings) for r in stale)
        n = len(stale)
        if unknown or changed - {"columns"}:
            why = ("their settings are not recorded (an older hetsim's table)" if unknown
                   else "changed " + ", ".join(c for c in settings if c in changed))
            what = f"{n} point{'s' if n != 1 else ''} changed settings ({why})"
        else:
            what = (f"{n} point{'s' if n != 1 else ''} computed by an older hetsim, without the columns "
                    + ", ".join(added))
        notify(f"{what}: recomputed; {'their old rows are' if n != 1 else 'its old row is'} in {replaced}")
    elif header != columns:
        _write_rows(path, columns, keep)
    return {r["key"] for r in keep if r.get("key")}


def _append(path: Path, columns: list[str], row: dict) -> None:
    """Append ``row`` as one line with one ``write`` and ``fsync``; SIGINT and SIGTERM wait until it is
    written (:func:`_signals_held`)."""
    new = not path.exists() or path.stat().st_size == 0
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    if new:
        w.writeheader()
    w.writerow(row)
    with _signals_held(), path.open("a", newline="") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())


#: the main thread's :func:`_signals_held` depth, and a stop signal the sweep's handler deferred meanwhile
_held: dict = {"depth": 0, "deferred": None}


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends (in the main thread; nested blocks hold them until the
    outermost ends). Blocking them in the main thread is not enough: the kernel then delivers them to another
    thread (a process pool's manager thread), and Python runs the handler in the main thread anyway, inside the
    block; so the sweep's handler (:func:`_stop_on_signals`) defers a signal that arrives in the block, and the
    block's end raises it again (seen: a row appended but not counted in "N points finished this run")."""
    main = threading.current_thread() is threading.main_thread()
    mask = main and hasattr(signal, "pthread_sigmask")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if mask else None
    if main:
        _held["depth"] += 1
    unwinding = False
    try:
        yield
    except BaseException:
        unwinding = True  # the block's own error (a full disk) stops the sweep and is the one reported
        raise
    finally:
        if mask:  # a signal pending on this thread is handled here, still held (deferred) by the depth
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if main:
            _held["depth"] -= 1
        if main and not _held["depth"] and _held["deferred"] is not None:
            signum, _held["deferred"] = _held["deferred"], None
            if not unwinding:
                signal.raise_signal(signum)


class _Recorder:
    """The ``record`` a sweep's runner calls with each finished row (both sweeps: this module's and
    :mod:`hetsim.dse.scenario_sweep`): appends it (:func:`_append`) and counts it in ``finished``, a signal held
    until both are done (so ``finished`` is the rows this run put in the table), then calls
    ``progress(finished, total, row)``.

    Raises:
        InputError: the row cannot be appended (disk full, the folder made read-only mid-sweep).
    """

    def __init__(self, out: Path, columns: list[str], total: int,
                 progress: Callable[[int, int, dict], None] | None) -> None:
        self.out, self.columns, self.total, self.progress = out, columns, total, progress
        self.finished = 0

    def __call__(self, row: dict) -> None:
        with _signals_held():
            try:
                _append(self.out, self.columns, row)
            except OSError as err:
                raise InputError(f"cannot append to {self.out}: {err.strerror or err}; the points finished before "
                                 "are in it") from None
            self.finished += 1
        if self.progress:
            self.progress(self.finished, self.total, row)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class SweepInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a sweep: the finished points are in ``output``, no worker is left running."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.output: Path | None = None
        self.finished = 0


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """While the block runs (in the main thread), SIGINT and SIGTERM raise :class:`SweepInterrupted`, once:
    a second signal while the sweep stops its workers is ignored; one that arrives while a finished row is appended
    and counted is raised when that is done (:func:`_signals_held`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from hetsim import _interrupt

    if _interrupt.seen:  # a SIGINT before this point that an extension module's import may have swallowed
        raise SweepInterrupted(_interrupt.seen[0])
    hit = []
    _held["deferred"] = None

    def handler(signum, _frame):
        if hit:
            return
        if _held["depth"]:  # a row being appended and counted (_signals_held): raised again at its end
            _held["deferred"] = signum
            return
        hit.append(signum)
        raise SweepInterrupted(signum)

    old = {s: signal.signal(s, handler) for s in _STOP_SIGNALS}
    _handlers.append(handler)
    try:
        yield
    finally:
        _handlers.pop()
        for s, h in old.items():
            signal.signal(s, h)


_handlers: list = []


def _restore_handlers() -> None:
    """Install the running sweep's handler again: ortools' CP-SAT, run in this process, leaves SIGINT at the
    operating system's default after each solve, which would kill the process without a word."""
    if _handlers and threading.current_thread() is threading.main_thread():
        for s in _STOP_SIGNALS:
            signal.signal(s, _handlers[-1])


def _worker_init(parent: int | None = None) -> None:
    """A local worker leaves SIGINT to the sweep process (which stops it), dies on SIGTERM, and dies with the
    sweep process ``parent`` even when that is killed outright (:mod:`hetsim.dse.workers`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if parent is not None:
        from hetsim.dse.workers import die_with_parent

        die_with_parent(parent)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the points not started, terminate the workers (killing any that does not stop within 2 s) and
    reap them."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=2)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=2)
    # The pool's manager thread sees its workers die and closes its wake-up pipe. Left running, it races
    # concurrent.futures' exit hook, which writes to that pipe without the pool's lock (CPython 3.11): the closed
    # pipe's "OSError: [Errno 9] Bad file descriptor" traceback then follows the sweep's one-line message.
    if manager is not None:
        manager.join(timeout=5)


def available_cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def plan_parallelism(n_points: int, workers: int | None = None, threads: int | None = None,
                     spec_threads: int | None = None, cores: int | None = None) -> tuple[int, int]:
    """``(worker processes, solver threads per point)`` for a local sweep of ``n_points`` points.

    The runner keeps ``workers * threads`` within the ``cores`` (default :func:`available_cores`): points are
    independent, so by default every core runs its own point with one solver thread (two CP-SAT workers per
    point on top of two processes oversubscribed a 2-core machine, measured: +50 % solve time); with fewer
    points than cores the spare cores become threads. Given either number, the other is the cores divided by
    it; given both (``--workers`` and ``--threads``), they are used as given. ``spec_threads`` is a ``threads``
    set in the sweep file's ``mapper_options`` (it then counts as ``threads``)."""
    cores = cores or available_cores()
    threads = threads or spec_threads
    if workers and threads:
        return workers, threads
    if threads:
        return max(1, min(cores // threads, n_points)), threads
    if workers:
        return workers, max(1, cores // workers)
    w = max(1, min(cores, n_points))
    return w, max(1, cores // w)


def run_sweep(
    spec: SweepSpec,
    output: Path | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    threads: int | None = None,
    progress: Callable[[int, int, dict], None] | None = None,
    notify: Callable[[str], None] | None = None,
    max_points: int | None = None,
) -> tuple[Path, int, int]:
    """Run the points of ``spec`` not yet in ``output`` under today's settings, appending each result as it
    finishes. A point whose row was computed under other settings (module docstring, "Settings") is recomputed
    and its old row moved to ``<output name>.replaced.csv``.

    Args:
        output: results CSV (default: ``spec.output``).
        workers: local worker processes (default: :func:`plan_parallelism`, the available cores); 0 runs the
            points in this process, which a signal then stops only between points (and a CP-SAT solve in
            progress catches SIGINT itself, ending as at its time limit), so the command line always uses worker
            processes.
        scheduler: address of a Dask distributed scheduler (``tcp://HOST:PORT``) to run the points on instead;
            each point then uses ``threads`` solver threads (default 1: every Dask worker thread runs one point,
            so the sweep scales with the cluster's threads).
        threads: solver threads per point for mappers that take a ``threads`` option (``cpsat``, ``ilp``) and
            whose sweep file does not set one (default: :func:`plan_parallelism`). A runtime choice, like
            ``workers``: not one of a row's settings, so changing it does not recompute finished points.
        progress: called with (done, total, row) after each point.
        notify: called with a message when points are recomputed because their settings changed (default: a
            :class:`UserWarning`).
        max_points: refuse a sweep of more points (default :data:`hetsim.dse.bounds.MAX_POINTS`).

    Returns:
        ``(output path, points run now, points skipped because already done under the same settings)``.

    Raises:
        InputError: the output table exists with other columns (another sweep's table), is a folder or cannot
            be written, or another sweep is writing it (:mod:`hetsim.dse.lock`).
        SweepInterrupted: SIGINT or SIGTERM (when run in the main thread): the points finished so far are in the
            table, the points not finished are dropped, local workers are terminated, a Dask client is closed.
    """
    from hetsim.dse import bounds
    from hetsim.dse.lock import check_output, results_lock

    out = Path(output or spec.output)
    with bounds.max_points(max_points):
        bounds.check_count(bounds.count_points(spec), f"sweep {spec.name!r}")
    check_output(out)
    with results_lock(out) as table, bounds.max_points(max_points):  # one writer per file (hetsim.dse.lock)
        return out, *_run_sweep_locked(spec, table, workers, scheduler, threads, progress, notify)[1:]


def _run_sweep_locked(spec: SweepSpec, out: Path, workers: int | None, scheduler: str | None,
                      threads: int | None, progress: Callable[[int, int, dict], None] | None,
                      notify: Callable[[str], None] | None) -> tuple[Path, int, int]:
    """:func:`run_sweep`'s work, with the lock on ``out`` held."""
    columns = result_columns(spec)
    every = expand_points(spec)
    done = _reconcile(out, settings_columns(spec), columns, every,
                      notify or (lambda msg: warnings.warn(msg, stacklevel=3)))
    points = [p for p in every if p["key"] not in done]
    skipped = len(every) - len(points)
    total = len(points)
    record = _Recorder(out, columns, total, progress)
    if not points:
        return out, 0, skipped
    if scheduler:
        n_threads = threads or spec.mapper_options.get("threads") or 1
    elif workers == 0:
        n_threads = threads or spec.mapper_options.get("threads") or available_cores()
    else:
        workers, n_threads = plan_parallelism(len(points), workers, threads, spec.mapper_options.get("threads"))
    for p in points:
        if p.get("kind") != "snn" and "threads" not in p.get("mapper_options", {}) and _takes_threads(p["mapper"]):
            p["threads"] = int(n_threads)
    try:
        with _stop_on_signals():
            _run_points(points, record, workers, scheduler)
    except SweepInterrupted as stop:
        stop.output, stop.finished = out, record.finished
        raise
    _sort_table(out, [p["key"] for p in every])
    return out, total, skipped


def _run_points(points: list[dict], record: Callable[[dict], None], workers: int | None,
                scheduler: str | None, run: Callable[[dict], dict] | None = None) -> None:
    """Run ``points`` here (``workers`` 0), on local processes or on a Dask scheduler, calling ``record`` with each
    row; ``run`` (a module-level function, default :func:`run_point`) makes a point's row. Each point has a
    ``key`` and ``settings`` (the Dask task's key). Local processes: at most one per point.

    Raises:
        InputError: more than :data:`MAX_WORKERS` workers; no Dask (or no scheduler at the address).
    """
    run = run or run_point
    if workers is not None and workers > MAX_WORKERS:
        raise InputError(f"--workers {workers}: at most {MAX_WORKERS} local worker processes")
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
            keys = [f"hetsim-{hashlib.sha1(json.dumps([p['key'], p['settings']]).encode()).hexdigest()[:16]}"
                    for p in points]
            futures = client.map(run, points, key=keys)
            try:
                for fut in dask_completed(futures):
                    record(fut.result())
            except BaseException:
                client.cancel(futures)
                raise
    elif workers == 0:
        for p in points:
            row = run(p)
            _restore_handlers()  # a CP-SAT solve resets SIGINT to the default (ortools' SigintHandler)
            record(row)
    else:
        pool = ProcessPoolExecutor(max_workers=max(1, min(workers or os.cpu_count() or 1, len(points))),
                                   initializer=_worker_init, initargs=(os.getpid(),))
        try:
            futures = [pool.submit(run, p) for p in points]
            for fut in as_completed(futures):
                record(fut.result())
        except BaseException:
            _stop_pool(pool)
            raise
        pool.shutdown()


def _duration(s: float) -> str:
    s = round(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def format_progress(done: int, total: int, elapsed_s: float) -> str:
    """``12/128 points, 0.8 points/s, ETA 2m25s`` (the rate so far; no rate or ETA before the first point)."""
    line = f"{done}/{total} points"
    if done and elapsed_s > 0:
        rate = done / elapsed_s
        shown = f"{rate:.2g} points/s" if rate >= 0.1 else f"{rate * 60:.2g} points/min"
        line += f", {shown}, " + ("done" if done >= total else f"ETA {_duration((total - done) / rate)}")
    return line


def _sort_table(path: Path, order: list[str]) -> None:
    """Rewrite the finished table in the sweep's point order (atomically), so the file does not depend on
    which worker finished first."""
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    rank = {k: i for i, k in enumerate(order)}
    rows.sort(key=lambda r: rank.get(r["key"], len(rank)))
    _write_rows(path, columns, rows)


def _write_rows(path: Path, columns: list[str], rows: list[dict]) -> None:
    """Replace the table at ``path`` with ``rows`` (atomically)."""
    from hetsim.report.export import atomic_write_text

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())
