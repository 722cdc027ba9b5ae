"""The ODiMO search driver: warm-up, search per strength, discretisation, reordering, fine-tuning, baselines,
exports, replay, Pareto front (``hetsim search``; :func:`hetsim.search.search` documents it)."""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from hetsim.analysis.metrics import summarize
from hetsim.costs import CostModel
from hetsim.files import atomic_write_bytes, atomic_write_text, make_dirs
from hetsim.mappers import get_mapper
from hetsim.mappers.dnas_export import HETSIM_FORMAT
from hetsim.platform import Platform
from hetsim.search.cost import Regulariser, onnx_bytes
from hetsim.search.data import Splits
from hetsim.search.nets import AIMC, DIGITAL, ResNet
from hetsim.search.recipe import ANNEAL_FACTOR, Recipe
from hetsim.sim import simulate
from hetsim.workload.frontends import load_workload

BASELINES = ("all-8bit", "all-ternary", "io8-backbone-ternary", "min-cost")


@dataclass
class Point:
    """One trained mapping: a searched strength or a baseline."""

    name: str
    kind: str  # "search" or "baseline"
    strength: float | None
    val_accuracy: float
    test_accuracy: float
    model_latency_s: float
    model_energy_j: float
    replay_latency_s: float = math.nan
    replay_energy_j: float = math.nan
    aimc_share: float = 0.0
    epochs: int = 0
    export: str = ""
    onnx: str = ""
    pareto: bool = False
    extra: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------- training


def _batches(x, y, bs, gen, max_batches):
    perm = torch.randperm(len(y), generator=gen)
    for n, i in enumerate(range(0, len(y), bs)):
        if max_batches is not None and n >= max_batches:
            return
        idx = perm[i:i + bs]
        yield x[idx], y[idx]


@torch.no_grad()
def evaluate(net: ResNet, data: tuple[torch.Tensor, torch.Tensor], bs: int = 512) -> tuple[float, float]:
    """``(accuracy, mean cross-entropy)`` of ``net`` on ``data``."""
    net.eval()
    x, y = data
    correct, loss = 0, 0.0
    for i in range(0, len(y), bs):
        out = net(x[i:i + bs])
        loss += float(F.cross_entropy(out, y[i:i + bs], reduction="sum"))
        correct += int((out.argmax(1) == y[i:i + bs]).sum())
    return correct / max(1, len(y)), loss / max(1, len(y))


class _Progress:
    """A rich progress bar per phase: one step per epoch, with loss, accuracy and estimated cost."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.bar = None

    def __enter__(self):
        if not self.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[info]}"), TimeElapsedColumn(), transient=False)
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def task(self, name: str, total: int):
        return None if self.bar is None else self.bar.add_task(name, total=total, info="")

    def step(self, task, info: str, done: bool = False):
        if self.bar is not None:
            if done:
                self.bar.update(task, total=self.bar.tasks[task].completed, info=info)
            else:
                self.bar.update(task, advance=1, info=info)


def _train(net: ResNet, data: Splits, recipe: Recipe, epochs: int, seed: int, progress: _Progress, label: str,
           reg: Regulariser | None = None, strength: float = 0.0, early_stop: bool = False) -> int:
    """Train ``net`` in its current mode; keep the state of the best validation score (accuracy, or with a
    regulariser the validation loss ``task + strength * L_R``). Returns the epochs run."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    alphas = [p for n, p in net.named_parameters() if n.endswith("alpha")]
    others = [p for n, p in net.named_parameters() if not n.endswith("alpha") and p.requires_grad]
    opt = torch.optim.Adam(others, lr=recipe.lr)
    opt_a = None
    if reg is not None:
        opt_a = (torch.optim.SGD(alphas, lr=recipe.alpha_lr, momentum=0.9) if recipe.alpha_optimizer == "sgd"
                 else torch.optim.Adam(alphas, lr=recipe.alpha_lr))
    best, best_state, since, run = -math.inf, None, 0, 0
    task = progress.task(label, epochs)
    for _ep in range(epochs):
        net.train()
        tot, n = 0.0, 0
        for xb, yb in _batches(*data.train, recipe.batch_size, gen, recipe.max_batches):
            loss = F.cross_entropy(net(xb), yb)
            if reg is not None:
                loss = loss + strength * reg.loss().float()
            opt.zero_grad()
            if opt_a is not None:
                opt_a.zero_grad()
            loss.backward()
            opt.step()
            if opt_a is not None:
                opt_a.step()
            tot, n = tot + float(loss.detach()) * len(yb), n + len(yb)
        run += 1
        acc, vloss = evaluate(net, data.val)
        info = f"loss {tot / max(1, n):.3f}  val acc {acc:.3f}"
        if reg is not None:
            with torch.no_grad():
                cost = float(reg.loss())
            score = -(vloss + strength * cost)
            info += f"  cost {reg.relative():.3f} x all-8bit"
            if recipe.anneal:  # the ODiMO code's --anneal-temp: after every search epoch
                for _, m in net.qlayers():
                    m.tau *= ANNEAL_FACTOR
        else:
            score = acc
        progress.step(task, info)
        if score > best:
            best, best_state, since = score, copy.deepcopy(net.state_dict()), 0
        else:
            since += 1
            if early_stop and since >= recipe.patience:
                break
    if best_state is not None:
        net.load_state_dict(best_state)
    progress.step(task, f"best {'val acc' if reg is None else 'val loss'} {abs(best):.3f}", done=True)
    return run


