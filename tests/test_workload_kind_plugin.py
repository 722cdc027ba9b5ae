"""A workload kind is a plug-in (hetsim.kinds): a throw-away kind registered from outside hetsim, a chain of N ops
on the platform's host with a cost model of ours (every op takes ``op_s``), runs through ``hetsim.run``, a sweep
point, its output stages and its report with no edit to hetsim's modules, and is gone once unregistered."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
import yaml
from conftest import run_cli

import hetsim
from hetsim.dse.points import SweepKind, file_sha256, point_key
from hetsim.errors import InputError, WorkloadError
from hetsim.files import atomic_write_text
from hetsim.kinds import WorkloadKind, register_workload_kind, unregister_workload_kind, workload_kinds
from hetsim.report.outputs import OutputStage, output_files, register_output, unregister_output
from hetsim.result import RunResult
from hetsim.workload.frontends import FrontEnd, register_frontend, unregister_frontend

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"


@dataclass
class Chain:
    """The workload: ``n_ops`` ops in a chain."""

    name: str
    n_ops: int
    kind: str = "chain"


def _load_chain(path: Path) -> Chain:
    n = int(path.read_text().strip())
    if n < 1:
        raise WorkloadError(f"{path}: a chain needs at least one op")
    return Chain(path.stem, n)


@dataclass(frozen=True)
class ChainOptions:
    op_s: float = 1e-3


@dataclass
class ChainCosts:
    """The kind's cost model: every op takes ``op_s`` on the host."""

    workload: Chain
    platform: object
    op_s: float

    def latency(self, i: int) -> float:
        return self.op_s


class ChainSweep(SweepKind):
    kind: ClassVar[str] = "chain"
    label: ClassVar[str] = "chain"
    plural: ClassVar[str] = "chains of ops"
    noun: ClassVar[str] = "chain"

    def expand(self, spec, names, grid):
        return [{"key": point_key(w.name, p.name, {}, m), "workload": str(w), "platform": str(p), "params": {},
                 "mapper": m, "settings": {"workload_sha256": file_sha256(w)}}
                for w in spec.workloads for p in spec.platforms for m in spec.mappers]

    def result_columns(self, spec):
        return ["key", "workload", "platform", "mapper", "makespan_s", "error", "workload_sha256"]

    def settings_columns(self, spec):
        return ["workload_sha256"]

    def run_point(self, point):
        row = {"key": point["key"], "workload": Path(point["workload"]).name, "mapper": point["mapper"],
               **point["settings"]}
        try:
            r = hetsim.run(point["platform"], point["workload"], mapper=point["mapper"])
            row.update({"platform": r.summary["platform"], "makespan_s": r.makespan_s})
        except Exception as err:
            row["error"] = f"{type(err).__name__}: {err}"
        return row


class InOrder:
    """The kind's mapper: the ops in chain order."""

    workloads = ("chain",)

    def map(self, costs) -> list[int]:
        return list(range(costs.workload.n_ops))


class ChainKind(WorkloadKind):
    name: ClassVar[str] = "chain"
    description: ClassVar[str] = "a chain of ops (a .chain file)"
    default_mapper: ClassVar[str] = "in-order"
    options: ClassVar[type] = ChainOptions
    outputs: ClassVar[tuple[str, ...]] = ("summary", "chain-ops")
    sweep: ClassVar[SweepKind] = ChainSweep()

    def cost_model(self, workload, platform, options):
        return ChainCosts(workload, platform, options.op_s)

    def run(self, platform, workload, mapper, contention, mapper_options, schedule, options, load):
        plat = hetsim.load_platform(platform) if isinstance(platform, str | Path) else platform
        from hetsim.mappers import get_mapper

        costs = self.cost_model(load(workload), plat, options)
        order = get_mapper(mapper, **mapper_options).map(costs)
        summary = {"workload": costs.workload.name, "platform": plat.name, "mapper": mapper, "operators": len(order),
                   "makespan_s": sum(costs.latency(i) for i in order), "energy_j": None, "speedup": None}
        return RunResult(costs, order, None, None, summary)

    def text_report(self, result, max_names=None):
        return f"chain {result.workload.name}: {result.summary['operators']} ops, {result.makespan_s * 1e3:.3f} ms"


