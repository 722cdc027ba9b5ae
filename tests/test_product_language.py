"""The project's files speak of the product, not of how it was built: no tracker numbers, work branches, helpers
or measurement rounds in docs, docstrings, comments or outputs.

Each pattern is a phrase the project's history left in its files before (``issue 23``, ``helper `memory`'s``,
``branch `polbound```, ``the seventh round``, ``the hostile-input round``, ``in this session``); ordinary words
that share a stem (a round trip, rounding, an ONNX Runtime session, ``onnx.helper``, a branch and bound) are not
matched. The mutation test below checks that each pattern still catches what it is for.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROCESS_LANGUAGE = re.compile(
    r"\bissues? \d+"                      # a tracker number ("issue 23", "issues 13, 24")
    r"|\bissue's\b|\bthe issue\b"         # "the 20,000-op chain", "the way the issue asked"
    r"|\bhelpers?\s+`|\bhelpers'|\bother helpers\b"   # "helper `memory`'s", "helpers' suites"
    r"|\bbranch `"                        # "branch `polbound`"
    r"|\b(?:this|that|next|previous|last|earlier|each|first|second|third|fourth|fifth|sixth|seventh|eighth"
    r"|hardening|hostile-input|measurement) rounds?\b(?!-)"   # "the seventh round", not "that round-trip"
    r"|\bin this session\b|\bthis session's\b|\bcoordinator\b|\bworktree\b"
    r"|\b(?:before|after) the merges?\b",
    re.I,
)

SUFFIXES = (".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".sh", ".ipynb", ".h", ".c")


def _project_files():
    for p in sorted(ROOT.rglob("*")):
        rel = p.relative_to(ROOT)
        if not p.is_file() or rel.parts[0].startswith(".") or "egg-info" in rel.parts[0] or "__pycache__" in rel.parts:
            continue
        if rel.parts[0] in ("results", "build", "dist") or p.suffix not in SUFFIXES or p == Path(__file__):
            continue
        yield rel, p


def test_no_file_speaks_of_how_the_project_was_built():
    hits = []
    for rel, p in _project_files():
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), start=1):
            if PROCESS_LANGUAGE.search(line):
                hits.append(f"{rel}:{i}: {line.strip()[:140]}")
    assert hits == [], "describe the product, not how it was built:\n" + "\n".join(hits)


def test_the_pattern_catches_process_language_and_spares_product_words():
    caught = ["Ours (issue 23): the ILP", "(issues 13, 24)", "the issue's 20,000-op chain", "helper `memory`'s model",
              "the helpers' suites at load 4-6", "rerun on branch `polbound`", "Issue 24, seventh round:",
              "found by the hostile-input round", "could not be timed in this session", "main after the merges"]
    spared = ["a round trip through NIR", "values that round-trip in FP32", "rounding to ticks",
              "ONNX Runtime folds them at session creation", "from onnx import helper", "HiGHS's branch and bound",
              "a branch, a merge or a cycle", "google/or-tools#5199", "round(sqrt(n))", "merged gap columns"]
    assert [s for s in caught if not PROCESS_LANGUAGE.search(s)] == []
    assert [s for s in spared if PROCESS_LANGUAGE.search(s)] == []
