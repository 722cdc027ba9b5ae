"""Function-preserving neuron reordering (hetsim.snn.reorder, SpikeDuet Sec. III-C).

Random networks use weights, biases and thresholds on a coarse binary grid (multiples of 1/64, |w| < 4), so
every affine sum is exact in float32 and in float64: the recorded rasters (float32 replay) equal the exact
replay, and ``W' s'`` equals ``W s`` bit for bit in any column order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsim.devices.efr32 import MemoryCycles, Mvp, max_merged_gap
from hetsim.errors import InputError, WorkloadError
from hetsim.platform import load_platform
from hetsim.snn.activity import range_counts
from hetsim.snn.network import make_snn, replay
from hetsim.snn.reorder import (
    _SwapSearch,
    cluster_order,
    coactivity,
    order_cost,
    permute_network,
    refine_order,
    reorder,
    reorder_layer,
    verify_permutation,
)
from hetsim.snn.report import format_reorder

ROOT = Path(__file__).resolve().parent.parent
GRID = 64.0


@pytest.fixture(scope="module")
def mvp() -> Mvp:
    return load_platform(ROOT / "platforms" / "efr32mg24.yaml").devices["mvp"]


def small_mvp(launch: float = 10.0, elem: float = 1.0, merge: bool = True) -> Mvp:
    """An MVP whose launches cost a few columns, so that tiny layers have small merged gaps."""
    return Mvp(name="mvp", clock_mhz=39, call_cycles=0, launch_cycles=launch, col_cycles=0,
               elem_cycles=MemoryCycles(sram=elem, flash=2 * elem), merge_gaps=merge)


def grid(rng: np.random.Generator, shape, scale: float) -> np.ndarray:
    return np.clip(np.round(rng.normal(0, scale, shape) * GRID) / GRID, -3.9, 3.9).astype(np.float32)


def random_net(seed: int, widths: list[int], T: int, samples: int = 4, density: float = 0.4):
    """A random LIF network (per-neuron biases, betas, thresholds) with train/val activity from its replay."""
    rng = np.random.default_rng(seed)
    ws = [grid(rng, (n, m), 1.2 / np.sqrt(m * 0.4) + 0.2) for m, n in zip(widths[:-1], widths[1:], strict=True)]
    bs = [grid(rng, n, 0.2) for n in widths[1:]]
    beta = [(rng.integers(32, 65, n) / 64).astype(np.float32) for n in widths[1:]]
    thr = [(rng.integers(32, 97, n) / 64).astype(np.float32) for n in widths[1:]]
    snn = make_snn(ws, name="rand", biases=bs, beta=beta, threshold=thr)
    activity = {}
    for split in ("train", "val"):
        x = rng.random((samples, T, widths[0])) < density
        r = replay(snn, x)
        activity[split] = [x] + r.spikes
    return make_snn(ws, name="rand", biases=bs, beta=beta, threshold=thr, activity=activity)


nets = st.builds(
    lambda seed, widths, T, samples: (seed, widths, T, samples),
    st.integers(0, 2**31 - 1),
    st.lists(st.integers(3, 20), min_size=3, max_size=4),       # input + 2-3 LIF layers
    st.integers(3, 10),
    st.integers(1, 5),
)


# ----------------------------------------------------------------------------- function preservation

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nets, st.integers(0, 2**31 - 1))
def test_random_permutations_preserve_function(net, pseed):
    seed, widths, T, samples = net
    snn = random_net(seed, widths, T, samples)
    rng = np.random.default_rng(pseed)
    perms = {layer: rng.permutation(widths[layer]) for layer in range(1, len(widths) - 1)}
    new = permute_network(snn, perms)
    ver = verify_permutation(snn, new, perms)
    assert ver.ok, ver
    assert all(c.recorded_baseline == 0 for c in ver.splits.values())
    x = snn.activity["val"][0]
    a, b = replay(snn, x, exact_sums=True), replay(new, x, exact_sums=True)
    for layer in range(1, len(widths)):
        want = a.spikes[layer - 1][..., perms[layer]] if layer in perms else a.spikes[layer - 1]
        assert np.array_equal(b.spikes[layer - 1], want)
        assert np.array_equal(new.activity["val"][layer], want)
    assert np.array_equal(a.membrane_out, b.membrane_out)
    assert np.array_equal(a.prediction, b.prediction)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nets, st.sampled_from([(10.0, True), (30.0, True), (10.0, False)]))
def test_reorder_preserves_function_and_never_costs_more(net, mvp_args):
    seed, widths, T, samples = net
    snn = random_net(seed, widths, T, samples)
    m = small_mvp(launch=mvp_args[0], merge=mvp_args[1])
    res = reorder(snn, m, seed=seed)
    assert res.verification.ok, res.verification
    assert sorted(res.perms) == list(range(1, len(widths) - 1))
    for s in res.layers:
        assert s.fit_cost_after <= s.fit_cost_cluster + 1e-9
        assert s.fit_cost_after <= s.fit_cost_before + 1e-9
        # the reported fit cost is the real one of the returned order
        fit = snn.activity["train"][s.layer]
        assert s.fit_cost_after == pytest.approx(
            order_cost(fit, res.perms[s.layer], s.launch_cycles, s.column_cycles, s.max_gap), rel=1e-12)
        assert s.max_gap == max_merged_gap(m.launch_cycles, m.column_cycles(widths[s.layer + 1], "sram"),
                                           m.merge_gaps)
    x = snn.activity["val"][0]
    assert np.array_equal(replay(snn, x).prediction, replay(res.snn, x).prediction)


# ----------------------------------------------------------------------------- the cost model of the search

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_swap_deltas_match_range_counts(seed):
    """The incremental swap deltas and updates equal recomputing ``range_counts`` from scratch."""
    rng = np.random.default_rng(seed)
    m, U = int(rng.integers(2, 12)), int(rng.integers(1, 12))
    M = rng.random((U, m)) < rng.uniform(0.05, 0.7)
    w = rng.integers(1, 4, U).astype(float)
    c_l, c_p, g = rng.uniform(1, 50), rng.uniform(0.5, 10), int(rng.integers(0, 14))

    def full(a):
        nl, npr = range_counts(a, g)
        return float(w @ (c_l * nl + c_p * npr))

    s = _SwapSearch(M.copy(), w, c_l, c_p, g)
    for _ in range(4):
        assert s.total() + c_p * float(w @ s.M.sum(axis=1)) == pytest.approx(full(s.M), abs=1e-6)
        i = int(rng.integers(m))
        d = s.deltas(i)
        for j in range(m):
            a = s.M.copy()
            a[:, [i, j]] = a[:, [j, i]]
            assert d[j] == pytest.approx(full(a) - full(s.M), abs=1e-6)
        s.swap(i, int(rng.integers(m)))
        fresh = _SwapSearch(s.M.copy(), w, c_l, c_p, g)
        assert np.array_equal(fresh.prev, s.prev) and np.array_equal(fresh.nxt, s.nxt)
        assert np.allclose(fresh.E, s.E) and np.allclose(fresh.col_rem, s.col_rem)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(0, 6))
def test_refined_cost_not_above_clustering_or_original(seed, max_gap):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 25))
    a = rng.random((int(rng.integers(1, 6)), int(rng.integers(1, 8)), n)) < rng.uniform(0.05, 0.5)
    a[..., rng.random(n) < 0.2] = False                      # some silent neurons
    c_l, c_p = 10.0, float(rng.uniform(1, 6))
    ident = np.arange(n)
    cl = cluster_order(a)
    assert sorted(cl) == list(range(n))
    silent = ~a.reshape(-1, n).any(axis=0)
    assert silent[cl].tolist() == sorted(silent[cl].tolist())  # silent neurons last
    ref, info = refine_order(a, cl, c_l, c_p, max_gap, seed=seed)
    assert info.cost_before == pytest.approx(order_cost(a, cl, c_l, c_p, max_gap))
    assert info.cost_after == pytest.approx(order_cost(a, ref, c_l, c_p, max_gap))
    assert order_cost(a, ref, c_l, c_p, max_gap) <= order_cost(a, cl, c_l, c_p, max_gap) + 1e-9
    # from the original order, silent neurons interleaved with firing ones
    ref_id, info_id = refine_order(a, ident, c_l, c_p, max_gap, seed=seed)
    assert sorted(ref_id) == list(range(n))
    assert info_id.cost_after == pytest.approx(order_cost(a, ref_id, c_l, c_p, max_gap))
    assert info_id.cost_after <= order_cost(a, ident, c_l, c_p, max_gap) + 1e-9
    p, st_ = reorder_layer(a, c_l, c_p, max_gap, seed=seed)
    cost = order_cost(a, p, c_l, c_p, max_gap)
    assert cost == st_["cost_after"]
    assert cost <= order_cost(a, cl, c_l, c_p, max_gap) + 1e-9
    assert cost <= order_cost(a, ident, c_l, c_p, max_gap) + 1e-9
    # deterministic given the seed
    assert np.array_equal(reorder_layer(a, c_l, c_p, max_gap, seed=seed)[0], p)


def test_coactivity():
    a = np.array([[[1, 1, 0], [1, 0, 0], [0, 0, 0], [1, 1, 0]]], bool)
    c = coactivity(a)
    assert c.shape == (3, 3)
    assert np.allclose(np.diag(c), [0.75, 0.5, 0.0])
    assert c[0, 1] == c[1, 0] == 0.5 and c[0, 2] == 0.0


# ----------------------------------------------------------------------------- hand-checked optimum

def test_interleaved_groups_become_contiguous():
    """Hidden neurons 0, 2, 4, 6 copy input 0 and 1, 3, 5, 7 copy input 1 (identical currents, so each group
    fires together). In the original, interleaved order an input-0-only timestep costs 4 launches without gap
    merging; any order with contiguous groups needs exactly 1 launch per timestep with a spike."""
    n = 8
    w1 = np.zeros((n, 2), np.float32)
    w1[0::2, 0] = 2.0
    w1[1::2, 1] = 2.0
    w2 = np.array([[1, -1] * 4, [-1, 1] * 4], np.float32) / 4
    rng = np.random.default_rng(3)
    x = {s: rng.random((6, 12, 2)) < 0.4 for s in ("train", "val")}
    base = make_snn([w1, w2], name="groups", beta=0.5, threshold=1.0)
    act = {s: [v] + replay(base, v).spikes for s, v in x.items()}
    snn = make_snn([w1, w2], name="groups", beta=0.5, threshold=1.0, activity=act)
    h = act["val"][1].reshape(-1, n)
    assert (h[:, 0::2] == h[:, [0]]).all() and (h[:, 1::2] == h[:, [1]]).all()
    only = (h[:, 0] ^ h[:, 1]).mean()
    both = (h[:, 0] & h[:, 1]).mean()
    assert only > 0 and both > 0

    m = small_mvp(launch=10.0, merge=False)                  # max_gap 0: every gap is a new launch
    res = reorder(snn, m)
    s = res.layers[0]
    assert s.max_gap == 0
    assert s.plan_launches_before == pytest.approx(4 * only + both)
    assert s.plan_launches_after == pytest.approx(only + both)  # one launch per timestep with a spike
    p = res.perms[1]
    assert {frozenset(p[:4] % 2), frozenset(p[4:] % 2)} == {frozenset({0}), frozenset({1})}
    assert res.verification.ok
    text = format_reorder(res)
    assert f"{4 * only + both:.2f} -> {only + both:.2f}" in text and "function preserved" in text


# ----------------------------------------------------------------------------- permute_network

def test_permute_network_rows_and_columns_consistent():
    snn = random_net(7, [6, 9, 8, 3], T=5)
    rng = np.random.default_rng(1)
    perms = {1: rng.permutation(9), 2: rng.permutation(8)}
    before = [w.copy() for w in snn.weights]
    new = permute_network(snn, perms)
    p1, p2 = perms[1], perms[2]
    assert np.array_equal(new.weights[0], snn.weights[0][p1])
    assert np.array_equal(new.weights[1], snn.weights[1][p2][:, p1])
    assert np.array_equal(new.weights[2], snn.weights[2][:, p2])
    for attr in ("biases", "beta", "threshold"):
        assert np.array_equal(getattr(new, attr)[0], getattr(snn, attr)[0][p1])
        assert np.array_equal(getattr(new, attr)[1], getattr(snn, attr)[1][p2])
        assert np.array_equal(getattr(new, attr)[2], getattr(snn, attr)[2])
    for w, b in zip(snn.weights, before, strict=True):            # the original is untouched
        assert np.array_equal(w, b)
    # W_{l+1}' s' == W_{l+1} s exactly (float64), for every recorded spike vector of layer 1
    s = snn.activity["train"][1].reshape(-1, 9).astype(np.float64)
    s_new = new.activity["train"][1].reshape(-1, 9).astype(np.float64)
    assert np.array_equal(s_new, s[:, p1])
    w3 = snn.weights[2].astype(np.float64)
    assert np.array_equal(snn.weights[2][:, p2].astype(np.float64), new.weights[2].astype(np.float64))
    assert np.array_equal((snn.weights[1].astype(np.float64) @ s.T)[p2],
                          new.weights[1].astype(np.float64) @ s_new.T)
    s2 = snn.activity["train"][2].reshape(-1, 8).astype(np.float64)
    assert np.array_equal(w3 @ s2.T, new.weights[2].astype(np.float64) @ s2[:, p2].T)
    assert np.array_equal(new.activity["val"][0], snn.activity["val"][0])
    assert np.array_equal(new.activity["val"][3], snn.activity["val"][3])


def test_a_wrong_permutation_is_detected():
    snn = random_net(11, [5, 12, 4], T=6, samples=5)
    p = np.random.default_rng(0).permutation(12)
    new = permute_network(snn, {1: p})
    bad = new.replace(weights=[new.weights[0], snn.weights[1]])   # W_2 columns not permuted
    ver = verify_permutation(snn, bad, {1: p})
    assert not ver.ok and ver.mismatches > 0
    assert "CHANGED" in str(ver)


def test_errors():
    snn = random_net(5, [4, 6, 3], T=4)
    with pytest.raises(WorkloadError, match="hidden"):
        permute_network(snn, {2: np.arange(3)})
    with pytest.raises(WorkloadError, match="hidden"):
        permute_network(snn, {0: np.arange(4)})
    with pytest.raises(WorkloadError, match="permutation"):
        permute_network(snn, {1: np.array([0, 1, 2, 3, 4, 4])})
    with pytest.raises(WorkloadError, match="hidden"):
        reorder(snn, small_mvp(), layers=[2])
    with pytest.raises(InputError, match="residency"):
        reorder(snn, small_mvp(), residency="flash+hot")
    with pytest.raises(InputError, match="MVP"):
        reorder(snn, object())
    with pytest.raises(WorkloadError, match="activity"):
        reorder(snn.replace(activity={}), small_mvp())
    with pytest.raises(WorkloadError, match="split"):
        reorder(snn.replace(activity={"val": snn.activity["val"]}), small_mvp())


# ----------------------------------------------------------------------------- a trained network

def test_braille192(mvp):
    from hetsim.snn.network import load_snn

    snn = load_snn(ROOT / "workloads" / "snn" / "braille192.yaml")
    res = reorder(snn, mvp, max_passes=1)
    assert [s.layer for s in res.layers] == [1, 2]
    for s in res.layers:
        assert s.plan_launches_after <= s.plan_launches_before
        assert s.fit_cost_after <= min(s.fit_cost_before, s.fit_cost_cluster)
        # the reported plan statistics are those of the permuted network's rasters
        nl, _ = range_counts(res.snn.activity["val"][s.layer], s.max_gap)
        assert s.plan_launches_after == pytest.approx(nl.mean())
    assert res.layers[0].plan_launches_after < res.layers[0].plan_launches_before
    assert res.verification.ok
    assert sorted(res.verification.splits) == ["test", "train", "val"]
    for c in res.verification.splits.values():
        assert (c.spikes, c.membrane, c.predictions, c.recorded, c.recorded_baseline) == (0, 0, 0, 0, 0)
    assert len(res.table()) == 2
    assert res.summary()["verification"]["ok"] is True
