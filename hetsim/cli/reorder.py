"""``hetsim reorder``: reorder an SNN's hidden neurons for the range-sparse MVP (function-preserving)."""

from __future__ import annotations

from pathlib import Path

from hetsim.cli._common import _add_common, _add_spikes, _nonnegative_int
from hetsim.errors import InputError


def add_parser(sub) -> None:
    """The ``reorder`` subcommand's arguments."""
    p = sub.add_parser("reorder", help="reorder an SNN's hidden neurons for the range-sparse MVP (function-preserving)",
                       description="Order each hidden layer's neurons so that co-active ones are adjacent (SpikeDuet "
                       "Sec. III-C): co-activity on the training split, hierarchical clustering, local swaps "
                       "minimising C_L*N_L + C_P*N_P; permute the weights and neuron parameters together, verify "
                       "identical spikes and predictions on every recorded split, and write the permuted network "
                       "(OUT.yaml and OUT.npz).")
    p.add_argument("platform", type=Path, help="platform YAML with an MVP (platforms/efr32mg24.yaml)")
    p.add_argument("model", type=Path, help="SNN spec (workloads/snn/*.yaml) or NIR graph (.nir, with --spikes)")
    p.add_argument("-o", "--output", type=Path, required=True, help="spec YAML to write (its .npz goes beside it)")
    _add_spikes(p)
    p.add_argument("--residency", choices=("auto", "sram", "flash"), default="auto",
                   help="memory the MVP reads the weights from, which sets C_P (default auto: SRAM when the "
                   "layer's FP16 table fits the SRAM budget, else Flash)")
    p.add_argument("--seed", type=_nonnegative_int, default=0, help="refinement seed (default 0)")
    p.add_argument("--force", action="store_true", help="replace existing output files")
    _add_common(p)


def cmd_reorder(args) -> int:
    from hetsim.errors import OutputExistsError
    from hetsim.platform import load_platform
    from hetsim.snn.network import load_snn, save_snn
    from hetsim.snn.reorder import reorder_for_platform
    from hetsim.snn.report import format_reorder

    out = args.output
    from hetsim.workload.frontends import get_frontend

    if out.suffix.lower() not in get_frontend("snn-spec").suffixes:
        raise InputError(f"-o {str(out)!r}: give a .yaml path (the .npz is written beside it)")
    from hetsim.files import check_parent_dirs, check_writable

    check_parent_dirs(out)
    clash = [str(f) for f in (out, out.with_suffix(".npz")) if f.exists()]
    if clash and not args.force:
        raise OutputExistsError(f"{' and '.join(clash)} already exist; pass --force to replace")
    check_writable(out.parent if str(out.parent) else Path("."), out)
    snn = load_snn(args.model, spikes=args.spikes)
    r = reorder_for_platform(snn, load_platform(args.platform), residency=args.residency, seed=args.seed)
    print(format_reorder(r))
    new = r.snn.replace(name=f"{snn.name}_reordered")
    written = save_snn(new, out, force=args.force,
                       description=f"{snn.name} with hidden neurons reordered by hetsim reorder (seed {args.seed})")
    print(f"\n  wrote {', '.join(str(p) for p in written)}")
    return 0
