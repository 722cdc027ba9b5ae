"""SNNs on the EFR32MG24 (SpikeDuet): cost models on hand-worked rasters, loading errors, bit-exact LIF replay,
blocking vs asynchronous schedules (vectorised evaluator == the one SimPy replay), and the exact planner vs
brute force."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hetsim.check import check_schedule
from hetsim.devices.efr32 import max_merged_gap, options
from hetsim.errors import MappingError, PlatformError, ScheduleError, WorkloadError
from hetsim.mappers import get_mapper
from hetsim.mappers.spikeduet import makespans, snn_schedule
from hetsim.platform import load_platform
from hetsim.schedule import Schedule
from hetsim.sim import simulate
from hetsim.snn.activity import range_counts
from hetsim.snn.activity_costs import ActivityCostModel, LayerChoice, LayerCosts, sram_budget_bytes
from hetsim.snn.network import load_snn, make_snn, replay, save_snn
from hetsim.snn.unroll import unroll

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = ROOT / "platforms" / "efr32mg24.yaml"
NETS = sorted((ROOT / "workloads" / "snn").glob("*.yaml"))


@pytest.fixture(scope="module")
def plat():
    return load_platform(PLATFORM)


def cost_model(snn, platform, split="plan") -> ActivityCostModel:
    return ActivityCostModel(unroll(snn), platform, split)


def plan(snn, platform, mapper="spikeduet", mode="async", costs=None, time_limit_s=None) -> Schedule:
    """The registered mapper's schedule (planned on the plan split)."""
    cm = costs if costs is not None else cost_model(snn, platform)
    return get_mapper(mapper, mode=mode, time_limit_s=time_limit_s).map(cm)


def choices_of(schedule: Schedule) -> list[LayerChoice]:
    return [LayerChoice.from_dict(x) for x in schedule.config["layers"]]


# ----------------------------------------------------------------------------- cost models, by hand
RASTER = np.array([[[1, 1, 0, 1, 0, 0, 0, 0, 1, 1],    # ranges 11 / 1 / 11, gaps 1 and 4
                    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],    # silent
                    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]]], dtype=bool)  # one full range


def test_range_counts_without_merging():
    n_l, n_p = range_counts(RASTER, max_gap=0)
    assert n_l.tolist() == [[3, 0, 1]]
    assert n_p.tolist() == [[5, 0, 10]]


def test_range_counts_with_gap_merging():
    # gap of 1 merges at max_gap >= 1; the gap of 4 only at max_gap >= 4
    assert [x.tolist() for x in range_counts(RASTER, 1)] == [[[2, 0, 1]], [[6, 0, 10]]]
    assert [x.tolist() for x in range_counts(RASTER, 3)] == [[[2, 0, 1]], [[6, 0, 10]]]
    assert [x.tolist() for x in range_counts(RASTER, 4)] == [[[1, 0, 1]], [[10, 0, 10]]]


def test_max_merged_gap_is_strictly_cheaper_than_a_launch():
    assert max_merged_gap(2510, 100) == 25        # 25 * 100 = 2500 < 2510, 26 * 100 > 2510
    assert max_merged_gap(2500, 100) == 24        # 25 * 100 = 2500 is not cheaper than 2500
    assert max_merged_gap(2510, 100, merge=False) == 0


def test_layer_costs_by_hand(plat):
    m33, mvp = plat.devices["m33"], plat.devices["mvp"]
    n_out = 4
    hot = np.array([0, 1, 9, 8, 3, 2, 4, 5, 6, 7])  # columns 0, 1, 9 hottest
    lc = LayerCosts.build(RASTER, n_out, m33, mvp, hot)
    # M33: 40 + N_act * 7.4 + n_out * (N_sram * 3.65 + N_flash * 5.0); N_act = 5, 0, 10
    np.testing.assert_allclose(lc.m33_cycles("sram")[0],
                               [40 + 5 * 7.4 + 4 * 5 * 3.65, 40, 40 + 10 * 7.4 + 4 * 10 * 3.65])
    np.testing.assert_allclose(lc.m33_cycles("flash")[0], [40 + 37 + 4 * 5 * 5.0, 40, 40 + 74 + 4 * 10 * 5.0])
    # 3 hot columns {0, 1, 9}: all three active at t=0 (of 5), all at t=2 (of 10)
    np.testing.assert_allclose(lc.m33_cycles("flash+hot", 3)[0],
                               [40 + 37 + 4 * (3 * 3.65 + 2 * 5.0), 40, 40 + 74 + 4 * (3 * 3.65 + 7 * 5.0)])
    # MVP, SRAM: C_P = 4 + 4 * 0.5 = 6 cycles, C_L = 2510 -> gaps up to 418 merge: one launch over 10 columns
    c_p = 4 + n_out * 0.5
    np.testing.assert_allclose(lc.mvp_range_cycles("sram")[0], [150 + 2510 + 10 * c_p, 150, 150 + 2510 + 10 * c_p])
    np.testing.assert_allclose(lc.mvp_dense_cycles("flash")[0], [150 + 2510 + 10 * (4 + 4 * 1.4)] * 3)


