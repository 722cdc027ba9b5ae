"""A sweep's points: the sweep file (:class:`SweepSpec`), its checks (:func:`load_sweep`), its grid expanded into
points (:func:`expand_points`), their keys (:func:`point_key`) and the hashes of the settings they are computed
under (:func:`file_sha256`, :func:`platform_sha256`). The file format is described in :mod:`hetsim.dse.sweep`.

Nothing here knows a workload kind: each kind with sweep points gives a :class:`SweepKind` (its
:attr:`~hetsim.kinds.WorkloadKind.sweep`), which checks the sweep's mappers, fields, workloads and platforms,
expands the grid into points (dicts: ``key``, ``settings``, ``platform``, ``params``, ``mapper`` and whatever its
:meth:`SweepKind.run_point` reads), names the table's columns and turns one point into one row. The results table
is :mod:`hetsim.dse.store`, the runner :mod:`hetsim.dse.runner`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, field_validator, model_validator

from hetsim.devices.fields import MAX_COUNT, Integer
from hetsim.errors import InputError
from hetsim.input_files import check_input_file


class SweepKind:
    """How a workload kind's sweep goes: subclass it in the kind's package and set the kind's
    :attr:`~hetsim.kinds.WorkloadKind.sweep` to an instance (e.g. :mod:`hetsim.dag.sweep`,
    :mod:`hetsim.snn.sweep`).

    A point is a dict that :meth:`expand` makes and :meth:`run_point` reads, in a worker process (so it holds
    plain data: paths as strings, numbers, lists); it must hold ``key`` (:func:`point_key`, unique in the sweep),
    ``settings`` (the cells of :meth:`settings_columns` it is computed under: a row with other settings is
    recomputed), and ``mapper``; :func:`expand_points` adds ``kind``. A row is a dict over :meth:`result_columns`
    with ``error`` set when the point failed (a sweep keeps going).
    """

    #: the workload kind's name
    kind: ClassVar[str] = ""
    #: how a sweep of the kind is called in messages ("all-ONNX", "applies to ONNX sweeps only")
    label: ClassVar[str] = ""
    #: its workloads in messages, plural ("ONNX models") and one of them ("ONNX model")
    plural: ClassVar[str] = ""
    noun: ClassVar[str] = ""
    #: :class:`SweepSpec` fields only this kind's sweeps take (another kind's sweep giving one is refused)
    fields: ClassVar[tuple[str, ...]] = ()
    #: fields whose presence makes a sweep of this kind without any workload file (``synthetic``), and how a
    #: message names such workloads ("a synthetic grid")
    implied_by: ClassVar[tuple[str, ...]] = ()
    implied_phrase: ClassVar[str] = ""
    #: its mappers take solver threads (``threads``, set by the runner unless the sweep file sets it)
    solver_threads: ClassVar[bool] = False
    #: result columns added after tables were written without them -> a function telling the value an older row
    #: implies (``None``: recompute the row), or None (always recompute): :func:`hetsim.dse.store._reconcile`
    added_columns: ClassVar[dict] = {}

    def check_mappers(self, p: Path, spec: SweepSpec, mixing: str) -> None:
        """Every mapper of ``spec`` is registered and maps this kind (``mixing``: the sentence that a sweep is of
        one kind, for messages).

        Raises:
            InputError: an unknown mapper, or one of another kind.
        """
        from hetsim.kinds import workload_kind
        from hetsim.mappers import MAPPERS
        from hetsim.workload.kinds import kinds_of

        mine = [m for m in sorted(MAPPERS) if self.kind in kinds_of(MAPPERS[m])]
        for m in spec.mappers:
            if m not in MAPPERS:
                raise InputError(f"{p}: mappers: unknown mapper {m!r}; available: {', '.join(sorted(MAPPERS))}")
            if m not in mine:
                theirs = [k.sweep.plural for k in _sweep_kinds() if k.name in kinds_of(MAPPERS[m])]
                what = f"maps {theirs[0]}" if theirs else f"does not map {workload_kind(self.kind).description}"
                raise InputError(f"{p}: mappers: {m!r} {what}, but this sweep's workloads are {self.plural} "
                                 f"({mixing}); available: {', '.join(mine)}")

    def check(self, p: Path, spec: SweepSpec, mixing: str) -> None:
        """The kind's own checks of ``spec`` (its options, its workloads, its grid), after its mappers and fields.

        Raises:
            InputError: one line naming the sweep file and the field.
        """

    def check_platform(self, p: Path, platform, where: str) -> None:
        """``platform`` (a sweep platform, ``where`` names it) runs this kind.

        Raises:
            InputError: it does not.
        """

    def check_changed_platform(self, platform, where: str) -> None:
        """A platform changed by one parameter value (``where`` names it) still runs this kind."""

    def count_points(self, spec: SweepSpec, grid: int) -> int:
        """The number of points :meth:`expand` makes of ``spec`` (``grid``: the parameter combinations), from the
        lengths of its lists alone (:mod:`hetsim.dse.bounds`)."""
        return len(spec.workloads) * len(spec.platforms) * grid * len(spec.mappers)

    def expand(self, spec: SweepSpec, names: list[str], grid: list[tuple]) -> list[dict]:
        """The points of ``spec`` in a deterministic order (``names``: the parameters, ``grid``: their value
        combinations)."""
        raise NotImplementedError

    def result_columns(self, spec: SweepSpec) -> list[str]:
        """The columns of the results table, in order: ``key`` first, :meth:`settings_columns` last."""
        raise NotImplementedError

    def settings_columns(self, spec: SweepSpec) -> list[str]:
        """The columns holding the settings a row was computed under."""
        raise NotImplementedError

    def run_point(self, point: dict) -> dict:
        """One point's row (``error`` set, numbers empty, when it failed); runs in a worker process."""
        raise NotImplementedError

    def legacy_key(self, old: list) -> str | None:
        """The key of an older hetsim's JSON key ``old`` (a list longer than four) of this kind, or ``None``."""
        return None


