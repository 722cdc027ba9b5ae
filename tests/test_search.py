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
from hetsim.search.cost import Regulariser, onnx_bytes  # noqa: E402
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
    # at alpha = 0 (equal shares) the relaxed cost lies between all-ternary-ish and all-8bit: below all-8bit here
    assert 0 < float(reg.loss()) < 1.5


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
    with pytest.raises(SystemExit) as e:
        main(["search", str(DIANA_YAML), "--objective", "speed"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
    assert main(["search", str(DIANA_YAML.parent / "puma.yaml"), "--out", str(tmp_path / "y")]) == 2
    assert "channel-splitting accelerators" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()  # nothing written


def test_cifar10_path(tmp_path):
    """ResNet-20 on CIFAR-shaped data: torchvision's FakeData when torchvision imports; otherwise the clear error
    for a real --data-root and the same path on an in-memory stand-in of FakeData (random 3x32x32 images)."""
    import numpy as np

    try:
        from torchvision.datasets import FakeData

        ds = (FakeData(32, (3, 32, 32), 10, random_offset=0), FakeData(16, (3, 32, 32), 10, random_offset=1))
    except Exception:  # torchvision missing, or not importable beside this torch
        with pytest.raises(InputError, match="needs torchvision"):
            search(DIANA_YAML, dataset="cifar10", data_root=str(tmp_path), out=tmp_path / "c", quiet=True)
        rng = np.random.default_rng(0)
        ds = tuple([(rng.random((3, 32, 32), dtype=np.float32), int(rng.integers(10))) for _ in range(n)]
                   for n in (32, 16))
    recipe = Recipe(warmup_epochs=1, search_epochs=1, finetune_epochs=1, max_batches=1, batch_size=16)
    r = search(DIANA_YAML, dataset="cifar10", objective="energy", strengths=[1.0], out=tmp_path / "c2",
               recipe=recipe, baselines=(), quiet=True, datasets=ds, limit=16)
    assert r["model"] == "resnet20" and len(r["points"]) == 1
    p = r["points"][0]
    doc = json.loads((tmp_path / "c2" / p["export"]).read_text())
    assert len(doc["layers"]) == 22  # ResNet-20: 21 Conv + the FC, as workloads/resnet20_cifar10.onnx
    assert p["replay_latency_s"] <= p["model_latency_s"] * (1 + 1e-12)


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
