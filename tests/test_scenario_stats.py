"""A scenario's statistics with their confidence: each test carries its own truth: the order-statistic ranks from
the binomial distribution summed by hand (``math.comb``), an idle periodic stream whose every latency is the
makespan, the Pollaczek-Khinchine M/D/1 mean latency, the t-interval of two replications worked by hand."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import host_op, make_platform

from hetsim.costs import CostModel
from hetsim.errors import InputError
from hetsim.numbers import format_value
from hetsim.scenario.report import format_scenario_report
from hetsim.scenario.run import run_scenario
from hetsim.scenario.spec import Scenario
from hetsim.scenario.stats import mean_ci, min_requests, quantile_ci, quantile_ranks, t_interval
from hetsim.workload import Workload

ROOT = Path(__file__).resolve().parents[1]


def _binomial_cdf(k: int, n: int, q: float) -> float:
    return sum(math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(k + 1))


def _ranks_by_hand(n: int, q: float) -> tuple[int, int] | None:
    """The equal-tailed 95 % ranks: l the smallest k with F(k) >= 0.025, u - 1 the smallest k with F(k) >= 0.975."""
    cdf = list(itertools.accumulate(math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(n + 1)))
    lo = next(k for k in range(n + 1) if cdf[k] >= 0.025)
    hi = next(k for k in range(n + 1) if cdf[k] >= 0.975) + 1
    return (lo, hi) if lo >= 1 and hi <= n else None


@pytest.mark.parametrize("n", [20, 100, 1000])
@pytest.mark.parametrize("q", [0.5, 0.99])
def test_order_statistic_ranks_match_the_binomial_by_hand(n, q):
    ranks = quantile_ranks(n, q)
    assert ranks == _ranks_by_hand(n, q)
    if ranks is not None:  # the interval's coverage F(u - 1) - F(l - 1) is at least 95 %
        lo, hi = ranks
        assert _binomial_cdf(hi - 1, n, q) - _binomial_cdf(lo - 1, n, q) >= 0.95


def test_order_statistic_ranks_of_the_textbook_cases():
    # the median of 20: the 6th and 15th values (the sign-test table's 95 % interval); p99 needs 368 requests
    assert quantile_ranks(20, 0.5) == (6, 15)
    assert quantile_ranks(100, 0.5) == (40, 61)
    assert quantile_ranks(1000, 0.99) == (983, 997)
    assert quantile_ranks(20, 0.99) is None and quantile_ranks(100, 0.99) is None  # the maximum is not enough
    # the upper rank fits the sample when q^n <= 0.025: 0.99^368 = 0.02476, 0.99^367 = 0.02501
    assert (min_requests(0.5), min_requests(0.95), min_requests(0.99)) == (6, 72, 368)
    assert quantile_ranks(367, 0.99) is None and quantile_ranks(368, 0.99) is not None
    x = np.arange(1.0, 21.0)[::-1]  # any order: the 6th and 15th smallest
    assert quantile_ci(x, 0.5) == (6.0, 15.0)
    with pytest.raises(ValueError):
        quantile_ranks(10, 1.0)


def test_t_interval_and_batch_means_by_hand():
    # two values a, b: mean (a + b) / 2, s = |a - b| / sqrt(2), half-width t(0.975, 1) s / sqrt(2) = 12.706 |a - b| / 2
    lo, hi = t_interval([1.0, 3.0])
    assert (lo + hi) / 2 == pytest.approx(2.0) and (hi - lo) / 2 == pytest.approx(12.7062047)
    assert t_interval([1.0]) is None and t_interval([1.0, None]) is None
    # 1..20 in 10 batches of 2: the batch means 1.5, 3.5, ..., 19.5 = 1.5 + 2 k, their s = 2 sqrt(var(0..9)) =
    # 2 sqrt(55 / 6); the half-width t(0.975, 9) s / sqrt(10), t(0.975, 9) = 2.2621572
    x = np.arange(1.0, 21.0)
    half = 2.2621572 * 2 * math.sqrt(55 / 6) / math.sqrt(10)
    assert mean_ci(x) == pytest.approx((10.5 - half, 10.5 + half))
    assert mean_ci(x[:19]) is None  # fewer than 2 per batch


def _scenario(streams: dict, **kw) -> Scenario:
    return Scenario.model_validate({"streams": {n: {"model": "unused.onnx", **s} for n, s in streams.items()}, **kw})


def _one_op(name: str = "one", n_out: int = 3000) -> Workload:
    return Workload.from_ops(name, [host_op("x", n_out)], [])


def test_an_idle_periodic_stream_has_intervals_collapsed_to_its_makespan():
    """Every request alone on the SoC: every latency is the makespan, so every interval is that value; with 400
    requests p99 is determined, with 50 p95 and p99 are not (marked in the table and the summary)."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    wl = _one_op()
    D = CostModel(wl, plat).latency["x"]["host"]
    sc = _scenario({"a": {"arrival": {"process": "periodic", "period_s": 3 * D}, "count": 400}}, mapper="all-host")
    r = run_scenario(plat, sc, workloads={"a": wl})
    row = r.summary["streams"][0]
    assert row["measured"] == 400
    for key in ("latency_mean_ci_s", "latency_p50_ci_s", "latency_p95_ci_s", "latency_p99_ci_s"):
        assert row[key] == pytest.approx([D, D], rel=1e-9), key
    assert row["latency_p99_determined"] and "p99 not determined" not in format_scenario_report(r)

    sc = _scenario({"a": {"arrival": {"process": "periodic", "period_s": 3 * D}, "count": 50}}, mapper="all-host")
    r = run_scenario(plat, sc, workloads={"a": wl})
    row = json.loads(json.dumps(r.summary, allow_nan=False))["streams"][0]
    assert row["latency_p99_s"] == pytest.approx(D) and row["latency_p99_ci_s"] is None
    assert row["latency_p99_determined"] is False and row["latency_p95_determined"] is False
    assert row["latency_p50_determined"] is True and row["latency_mean_ci_s"] == pytest.approx([D, D])
    text = format_scenario_report(r)
    value, unit = format_value(D, "s").split()  # every latency column is D: one unit, one number of decimals
    assert f"{value}*" in text and f"(latency in {unit})" in text  # p95 and p99 marked, never printed as exact
    assert "* p99 not determined (a): fewer than 368 measured requests" in text
    assert "* p95 not determined (a): fewer than 72" in text and "p50 not determined" not in text
    assert "95% intervals" in format_scenario_report(r, verbose=True)