def _sweep_kinds() -> list:
    from hetsim.kinds import sweep_kinds

    return sweep_kinds()


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
    def kind(self) -> str:
        """The workload kind of the sweep's points: the kind a field given implies (``synthetic``: generated
        spiking networks), else the kind of its first workload read by a front end (by suffix,
        :mod:`hetsim.workload.frontends`), else the first kind with sweep points (a sweep of two kinds is refused by
        :func:`load_sweep`)."""
        from hetsim.kinds import sweep_kinds
        from hetsim.workload.frontends import frontend_for

        kinds = sweep_kinds()
        for k in kinds:
            if any(getattr(self, f, None) is not None for f in k.sweep.implied_by):
                return k.name
        for w in self.workloads:
            try:
                return frontend_for(w).kind
            except InputError:
                continue
        return kinds[0].name

    @property
    def sweep_kind(self) -> SweepKind:
        """How this sweep's points are checked, expanded and run (its kind's :attr:`~hetsim.kinds.WorkloadKind.sweep`).

        Raises:
            InputError: the sweep's kind has no sweep points.
        """
        from hetsim.kinds import workload_kind

        sweep = workload_kind(self.kind).sweep
        if sweep is None:
            raise InputError(f"sweep {self.name!r}: {workload_kind(self.kind).description} has no sweep points")
        return sweep

    @model_validator(mode="after")
    def _default_mappers(self) -> SweepSpec:
        if self.mappers is None:
            from hetsim.kinds import workload_kind

            self.mappers = [workload_kind(self.kind).default_mapper]
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


