"""Command-line interface: ``hetsim`` / ``python -m hetsim``.

Exit codes: 0 success, 2 bad input (missing file, malformed YAML/ONNX, unsupported op, refused overwrite),
1 internal error (a bug: rerun with ``--debug`` for the traceback).

One module per command (``hetsim/cli/<command>.py``: its ``add_parser(sub)`` and its
``cmd_<command>``); ``_common.py`` holds what they share, ``_main.py`` the parser and :func:`main`. A new
command is a module with those two functions and its line in ``_main.py`` (``COMMANDS`` and
``build_parser``)."""

from hetsim.cli._common import (
    DEFAULT_MAPPER,
    EPILOG,
    MAPPER_HELP,
    OPTION_FLAGS,
    SolverProgress,
    mapper_options,
    parse_overrides,
)
from hetsim.cli._main import COMMANDS, build_parser, main
from hetsim.cli.calibrate import cmd_calibrate
from hetsim.cli.codegen import cmd_codegen
from hetsim.cli.export_nir import cmd_export_nir
from hetsim.cli.inspect import cmd_inspect
from hetsim.cli.map import cmd_map
from hetsim.cli.plot import cmd_plot
from hetsim.cli.profile import cmd_profile
from hetsim.cli.reorder import cmd_reorder
from hetsim.cli.run import cmd_run
from hetsim.cli.search import cmd_search
from hetsim.cli.sweep import cmd_sweep
from hetsim.cli.validate import cmd_validate

__all__ = [
    "COMMANDS",
    "DEFAULT_MAPPER",
    "EPILOG",
    "MAPPER_HELP",
    "OPTION_FLAGS",
    "SolverProgress",
    "build_parser",
    "cmd_calibrate",
    "cmd_codegen",
    "cmd_export_nir",
    "cmd_inspect",
    "cmd_map",
    "cmd_plot",
    "cmd_profile",
    "cmd_reorder",
    "cmd_run",
    "cmd_search",
    "cmd_sweep",
    "cmd_validate",
    "main",
    "mapper_options",
    "parse_overrides",
]