def test_range_cost_without_merging_counts_every_range(plat):
    mvp = plat.devices["mvp"].model_copy(update={"merge_gaps": False})
    lc = LayerCosts.build(RASTER, 4, plat.devices["m33"], mvp, np.arange(10))
    c_p = 4 + 4 * 0.5
    np.testing.assert_allclose(lc.mvp_range_cycles("sram")[0], [150 + 3 * 2510 + 5 * c_p, 150, 150 + 2510 + 10 * c_p])


def test_options_are_the_seven_engine_residency_pairs():
    assert len(options()) == 7
    assert ("mvp-range", "flash+hot") not in options()


# ----------------------------------------------------------------------------- loading, replay
@pytest.mark.parametrize("path", NETS, ids=[p.stem for p in NETS])
def test_replay_reproduces_recorded_rasters_bit_for_bit(path):
    snn = load_snn(path)
    for split, rasters in snn.activity.items():
        r = replay(snn, rasters[0])
        for layer, (got, want) in enumerate(zip(r.spikes, rasters[1:], strict=True), start=1):
            assert np.array_equal(got, want), f"{split} L{layer}: {(got != want).sum()} spikes differ"
        npz = path.parent / yaml.safe_load(path.read_text())["weights"]
        assert np.array_equal(r.prediction, np.load(npz)[f"pred_{split}"])


def _tiny_spec(tmp_path: Path, **arrays) -> Path:
    rng = np.random.default_rng(0)
    data = {"W1": rng.normal(size=(5, 3)).astype(np.float32), "W2": rng.normal(size=(2, 5)).astype(np.float32),
            "spk_train_L0": rng.random((4, 6, 3)) < 0.5, "spk_train_L1": rng.random((4, 6, 5)) < 0.5,
            "spk_train_L2": rng.random((4, 6, 2)) < 0.5}
    data.update(arrays)
    np.savez(tmp_path / "net.npz", **data)
    spec = {"name": "tiny", "layers": [3, 5, 2], "timesteps": 6, "weights": "net.npz", "activity": "net.npz",
            "splits": {"fit": "train", "plan": "train", "eval": "train"}}
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "net.yaml"


def test_raster_width_mismatch_is_a_clear_error(tmp_path):
    p = _tiny_spec(tmp_path, spk_train_L1=np.zeros((4, 6, 7), bool))
    with pytest.raises(WorkloadError, match="spk_train_L1 is 7 neurons wide but layer 1 has 5 neurons"):
        load_snn(p)


def test_timesteps_differing_between_layers_is_a_clear_error(tmp_path):
    p = _tiny_spec(tmp_path, spk_train_L2=np.zeros((4, 9, 2), bool))
    with pytest.raises(WorkloadError, match="spk_train_L2 has T = 9 timesteps but the other rasters have T = 6"):
        load_snn(p)


def test_spec_errors_name_the_field(tmp_path):
    p = _tiny_spec(tmp_path)
    spec = yaml.safe_load(p.read_text())
    spec["readout"] = "softmax"
    p.write_text(yaml.safe_dump(spec))
    with pytest.raises(WorkloadError, match="readout"):
        load_snn(p)
    spec["readout"], spec["timesteps"] = "spike_count", 7
    p.write_text(yaml.safe_dump(spec))
    with pytest.raises(WorkloadError, match="timesteps is 7 but the recorded rasters have T = 6"):
        load_snn(p)
    with pytest.raises(WorkloadError, match="does not exist"):
        load_snn(tmp_path / "missing.yaml")


def test_weights_that_do_not_chain_are_an_error():
    with pytest.raises(WorkloadError, match="W2 has 4 columns but layer 1 has 5 neurons"):
        make_snn([np.zeros((5, 3)), np.zeros((2, 4))])