def _combinations(grid: dict[str, list]) -> list[dict]:
    names = list(grid)
    return [dict(zip(names, vals, strict=True)) for vals in itertools.product(*(grid[n] for n in names))]


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file: the files it names exist, every parameter path exists on every platform,
    the mappers are registered; the sweep is of one workload kind, and that kind's own checks pass (its mappers,
    options, workloads and grid: :meth:`SweepKind.check`). The steps: :func:`_read_spec` (paths),
    :func:`_check_kinds` (one workload kind), :func:`_check_fields` (no field of another kind's sweeps), the kind's
    :meth:`SweepKind.check`, :func:`_check_platforms`.

    Raises:
        InputError: missing file, YAML error, unknown field, empty grid, unknown parameter path or mapper,
            a mapper option no mapper of the sweep takes (with the closest option name) or one refuses,
            workloads, mappers or fields of two kinds mixed, a workload no front end reads, a NIR graph without its
            ``spikes``, a bad synthetic argument (the message names it), a mode or a platform that cannot run
            the sweep's kind.
    """
    p = Path(path)
    spec = _read_spec(p)
    mixing = _check_kinds(p, spec)
    kind = spec.sweep_kind
    kind.check_mappers(p, spec, mixing)
    _check_fields(p, spec, kind)
    kind.check(p, spec, mixing)
    _check_platforms(p, spec, kind)
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
    if not spec.workloads and not any(getattr(spec, f, None) is not None for k in _sweep_kinds()
                                      for f in k.sweep.implied_by):
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
    """Every workload is read by a front end, and all of them (and a field that implies a kind, ``synthetic``) are
    of one kind; returns the sentence that says so, for the other checks' messages.

    Raises:
        InputError: a workload no front end reads, or workloads of two kinds.
    """
    from hetsim.kinds import sweep_kinds, workload_kind, workload_kinds
    from hetsim.workload.frontends import kind_of

    try:
        kinds = {w: kind_of(w) for w in spec.workloads}
    except InputError as err:
        raise InputError(f"{p}: workloads: {err}") from None
    sweeps = [k.sweep for k in sweep_kinds()]
    mixing = (f"a sweep is either {' or '.join(f'all-{s.label}' for s in sweeps)}: put "
              f"{' and '.join(s.plural for s in sweeps)} in separate sweep files")
    kind = spec.kind
    other = [w for w in spec.workloads if kinds[w] != kind]
    if other:
        mine = [w for w in spec.workloads if kinds[w] == kind]
        here = mine[0].name if mine else workload_kind(kind).sweep.implied_phrase
        order = workload_kinds()  # named in the order the kinds are registered
        first, second = sorted([(kinds[other[0]], other[0].name), (kind, here)], key=lambda t: order.index(t[0]))
        noun = {k: workload_kind(k).sweep.noun for k in (first[0], second[0])}
        raise InputError(f"{p}: workloads: {noun[first[0]]} {first[1]} and {noun[second[0]]} ({second[1]}) in one "
                         f"sweep; {mixing}")
    return mixing


def _field_given(spec: SweepSpec, name: str) -> bool:
    """Whether the sweep file gives field ``name`` (its value is not the field's default)."""
    default = SweepSpec.model_fields[name].get_default(call_default_factory=True)
    return getattr(spec, name) != default


def _check_fields(p: Path, spec: SweepSpec, kind: SweepKind) -> None:
    """No field that only another kind's sweeps take (:attr:`SweepKind.fields`) is given.

    Raises:
        InputError: one line naming the field and the kind that takes it.
    """
    from hetsim.kinds import sweep_kinds

    for other in (k.sweep for k in sweep_kinds()):
        if other is kind:
            continue
        for f in other.fields:
            if f not in kind.fields and _field_given(spec, f):
                raise InputError(f"{p}: {f}: applies to {other.label} sweeps only; this sweep's workloads are "
                                 f"{kind.plural}")


def _check_platforms(p: Path, spec: SweepSpec, kind: SweepKind) -> None:
    """Every platform loads, runs the sweep's kind (:meth:`SweepKind.check_platform`, also with every parameter
    value), names a known baseline mapper, and every value of every parameter applies to it (a boolean or an
    infinity among them, an unknown ``baseline``, fails here, not in a point).

    Raises:
        InputError: a bad platform, one that does not run the sweep's kind, an unknown baseline, a parameter path
            or value it refuses.
    """
    from hetsim.mappers.base import check_baseline
    from hetsim.platform import load_platform

    for plat in spec.platforms:
        platform = load_platform(plat)
        check_baseline(platform, f"{p}: platforms: {plat}")  # its name (a point checks its kind, after the platform's)
        kind.check_platform(p, platform, f"{p}: platforms: {plat}")
        for key, values in spec.parameters.items():
            for value in values:
                try:
                    changed = platform.with_overrides({key: value})
                except InputError as err:
                    raise InputError(f"{p}: parameters: {key!r} does not apply to {plat.name}: {err}") from None
                check_baseline(changed, f"{p}: parameters")
                kind.check_changed_platform(changed, f"{p}: parameters: {key}={value!r}")


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
    """Every design point of ``spec``, in a deterministic order (the kind's :meth:`SweepKind.expand`), each with
    its ``kind``, ``key`` and ``settings`` (the :meth:`SweepKind.settings_columns` cells it will be computed under).

    Raises:
        InputError: more points than the limit in force (:mod:`hetsim.dse.bounds`), counted before any is built;
            two points with one key (:func:`unique_keys`).
    """
    from hetsim.dse.bounds import check_count, count_points

    check_count(count_points(spec), f"sweep {spec.name!r}")
    names = list(spec.parameters)
    grid = list(itertools.product(*(spec.parameters[n] for n in names))) or [()]
    kind = spec.sweep_kind
    return unique_keys([{"kind": spec.kind, **pt} for pt in kind.expand(spec, names, grid)])


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


def point_key(workload: str, platform: str, params: dict, mapper: str, *extra: str,
              input_shape: dict | None = None) -> str:
    """The ``key`` of a design point (module docstring): ``workload|platform|name=value,...|mapper``, the
    parameters sorted by name, then a kind's ``extra`` parts (a spiking network's ``mode|reorder=false``); a
    point whose graph inputs are fixed by ``input_shape`` ends with ``|input_shape=x=[1,3,224,224]`` (inputs
    sorted by name; without it the key is as before, so older tables keep their rows)."""
    parts = [workload, platform, ",".join(f"{k}={_key_value(params[k])}" for k in sorted(params)), mapper, *extra]
    if input_shape:
        parts.append("input_shape=" + ",".join(f"{k}={_key_value(list(input_shape[k]))}" for k in sorted(input_shape)))
    return "|".join(parts)


def _key_from_json(key: str) -> str | None:
    """The key of an older hetsim's table (a JSON list, see the module docstring) in today's form; ``None``
    when ``key`` is not one (a kind's longer lists: :meth:`SweepKind.legacy_key`)."""
    if not key.startswith("["):
        return None
    try:
        old = json.loads(key)
    except ValueError:
        return None
    if not isinstance(old, list) or len(old) < 4 or not isinstance(old[2], dict):
        return None
    if len(old) == 4:
        return point_key(*old)
    from hetsim.kinds import sweep_kinds

    for k in sweep_kinds():
        new = k.sweep.legacy_key(old)
        if new is not None:
            return new
    return None


def result_columns(spec: SweepSpec) -> list[str]:
    """The columns of ``spec``'s results table, in order (:meth:`SweepKind.result_columns`)."""
    return spec.sweep_kind.result_columns(spec)


def settings_columns(spec: SweepSpec) -> list[str]:
    """The columns that hold the settings a row was computed under (:meth:`SweepKind.settings_columns`)."""
    return spec.sweep_kind.settings_columns(spec)


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
