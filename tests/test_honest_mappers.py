"""Honest exact mappers: an unproven solve never returns worse than the heuristics (the best of
greedy and heft), the text report names the schedule returned, the solver line's time is the mapping's wall time,
and "optimal (proven)" is never printed next to a gap that is not 0 at the shown precision."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import run_cli

from hetsim.costs import CostModel
from hetsim.mappers import get_mapper
from hetsim.platform import load_platform
from hetsim.report.text import si, solver_line
from hetsim.workload import load_onnx

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
YOLO = ROOT / "workloads" / "yolov5n.onnx"
YOLO_QDQ = ROOT / "workloads" / "yolov5n_int8_qdq.onnx"


def _after_s(text: str) -> float:
    m = re.search(r"solver +time limit(?: \([^)]*\))? after ([0-9.]+) s", text)  # the limit named: "(1 s)"
    assert m, text
    return float(m.group(1))


@pytest.fixture(scope="module")
def yolo_costs() -> CostModel:
    return CostModel(load_onnx(YOLO), load_platform(PUMA))


def test_ilp_at_its_time_limit_returns_heft_when_heft_beats_greedy(yolo_costs, capsys):
    """fp32 YOLOv5n: heft (94.9 ms) beats greedy (96.5 ms); HiGHS has no better schedule within 1 s."""
    heft = get_mapper("heft").map(yolo_costs)
    greedy = get_mapper("greedy").map(yolo_costs)
    assert heft.makespan_s < greedy.makespan_s
    code, out, err = run_cli(capsys, "run", PUMA, YOLO, "--mapper", "ilp", "--time-limit", "1")
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("solver"))
    assert "heft's schedule" in line and si(heft.makespan_s, "s") in line
    assert _after_s(out) >= 1.0  # the wall time of the mapping, at least the limit the solver ran into
    code, out, _ = run_cli(capsys, "run", PUMA, YOLO, "--mapper", "ilp", "--time-limit", "1", "--json")
    s = json.loads(out)
    st = s["mapper_stats"]
    assert st["status"] == "time_limit" and st["fallback"] == "heft" and "heft" in st["note"]
    assert s["makespan_s"] == pytest.approx(heft.makespan_s, rel=1e-9)
    assert st["incumbent_s"] == pytest.approx(heft.makespan_s, rel=1e-9)
    assert st["total_time_s"] >= st["time_limit_s"] == 1.0


def test_ilp_own_schedule_worse_than_a_heuristic_is_replaced(yolo_costs, monkeypatch):
    """An incumbent the solver found but that is worse than heft's: heft's schedule, the solver's noted."""
    from hetsim.mappers import ilp as ilp_mod

    greedy = get_mapper("greedy").map(yolo_costs)
    heft = get_mapper("heft").map(yolo_costs)
    real_highs = ilp_mod.Ilp._highs

    def worse(self, model, start, prog):  # the solver's "best" is greedy's point: worse than heft's
        r = real_highs(ilp_mod.Ilp(time_limit_s=1.0, warm_start=greedy), model,
                       ilp_mod.Ilp(warm_start=greedy)._start_vector(yolo_costs, model), prog)
        r.status = "time_limit"
        return r

    monkeypatch.setattr(ilp_mod.Ilp, "_highs", worse)
    sched = ilp_mod.Ilp(time_limit_s=1.0).map(yolo_costs)
    st = sched.stats
    if st.get("solver_schedule_makespan_s") is not None and st["solver_schedule_makespan_s"] <= heft.makespan_s:
        pytest.skip("HiGHS improved on heft within 1 s from greedy's start")
    assert st["fallback"] == "heft" and sched.makespan_s == pytest.approx(heft.makespan_s, rel=1e-9)
    assert "worse than heft's" in st["note"]
    assert "without a better schedule: heft's schedule" in solver_line(st)


def test_cpsat_solver_line_reports_wall_time_at_its_limit(capsys):
    """int8 YOLOv5n with a 1 s limit: CP-SAT's own calls are a fraction of the mapping; the line gives the wall
    time (>= the limit), with the calls' share beside it."""
    code, out, err = run_cli(capsys, "run", PUMA, YOLO_QDQ, "--mapper", "cpsat", "--time-limit", "1", "--json")
    assert code == 0, err
    st = json.loads(out)["mapper_stats"]
    if st["status"] == "optimal":
        pytest.skip("proven within 1 s on this machine")
    assert st["total_time_s"] >= 1.0
    line = solver_line(st)
    assert float(re.search(r"after ([0-9.]+) s", line).group(1)) >= 1.0
    assert f"solver calls {st['solve_time_s']:.2f} s" in line or f"{st['solve_time_s']:.2f}" == \
        f"{st['total_time_s']:.2f}"


def test_solver_line_never_says_proven_next_to_a_gap():
    base = {"status": "optimal", "total_time_s": 2.5, "solve_time_s": 2.5, "variables": 10, "constraints": 20,
            "bound_s": 0.9999e-3, "incumbent_s": 1e-3}
    assert solver_line({**base, "mip_gap": 0.0}).startswith("optimal (proven) in 2.50 s")
    assert solver_line({**base, "mip_gap": 1e-7}).startswith("optimal (proven)")  # 0.00 % at the shown precision
    line = solver_line({**base, "mip_gap": 1e-4, "mip_rel_gap": 1e-4})
    assert "proven" not in line.replace("not proven", "")
    assert "gap tolerance (0.01 %)" in line and "MIP gap 0.01 %" in line


def test_solver_line_names_the_chain_dynamic_program():
    st = {"status": "optimal", "mip_gap": 0.0, "total_time_s": 0.002, "solution_source": "chain",
          "variables": None, "constraints": None}
    assert solver_line(st) == "optimal (proven) in 0.00 s by the chain dynamic program"
    assert solver_line({**st, "solution_source": "decompose"}) == "optimal (proven) in 0.00 s"


def test_solver_line_fallback_and_wall_time():
    st = {"status": "time_limit", "total_time_s": 30.02, "solve_time_s": 17.12, "fallback": "heft",
          "fallback_makespan_s": 94.947e-3, "solver_schedule_makespan_s": None, "mip_gap": 0.1312,
          "bound_s": 82.488e-3}
    line = solver_line(st)
    assert line.startswith("time limit after 30.02 s (solver calls 17.12 s) without a schedule of its own: "
                           "heft's schedule, 94.95 ms")
    line = solver_line({**st, "solver_schedule_makespan_s": 96.5e-3})
    assert "without a better schedule: heft's schedule, 94.95 ms" in line and "its own 96.50 ms" in line
    plain = solver_line({"status": "time_limit", "total_time_s": 30.0, "solve_time_s": 30.0, "mip_gap": 0.02})
    assert plain == "time limit after 30.00 s: best schedule found, not proven optimal, MIP gap 2.00 %"


def test_solver_line_lists_the_phases_in_the_order_they_run():
    """A saved schedule's JSON sorts its keys, so ``phases_s`` comes back alphabetical: the line still lists them
    in the order cpsat runs them (model, heuristics, bounds, decomposition, ..., schedule), any other after."""
    st = {"status": "optimal", "total_time_s": 1.0, "solve_time_s": 0.5, "variables": 1, "constraints": 1,
          "phases_s": {"bounds_s": 0.1, "custom_s": 0.2, "decomposition_s": 0.3, "heuristics_s": 0.2,
                       "model_s": 0.1, "schedule_s": 0.1}}
    line = solver_line(st)
    assert "(model 0.10, heuristics 0.20, bounds 0.10, decomposition 0.30, schedule 0.10, custom 0.20 s" in line