def test_save_and_load_round_trip(tmp_path):
    snn = load_snn(NETS[0])
    save_snn(snn, tmp_path / "copy.yaml")
    again = load_snn(tmp_path / "copy.yaml")
    assert again.layer_sizes == snn.layer_sizes and again.timesteps == snn.timesteps
    assert all(np.array_equal(a, b) for a, b in zip(again.weights, snn.weights, strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(again.activity["val"], snn.activity["val"], strict=True))
    from hetsim.errors import OutputExistsError

    with pytest.raises(OutputExistsError):
        save_snn(snn, tmp_path / "copy.yaml")


# ----------------------------------------------------------------------------- schedules
def _random_net(L: int, T: int, seed: int):
    rng = np.random.default_rng(seed)
    sizes = [int(x) for x in rng.integers(2, 9, L + 1)]
    ws = [rng.normal(0, 1.5, (sizes[i + 1], sizes[i])).astype(np.float32) for i in range(L)]
    base = make_snn(ws, name="rand")
    act = {}
    for split in ("train", "val"):
        x = rng.random((2, T, sizes[0])) < 0.5
        act[split] = [x, *replay(base, x).spikes]
    return make_snn(ws, name="rand", activity=act)


@settings(max_examples=30, deadline=None)
@given(L=st.integers(1, 3), T=st.integers(1, 6), mvp_bits=st.integers(0, 7), dense_bits=st.integers(0, 7),
       seed=st.integers(0, 10**6), prog=st.sampled_from([0.0, 100.0, 3000.0]))
def test_evaluator_equals_simpy_and_async_never_slower(L, T, mvp_bits, dense_bits, seed, prog):
    """Any placement, with or without the host's cost of programming each MVP launch."""
    plat = load_platform(PLATFORM).with_overrides({"devices.m33.mvp_launch_cycles": prog})
    snn = _random_net(L, T, seed)
    cm = cost_model(snn, plat)
    choices = [LayerChoice(("mvp-dense" if dense_bits >> i & 1 else "mvp-range") if mvp_bits >> i & 1 else "m33",
                           "sram") for i in range(L)]
    fa, fb = makespans(cm, choices, "async"), makespans(cm, choices, "blocking")
    wl = cm.workload
    total = []
    for k in range(cm.samples):
        lat = {v: next(iter(d.values())) for v, d in cm.at_sample(k, choices).latency.items()}
        # one op at a time, except that the host programs an MVP layer's launches while they run
        overlap = sum(min(lat[f"program_{s.layer}[{s.t}]"], lat[v]) for v, s in wl.steps.items()
                      if s.kind == "affine" and choices[s.layer - 1].engine != "m33")
        total.append(sum(lat.values()) - overlap)
    np.testing.assert_allclose(fb, total, rtol=1e-12)      # blocking: the sum of every op but the overlap
    if prog == 0:
        assert all(d == {"m33": 0.0} for v, d in cm.at_sample(0, choices).latency.items() if v.startswith("program"))
    assert (fa <= fb + 1e-12).all()                          # async never slower
    for mode, want in (("async", fa), ("blocking", fb)):
        sched = snn_schedule(cm, choices, mode, "test")
        assert check_schedule(cm, sched).ok
        for k in range(cm.samples):
            r = simulate(cm.at_sample(k), sched)
            assert r.makespan_s == pytest.approx(want[k], rel=1e-12, abs=1e-15)
            assert set(r.trace["device"]) <= {"m33", "mvp"}   # the platform's device names
            tr = r.trace
            start = dict(zip(tr["op"], tr["start_s"], strict=True))
            end = dict(zip(tr["op"], tr["end_s"], strict=True))
            for u, v in wl.graph.edges:                      # every dependency finished before its consumer
                assert start[v] >= end[u] - 1e-12
            for _, g in tr.groupby("device"):                 # one op at a time per engine
                g = g.sort_values("start_s")
                assert (g["start_s"].to_numpy()[1:] >= g["end_s"].to_numpy()[:-1] - 1e-12).all()
            if mode == "blocking":  # one op at a time, in order, but the host programs launches while they run
                g = tr[~tr["op"].str.startswith("program")].sort_values("start_s")
                assert (g["start_s"].to_numpy()[1:] >= g["end_s"].to_numpy()[:-1] - 1e-12).all()


def test_schedule_round_trips_and_the_checker_enforces_the_memories(plat, tmp_path):
    snn = load_snn(ROOT / "workloads" / "snn" / "braille384.yaml")
    cm = cost_model(snn, plat, "eval")
    sched = plan(snn, plat, "spikeduet", "blocking", costs=cm)
    back = Schedule.from_json(sched.to_json())
    assert back.config == sched.config and back.after == sched.after and back.order == sched.order
    assert check_schedule(cm, back).ok
    # Linear1 (384x384) in SRAM on the M33 (576 KiB FP32) exceeds the 240 KiB budget
    bad = Schedule.from_json(sched.to_json())
    bad.config["layers"][1] = {"engine": "m33", "residency": "sram", "hot_columns": 0}
    for v, s in cm.workload.steps.items():
        if s.kind == "affine" and s.layer == 2:
            bad.parts[v] = back.parts["lif_1[0]"]
    bad.order = {}
    msgs = check_schedule(cm, bad).violations
    assert any("SRAM" in m for m in msgs)
    with pytest.raises(ScheduleError, match="SRAM"):
        simulate(cm.at_sample(0), bad)
    # an engine that disagrees with the device of the layer's ops is refused
    wrong = Schedule.from_json(sched.to_json())
    wrong.config["layers"] = [{"engine": "m33", "residency": "flash", "hot_columns": 0}] * 3
    assert any("not on" in m for m in check_schedule(cm, wrong).violations) == any(
        c.engine != "m33" for c in choices_of(sched))


@pytest.mark.parametrize("name", ["braille384", "braille64x64"])
def test_blocking_makespan_at_least_async_on_every_sample(plat, name):
    snn = load_snn(ROOT / "workloads" / "snn" / f"{name}.yaml")
    cm = cost_model(snn, plat, "eval")
    for mode in ("async", "blocking"):
        choices = choices_of(plan(snn, plat, "spikeduet", mode, costs=cm))
        a, b = makespans(cm, choices, "async"), makespans(cm, choices, "blocking")
        assert (b >= a - 1e-12).all()
        if any(c.engine != "m33" for c in choices):
            assert (b > a).all()  # the MVP overlaps M33 work on every sample
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12)  # the same work, summed in another order


