"""``hetsim codegen``: the parser and the command (:mod:`hetsim.codegen`). Imported by the CLI for its parser
(this module imports nothing heavy at import time)."""

from __future__ import annotations

import argparse
from pathlib import Path

SNN_MAPPERS = ("spikeduet", "all-m33", "all-dense-mvp")

DESCRIPTION = (
    "Write the C99 firmware of a spiking network as SpikeDuet deploys it on the EFR32MG24 (its Fig. 1): plan the "
    "network as 'hetsim run' does (engines, weight residency, neuron order with --reorder, blocking or async "
    "schedule), then emit weights as const arrays in SRAM or Flash sections, the neurons in the plan's order, "
    "per layer the sparse M33 loop or MVP launches through a program/launch/wait interface (mvp.h) with a "
    "functional stand-in in C, the LIF update and readout with the replay's arithmetic, the M33's ops in the "
    "schedule's order, and a Makefile for the Cortex-M33 (arm-none-eabi-gcc) that runs under QEMU mps2-an505 with "
    "semihosting. With --run: build, run every eval sample under QEMU and check the outputs against hetsim's LIF "
    "replay bit for bit, the image's sections (arm-none-eabi-size) against hetsim's SRAM/Flash plan and the "
    "EFR32MG24's 256 KiB / 1536 KiB, and QEMU's instruction counts per layer against the predicted M33 cycles "
    "(emulation, not timing). Needs the Debian packages gcc-arm-none-eabi, libnewlib-arm-none-eabi and "
    "qemu-system-arm for --build/--run.")


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} is negative; give an integer >= 0")
    return v


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``codegen`` subcommand to the CLI's subparsers; returns it (the CLI adds ``--spikes`` and
    ``--debug``)."""
    p = sub.add_parser("codegen", help="write (and with --run build, emulate and check) the C firmware of a mapped "
                       "SNN for the EFR32MG24 (SpikeDuet)", description=DESCRIPTION)
    p.add_argument("platform", type=Path,
                   help="platform YAML with a cortex-m host and an MVP (platforms/efr32mg24.yaml)")
    p.add_argument("model", type=Path, help="SNN spec (workloads/snn/*.yaml) or NIR graph (.nir, with --spikes)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder to write the firmware to")
    p.add_argument("--mapper", choices=SNN_MAPPERS, default="spikeduet",
                   help="SNN mapper whose plan the firmware follows (default: spikeduet)")
    p.add_argument("--mode", choices=("async", "blocking"), default="async",
                   help="CPU-MVP execution the firmware runs (default: async)")
    p.add_argument("--reorder", action="store_true",
                   help="reorder hidden neurons first (function-preserving, fitted on the training split)")
    p.add_argument("--seed", type=_seed, default=0, help="reordering seed (default 0)")
    p.add_argument("--mvp-fp16", action="store_true",
                   help="store the MVP's weight tables as FP16 (the chip's format, the size hetsim plans); outputs "
                   "then follow the FP16-rounded weights and are checked against hetsim's replay of those")
    p.add_argument("--build", action="store_true", help="also build it (make) and report its size against the plan")
    p.add_argument("--run", action="store_true",
                   help="also build it, run every eval sample under QEMU and check it against hetsim (implies --build)")
    p.add_argument("--json", action="store_true", help="print the checks as JSON (with --build/--run)")
    p.add_argument("--force", action="store_true", help="replace an existing output folder")
    return p


def _plan_text(fw) -> str:
    from hetsim.codegen.firmware import _choice

    use = fw.costs.memory_use([_choice(fl) for fl in fw.layers])
    lines = [f"{fw.snn.name} on {fw.costs.platform.name}: mapper {fw.settings['mapper']}, {fw.mode}, "
             f"{'reordered' if fw.reordering is not None else 'trained neuron order'}; hetsim's weight plan: SRAM "
             f"{use['sram']:,} B, Flash {use['flash']:,} B"]
    for fl in fw.layers:
        extra = f", {fl.hot_columns} hot columns" if fl.residency == "flash+hot" else ""
        extra += f", merged gap {fl.max_gap}" if fl.engine == "mvp-range" else ""
        lines.append(f"  layer {fl.layer} ({fl.n_in} -> {fl.n_out}): {fl.engine}, {fl.residency}{extra}, "
                     f"{fl.elem.upper()} table")
    return "\n".join(lines)


def run(args) -> int:
    """``hetsim codegen``: exit 0, or 1 when --run finds outputs that differ from the replay.

    Raises:
        InputError: bad platform, network or options; a missing toolchain with --build/--run; an existing
            output folder without --force.
        FirmwareError: the firmware fails to build or run.
    """
    import json

    from hetsim.codegen.firmware import prepare_firmware, write_firmware
    from hetsim.errors import InputError, OutputExistsError

    if args.model.suffix.lower() not in (".yaml", ".yml", ".nir"):
        raise InputError(f"{str(args.model)!r}: firmware is generated for spiking networks, an SNN spec (.yaml) or a "
                         "NIR graph (.nir), e.g. workloads/snn/braille384.yaml")
    out = args.output
    if out.exists() and not out.is_dir():
        raise InputError(f"-o {str(out)!r} is a file; give a folder for the firmware")
    if out.is_dir() and any(out.iterdir()) and not args.force:  # before the (slow) planning
        raise OutputExistsError(f"{str(out)!r} exists and is not empty; pass --force to replace it")
    from hetsim.files import check_writable

    check_writable(out)  # /proc, a read-only folder, a symbolic link loop: before the planning
    if args.build or args.run:
        from hetsim.codegen.toolchain import require_tools

        require_tools(run=args.run)
    fw = prepare_firmware(args.platform, args.model, args.mapper, mode=args.mode, reorder=args.reorder,
                          seed=args.seed, mvp_fp16=args.mvp_fp16, spikes=args.spikes)
    write_firmware(fw, out, force=args.force)
    if not (args.build or args.run):
        print(_plan_text(fw))
        print(f"wrote {out}/ (network.c, runtime.c, mvp.h, mvp_standin.c, Makefile, ...); build and run it with: "
              f"make -C {out} run   (or hetsim codegen ... --run)")
        return 0
    from hetsim.codegen.check import check_firmware, format_check, size_report
    from hetsim.codegen.toolchain import build_firmware, run_firmware

    build = build_firmware(out)
    if not args.run:
        rep = size_report(fw, build)
        if args.json:
            print(json.dumps({"sizes": rep.to_dict(), "build_s": build.seconds}, indent=2))
        else:
            print(_plan_text(fw))
            from hetsim.codegen.check import format_sizes

            print(format_sizes(rep))
        return 0
    fwrun = run_firmware(out, fw.snn.layer_sizes[-1], len(fw.layers))
    chk = check_firmware(fw, build, fwrun)
    from hetsim.files import atomic_write_text

    atomic_write_text(out / "check.json", json.dumps(chk.to_dict(), indent=2) + "\n")
    if args.json:
        print(json.dumps(chk.to_dict(), indent=2))
    else:
        print(_plan_text(fw))
        print(format_check(fw, chk))
        print(f"wrote {out}/ (firmware, build/fw.elf, check.json)")
    return 0 if chk.ok else 1
