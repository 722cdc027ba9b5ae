"""Files written by ``hetsim run --out DIR``."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pandas as pd

from hetsim.devices.link import LINK_KIND
from hetsim.errors import OutputExistsError
from hetsim.report.export import OutputPathError
from hetsim.report.metrics import device_table, op_table
from hetsim.result import RunResult

OUTPUT_FILES = ("summary.json", "ops.csv", "schedule.json", "trace.csv", "trace.json", "timeline.png",
                "breakdown.png", "memory.png", "report.html")
#: the files a scenario's ``hetsim run --out`` writes (:func:`hetsim.scenario.report.write_scenario_outputs`)
SCENARIO_OUTPUT_FILES = ("summary.json", "requests.csv", "streams.csv", "devices.csv", "trace.csv",
                         "objectives.csv", "latency_cdf.png", "timeline.png", "occupancy.png", "report.html")


def check_parent_dirs(path: Path) -> None:
    """Refuse a path whose existing ancestor is a file (it could never be created).

    Raises:
        OutputExistsError: an ancestor of ``path`` exists and is not a directory.
    """
    for parent in Path(path).absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputExistsError(f"cannot write {str(path)!r}: {str(parent)!r} is a file, not a directory")
            return


def check_writable(folder: Path, for_path: Path | None = None) -> None:
    """Refuse, before any work, a ``folder`` that cannot receive files: probe it (or, when it is missing, its
    nearest existing ancestor, where the missing folders would be created) by creating and removing a temporary
    file. Catches permission denied, read-only and virtual file systems (``/proc``, ``/sys``) alike.

    Raises:
        OutputExistsError: an existing ancestor is a file (:func:`check_parent_dirs`).
        OutputPathError: no file can be created there, or ``folder`` or ``for_path`` is a symbolic link loop; the
            message names ``for_path`` (default ``folder``).
    """
    for_path = Path(folder) if for_path is None else Path(for_path)
    for p in (for_path, Path(folder)):
        try:
            os.stat(p)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise OutputPathError(f"cannot write {str(for_path)!r}: {str(p)!r} is a symbolic link loop") from None
    check_parent_dirs(for_path)
    d = Path(folder).absolute()
    while not d.exists() and d != d.parent:
        d = d.parent
    try:
        fd, name = tempfile.mkstemp(prefix=".hetsim-probe.", dir=d)
    except OSError as err:
        raise OutputPathError(f"cannot write {str(for_path)!r}: no file can be created in {str(d)!r} "
                              f"({err.strerror or err})") from None
    os.close(fd)
    os.unlink(name)


def check_output_file(path: Path, force: bool, flag: str = "-o") -> None:
    """Refuse, before any work, an output file ``path`` that exists (without ``force``), is a folder, or whose
    folder cannot be created or written (:func:`check_writable`). Missing parent folders are created when the
    file is written (:func:`hetsim.report.export.atomic_path`).

    Raises:
        OutputExistsError: ``path`` exists and ``force`` is false, or an ancestor is a file.
        OutputPathError: ``path`` is a folder, or its folder cannot receive files.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{flag} {str(path)!r} is a folder; give a file path")
    if path.exists() and not force:
        raise OutputExistsError(f"{str(path)!r} exists; pass --force to replace it")
    check_writable(path.parent if str(path.parent) else Path("."), path)


def check_out_dir(out: Path, force: bool, files: tuple[str, ...] = OUTPUT_FILES) -> None:
    """Refuse to replace existing outputs without ``force``, and a folder that cannot be created or written
    (:func:`check_writable`); a missing ``out`` and its missing parents are created when the outputs are written.

    Raises:
        OutputExistsError: ``out`` is a file, or already holds one of ``files`` (the run's; default
            :data:`OUTPUT_FILES`) or a file an earlier run wrote there (any kind of run, which a run with
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


def write_outputs(run: RunResult, out: Path, force: bool = False) -> list[Path]:
    """Write summary.json, ops.csv, schedule.json, trace.csv, trace.json (Chrome Trace Event format, opens
    in Perfetto), timeline.png (Gantt per device), breakdown.png (latency share and op count per device,
    CPU-CIM ILP Fig. 5), memory.png (live activations per memory over time, :mod:`hetsim.report.footprint`) and
    report.html (all of it in one self-contained page, :mod:`hetsim.report.html`) into
    ``out``. The files are written into a staging folder beside ``out`` and swapped in whole
    (:mod:`hetsim.report.run_folder`): a failed or killed run leaves the earlier run's folder as it was.

    Raises:
        OutputExistsError, OutputPathError: see :func:`check_out_dir`.
    """
    if run.snn is not None:  # a spiking network: its own tables and both modes' timeline as extra files
        return write_snn_outputs(run, out, force=force)
    check_out_dir(out, force)
    from hetsim.report.run_folder import staged_folder

    with staged_folder(out, owned=OUTPUT_FILES, legacy=RUN_FILES) as stage:  # all or none (run_folder)
        written = _write_run_files(run, stage)
    return [out / p.name for p in written]


def _write_run_files(run: RunResult, out: Path) -> list[Path]:
    """:func:`write_outputs`'s files, into the folder ``out`` (a staging folder)."""
    from hetsim.report.export import atomic_path, atomic_write_text, round_ns, write_chrome_trace
    from hetsim.report.plots import plot_breakdown, plot_timeline

    written = []

    def path(name: str) -> Path:
        p = out / name
        written.append(p)
        return p

    atomic_write_text(path("summary.json"), json.dumps(run.summary, indent=1) + "\n")
    ops = op_table(run.costs, run.schedule, run.result)  # once: ops.csv and the report's op table
    with atomic_path(path("ops.csv")) as tmp:
        ops.to_csv(tmp, index=False)
    atomic_write_text(path("schedule.json"), run.schedule.to_json() + "\n")
    with atomic_path(path("trace.csv")) as tmp:
        round_ns(run.result.trace).to_csv(tmp, index=False)  # times to the ns: no float noise
    meta = {k: run.summary[k] for k in ("workload", "platform", "mapper", "makespan_s", "contention")}
    write_chrome_trace(run.result.trace, path("trace.json"), meta=meta, costs=run.costs, schedule=run.schedule)
    title = f"{run.workload.name} on {run.platform.name} ({run.schedule.mapper})"
    plot_timeline(run.result.trace, path("timeline.png"), title=title)
    rows = []
    configs = [(run.schedule.mapper, run.result)]
    if run.baseline is not None and run.baseline is not run.result:
        configs.insert(0, (run.platform.baseline, run.baseline))
    for config, res in configs:
        t = device_table(run.costs, res)
        t = t[t["kind"] != LINK_KIND]
        t.insert(0, "config", config)
        rows.append(t)
    plot_breakdown(pd.concat(rows, ignore_index=True), path("breakdown.png"), title=title)
    from hetsim.report.footprint import memory_figure
    from hetsim.report.html import write_run_html
    from hetsim.report.plots import save_figure

    save_figure(memory_figure(run.footprint, title), path("memory.png"))
    write_run_html(run, path("report.html"), ops=ops, figures=[
        (out / "timeline.png", "Timeline: every op and transfer per device (lanes: ops running at once)"),
        (out / "breakdown.png", f"Busy time and op count per device, {' vs '.join(c for c, _ in configs)}"),
        (out / "memory.png", "Live activations per memory over time (replay; dashed: capacity)")])
    return written


