"""``hetsim inspect``: show a model's operator DAG: counts, op types, GEMM views (or an SNN's layers and spike
activity)."""

from __future__ import annotations

from pathlib import Path

from hetsim.cli._common import (
    _add_common,
    _add_fold,
    _add_input_shape,
    _add_llm_options,
    _add_set,
    _add_spikes,
    _input_shapes,
    _kind,
    _platform,
    _refuse_model_options,
    _workload_options,
)
from hetsim.errors import InputError

#: graph inputs named in the first lines (a decoder step has one per layer and cache tensor)
INPUTS_SHOWN = 6


def add_parser(sub) -> None:
    """The ``inspect`` subcommand's arguments."""
    p = sub.add_parser("inspect", help="show a model's operator DAG: counts, op types, GEMM views (or an SNN's "
                       "layers and spike activity)",
                       description="Read a model into hetsim's operator DAG without mapping it and print its "
                       "operators, edges, MACs and weight elements, its graph inputs and its op types. --ops lists "
                       "every op (type, shapes, GEMM view, MACs); --platform adds each op's latency on every device "
                       "of that platform (the cost model a mapper reads). An SNN spec or NIR graph shows its "
                       "layers, timestep count and the spike density of each split.")
    p.add_argument("model", type=Path, help="ONNX model, saved torch.export program (.pt2), or an SNN spec "
                   "(workloads/snn/*.yaml) or NIR graph (.nir, with --spikes)")
    p.add_argument("--platform", type=Path, help="also show per-op latency on each device of this platform")
    _add_set(p)
    _add_input_shape(p)
    _add_llm_options(p)
    _add_fold(p)
    _add_spikes(p)
    p.add_argument("--ops", action="store_true", help="list every op (type, shapes, GEMM view, MACs)")
    _add_common(p)


def cmd_inspect(args) -> int:
    from hetsim.pipeline import cost_model, load_workload
    from hetsim.workload.op import foldable_ops

    if args.overrides and args.platform is None:
        raise InputError("--set changes the platform: give --platform PLATFORM.yaml too")
    plat = _platform(args) if args.platform else None  # a bad platform or --set fails before any output
    kind = _kind(args.model)
    if kind.inspect is not None:  # the kind shows its workloads itself
        if args.ops:
            raise InputError(f"--ops lists ONNX operators; for {kind.description} give --platform for its costs on "
                             "each device")
        _input_shapes(args)  # refused by its front end when it takes no input shape
        print(kind.inspect(load_workload(args.model, spikes=args.spikes), plat))
        return 0

    if args.spikes is not None:
        _refuse_model_options(args.model, ["spikes"])
    wl = load_workload(args.model, input_shape=_input_shapes(args), workload_options=_workload_options(args))
    s = wl.summary()
    inputs = wl.meta.get("inputs", [])
    ins = ", ".join(f"{i['name']} {i.get('dtype', '')}{list(i.get('shape', []))}" for i in inputs[:INPUTS_SHOWN])
    if len(inputs) > INPUTS_SHOWN:
        ins += f" and {len(inputs) - INPUTS_SHOWN} more"
    print(f"{s['name']}: {s['operators']} operators, {s['edges']} edges, {s['macs'] / 1e9:,.3f} GMAC, "
          f"{s['weights']:,} weight elements read by its ops")
    if ins:
        print(f"  inputs: {ins}")
    absent = wl.meta.get("weights_absent")
    if absent:
        print(f"  weights: absent ({absent['tensors']:,} initializers, {absent['elements']:,} elements in "
              f"{', '.join(absent['files'])}, not found): structure only; costs, mapping and replay need no values")
    print("  op types: " + ", ".join(f"{k} {v}" for k, v in s["op_types"].items()))
    costs = None
    if plat is not None:
        costs = cost_model(plat, wl, fold_constants=args.fold_constants, fusion=args.fusion)
    folded = foldable_ops(wl) if args.fold_constants else frozenset()
    if folded:
        print(f"  folded: {len(folded)} constant ops (ONNX Runtime folds them at session creation; "
              "--no-fold-constants charges them)")
    if args.ops or costs is not None:
        devs = list(costs.platform.devices) if costs else []
        hdr = f"  {'op':<40} {'type':<16} {'bits':>4} {'M_v':>6} {'N_v':>6} {'N_mvm':>7} {'grp':>4} {'MACs':>12}"
        hdr += "".join(f" {d + ' (us)':>12}" for d in devs)
        print(hdr)
        for v in wl.topological_order():
            op = wl.op(v)
            g = op.gemm
            gv = (g.m_v, g.n_v, g.n_mvm, g.groups) if g else ("", "", "", "")
            shown = v if len(v) <= 40 else "..." + v[-37:]
            line = (f"  {shown:<40} {op.op_type:<16} {op.bits:>4} {gv[0]:>6} {gv[1]:>6} {gv[2]:>7} {gv[3]:>4} "
                    f"{op.macs:>12,}")
            if costs:
                for d in devs:
                    t = costs.latency[v].get(d)
                    line += f" {t * 1e6:>12.3f}" if t is not None else f" {'-':>12}"
            print(line + ("  folded" if v in folded else ""))
    return 0