def _ops_csv(r, folder) -> None:
    op_s = r.costs.op_s
    rows = [f"{i},{i * op_s!r},{(i + 1) * op_s!r}" for i in range(r.workload.n_ops)]
    atomic_write_text(folder / "chain.csv", "\n".join(["op,start_s,end_s", *rows]) + "\n")


@pytest.fixture
def chain_kind(tmp_path, monkeypatch):
    from hetsim.mappers import MAPPERS

    monkeypatch.setitem(MAPPERS, "in-order", InOrder)
    register_frontend(FrontEnd("chain", "chain", (".chain",), _load_chain, (), "a chain of ops"))
    register_workload_kind(ChainKind())
    register_output(OutputStage("chain-ops", ("chain.csv",), "chain", _ops_csv))
    (tmp_path / "five.chain").write_text("5\n")
    yield tmp_path / "five.chain"
    unregister_output("chain-ops")
    unregister_workload_kind("chain")
    unregister_frontend("chain")


def test_a_kind_from_outside_runs_through_hetsim_run(chain_kind):
    r = hetsim.run(PUMA, chain_kind)
    assert r.summary["mapper"] == "in-order"  # the kind's default mapper
    assert r.summary["operators"] == 5
    assert r.makespan_s == pytest.approx(5e-3)  # 5 ops x 1 ms, by hand
    assert r.summary["run_options"] == {"op_s": 1e-3}  # the kind's typed options, in summary.json
    with pytest.raises(InputError, match="reorder applies to other workload kinds, not to a chain of ops"):
        hetsim.run(PUMA, chain_kind, reorder=True)  # another kind's option: one line


def test_its_outputs_and_its_report(chain_kind, tmp_path, capsys):
    assert output_files("chain") == ("summary.json", "chain.csv")
    out = tmp_path / "run"
    code, text, err = run_cli(capsys, "run", PUMA, chain_kind, "--out", out)
    assert code == 0, err
    assert "chain five: 5 ops, 5.000 ms" in text  # the kind's own report
    assert json.loads((out / "summary.json").read_text())["makespan_s"] == pytest.approx(5e-3)
    ops = pd.read_csv(out / "chain.csv")
    assert list(ops["op"]) == [0, 1, 2, 3, 4] and ops["end_s"].iloc[-1] == pytest.approx(5e-3)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["chain.csv", "summary.json"]


def test_its_sweep_points(chain_kind, tmp_path):
    from hetsim.dse import expand_points, load_sweep, run_sweep

    (tmp_path / "three.chain").write_text("3\n")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"name": "chains", "workloads": ["five.chain", "three.chain"],
                                     "platforms": [str(PUMA)], "output": "chains.csv"}))
    spec = load_sweep(sweep)
    assert spec.kind == "chain" and spec.mappers == ["in-order"]
    assert [p["key"] for p in expand_points(spec)] == ["five.chain|puma.yaml||in-order",
                                                      "three.chain|puma.yaml||in-order"]
    out, ran, skipped = run_sweep(spec, workers=0)
    assert (ran, skipped) == (2, 0)
    table = pd.read_csv(out)
    assert list(table["makespan_s"]) == pytest.approx([5e-3, 3e-3])
    assert run_sweep(spec, workers=0)[1:] == (0, 2)  # resumed: nothing to run
    sweep.write_text(yaml.safe_dump({"name": "chains", "workloads": ["five.chain"], "platforms": [str(PUMA)],
                                     "mode": "async"}))
    with pytest.raises(InputError, match="mode: applies to SNN sweeps only; this sweep's workloads are chains"):
        load_sweep(sweep)


def test_unregistered_it_is_gone(chain_kind):
    assert "chain" in workload_kinds()
    unregister_output("chain-ops")
    unregister_workload_kind("chain")
    unregister_frontend("chain")
    assert "chain" not in workload_kinds()
    assert output_files("chain") == ()
    with pytest.raises(InputError):
        hetsim.run(PUMA, chain_kind)
