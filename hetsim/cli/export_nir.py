"""``hetsim export-nir``: write an SNN spec as a NIR graph (.nir) for other SNN tools."""

from __future__ import annotations

from pathlib import Path

from hetsim.cli._common import _add_common, _positive_float
from hetsim.errors import InputError


def add_parser(sub) -> None:
    """The ``export-nir`` subcommand's arguments."""
    p = sub.add_parser("export-nir", help="write an SNN spec as a NIR graph (.nir) for other SNN tools",
                       description="Write the network of an SNN spec (weights, biases, per-neuron LIF parameters, "
                       "reset, readout) as a NIR graph (Neuromorphic Intermediate Representation): Input -> Linear/"
                       "Affine -> LIF -> ... -> Output, each LIF with tau = dt/(1 - beta) and r = tau/dt (docs/"
                       "models.md, 'NIR graphs'). Run it with: hetsim run PLATFORM.yaml OUT.nir --spikes "
                       "INPUT.npz (e.g. the spec's activity file) for the same spikes, predictions and latency.")
    p.add_argument("model", type=Path, help="SNN spec (workloads/snn/*.yaml)")
    p.add_argument("-o", "--output", type=Path, required=True, help="NIR file to write (.nir)")
    p.add_argument("--dt", type=_positive_float, default=None, metavar="S",
                   help="the time step the LIF time constants are expressed in, seconds (default: 1e-4, "
                   "snnTorch's export_to_nir constant)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_common(p)


def cmd_export_nir(args) -> int:
    from hetsim.files import check_output_file
    from hetsim.snn.network import load_snn
    from hetsim.snn.nir import DEFAULT_DT_S, save_nir
    from hetsim.workload.frontends import get_frontend

    if args.output.suffix.lower() not in get_frontend("nir").suffixes:
        raise InputError(f"-o {str(args.output)!r}: give a .nir path")
    if args.model.suffix.lower() not in get_frontend("snn-spec").suffixes:
        raise InputError(f"{str(args.model)!r}: export-nir reads an SNN spec (.yaml), e.g. "
                         "workloads/snn/braille384.yaml")
    check_output_file(args.output, args.force)  # fail before the work, not after
    snn = load_snn(args.model)
    dt = DEFAULT_DT_S if args.dt is None else args.dt
    written = save_nir(snn, args.output, force=args.force, dt=dt)
    print(f"{snn.name}: {snn.n_layers} layers {snn.layer_sizes}, reset {snn.reset}, readout {snn.readout}, "
          f"dt {dt:g} s -> {written}")
    return 0
