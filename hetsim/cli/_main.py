"""The ``hetsim`` parser and entry point: one module per command (``hetsim/cli/<command>.py``: its
``add_parser(sub)`` and its ``cmd_`` function)."""

from __future__ import annotations

import argparse
import sys
import traceback

from hetsim import __version__
from hetsim.cli import (
    calibrate,
    check,
    codegen,
    compare,
    export_nir,
    inspect,
    map,
    plot,
    profile,
    reorder,
    run,
    search,
    sweep,
    validate,
)
from hetsim.cli._common import EPILOG, _add_common, _check_mapper_name, _frontend, _Parser
from hetsim.errors import HetsimError, InputError


def build_parser() -> argparse.ArgumentParser:
    """The ``hetsim`` parser: the common options, then each command module's ``add_parser``."""
    parser = _Parser(
        prog="hetsim",
        description="Discrete-event simulation of neural-network inference on heterogeneous SoCs: map an ONNX "
        "model onto a platform (host CPU + accelerators + links), replay the schedule on SimPy resources, "
        "and report makespan, utilisation and energy.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hetsim {__version__}")
    _add_common(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run.add_parser(sub)
    map.add_parser(sub)
    validate.add_parser(sub)
    profile.add_parser(sub)
    sweep.add_parser(sub)
    plot.add_parser(sub)
    reorder.add_parser(sub)
    search.add_parser(sub)
    calibrate.add_parser(sub)
    inspect.add_parser(sub)
    check.add_parser(sub)
    compare.add_parser(sub)
    export_nir.add_parser(sub)
    codegen.add_parser(sub)
    return parser


#: command name -> the function that runs it
COMMANDS = {
    "run": run.cmd_run,
    "reorder": reorder.cmd_reorder,
    "export-nir": export_nir.cmd_export_nir,
    "map": map.cmd_map,
    "validate": validate.cmd_validate,
    "profile": profile.cmd_profile,
    "sweep": sweep.cmd_sweep,
    "plot": plot.cmd_plot,
    "inspect": inspect.cmd_inspect,
    "search": search.cmd_search,
    "codegen": codegen.cmd_codegen,
    "calibrate": calibrate.cmd_calibrate,
    "check": check.cmd_check,
    "compare": compare.cmd_compare,
}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        from hetsim.plugins import load_plugins

        load_plugins()
        if args.command in ("run", "map", "validate"):
            args.mapper_given = args.mapper is not None  # before a default fills it: --schedule refuses it
            _check_mapper_name(args)
            if args.command != "run" and args.mapper is None:
                from hetsim.pipeline import default_mapper

                args.mapper = default_mapper(_frontend(args.model).kind)
        from hetsim._warnings import one_line_warnings

        with one_line_warnings():
            return COMMANDS[args.command](args)
    except InputError as err:
        if args.debug:
            traceback.print_exc()
        print(f"hetsim: error: {err}", file=sys.stderr)
        return 2
    except HetsimError as err:
        if args.debug:
            traceback.print_exc()
        print(f"hetsim: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hetsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:  # a bug: one line unless --debug
        if args.debug:
            raise
        from hetsim import _interrupt

        if _interrupt.wrapped(err):  # a SIGINT inside code that wraps what it raises (__set_name__ at import)
            print("hetsim: interrupted", file=sys.stderr)
            return 130
        print(f"hetsim: internal error: {type(err).__name__}: {err} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1
