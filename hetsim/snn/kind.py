"""The workload kind ``snn``: a spiking network unrolled over its timesteps (SpikeDuet), priced per sample by
:class:`~hetsim.snn.activity_costs.ActivityCostModel`, mapped by ``spikeduet`` unless told otherwise, run by
:func:`hetsim.snn.evaluate.run_snn` (SpikeDuet's Table I priced on every eval sample, one sample replayed).

The package :mod:`hetsim.snn` is the whole kind: its front ends (``frontend``, ``nir``, ``network``,
``synthetic``, ``unroll``, ``activity``), its cost model (``activity_costs``), its run (``evaluate``), the neuron
reordering (``reorder``), its report and output files (``report``, the stages below), its sweep points
(``sweep``). Registered by one line in :mod:`hetsim.kinds`; its mapper is :mod:`hetsim.mappers.spikeduet`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from hetsim.kinds import WorkloadKind
from hetsim.report.outputs import OutputFolder, OutputStage, register_output
from hetsim.result import RunResult
from hetsim.workload.kinds import DESCRIPTIONS, SNN


@dataclass(frozen=True)
class SnnOptions:
    """The run options of a spiking network (the keywords of :func:`hetsim.run` only it takes;
    :func:`hetsim.snn.evaluate.run_snn`).

    Attributes:
        reorder: reorder hidden neurons first (function-preserving; verified).
        sample: eval-split sample replayed (``None``: the sample of median latency).
        seed: the reordering's refinement seed.
        timeline: replay both execution modes and count replay mismatches; sweeps skip both.
    """

    reorder: bool = False
    sample: int | None = None
    seed: int = 0
    timeline: bool = True


class SnnKind(WorkloadKind):
    """A spiking network: SpikeDuet's evaluation and one replayed sample (:func:`hetsim.snn.evaluate.run_snn`)."""

    name: ClassVar[str] = SNN
    description: ClassVar[str] = DESCRIPTIONS[SNN]
    default_mapper: ClassVar[str] = "spikeduet"
    options: ClassVar[type] = SnnOptions
    cli_flags: ClassVar[tuple] = (("--mode", "mode", None), ("--reorder", "reorder", False),
                                  ("--sample", "sample", None))
    cli_noun: ClassVar[str] = "spiking networks (an SNN spec .yaml or a NIR graph .nir)"
    validate_words: ClassVar[tuple[str, str]] = (
        "engines and residencies, SRAM and Flash for the weight tables, each engine's order",
        "the evaluator's latency of the median eval sample")
    outputs: ClassVar[tuple[str, ...]] = (
        "summary", "snn-layers", "snn-samples", "ops", "op-breakdown", "critical-path", "schedule", "snn-trace",
        "snn-perfetto", "snn-timeline", "snn-report")

    @property
    def sweep(self):
        """Its sweep points (:mod:`hetsim.snn.sweep`)."""
        from hetsim.snn.sweep import SNN_SWEEP

        return SNN_SWEEP

    def foreign_options_message(self, foreign: list[str]) -> str:
        verb = "applies" if len(foreign) == 1 else "apply"
        return f"{', '.join(foreign)} {verb} to tensor-operator models, not to spiking networks"

    def cost_model(self, workload, platform, options: SnnOptions):
        from hetsim.snn.activity_costs import ActivityCostModel

        return ActivityCostModel(workload, platform, "eval")

    def run(self, platform, workload, mapper, contention, mapper_options, schedule, options: SnnOptions, load):
        from hetsim.snn.evaluate import run_snn

        return run_snn(platform, load(workload).snn, mapper, contention, mapper_options, schedule,
                       reorder=options.reorder, sample=options.sample, seed=options.seed, timeline=options.timeline)

    def text_report(self, result, max_names: int | None = None) -> str:
        from hetsim.snn.report import format_snn_report

        return format_snn_report(result)

    def inspect(self, workload, platform) -> str | None:
        from hetsim.snn.report import format_snn_costs, format_snn_inspect

        text = format_snn_inspect(workload.snn)
        return text if platform is None else text + "\n" + format_snn_costs(workload.snn, platform)

    def validate(self, costs, schedule, rel_tol: float):
        from hetsim.snn.evaluate import validate_snn_schedule

        return validate_snn_schedule(costs, schedule, rel_tol=rel_tol)


#: the kind's registry entry (:mod:`hetsim.kinds`)
KIND = SnnKind()


# --------------------------------------------------------------------------- its output stages


def _layers_csv(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_path

    with atomic_path(folder / "layers.csv") as tmp:
        r.snn.layers.to_csv(tmp, index=False)


def _samples_csv(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_path

    rows = []
    for name, c in r.snn.configs.items():
        for i, (lat, e) in enumerate(zip(c.latency_s, c.energy_j, strict=True)):
            rows.append({"config": name, "mode": c.mode, "sample": i, "latency_s": lat, "energy_j": e})
    with atomic_path(folder / "samples.csv") as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)


def _snn_traces(r: RunResult) -> dict[str, pd.DataFrame]:
    """The timeline sample's trace per mode (one mode when only the run's was replayed)."""
    return r.snn.traces or {r.snn.mode: r.trace.assign(layer=0, t=0, step="")}


def _snn_trace_csv(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_path
    from hetsim.report.export import round_ns

    traces = _snn_traces(r)
    with atomic_path(folder / "trace.csv") as tmp:  # times to the ns: no float noise
        round_ns(pd.concat([t.assign(mode=m) for m, t in traces.items()], ignore_index=True)).to_csv(tmp, index=False)


def _snn_trace_json(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.report.export import write_chrome_trace
    from hetsim.snn.report import snn_trace_layout

    traces = _snn_traces(r)
    trace = pd.concat([t.assign(device=t["device"] + f" ({m})") for m, t in traces.items()], ignore_index=True)
    write_chrome_trace(trace.drop(columns=["layer", "t", "step"]), folder / "trace.json",
                       meta={"workload": r.workload.name, "platform": r.platform.name, "sample": r.snn.sample},
                       **snn_trace_layout(r))


def _snn_timeline_png(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.snn.report import plot_snn_timeline

    plot_snn_timeline(r, folder / "timeline.png")


def _snn_report_html(r: RunResult, folder: OutputFolder) -> None:
    from hetsim.snn.report import write_snn_html

    write_snn_html(r, folder / "report.html", figures=[
        (folder / "timeline.png", "Timeline of the first timesteps of one sample, blocking above asynchronous")])


for _stage in (
    OutputStage("snn-layers", ("layers.csv",), SNN, _layers_csv),
    OutputStage("snn-samples", ("samples.csv",), SNN, _samples_csv),
    OutputStage("snn-trace", ("trace.csv",), SNN, _snn_trace_csv),
    OutputStage("snn-perfetto", ("trace.json",), SNN, _snn_trace_json),
    OutputStage("snn-timeline", ("timeline.png",), SNN, _snn_timeline_png, figure=True),
    OutputStage("snn-report", ("report.html",), SNN, _snn_report_html, figure=True),
):
    register_output(_stage)
