"""``hetsim codegen``: the parser hook and entry point; the command itself is :mod:`hetsim.codegen.command`."""

from __future__ import annotations

from hetsim.cli._common import _add_common, _add_spikes


def add_parser(sub) -> None:
    """The ``codegen`` subcommand's arguments."""
    from hetsim.codegen.command import add_parser as add_codegen_parser

    p = add_codegen_parser(sub)
    _add_spikes(p)
    _add_common(p)


def cmd_codegen(args) -> int:
    from hetsim.codegen.command import run

    return run(args)
