"""The at-a-glance table of docs/reproduction.md stays runnable: every command in its "with" column still parses
(``hetsim`` commands through hetsim's own argument parser, ``python bench/...`` scripts by their declared options)
and every file it names exists. Cheap: nothing is mapped, trained or swept."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from hetsim.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reproduction.md"


def glance_rows() -> list[tuple[str, str, str]]:
    """``(paper, figure, with-cell)`` of every row of the at-a-glance table."""
    text = DOC.read_text()
    start = text.index("## At a glance")
    end = text.index("\n## ", start + 1)
    rows = []
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("paper", "---"):
            rows.append((cells[0], cells[1], cells[3]))
    return rows


def snippets(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


ROWS = glance_rows()
SNIPPETS = sorted({s for _, _, cell in ROWS for s in snippets(cell)})
COMMANDS = [s for s in SNIPPETS if s.startswith(("hetsim ", "python bench/"))]
PATHS = [s for s in SNIPPETS if re.fullmatch(r"(platforms|sweeps|workloads|bench)/[\w./-]+", s)]


def test_the_table_is_found_and_names_commands():
    assert len(ROWS) >= 15  # every figure and table of the three papers
    assert {p for p, _, _ in ROWS} == {"CPU-CIM ILP", "ODiMO", "SpikeDuet"}
    assert len(COMMANDS) >= 8 and len(PATHS) >= 3


@pytest.mark.parametrize("path", PATHS)
def test_named_files_exist(path):
    assert (ROOT / path).exists(), f"docs/reproduction.md's at-a-glance table names {path}, which is not in the repo"


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("hetsim ")])
def test_hetsim_commands_parse(command):
    argv = shlex.split(command)[1:]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as err:  # argparse refused it
        pytest.fail(f"{command!r} no longer parses (exit {err.code})")
    for name in ("platform", "model", "sweep", "results"):
        value = getattr(args, name, None)
        if isinstance(value, (str, Path)) and not str(value).startswith("results/"):
            assert (ROOT / value).exists(), f"{command!r}: {value} does not exist"


def test_bench_scripts_accept_their_arguments():
    """Each ``python bench/X.py ...`` of the table exists, compiles, and declares every option the table gives
    it (read from its source: the scripts import matplotlib or torch at the top, too slow to start here)."""
    by_script: dict[str, set[str]] = {}
    for c in COMMANDS:
        if c.startswith("python bench/"):
            parts = shlex.split(c)
            by_script.setdefault(parts[1], set()).update(p.split("=")[0] for p in parts[2:] if p.startswith("--"))
    assert by_script
    for script, options in by_script.items():
        path = ROOT / script
        assert path.is_file(), script
        src = path.read_text()
        compile(src, str(path), "exec")
        assert "argparse" in src and "parse_args" in src, f"{script} takes no arguments"
        for opt in options:
            assert re.search(r"add_argument\([^)]*[\"']" + re.escape(opt) + r"[\"']", src), (
                f"{script} has no option {opt} (docs/reproduction.md's table uses it)")
