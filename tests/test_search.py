"""``hetsim search`` (ODiMO's DNAS): the cost regulariser is the simulator's DIANA model, the quantisers, the
function-preserving reordering, and a tiny end-to-end search whose export replays.

torch is an optional extra: these tests skip without it (CI installs it, so they run there).
"""

from __future__ import annotations

import csv
import json
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from diana_helpers import DIANA_YAML, diana  # noqa: E402

from hetsim.cli import main  # noqa: E402
from hetsim.costs import CostModel  # noqa: E402
from hetsim.errors import InputError  # noqa: E402
from hetsim.mappers.min_cost import part_seconds  # noqa: E402
from hetsim.search import search  # noqa: E402
from hetsim.search.cost import TORCH_OPS, Regulariser, onnx_bytes  # noqa: E402
from hetsim.search.nets import AIMC, DIGITAL, build, fake_quant_weight  # noqa: E402
from hetsim.search.run import Recipe, reorder  # noqa: E402
from hetsim.workload import load_onnx  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def folded(tmp_path_factory):
    """The digits network (random weights, BatchNorm folded) on DIANA at 16x16, with its regulariser."""
    torch.manual_seed(0)
    net = build("digits-resnet")
    for _, m in net.qlayers():
        m.fold_bn()
    p = tmp_path_factory.mktemp("net") / "net.onnx"
    p.write_bytes(onnx_bytes(net, (1, 1, 16, 16)))
    costs = CostModel(load_onnx(p), diana())
    return net, costs


