"""Mapper options come from the mappers' constructors: ``--mapper-option NAME=VALUE`` (``-O``) reaches any keyword
argument, read by its annotation, for hetsim's mappers and a plugin's alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_input_error, run_cli

from hetsim.errors import InputError
from hetsim.mappers.base import MAPPERS, make_schedule, parse_mapper_option, register

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
MODEL = ROOT / "workloads" / "resnet20_cifar10.onnx"


class _Offload:
    """A throw-away mapper: every op on the host, its options recorded in the schedule's stats."""

    name = "test-options"

    def __init__(self, share: float = 0.5, rounds: int = 1, greedy: bool = False, label: str | None = None):
        self.opts = {"share": share, "rounds": rounds, "greedy": greedy, "label": label}

    def map(self, costs):
        s = make_schedule(costs, {v: costs.host for v in costs.workload.graph}, self.name)
        s.stats.update(self.opts)
        return s


@pytest.fixture
def mapper():
    register("test-options")(_Offload)
    yield "test-options"
    MAPPERS.pop("test-options", None)


def test_values_are_read_by_the_constructors_annotations(mapper):
    assert parse_mapper_option(mapper, "share", "0.25") == 0.25
    assert parse_mapper_option(mapper, "rounds", "3") == 3
    assert parse_mapper_option(mapper, "greedy", "TRUE") is True
    assert parse_mapper_option(mapper, "label", "none") is None and parse_mapper_option(mapper, "label", "x") == "x"
    with pytest.raises(InputError, match="'3.5' is not an integer"):
        parse_mapper_option(mapper, "rounds", "3.5")
    with pytest.raises(InputError, match="did you mean 'share'"):
        parse_mapper_option(mapper, "shares", "1")


def test_a_yaml_valued_option_is_read_by_the_guarded_loader():
    """heft's ``crossbar_prices`` (a tuple) is read as YAML: with the loader the platform files and ``--set`` use,
    so an alias bomb is refused in one line instead of being expanded."""
    assert parse_mapper_option("heft", "crossbar_prices", "[0, 0.5, 1e-3]") == [0, 0.5, 1e-3]
    bomb = ("[&a [1,1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], &c [*b,*b,*b,*b,*b,*b,*b,*b,*b], "
            "&d [*c,*c,*c,*c,*c,*c,*c,*c,*c], &e [*d,*d,*d,*d,*d,*d,*d,*d,*d], &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]]")
    with pytest.raises(InputError, match="option 'crossbar_prices' of mapper 'heft'"):
        parse_mapper_option("heft", "crossbar_prices", bomb)


def test_a_plugin_mappers_options_on_the_command_line(mapper, capsys):
    code, out, err = run_cli(capsys, "run", PUMA, MODEL, "--mapper", mapper, "-O", "share=0.125",
                             "--mapper-option", "rounds=4", "-O", "greedy=true", "--json")
    assert code == 0, err
    stats = json.loads(out)["mapper_stats"]
    assert (stats["share"], stats["rounds"], stats["greedy"], stats["label"]) == (0.125, 4, True, None)
    code, _, err = run_cli(capsys, "run", PUMA, MODEL, "--mapper", mapper, "-O", "rounds=many")
    assert_input_error(code, err, "option 'rounds' of mapper 'test-options': 'many' is not an integer")
    code, _, err = run_cli(capsys, "run", PUMA, MODEL, "--mapper", "cpsat", "-O", "threads=2", "--threads", "2")
    assert_input_error(code, err, "--mapper-option sets 'threads' twice (also set by --threads)")
    code, _, err = run_cli(capsys, "run", PUMA, MODEL, "-O", "threads")
    assert_input_error(code, err, "give NAME=VALUE")
