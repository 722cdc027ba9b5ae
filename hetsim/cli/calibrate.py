"""``hetsim calibrate``: the parser hook and entry point; the command itself is :mod:`hetsim.calibrate`."""

from __future__ import annotations

from hetsim.cli._common import _add_common


def add_parser(sub) -> None:
    """The ``calibrate`` subcommand's arguments."""
    from hetsim.calibrate import add_parser as _add_calibrate  # hetsim calibrate: its own module

    _add_common(_add_calibrate(sub))


def cmd_calibrate(args) -> int:
    return __import__("hetsim.calibrate", fromlist=["cmd_calibrate"]).cmd_calibrate(args)