def test_md1_mean_latency_lies_inside_the_batch_means_interval_in_most_seeds():
    """Poisson arrivals of a one-op model on one single-core host (M/D/1, rho = 0.5): the mean latency is
    D + rho D / (2 (1 - rho)) (Pollaczek-Khinchine). The 95 % batch-means interval must hold it in at least 7 of 10
    seeds: at a true coverage of 95 % fewer than 7 happens with probability 0.1 % (binomial B(10, 0.95)); the
    seeds are fixed, so the test is deterministic."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    wl = _one_op()
    D = CostModel(wl, plat).latency["x"]["host"]
    rho = 0.5
    want = D + rho * D / (2 * (1 - rho))
    hits, widths = 0, []
    for seed in range(10):
        sc = _scenario({"p": {"arrival": {"process": "poisson", "rate_hz": rho / D}, "count": 2000, "warmup": 100}},
                       seed=seed, mapper="all-host")
        lo, hi = run_scenario(plat, sc, workloads={"p": wl}).summary["streams"][0]["latency_mean_ci_s"]
        hits += lo <= want <= hi
        widths.append((hi - lo) / want)
    assert hits >= 7, hits
    assert max(widths) < 0.4  # an interval narrow enough to mean something


def test_replications_give_the_t_interval_of_their_seeds_and_repeat_exactly():
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    wl = _one_op()
    D = CostModel(wl, plat).latency["x"]["host"]
    sc = _scenario({"p": {"arrival": {"process": "poisson", "rate_hz": 0.6 / D}, "count": 300}}, seed=5,
                   mapper="all-host")
    r = run_scenario(plat, sc, workloads={"p": wl}, replications=2)
    one = [run_scenario(plat, sc, workloads={"p": wl}, seed=s).streams.iloc[0] for s in (5, 6)]
    rep = r.summary["replications"]
    assert rep["count"] == 2 and rep["seeds"] == [5, 6]
    assert list(r.replications["seed"]) == [5, 6]
    for col in ("latency_mean_s", "latency_p50_s", "latency_p99_s", "throughput_hz"):
        a, b = (float(x[col]) for x in one)
        x = rep["streams"]["p"][col]
        assert x["values"] == [a, b]  # each replication is the run with its own seed
        assert x["mean"] == pytest.approx((a + b) / 2)
        assert (x["ci"][1] - x["ci"][0]) / 2 == pytest.approx(12.7062047 * abs(a - b) / 2)
    assert rep["streams"]["p"]["latency_p99_s"]["determined"] is False  # 300 requests < 368
    assert r.summary["streams"] == run_scenario(plat, sc, workloads={"p": wl}).summary["streams"]  # seed 5's
    again = run_scenario(plat, sc, workloads={"p": wl}, replications=2)
    assert json.dumps(again.summary["replications"]) == json.dumps(rep)  # same seed, same numbers
    text = format_scenario_report(r)
    assert "over 2 replications (seeds 5-6)" in text
    assert run_scenario(plat, sc, workloads={"p": wl}).replications is None
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError, match="replications"):
            run_scenario(plat, sc, workloads={"p": wl}, replications=bad)


def test_cli_replications_and_the_undetermined_percentile_in_the_files(tmp_path, capsys):
    from conftest import run_cli

    sc = tmp_path / "sc.yaml"
    sc.write_text(f"streams:\n  cls:\n    model: {ROOT / 'workloads' / 'resnet20_cifar10.onnx'}\n"
                  "    arrival: {process: poisson, rate_hz: 50}\n    count: 6\n")
    plat = str(ROOT / "platforms" / "puma.yaml")
    code, out, err = run_cli(capsys, "run", plat, str(sc), "--replications", "2", "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert "p99*" not in out.splitlines()[2]  # the header stays; the value is marked
    assert "* p99 not determined (cls): fewer than 368" in out and "over 2 replications" in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    row = summary["streams"][0]
    assert row["latency_p99_determined"] is False and row["latency_p99_ci_s"] is None and row["latency_p99_s"] > 0
    assert summary["replications"]["seeds"] == [0, 1]
    import pandas as pd

    assert "latency_p50_ci_s" in pd.read_csv(tmp_path / "out" / "streams.csv").columns
    with pytest.raises(SystemExit) as exc:  # argparse: one line, exit 2
        run_cli(capsys, "run", plat, str(sc), "--replications", "0")
    assert exc.value.code == 2 and "--replications: must be an integer >= 1" in capsys.readouterr().err
    code, out, err = run_cli(capsys, "run", plat, str(ROOT / "workloads" / "resnet20_cifar10.onnx"),
                             "--replications", "2")
    assert code == 2 and "--replications: for a scenario" in err and "Traceback" not in err