# -------------------------------------------------------------------------------------------- assignments


def discretise(net: ResNet) -> None:
    """Each channel on the accelerator of its largest alpha (ODiMO Sec. III-A; first on ties: digital)."""
    for _, m in net.qlayers():
        m.assign.copy_(torch.argmax(m.alpha, dim=0) if m.searchable else torch.zeros_like(m.assign))


@torch.no_grad()
def reorder(net: ResNet) -> int:
    """ODiMO Fig. 3: in every producer -> consumer chain of :meth:`ResNet.chains`, permute the producer's output
    channels so its digital channels come first (a stable sort) and the consumer's input channels to match; the
    network computes the same function. Returns the number of layers reordered."""
    n = 0
    for prod, cons in net.chains():
        perm = torch.argsort(prod.assign, stable=True)
        if bool((perm != torch.arange(len(perm))).any()):
            prod.permute_outputs(perm)
            cons.permute_inputs(perm)
            n += 1
    return n


def assign_from_schedule(net: ResNet, reg: Regulariser, schedule) -> None:
    """Set every layer's assignment from a hetsim schedule of the net's ONNX (the first ``n_digital`` channels
    digital, as the DIANA mappers place them)."""
    for lc in reg.layers:
        parts = schedule.channel_parts(lc.op, lc.layer.c_out)
        n_d = parts.get(reg.digital, 0)
        a = torch.full((lc.layer.c_out,), AIMC, dtype=torch.long)
        a[:n_d] = DIGITAL
        lc.layer.assign.copy_(a)


# ------------------------------------------------------------------------------------------------ outputs


def export_json(net: ResNet, reg: Regulariser, workload: str, label: str) -> dict:
    """hetsim's channel-split JSON of the net's assignment (``dnas-export`` format (a)), layers pinned to ops."""
    out = []
    for lc in reg.layers:
        m = lc.layer
        a = m.assign.tolist()
        chans = {"digital": [c for c in range(m.c_out) if a[c] == DIGITAL],
                 "aimc": [c for c in range(m.c_out) if a[c] == AIMC]}
        out.append({"name": lc.name, "op": lc.op, "c_out": m.c_out, "c_in": m.c_in,
                    "kernel": [1, 1] if m.linear else [m.k, m.k], "groups": m.groups, "channels": chans})
    return {"format": HETSIM_FORMAT, "version": 1, "workload": workload, "mapper": f"hetsim search ({label})",
            "layers": out}


def replay(platform: Platform, onnx_path: Path, export_path: Path) -> tuple[float, float, float]:
    """``(makespan_s, energy_j, aimc_share)`` of ``hetsim run PLATFORM ONNX --mapper dnas-export --export FILE``."""
    costs = CostModel(load_workload(onnx_path), platform)
    s = get_mapper("dnas-export", path=export_path).map(costs)
    res = simulate(costs, s)
    summ = summarize(costs, s, res)
    return float(res.makespan_s), float(summ["energy_j"]), float(s.stats["aimc_share"])


