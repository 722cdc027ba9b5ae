"""Files written by ``hetsim run --out DIR``: one registry of output stages.

Every file of a run folder is written by an :class:`OutputStage`: the file names it writes, the runs it serves
(``runs``: workload kinds, ``"dag"`` and ``"snn"`` (:mod:`hetsim.workload.kinds`), or ``"scenario"``, a stream of
requests: :mod:`hetsim.scenario.report`), optionally what it needs of the result (``needs``, e.g. a scenario's
comparison of objectives) and its ``write(result, folder)``. :func:`register_output` adds one (as this module
registers summary.json, ops.csv, ... and :mod:`hetsim.scenario.report` a scenario's files);
:func:`registered_output` adds one for the length of a ``with`` block. :func:`write_run_folder` runs the stages
serving a run, in the order they were registered, into a staging folder swapped in whole
(:mod:`hetsim.report.run_folder`), and :func:`check_out_dir` refuses, without ``--force``, a folder holding one
of their files (:func:`output_files`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetsim.errors import OutputExistsError
from hetsim.files import check_parent_dirs, check_writable
from hetsim.result import RunResult
from hetsim.workload.kinds import kind_name


def check_out_dir(out: Path, force: bool, files: Iterable[str]) -> None:
    """Refuse to replace existing outputs without ``force``, and a folder that cannot be created or written
    (:func:`check_writable`); a missing ``out`` and its missing parents are created when the outputs are written.

    Raises:
        OutputExistsError: ``out`` is a file, or already holds one of ``files`` (the run's:
            :func:`output_files`) or a file an earlier run wrote there (any kind of run, which a run with
            ``force`` removes: :func:`hetsim.report.run_folder.earlier_run_files`), and ``force`` is false.
        OutputPathError: ``out`` cannot be created or written.
    """
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"--out {str(out)!r} exists and is not a directory")
    check_parent_dirs(out)
    from hetsim.report.run_folder import earlier_run_files

    clash = sorted({f for f in files if (out / f).exists()} | (earlier_run_files(out, RUN_FILES)
                                                                if out.is_dir() else set()))
    if clash and not force:
        raise OutputExistsError(
            f"--out {str(out)!r} already holds {', '.join(clash)}; pass --force to replace them"
        )
    check_writable(out)


class OutputFolder:
    """The folder a run's stages write into (a staging folder, swapped in whole once every stage is done:
    :func:`write_run_folder`), and what several stages share, made once (:meth:`shared`).

    ``folder / "name"`` is the path of a file in it.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._shared: dict[str, Any] = {}

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def shared(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()``, called once per folder: a table two stages write (the op table of ops.csv and the
        report's)."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]


@dataclass(frozen=True)
class OutputStage:
    """One output of a run folder.

    Attributes:
        name: the stage's name in the registry (unique).
        files: the names of the files it writes into the folder (what ``--force`` guards).
        runs: the runs it serves: workload kinds (``"dag"``, ``"snn"``) or ``"scenario"`` (a kind's runs are also
            served by the stages its ``outputs`` name, :attr:`hetsim.kinds.WorkloadKind.outputs`).
        write: ``write(result, folder)`` writes ``files`` into ``folder`` (an :class:`OutputFolder`), each
            atomically (:func:`~hetsim.files.atomic_write_text`, :func:`~hetsim.files.atomic_path`).
        needs: ``needs(result)``: whether this result has what the stage writes (default: always); a stage that
            does not run leaves its files out of the folder, its names are still guarded.
        figure: a figure, or a page showing them: left out when a caller asks for no figures.
    """

    name: str
    files: tuple[str, ...]
    runs: frozenset[str]
    write: Callable[[Any, OutputFolder], None]
    needs: Callable[[Any], bool] | None = None
    figure: bool = False

    def __post_init__(self):
        object.__setattr__(self, "files", tuple(self.files))
        object.__setattr__(self, "runs", frozenset(kind_name(r) for r in ([self.runs] if isinstance(self.runs, str)
                                                                             else self.runs)))


#: the registry, in the order the stages write (and the folder's files are listed)
_STAGES: dict[str, OutputStage] = {}


def register_output(stage: OutputStage) -> OutputStage:
    """Add ``stage`` after the stages registered before it; returns it.

    Raises:
        ValueError: a stage of that name is registered, or one serving a common run writes a file of the same
            name (a programming error, not an input's).
    """
    if stage.name in _STAGES:
        raise ValueError(f"an output stage named {stage.name!r} is registered")
    for other in _STAGES.values():
        clash = set(stage.files) & set(other.files)
        if clash and stage.runs & other.runs:
            raise ValueError(f"output stage {stage.name!r}: {', '.join(sorted(clash))} already written by "
                             f"{other.name!r} for {', '.join(sorted(stage.runs & other.runs))} runs")
    _STAGES[stage.name] = stage
    return stage


def unregister_output(name: str) -> None:
    """Remove the stage ``name`` (a no-op when it is not registered)."""
    _STAGES.pop(name, None)


@contextlib.contextmanager
def registered_output(stage: OutputStage) -> Iterator[OutputStage]:
    """``stage`` registered for the length of the ``with`` block (:func:`register_output`), then removed."""
    register_output(stage)
    try:
        yield stage
    finally:
        unregister_output(stage.name)


def output_stages(run: str, result: Any = None, figures: bool = True) -> list[OutputStage]:
    """The stages serving ``run`` (a workload kind or ``"scenario"``): a kind's own list first, in its order
    (:attr:`hetsim.kinds.WorkloadKind.outputs`), then the stages whose ``runs`` name ``run``, in registration order;
    with ``result``, only those whose ``needs`` it meets; without ``figures``, no figure stage."""
    run = kind_name(run)
    named = [_STAGES[n] for n in _kind_outputs(run) if n in _STAGES]
    stages = named + [s for s in _STAGES.values() if run in s.runs and s not in named]
    return [s for s in stages if (figures or not s.figure) and (result is None or s.needs is None or s.needs(result))]


def _kind_outputs(run: str) -> tuple[str, ...]:
    """The stages a workload kind's runs write, by name and in order (:attr:`hetsim.kinds.WorkloadKind.outputs`;
    empty for a run that is no registered workload kind, e.g. ``"scenario"``)."""
    from hetsim.kinds import workload_kind, workload_kinds

    return tuple(workload_kind(run).outputs) if run in workload_kinds() else ()


def output_files(run: str) -> tuple[str, ...]:
    """Every file name a ``run`` (a workload kind or ``"scenario"``) may write into its folder, in order."""
    return tuple(dict.fromkeys(f for s in output_stages(run) for f in s.files))


def write_run_folder(result: Any, out: Path, run: str, force: bool = False, figures: bool = True) -> list[Path]:
    """Write the files of the stages serving ``run`` (:func:`output_stages`) for ``result`` into ``out``, all or
    none: into a staging folder swapped in whole (:mod:`hetsim.report.run_folder`), so a failed or killed run
    leaves the earlier folder as it was and a run with ``force`` leaves no file of an earlier run; return the
    paths written, in the stages' order.

    Raises:
        OutputExistsError, OutputPathError: see :func:`check_out_dir`.
    """
    from hetsim.report.run_folder import staged_folder

    files = output_files(run)
    check_out_dir(out, force, files)
    written = []
    # checked again under the folder's lock: another run may have written out since (no --force: refused)
    with staged_folder(out, owned=files, legacy=RUN_FILES, check=lambda: check_out_dir(out, force, files)) as stage:
        folder = OutputFolder(stage)
        for s in output_stages(run, result, figures):
            s.write(result, folder)
            written += s.files
    return [out / f for f in dict.fromkeys(written)]


def write_outputs(run: RunResult, out: Path, force: bool = False) -> list[Path]:
    """Write the files of a single run (``hetsim run MODEL --out``) into ``out`` (:func:`write_run_folder`, the
    stages serving the workload's kind). A DAG of operators: summary.json, ops.csv, breakdown.csv (busy time and
    energy per device and op type) and critical_path.csv (the critical path and every op's slack:
    :mod:`hetsim.analysis.breakdown`), schedule.json, trace.csv,
    trace.json (Chrome Trace Event format, opens in Perfetto), timeline.png (Gantt per device), breakdown.png
    (latency share and op count per device, CPU-CIM ILP Fig. 5), memory.png (live activations per memory over
    time, :mod:`hetsim.analysis.footprint`) and report.html (all of it in one self-contained page,
    :mod:`hetsim.report.html`). A spiking network: summary.json, layers.csv, samples.csv (latency and energy per
    eval sample and configuration), ops.csv, breakdown.csv, critical_path.csv (of the replayed sample) and
    schedule.json (as for every run), trace.csv (both modes of the
    timeline sample, column ``mode``, devices named as in the platform YAML) and trace.json (one track group per
    mode), timeline.png and report.html.

    Raises:
        OutputExistsError, OutputPathError: see :func:`check_out_dir`.
    """
    return write_run_folder(run, out, run.workload.kind, force)


#: every file a run of an older hetsim wrote into its ``--out`` folder, which then kept no list of them: the
#: earlier run's files in such a folder (:func:`hetsim.report.run_folder.earlier_run_files`); a run with
#: ``--force`` replaces the earlier run's files whole, so none of another kind's (a scenario's requests.csv
#: beside a single run's ops.csv) is left to describe a second run, and keeps the user's own files. A record of
#: the past that does not grow with the registry: a folder written since lists its own files
#: (:data:`hetsim.report.run_folder.MANIFEST`)
RUN_FILES = ("summary.json", "ops.csv", "schedule.json", "trace.csv", "trace.json", "timeline.png", "breakdown.png",
             "memory.png", "report.html", "layers.csv", "samples.csv", "requests.csv", "streams.csv", "devices.csv",
             "objectives.csv", "latency_cdf.png", "occupancy.png")


# --------------------------------------------------------------------------- the stages of single runs


def _summary_json(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_write_text

    atomic_write_text(folder / "summary.json", json.dumps(r.summary, indent=1) + "\n")


def _ops_csv(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_path

    with atomic_path(folder / "ops.csv") as tmp:
        folder.shared("ops", lambda: r.ops).to_csv(tmp, index=False)


def _breakdown_csv(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_path

    with atomic_path(folder / "breakdown.csv") as tmp:
        folder.shared("breakdown", lambda: r.breakdown).to_csv(tmp, index=False)


def _critical_path_csv(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_path

    with atomic_path(folder / "critical_path.csv") as tmp:
        folder.shared("critical_path", lambda: r.critical_path).to_csv(tmp, index=False)


def _schedule_json(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_write_text

    atomic_write_text(folder / "schedule.json", r.schedule.to_json() + "\n")


def _trace_csv(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_path
    from hetsim.report.export import round_ns

    with atomic_path(folder / "trace.csv") as tmp:
        round_ns(r.result.trace).to_csv(tmp, index=False)  # times to the ns: no float noise


def _trace_json(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.report.export import write_chrome_trace

    meta = {k: r.summary[k] for k in ("workload", "platform", "mapper", "makespan_s", "contention")}
    write_chrome_trace(r.result.trace, folder / "trace.json", meta=meta, costs=r.costs, schedule=r.schedule)


def _title(r: RunResult) -> str:
    return f"{r.workload.name} on {r.platform.name} ({r.schedule.mapper})"


def _timeline_png(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.analysis.plots import plot_timeline

    plot_timeline(r.result.trace, folder / "timeline.png", title=_title(r))


def _breakdown_png(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.analysis.plots import plot_breakdown

    plot_breakdown(r.breakdown_table(), folder / "breakdown.png", title=_title(r))


def _memory_png(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.analysis.footprint import memory_figure
    from hetsim.analysis.plots import save_figure

    save_figure(memory_figure(r.footprint, _title(r)), folder / "memory.png")


def _report_html(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.report.html import write_run_html

    configs = [r.schedule.mapper]  # the rows of breakdown.png (RunResult.breakdown_table)
    if r.baseline is not None and r.baseline is not r.result:
        configs.insert(0, r.platform.baseline)
    write_run_html(r, folder / "report.html", ops=folder.shared("ops", lambda: r.ops),
                   breakdown=folder.shared("breakdown", lambda: r.breakdown),
                   critical_path=folder.shared("critical_path", lambda: r.critical_path), figures=[
        (folder / "timeline.png", "Timeline: every op and transfer per device (lanes: ops running at once)"),
        (folder / "breakdown.png", f"Busy time and op count per device, {' vs '.join(configs)}"),
        (folder / "memory.png", "Live activations per memory over time (replay; dashed: capacity)")])


# the stages of a single run, in the order they write; they serve no run by themselves: a workload kind names the
# ones its runs write (:attr:`hetsim.kinds.WorkloadKind.outputs`), and registers its own stages (``runs`` naming
# it, e.g. a spiking network's layers.csv, :mod:`hetsim.snn.kind`)
for _stage in (
    OutputStage("summary", ("summary.json",), (), _summary_json),
    OutputStage("ops", ("ops.csv",), (), _ops_csv),
    OutputStage("op-breakdown", ("breakdown.csv",), (), _breakdown_csv),
    OutputStage("critical-path", ("critical_path.csv",), (), _critical_path_csv),
    OutputStage("schedule", ("schedule.json",), (), _schedule_json),
    OutputStage("trace", ("trace.csv",), (), _trace_csv),
    OutputStage("perfetto", ("trace.json",), (), _trace_json),
    OutputStage("timeline", ("timeline.png",), (), _timeline_png, figure=True),
    OutputStage("breakdown", ("breakdown.png",), (), _breakdown_png, figure=True),
    OutputStage("memory", ("memory.png",), (), _memory_png, figure=True),
    OutputStage("report", ("report.html",), (), _report_html, figure=True),
):
    register_output(_stage)