@pytest.mark.parametrize("objective", ["latency", "energy"])
def test_torch_cost_equals_the_simulators_layer_cost(folded, objective):
    net, costs = folded
    reg = Regulariser(net, costs, objective)
    assert len(reg.layers) == 7  # 6 Conv + the FC
    checked = 0
    for lc in reg.layers:
        c = lc.layer.c_out
        for n_d in sorted({0, 1, 5, c // 2, c - 1, c}):
            t_d = part_seconds(costs, lc.op, reg.digital, n_d)
            t_a = part_seconds(costs, lc.op, reg.aimc, c - n_d)
            want = max(t_d, t_a) if objective == "latency" else costs.layer_energy({reg.digital: t_d, reg.aimc: t_a})
            got = reg.layer_cost(lc, torch.tensor(float(n_d), dtype=torch.float64),
                                 torch.tensor(float(c - n_d), dtype=torch.float64), exact=True)
            assert float(got) == pytest.approx(want, rel=1e-12, abs=1e-24), (lc.op, n_d)
            checked += 1
    assert checked >= 30
    # the whole network at all-8bit is the sum of the layers' digital latencies / energies
    all8 = sum(costs.part_latency(lc.op, reg.digital, lc.layer.c_out) for lc in reg.layers)
    if objective == "latency":
        assert reg.reference == pytest.approx(all8, rel=1e-12)


def test_relaxed_cost_is_differentiable_in_alpha(folded):
    net, costs = folded
    reg = Regulariser(net, costs, "energy")
    net.set_mode("search", act_bits=7)
    for _, m in net.qlayers():
        m.alpha.grad = None
    reg.loss().backward()
    grads = [m.alpha.grad for _, m in net.qlayers()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(float(g.abs().sum()) > 0 for g in grads)
    # at alpha = 0 (equal shares) the relaxed cost is of the order of all-8bit's (a near-even split costs energy)
    assert 0 < reg.relative() < 1.5
    assert float(reg.loss()) == pytest.approx(reg.relative() * reg.reference * reg.unit, rel=1e-9)  # mW x cycles


def test_fake_quantisation_formats():
    torch.manual_seed(1)
    w = torch.randn(4, 3, 3, 3)
    t = fake_quant_weight(w, torch.log(0.5 * torch.ones(4)), 2)
    for c in range(4):  # ternary: {-s, 0, s} per channel
        assert set(torch.unique(t[c]).tolist()) <= {-0.5, 0.0, 0.5}
    q = fake_quant_weight(w, torch.log(w.abs().max()).view(1), 8)
    steps = q / (w.abs().max() / 127)
    assert torch.allclose(steps, torch.round(steps), atol=1e-4)  # on the 8-bit grid
    assert float((q - w).abs().max()) <= float(w.abs().max()) / 127 / 2 + 1e-6


def test_reordering_preserves_the_function(folded):
    net, _ = folded
    torch.manual_seed(2)
    for _, m in net.qlayers():
        if m.searchable:
            m.assign.copy_(torch.randint(0, 2, (m.c_out,)))
    net.set_mode("fixed", act_bits=8)
    net.eval()
    x = torch.rand(8, 1, 16, 16)
    before = net(x)
    moved = reorder(net)
    after = net(x)
    assert moved == 2  # the two blocks' first convs
    assert torch.allclose(before, after, atol=1e-5)
    for prod, _ in net.chains():  # digital channels first, then AIMC: one block each
        a = prod.assign.tolist()
        assert a == sorted(a) and a.count(DIGITAL) + a.count(AIMC) == prod.c_out


def test_tiny_search_end_to_end_replays(tmp_path, capsys):
    out = tmp_path / "s"
    recipe = Recipe(warmup_epochs=1, search_epochs=1, finetune_epochs=1, max_batches=2, batch_size=32)
    r = search(DIANA_YAML, dataset="digits", objective="latency", strengths=[1.0], out=out, recipe=recipe,
               baselines=("all-8bit", "min-cost"), quiet=True, limit=64)
    names = [p["name"] for p in r["points"]]
    assert names == ["lambda_1", "all-8bit", "min-cost"]
    rows = list(csv.DictReader((out / "pareto.csv").read_text().splitlines()))
    assert [row["name"] for row in rows] == names and any(row["pareto"] == "True" for row in rows)
    assert (out / "front.png").stat().st_size > 1000
    assert "64 train / 64 validation / 64 test" in r["dataset"]
    for p in r["points"]:
        # replayed by hetsim's CLI, as the docs say: the same latency the search reported (layer-sequential model;
        # the replay may only be faster, by overlapping independent layers)
        capsys.readouterr()
        assert main(["run", str(DIANA_YAML), str(out / p["onnx"]), "--mapper", "dnas-export", "--export",
                     str(out / p["export"]), "--json"]) == 0
        summ = json.loads(capsys.readouterr().out)
        assert summ["makespan_s"] == pytest.approx(p["replay_latency_s"], rel=1e-12)
        assert summ["channel_split"]["layer_sequential_latency_s"] == pytest.approx(p["model_latency_s"], rel=1e-9)
        assert summ["channel_split"]["layer_sequential_energy_j"] == pytest.approx(p["model_energy_j"], rel=1e-9)
        assert p["replay_latency_s"] <= p["model_latency_s"] * (1 + 1e-12)
        assert 0 <= p["test_accuracy"] <= 1 and math.isfinite(p["model_energy_j"])
    assert r["points"][1]["aimc_share"] == 0.0  # all-8bit
    # deterministic: the same seed and inputs give the same search
    again = search(DIANA_YAML, dataset="digits", objective="latency", strengths=[1.0], out=tmp_path / "s2",
                   recipe=recipe, baselines=(), quiet=True, limit=64)
    keys = ("test_accuracy", "val_accuracy", "model_latency_s", "model_energy_j", "aimc_share")
    assert [again["points"][0][k] for k in keys] == [r["points"][0][k] for k in keys]
    assert (tmp_path / "s2" / "lambda_1" / "export.json").read_text() == (out / "lambda_1" / "export.json").read_text()
    # replacing a search (force) removes the earlier points' files; a folder with a file of the user's stays
    (tmp_path / "s2" / "lambda_1" / "notes.txt").write_text("mine")
    third = search(DIANA_YAML, dataset="digits", objective="latency", strengths=[3.0], out=tmp_path / "s2",
                   recipe=recipe, baselines=(), quiet=True, limit=64, force=True)
    assert [p["name"] for p in third["points"]] == ["lambda_3"]
    assert sorted(f.name for f in (tmp_path / "s2" / "lambda_1").iterdir()) == ["notes.txt"]
    assert (tmp_path / "s2" / "lambda_3" / "export.json").exists()
    # the same search again is refused without --force, one line, exit 2
    assert main(["search", str(DIANA_YAML), "--out", str(out), "--quiet"]) == 2
    assert "pass --force" in capsys.readouterr().err


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    for argv, msg in [(["--strength", "a,b"], "comma-separated numbers"), (["--strength", "-1"], ">= 0"),
                      (["--epochs", "1,2"], "three integers"),
                      (["--strength", "1,1.0"], "lambda_1 would be written more than once"),
                      (["--strength", "0.1234561,0.1234562"], "distinct values"),
                      (["--data-root", str(tmp_path)], "is for --dataset cifar10")]:
        assert main(["search", str(DIANA_YAML), "--out", str(tmp_path / "x"), *argv]) == 2
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1
    for argv in (["--temperature", "0"], ["--preset", "big"], ["--smooth-max", "max"]):
        with pytest.raises(SystemExit) as e:
            main(["search", str(DIANA_YAML), "--out", str(tmp_path / "x"), *argv])
        assert e.value.code == 2
        capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["search", str(DIANA_YAML), "--objective", "speed"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
    assert main(["search", str(DIANA_YAML.parent / "puma.yaml"), "--out", str(tmp_path / "y")]) == 2
    assert "channel-splitting accelerators" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()  # nothing written


def write_cifar(root, n_train: int = 8, n_test: int = 8, seed: int = 0):
    """A CIFAR-10 copy in the real python format (``cifar-10-batches-py/data_batch_1..5`` and ``test_batch``:
    pickled dicts of ``b"data"`` uint8 rows of 3072 bytes and ``b"labels"``), with random images."""
    import pickle

    import numpy as np

    rng = np.random.default_rng(seed)
    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        n = n_test if name == "test_batch" else n_train
        batch = {b"batch_label": name.encode(), b"labels": [int(v) for v in rng.integers(0, 10, n)],
                 b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                 b"filenames": [f"{name}_{i}.png".encode() for i in range(n)]}
        (d / name).write_bytes(pickle.dumps(batch, protocol=2))
    return d


def test_cifar10_batches_are_read_with_numpy(tmp_path):
    """CIFAR-10's own format, no torchvision: planes R, G, B of 32x32 in each 3072-byte row."""
    import numpy as np

    from hetsim.search.data import cifar10, read_cifar_batch

    d = write_cifar(tmp_path)
    x, y = read_cifar_batch(d / "test_batch")
    assert x.shape == (8, 3, 32, 32) and x.dtype == np.uint8 and y.shape == (8,)
    import pickle

    raw = pickle.loads((d / "test_batch").read_bytes())
    assert x[3, 1, 2, 5] == raw[b"data"][3, 1024 + 2 * 32 + 5]  # green plane, row 2, column 5
    s = cifar10(str(tmp_path), seed=0)
    assert s.num_classes == 10 and len(s.train[1]) + len(s.val[1]) == 40 and len(s.test[1]) == 8
    assert float(s.train[0].max()) <= 1.0 and s.input_shape == (1, 3, 32, 32)
    # a pickle that is not a batch cannot run code: refused with one line
    (d / "data_batch_2").write_bytes(pickle.dumps({"data": pathlib_object()}))
    with pytest.raises(InputError, match="not a CIFAR-10 python batch"):
        cifar10(str(tmp_path))
    with pytest.raises(InputError, match="no CIFAR-10 copy there"):
        cifar10(str(tmp_path / "elsewhere"))


def pathlib_object():
    from pathlib import PurePosixPath

    return PurePosixPath("/etc")


def test_cifar10_path(tmp_path, capsys):
    """``hetsim search --dataset cifar10`` end to end on a small CIFAR-format copy the test writes (ResNet-20)."""
    write_cifar(tmp_path / "data")
    recipe = Recipe(warmup_epochs=1, search_epochs=1, finetune_epochs=1, max_batches=1, batch_size=16)
    r = search(DIANA_YAML, dataset="cifar10", objective="energy", strengths=[1e-6], out=tmp_path / "c2",
               recipe=recipe, baselines=(), quiet=True, data_root=str(tmp_path / "data"), limit=16)
    assert r["model"] == "resnet20" and len(r["points"]) == 1 and r["dataset"].startswith("cifar10")
    p = r["points"][0]
    doc = json.loads((tmp_path / "c2" / p["export"]).read_text())
    assert len(doc["layers"]) == 22  # ResNet-20: 21 Conv + the FC, as workloads/resnet20_cifar10.onnx
    assert p["replay_latency_s"] <= p["model_latency_s"] * (1 + 1e-12)
    assert r["environment"]["torch"] == torch.__version__
    # the CLI's path to the same reader: a folder without the batches is one line, exit 2
    assert main(["search", str(DIANA_YAML), "--dataset", "cifar10", "--data-root", str(tmp_path),
                 "--out", str(tmp_path / "c3")]) == 2
    err = capsys.readouterr().err
    assert "no CIFAR-10 copy there" in err and len(err.strip().splitlines()) == 1


def test_search_settings_follow_the_odimo_code_by_default(folded):
    """Temperature 5, the softmax-weighted mean, lambda on cycles; hetsim's earlier choices as options."""
    from hetsim.search.recipe import Recipe as R
    from hetsim.search.recipe import default_strengths

    r = R()
    assert (r.tau, r.anneal, r.smooth_max, r.normalise) == (5.0, False, "softmax-mean", "none")
    assert default_strengths("all-8bit") == (0.1, 0.3, 1.0, 3.0)
    net, costs = folded
    reg = Regulariser(net, costs, "latency")
    lc = reg.layers[1]
    f = reg.dev_d.clock_mhz * 1e6
    # by hand: parts of 1000 and 1003 cycles -> weights softmax([1000, 1003]) = [0.0474, 0.9526]
    l_d, l_a = torch.tensor(1000.0 / f, dtype=torch.float64), torch.tensor(1003.0 / f, dtype=torch.float64)
    w = math.exp(3) / (1 + math.exp(3))
    reg.part_seconds = lambda lc, n_d, n_a: (l_d, l_a)
    m = float(reg.layer_cost(lc, None, None, exact=False)) * f
    assert m == pytest.approx(1000 * (1 - w) + 1003 * w, rel=1e-12)
    # energy: the span is L_d + L_a - softmin-mean (the code's smooth overlap)
    reg_e = Regulariser(net, costs, "energy")
    reg_e.part_seconds = lambda lc, n_d, n_a: (l_d, l_a)
    span = (1000 + 1003 - (1000 * w + 1003 * (1 - w))) / f
    want = costs.layer_energy({reg_e.digital: l_d, reg_e.aimc: l_a}, span_s=torch.tensor(span, dtype=torch.float64),
                              xp=TORCH_OPS)
    assert float(reg_e.layer_cost(lc, None, None, exact=False)) == pytest.approx(float(want), rel=1e-12)
    # lambda multiplies cycles (latency) or mW x cycles (energy), or the cost over all-8bit's
    assert reg.unit == f and reg_e.unit == 1e3 * f
    assert Regulariser(net, costs, "latency", normalise="all-8bit").unit == pytest.approx(1 / reg.reference)
    # the logsumexp option is the earlier form
    reg_l = Regulariser(net, costs, "latency", smooth_max="logsumexp")
    reg_l.part_seconds = lambda lc, n_d, n_a: (l_d, l_a)
    t = 0.02 * lc.ref_latency_s
    assert float(reg_l.layer_cost(lc, None, None, exact=False)) == pytest.approx(
        t * math.log(math.exp(float(l_d) / t) + math.exp(float(l_a) / t)), rel=1e-9)


def test_annealing_lowers_the_temperature_per_search_epoch(folded):
    import copy

    from hetsim.search.data import digits
    from hetsim.search.recipe import ANNEAL_FACTOR
    from hetsim.search.run import _Progress, _train

    net = copy.deepcopy(folded[0])
    reg = Regulariser(net, folded[1], "latency")
    data = digits(0, 32)
    for anneal, want in ((False, 5.0), (True, 5.0 * math.exp(-0.045) ** 3)):
        recipe = Recipe(search_epochs=3, max_batches=1, batch_size=32, anneal=anneal, patience=10)
        net.set_mode("search", act_bits=7, tau=recipe.tau)
        with _Progress(True) as prog:
            assert _train(net, data, recipe, 3, 0, prog, "s", reg=reg, strength=1e-5, early_stop=True) == 3
        assert all(m.tau == pytest.approx(want, rel=1e-12) for _, m in net.qlayers())
    assert pytest.approx(math.exp(-0.045)) == ANNEAL_FACTOR


def test_without_torch_the_error_names_the_extra(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(InputError, match=r"pip install 'hetsim\[search\]'"):
        search(DIANA_YAML, out=tmp_path / "t", quiet=True)


def test_earlier_points_are_plain_folders_of_out(tmp_path):
    # --force deletes the replaced search's point files: only plain names inside --out qualify
    from hetsim.search.run import _earlier_points

    names = ["lambda_1", "all-8bit", "..", ".", "", "a/b", "../x", "c\\d", 7]
    (tmp_path / "search.json").write_text(json.dumps({"points": [{"name": n} for n in names]}))
    assert _earlier_points(tmp_path) == {"lambda_1", "all-8bit"}
    (tmp_path / "search.json").write_text("{not json")
    assert _earlier_points(tmp_path) == set()
    assert _earlier_points(tmp_path / "missing") == set()


def test_the_front_figure_leaves_the_callers_matplotlib_backend_alone(tmp_path):
    """``plot_front`` (called by the Python API's search too) draws on a Figure of its own: a notebook's or
    script's chosen backend is the same afterwards (it used to switch the process to Agg)."""
    import matplotlib

    from hetsim.search.run import Point, plot_front

    before = matplotlib.get_backend()
    matplotlib.use("svg")  # any backend that is not Agg, chosen by "the user"
    try:
        pts = [Point("all-8bit", "baseline", None, 0.9, 0.9, 1e-3, 1e-6, pareto=True),
               Point("s1", "search", 1.0, 0.85, 0.86, 5e-4, 6e-7, pareto=True)]
        plot_front(pts, "latency", tmp_path / "front.png", "t")
        assert matplotlib.get_backend() == "svg"
        assert (tmp_path / "front.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        matplotlib.use(before)