#: the files :func:`write_snn_outputs` writes (a spiking network's ``hetsim run --out``)
SNN_OUTPUT_FILES = ("summary.json", "layers.csv", "samples.csv", "ops.csv", "schedule.json", "trace.csv",
                    "trace.json", "timeline.png", "report.html")
#: every file a run of any kind writes into its ``--out`` folder: the earlier run's files in a folder an older
#: hetsim wrote, which kept no list of them (:func:`hetsim.report.run_folder.earlier_run_files`); a run with
#: ``--force`` replaces the earlier run's files whole, so none of another kind's (a scenario's requests.csv
#: beside a single run's ops.csv) is left to describe a second run, and keeps the user's own files
RUN_FILES = tuple(dict.fromkeys(OUTPUT_FILES + SNN_OUTPUT_FILES + SCENARIO_OUTPUT_FILES))


def write_snn_outputs(r, out: Path, force: bool = False) -> list[Path]:
    """Write summary.json, layers.csv, samples.csv (latency and energy per eval sample and configuration),
    ops.csv and schedule.json (as for every run), trace.csv (both modes of the timeline sample, column ``mode``,
    devices named as in the platform YAML) and trace.json (Chrome trace, opens in Perfetto: one track group per
    mode), timeline.png and report.html (all of it in one self-contained page) into ``out``, each atomically.

    Raises:
        OutputExistsError: ``out`` already holds one of these files and ``force`` is false.
    """
    from hetsim.report.run_folder import staged_folder

    check_out_dir(out, force, SNN_OUTPUT_FILES)
    with staged_folder(out, owned=SNN_OUTPUT_FILES, legacy=RUN_FILES) as stage:  # all files or none (run_folder)
        written = _write_snn_files(r, stage)
    return [out / p.name for p in written]


def _write_snn_files(r, out: Path) -> list[Path]:
    """:func:`write_snn_outputs`'s files, into the folder ``out`` (a staging folder)."""
    from hetsim.report.export import atomic_path, atomic_write_text, round_ns, write_chrome_trace
    from hetsim.report.snn import plot_snn_timeline, snn_trace_layout

    atomic_write_text(out / "summary.json", json.dumps(r.summary, indent=1) + "\n")
    with atomic_path(out / "layers.csv") as tmp:
        r.snn.layers.to_csv(tmp, index=False)
    rows = []
    for name, c in r.snn.configs.items():
        for i, (lat, e) in enumerate(zip(c.latency_s, c.energy_j, strict=True)):
            rows.append({"config": name, "mode": c.mode, "sample": i, "latency_s": lat, "energy_j": e})
    with atomic_path(out / "samples.csv") as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)
    with atomic_path(out / "ops.csv") as tmp:
        r.ops.to_csv(tmp, index=False)
    atomic_write_text(out / "schedule.json", r.schedule.to_json() + "\n")
    traces = r.snn.traces or {r.snn.mode: r.trace.assign(layer=0, t=0, step="")}
    with atomic_path(out / "trace.csv") as tmp:  # times to the ns: no float noise
        round_ns(pd.concat([t.assign(mode=m) for m, t in traces.items()], ignore_index=True)).to_csv(tmp, index=False)
    trace = pd.concat([t.assign(device=t["device"] + f" ({m})") for m, t in traces.items()], ignore_index=True)
    write_chrome_trace(trace.drop(columns=["layer", "t", "step"]), out / "trace.json",
                       meta={"workload": r.workload.name, "platform": r.platform.name, "sample": r.snn.sample},
                       **snn_trace_layout(r))
    plot_snn_timeline(r, out / "timeline.png")
    from hetsim.report.html import write_snn_html

    write_snn_html(r, out / "report.html", figures=[
        (out / "timeline.png", "Timeline of the first timesteps of one sample, blocking above asynchronous")])
    return [out / f for f in SNN_OUTPUT_FILES]