def pareto_flags(points: list[Point], objective: str) -> None:
    """Mark the points no other point dominates (higher-or-equal test accuracy and lower-or-equal model cost of
    the objective, one strictly)."""
    key = "model_latency_s" if objective == "latency" else "model_energy_j"
    for p in points:
        p.pareto = not any(
            (q.test_accuracy >= p.test_accuracy and getattr(q, key) <= getattr(p, key))
            and (q.test_accuracy > p.test_accuracy or getattr(q, key) < getattr(p, key)) for q in points)


CSV_FIELDS = ["name", "kind", "strength", "test_accuracy", "val_accuracy", "model_latency_s", "model_energy_j",
              "replay_latency_s", "replay_energy_j", "aimc_share", "pareto", "epochs", "export", "onnx"]


def write_csv(points: list[Point], path: Path) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for p in points:
        w.writerow(asdict(p))
    atomic_write_text(path, buf.getvalue())


def plot_front(points: list[Point], objective: str, path: Path, title: str) -> None:
    """ODiMO Fig. 4 analogue: test accuracy vs model latency and vs model energy, baselines and searched points,
    the Pareto front (of the searched objective) circled and joined."""
    # a Figure of its own, not pyplot's: it renders to a file without a GUI backend and leaves the backend a
    # notebook or script chose alone
    from matplotlib.figure import Figure

    markers = {"all-8bit": "s", "all-ternary": "v", "io8-backbone-ternary": "D", "min-cost": "^"}
    fig = Figure(figsize=(10, 4))
    axes = fig.subplots(1, 2)
    for ax, key, unit, scale in ((axes[0], "model_latency_s", "latency (ms)", 1e3),
                                 (axes[1], "model_energy_j", "energy (uJ)", 1e6)):
        for p in points:
            if p.kind == "baseline":
                ax.scatter(getattr(p, key) * scale, p.test_accuracy * 100, marker=markers.get(p.name, "x"), s=50,
                           label=p.name, color="grey", zorder=3)
        s = [p for p in points if p.kind == "search"]
        ax.scatter([getattr(p, key) * scale for p in s], [p.test_accuracy * 100 for p in s], color="tab:blue",
                   label="ODiMO search", zorder=3)
        for p in s:
            ax.annotate(f"λ={p.strength:g}", (getattr(p, key) * scale, p.test_accuracy * 100), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        if key == ("model_latency_s" if objective == "latency" else "model_energy_j"):
            front = sorted((p for p in points if p.pareto), key=lambda p: getattr(p, key))
            ax.plot([getattr(p, key) * scale for p in front], [p.test_accuracy * 100 for p in front], "k--", lw=1,
                    label="Pareto front")
            ax.scatter([getattr(p, key) * scale for p in front], [p.test_accuracy * 100 for p in front],
                       facecolors="none", edgecolors="k", s=140, zorder=4)
        ax.set_xlabel(f"model {unit}")
        ax.set_ylabel("test accuracy (%)")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    atomic_write_bytes(path, buf.getvalue())


# ---------------------------------------------------------------------------------------------- the driver


def _finish(net: ResNet, data: Splits, reg: Regulariser, platform: Platform, out: Path, label: str, kind: str,
            strength: float | None, epochs: int, workload: str) -> Point:
    """Evaluate, export (ONNX + channel-split JSON), replay: one :class:`Point`."""
    net.set_mode("fixed", act_bits=8)
    val_acc, _ = evaluate(net, data.val)
    test_acc, _ = evaluate(net, data.test)
    lat, en = reg.model_numbers()
    d = make_dirs(out / label)
    onnx_path, export_path = d / "model.onnx", d / "export.json"
    atomic_write_bytes(onnx_path, onnx_bytes(net, data.input_shape))
    atomic_write_text(export_path, json.dumps(export_json(net, reg, workload, label), indent=1) + "\n")
    net.set_mode("fixed", act_bits=8)
    r_lat, r_en, share = replay(platform, onnx_path, export_path)
    return Point(label, kind, strength, val_acc, test_acc, lat, en, r_lat, r_en, share, epochs,
                 str(export_path.relative_to(out)), str(onnx_path.relative_to(out)))


def run_search(platform: Platform, net: ResNet, data: Splits, objective: str, strengths: list[float], out: Path,
               recipe: Recipe, seed: int = 0, baselines: tuple[str, ...] = BASELINES, quiet: bool = False,
               model_name: str = "net", environment: dict | None = None) -> dict:
    """See :func:`hetsim.search.search`."""
    t0 = time.perf_counter()
    earlier = _earlier_points(out)  # a search this one replaces (--force): its point folders go at the end
    make_dirs(out)
    with _Progress(quiet) as prog:
        # 1. warm-up: floating point with BatchNorm (ODiMO starts from a pre-trained float network)
        torch.manual_seed(seed)
        net.set_mode("float")
        warm_epochs = _train(net, data, recipe, recipe.warmup_epochs, seed, prog, "warm-up (float)")
        float_acc, _ = evaluate(net, data.test)
        for _, m in net.qlayers():
            m.fold_bn()
        base_state = copy.deepcopy(net.state_dict())
        # the cost model: the folded network's ONNX on the platform
        workload = f"{model_name}_{data.name}"
        d = make_dirs(out / "network")
        geom_onnx = d / "model.onnx"
        atomic_write_bytes(geom_onnx, onnx_bytes(net, data.input_shape))
        costs = CostModel(load_workload(geom_onnx), platform)
        reg = Regulariser(net, costs, objective, recipe.smooth_max, recipe.normalise)
        points: list[Point] = []
        # 2. the search, one strength at a time
        for lam in strengths:
            net.load_state_dict(base_state)
            net.reset_calibration()
            label = f"lambda_{lam:g}"
            net.set_mode("search", act_bits=7, tau=recipe.tau)
            e1 = _train(net, data, recipe, recipe.search_epochs, seed, prog, f"search λ={lam:g}", reg=reg,
                        strength=lam, early_stop=True)
            discretise(net)
            moved = reorder(net)
            net.set_mode("fixed", act_bits=8)
            e2 = _train(net, data, recipe, recipe.finetune_epochs, seed, prog, f"fine-tune λ={lam:g}")
            p = _finish(net, data, reg, platform, out, label, "search", lam, e1 + e2, workload)
            p.extra["reordered_layers"] = moved
            points.append(p)
        # 3. the baselines, fine-tuned with the same recipe (search + fine-tune epochs, task loss only)
        for name in baselines:
            net.load_state_dict(base_state)
            net.reset_calibration()
            opts = {"objective": objective} if name == "min-cost" else {}
            assign_from_schedule(net, reg, get_mapper(name, **opts).map(costs))
            net.set_mode("fixed", act_bits=8)
            e = _train(net, data, recipe, recipe.search_epochs + recipe.finetune_epochs, seed, prog,
                       f"baseline {name}")
            points.append(_finish(net, data, reg, platform, out, name, "baseline", None, e, workload))
    pareto_flags(points, objective)
    write_csv(points, out / "pareto.csv")
    plot_front(points, objective, out / "front.png",
               f"{model_name} on {data.name}, {platform.name}, objective {objective} (test accuracy vs DIANA model)")
    summary = {
        "platform": platform.name, "model": model_name, "dataset": data.describe(), "objective": objective,
        "strengths": strengths, "seed": seed, "recipe": asdict(recipe), "warmup_epochs_run": warm_epochs,
        "float_test_accuracy": float_acc, "reference_all8bit_cost": reg.reference,
        "seconds": time.perf_counter() - t0, "environment": environment or {},
        "points": [asdict(p) for p in points],
    }
    atomic_write_text(out / "search.json", json.dumps(summary, indent=1) + "\n")
    _remove_stale_points(out, earlier - {p.name for p in points})
    return summary


#: what a search writes in each point's folder
POINT_FILES = ("export.json", "model.onnx")


def _earlier_points(out: Path) -> set[str]:
    """The point labels of the search recorded in ``out/search.json`` (none when unreadable)."""
    try:
        old = json.loads((out / "search.json").read_text())
        names = {p["name"] for p in old["points"] if isinstance(p["name"], str)}
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    # only plain folder names inside ``out`` (an edited search.json naming '..' or 'a/b' removes nothing)
    return {n for n in names if n not in ("", ".", "..") and Path(n).name == n and "\\" not in n}


def _remove_stale_points(out: Path, labels: set[str]) -> None:
    """Delete the files a replaced search wrote for points this one does not have (``lambda_1`` of an earlier
    ``--strength 1`` would otherwise sit beside the new points, unlisted); a folder holding anything else is
    kept with that."""
    for label in labels:
        d = out / label
        for f in POINT_FILES:
            (d / f).unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # not empty (a file of the user's) or already gone
            d.rmdir()