# ----------------------------------------------------------------------------- planner vs brute force
def _small_net(seed=3):
    rng = np.random.default_rng(seed)
    sizes = [10, 24, 16, 5]
    ws = [rng.normal(0, 0.9, (sizes[i + 1], sizes[i])).astype(np.float32) for i in range(3)]
    base = make_snn(ws, name="small")
    act = {}
    for k, split in enumerate(("train", "val")):
        x = np.random.default_rng(seed + 10 + k).random((3, 6, sizes[0])) < 0.4
        act[split] = [x, *replay(base, x).spikes]
    return make_snn(ws, name="small", activity=act)


@pytest.mark.parametrize("mode", ["async", "blocking"])
@pytest.mark.parametrize("sram_kib", [256, 16.5])
def test_planner_equals_brute_force_and_respects_sram(plat, mode, sram_kib):
    p = plat.with_overrides({"memories.sram.size_kib": sram_kib})
    snn = _small_net()
    cm = cost_model(snn, p, "plan")
    budget = sram_budget_bytes(p)
    got = plan(snn, p, "spikeduet", mode, costs=cm)
    best, feasible = None, 0
    for combo in itertools.product(options(), repeat=3):
        table = sum(cm.layers[i].n_in * cm.layers[i].n_out * (4 if e == "m33" else 2)
                    for i, (e, r) in enumerate(combo) if r == "sram")
        if table > budget:
            assert cm.allocate(combo) is None
            continue
        feasible += 1
        choices, used = cm.allocate(combo)
        assert used <= budget
        sched = snn_schedule(cm, choices, mode, "brute-force")
        lat = np.mean([simulate(cm.at_sample(k), sched).makespan_s for k in range(cm.samples)])
        if best is None or lat < best - 1e-15:
            best = lat
    assert got.stats["fit"] == feasible
    assert got.stats["plan_mean_latency_s"] == pytest.approx(best, rel=1e-12)
    assert got.stats["sram_bytes"] <= budget
    if sram_kib < 100:
        assert feasible < 7**3  # the budget excluded some plans


