"""Loading SNN specs (hetsim.snn.network): bad input gives one clear WorkloadError naming the file or key and
what is allowed, never a raw numpy/Python exception; plus the default eval split, replay mismatches and
save_snn into new folders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from hetsim.errors import WorkloadError
from hetsim.snn.network import load_snn, make_snn, replay, replay_mismatches, save_snn
from hetsim.snn.synthetic import synthetic_snn

SIZES = [3, 5, 2]


def _net():
    rng = np.random.default_rng(0)
    return [rng.normal(size=(SIZES[i + 1], SIZES[i])).astype(np.float32) for i in range(len(SIZES) - 1)]


def _recorded(ws, split: str, samples: int = 4, T: int = 6, seed: int = 1) -> dict[str, np.ndarray]:
    """Rasters of every layer for ``split``, as the weights compute them."""
    x = np.random.default_rng(seed).random((samples, T, SIZES[0])) < 0.5
    spikes = replay(make_snn(ws), x).spikes
    return {f"spk_{split}_L{layer}": r for layer, r in enumerate([x, *spikes])}


def _spec(tmp_path: Path, arrays: dict | None = None, drop: tuple = (), **spec) -> Path:
    """A 3-5-2 network with a consistent recorded ``train`` split; ``arrays`` add or replace npz entries,
    ``drop`` removes them, ``spec`` overrides YAML fields (``None`` removes one)."""
    ws = _net()
    data = {"W1": ws[0], "W2": ws[1], **_recorded(ws, "train")}
    data.update(arrays or {})
    for k in drop:
        data.pop(k)
    np.savez(tmp_path / "net.npz", **data)
    doc = {"name": "tiny", "layers": SIZES, "timesteps": 6, "weights": "net.npz", "activity": "net.npz",
           "splits": {"fit": "train", "plan": "train", "eval": "train"}}
    doc.update(spec)
    doc = {k: v for k, v in doc.items() if v is not None}
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path / "net.yaml"


# 1
def test_zero_width_layers_are_rejected(tmp_path):
    with pytest.raises(WorkloadError, match=r"layers\.1: .*greater than or equal to 1"):
        load_snn(_spec(tmp_path, layers=[3, 0, 2]))
    with pytest.raises(WorkloadError, match=r"layers\.2: .*greater than or equal to 1"):
        load_snn(_spec(tmp_path, layers=[3, 5, -2]))
    with pytest.raises(WorkloadError, match=r"W1 has shape \(0, 3\); every layer needs at least 1 neuron"):
        make_snn([np.zeros((0, 3)), np.zeros((2, 0))])


# 2
def test_empty_rasters_are_rejected(tmp_path):
    no_samples = {f"spk_train_L{layer}": np.zeros((0, 6, n), bool) for layer, n in enumerate(SIZES)}
    with pytest.raises(WorkloadError, match=r"spk_train_L0 has shape \(0, 6, 3\).*at least 1 sample"):
        load_snn(_spec(tmp_path, no_samples))
    no_steps = {f"spk_train_L{layer}": np.zeros((4, 0, n), bool) for layer, n in enumerate(SIZES)}
    with pytest.raises(WorkloadError, match="at least 1 sample and 1 timestep"):
        load_snn(_spec(tmp_path, no_steps))
    # input-only splits are checked before the replay too
    with pytest.raises(WorkloadError, match="spk_train_L0 .*at least 1 sample"):
        load_snn(_spec(tmp_path, {"spk_train_L0": np.zeros((0, 6, 3), bool)}, drop=("spk_train_L1", "spk_train_L2")))


# 3
@pytest.mark.parametrize("key, value, match", [
    ("W2", lambda a: np.where(np.arange(a.size).reshape(a.shape) == 3, np.nan, a), r"W2: nan .*must be finite"),
    ("b1", lambda a: np.array([0, 0, np.inf, 0, 0], np.float32), r"b1: inf .*must be finite"),
    ("beta1", lambda a: np.array([0.9, 0.9, 1.5, 0.9, 0.9], np.float32), r"beta1: neuron 2 has 1.5; allowed: \(0, 1\]"),
    ("beta2", lambda a: np.array([0.5, 0.0], np.float32), r"beta2: neuron 1 has 0; allowed: \(0, 1\]"),
    ("beta2", lambda a: np.array([0.5, np.nan], np.float32), r"beta2: nan .*must be finite"),
    ("threshold2", lambda a: np.array([1.0, -1.0], np.float32), r"threshold2: neuron 1 has -1; allowed: > 0"),
])
def test_non_finite_or_out_of_range_parameters_are_rejected(tmp_path, key, value, match):
    base = _net()[1]
    p = _spec(tmp_path, {key: value(base)})
    with pytest.raises(WorkloadError, match=match) as err:
        load_snn(p)
    assert str(p) in str(err.value)


# 4
def test_non_bool_rasters_only_when_all_zero_or_one(tmp_path):
    ws = _net()
    rec = _recorded(ws, "train")
    snn = load_snn(_spec(tmp_path, {"spk_train_L1": rec["spk_train_L1"].astype(np.int8),
                                    "spk_train_L2": rec["spk_train_L2"].astype(np.float64)}))
    assert snn.activity["train"][1].dtype == bool
    assert np.array_equal(snn.activity["train"][2], rec["spk_train_L2"])
    bad = rec["spk_train_L1"].astype(np.float32)
    bad[1, 2, 3] = 0.5
    with pytest.raises(WorkloadError, match=r"spk_train_L1 holds 0\.5 at \[1, 2, 3\].*only 0 and 1"):
        load_snn(_spec(tmp_path, {"spk_train_L1": bad}))
    with pytest.raises(WorkloadError, match=r"spk_train_L0 holds 2 at"):
        load_snn(_spec(tmp_path, {"spk_train_L0": np.full((4, 6, 3), 2, np.int64)}))


# 5
def test_split_names_with_underscores_and_unrelated_spk_keys(tmp_path):
    rec = {k.replace("train", "my_train"): v for k, v in _recorded(_net(), "train").items()}
    p = _spec(tmp_path, {**rec, "spk_total": np.array(7), "spk_counts_L": np.zeros(3)},
              drop=("spk_train_L0", "spk_train_L1", "spk_train_L2"),
              splits={"fit": "my_train", "plan": "my_train", "eval": "my_train"})
    snn = load_snn(p)
    assert set(snn.activity) == {"my_train"}
    assert np.array_equal(snn.activity["my_train"][2], rec["spk_my_train_L2"])


# 6
def test_labels_are_kept_for_input_only_splits_and_must_match_samples(tmp_path):
    labels = np.array([0, 1, 1, 0], np.int8)
    drop = ("spk_train_L1", "spk_train_L2")
    snn = load_snn(_spec(tmp_path, {"labels_train": labels}, drop=drop))
    assert np.array_equal(snn.labels["train"], labels)
    with pytest.raises(WorkloadError, match=r"labels_train has shape \(3,\); expected one label per sample \(4,\)"):
        load_snn(_spec(tmp_path, {"labels_train": labels[:3]}, drop=drop))
    with pytest.raises(WorkloadError, match=r"labels_train has shape \(5,\)"):
        load_snn(_spec(tmp_path, {"labels_train": np.zeros(5, np.int64)}))


# 7
def test_classes_and_extra_weight_matrices_must_fit_the_layers(tmp_path):
    with pytest.raises(WorkloadError, match="classes has 3 names but the output layer .* has 2 neurons"):
        load_snn(_spec(tmp_path, classes=["a", "b", "c"]))
    assert load_snn(_spec(tmp_path, classes=["a", "b"])).classes == ["a", "b"]
    with pytest.raises(WorkloadError, match=r"has W3 but layers \[3, 5, 2\] has 2 LIF layers"):
        load_snn(_spec(tmp_path, {"W3": np.zeros((2, 2), np.float32)}))
    with pytest.raises(WorkloadError, match="classes has 1 names"):
        make_snn(_net(), classes=["a"])


# 8
def test_weights_folder_or_non_npz_file_is_named_as_such(tmp_path):
    with pytest.raises(WorkloadError, match="is a folder, not a .npz file"):
        load_snn(_spec(tmp_path, weights="."))
    (tmp_path / "notes.txt").write_text("W1 = [[1, 2, 3]]\n")
    for bad in ("notes.txt", "raw.npy"):
        np.save(tmp_path / "raw.npy", np.zeros(3))
        with pytest.raises(WorkloadError, match=r"is not a \.npz file") as err:
            load_snn(_spec(tmp_path, weights=bad, activity=None, splits=None))
        assert "allow_pickle" not in str(err.value) and bad in str(err.value)


# 9
def test_default_eval_split_is_test_when_recorded(tmp_path):
    ws = _net()
    three = {**_recorded(ws, "val", seed=2), **_recorded(ws, "test", seed=3)}
    snn = load_snn(_spec(tmp_path, three, splits=None))
    assert (snn.roles.fit, snn.roles.plan, snn.roles.eval) == ("train", "val", "test")
    snn = load_snn(_spec(tmp_path, _recorded(ws, "val", seed=2), splits=None))
    assert snn.roles.eval == "val"  # no test split: the plan split
    snn = load_snn(_spec(tmp_path, three, splits={"fit": "train", "plan": "val", "eval": "val"}))
    assert snn.roles.eval == "val"  # explicit roles are kept
    snn = load_snn(_spec(tmp_path, three, splits={"fit": "train", "plan": "train"}))
    assert snn.roles.eval == "test"


# 10
def test_replay_mismatches_counts_bits_the_weights_do_not_reproduce(tmp_path):
    rec = _recorded(_net(), "train")
    assert replay_mismatches(load_snn(_spec(tmp_path))) == {"train": 0}
    flipped = rec["spk_train_L1"].copy()
    flipped[0, 0, 0] ^= True
    flipped[3, 5, 4] ^= True
    assert replay_mismatches(load_snn(_spec(tmp_path, {"spk_train_L1": flipped}))) == {"train": 2}


# 11
def test_save_snn_creates_missing_folders(tmp_path):
    snn = load_snn(_spec(tmp_path))
    out = tmp_path / "new" / "deeper" / "copy.yaml"
    assert save_snn(snn, out) == [out, out.with_suffix(".npz")]
    again = load_snn(out)
    assert all(np.array_equal(a, b) for a, b in zip(again.activity["train"], snn.activity["train"], strict=True))


# 12
def test_synthetic_rejects_negative_seed():
    with pytest.raises(WorkloadError, match=r"seed must be an integer >= 0, got -1"):
        synthetic_snn([4, 3], 2, samples=2, seed=-1)


def test_weights_past_float32_or_that_would_overflow_its_replay_are_refused_in_one_line(tmp_path, capsys):
    """1e38 is finite in float32, so it had passed the check; the float32 replay then overflowed (a RuntimeWarning,
    then inf membranes and rasters that are not what the weights compute). 1e39 in a float64 file had been cast
    to inf with an 'overflow encountered in cast' warning before the error. Now: one error naming the file and
    the layer, no warning, exit code 2 from the command line."""
    import warnings

    from hetsim.cli import main

    root = Path(__file__).resolve().parents[1]
    big = _net()[0].copy()
    big[2, :] = 1e38  # neuron 2 of layer 1: 3e38 per timestep, past float32 over T = 6 timesteps
    wide = _net()[1].astype(np.float64)
    wide[1, 4] = 1e39
    cases = [
        ({"W1": big}, (), r"layer 1 \(W1\): neuron 2's \|weights\| \+ \|bias\| sum to 3e\+38, so over T = 6 timesteps "
                          r"its membrane could reach 1\.8e\+39; hetsim runs SNNs in float32 \(largest 3\.403e\+38\) "
                          r"and allows at most 8\.51e\+37 there"),
        # only the input recorded: refused before the replay that would overflow
        ({"W1": big}, ("spk_train_L1", "spk_train_L2"), r"layer 1 \(W1\): neuron 2's"),
        ({"W2": wide}, (), r"W2: 1e\+39 at index \[1, 4\]; beyond float32's range \(\|x\| <= 3\.403e\+38\)"),
    ]
    for arrays, drop, match in cases:
        p = _spec(tmp_path, arrays, drop=drop)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(WorkloadError, match=f"^{p}: {match}"):
                load_snn(p)
        capsys.readouterr()
        assert main(["run", str(root / "platforms/efr32mg24.yaml"), str(p)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(f"hetsim: error: {p}: "), err
    # the output layer's membrane is also summed over T by the readout: a bound T times larger
    out = _net()[1].copy()
    out[0, :] = 2e35  # 5 inputs: 1e36 per timestep, 6e36 over T, 3.6e37 summed over T - within float32
    assert load_snn(_spec(tmp_path, {"W2": out}, drop=("spk_train_L1", "spk_train_L2")))
    out[0, :] = 2e36  # 1e37 per timestep, 6e37 over T (fits), 3.6e38 summed over T: past float32
    with pytest.raises(WorkloadError, match=r"layer 2 \(W2\): neuron 0's .*membrane \(and the readout's sum of it "
                                            r"over T\) could reach 3\.6e\+38"):
        load_snn(_spec(tmp_path, {"W2": out}, drop=("spk_train_L1", "spk_train_L2")))