def test_reserved_sram_beyond_the_memory_is_a_platform_error(plat):
    p = plat.with_overrides({"memories.sram.size_kib": 8})
    with pytest.raises(PlatformError, match="sram_reserved_kib"):
        sram_budget_bytes(p)


def test_baselines_use_one_engine(plat):
    snn = _small_net()
    assert {c.engine for c in choices_of(plan(snn, plat, "all-m33"))} == {"m33"}
    assert {c.engine for c in choices_of(plan(snn, plat, "all-dense-mvp"))} == {"mvp-dense"}
    assert set(plan(snn, plat, "all-dense-mvp").assignment.values()) == {"m33", "mvp"}  # LIF/readout on the host

    def lat(m):
        return plan(snn, plat, m).stats["plan_mean_latency_s"]

    sd = lat("spikeduet")
    assert sd <= lat("all-m33") + 1e-15
    assert sd <= lat("all-dense-mvp") + 1e-15


def test_input_only_activity_is_replayed(tmp_path):
    """An activity file with only spk_<split>_L0 gets its other layers from the LIF replay: on a recorded
    network they must equal the recorded rasters."""
    spec = yaml.safe_load((ROOT / "workloads" / "snn" / "braille64.yaml").read_text())
    z = np.load(ROOT / "workloads" / "snn" / spec["weights"])
    np.savez(tmp_path / "in.npz", W1=z["W1"], W2=z["W2"], spk_train_L0=z["spk_train_L0"], spk_val_L0=z["spk_val_L0"])
    spec.update(weights="in.npz", activity="in.npz", splits={"fit": "train", "plan": "val", "eval": "val"})
    (tmp_path / "in.yaml").write_text(yaml.safe_dump(spec))
    snn = load_snn(tmp_path / "in.yaml")
    for layer in range(3):
        assert np.array_equal(snn.activity["val"][layer], z[f"spk_val_L{layer}"])
    # a partial set (L0 and L2 but not L1) is an error, not a silent replay
    np.savez(tmp_path / "in.npz", W1=z["W1"], W2=z["W2"], spk_val_L0=z["spk_val_L0"], spk_val_L2=z["spk_val_L2"])
    with pytest.raises(WorkloadError, match="lacks spk_val_L1"):
        load_snn(tmp_path / "in.yaml")


def test_time_limit_returns_a_plan_with_an_honest_gap(plat):
    from hetsim.snn.synthetic import synthetic_snn

    snn = synthetic_snn([16] * 6, 8, density=0.2, samples=3, seed=1)   # 5 layers: 7^5 = 16,807 plans
    exact = plan(snn, plat, "spikeduet", "async")
    assert exact.stats["status"] == "optimal" and exact.stats["plans"] == 7**5
    quick = plan(snn, plat, "spikeduet", "async", time_limit_s=0.0)
    e, q = exact.stats["plan_mean_latency_s"], quick.stats["plan_mean_latency_s"]
    assert q >= e - 1e-15
    if quick.stats["status"] == "time_limit":
        assert 0 <= quick.stats["gap"] < 1
        # the gap bounds the distance to the optimum: best >= optimum >= best * (1 - gap)
        assert e >= q * (1 - quick.stats["gap"]) - 1e-15
    else:
        assert q == e


def test_flash_capacity_is_enforced(plat):
    snn = load_snn(ROOT / "workloads" / "snn" / "braille384.yaml")
    # Linear1 (384x384) fits neither SRAM (FP32 576 KiB, FP16 288 KiB > 240 KiB) nor a 100 KiB Flash
    small = plat.with_overrides({"memories.flash.size_kib": 100})
    with pytest.raises(MappingError, match="fits the 240 KiB SRAM budget and the Flash"):
        plan(snn, small, "all-m33")
    p = plan(snn, plat.with_overrides({"memories.flash.size_kib": 300}), "spikeduet", "blocking")
    flash = sum(lc.weight_bytes(c.engine) for lc, c in zip(cost_model(snn, plat).layers, choices_of(p), strict=True)
                if c.residency != "sram")
    assert flash <= 300 * 1024  # the FP32 table (576 KiB) cannot be the Flash-resident one


def test_a_second_mvp_is_refused(plat):
    data = plat.model_dump(mode="json", exclude_unset=True)
    data["devices"]["mvp2"] = dict(data["devices"]["mvp"])
    from hetsim.platform import Platform

    with pytest.raises(PlatformError, match="one 'mvp'"):
        sram_budget_bytes(Platform.model_validate(data))
