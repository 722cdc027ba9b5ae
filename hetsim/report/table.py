"""Plain-text tables for the command-line reports."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(head: Sequence[str], rows: Sequence[Sequence[str]], right: set[int] | frozenset[int] = frozenset(),
               indent: str = "") -> list[str]:
    """Lines of a table with aligned columns: the header, then one line per row (trailing spaces stripped).

    Args:
        head: column titles.
        rows: cells as strings, one list per row, each as long as ``head``.
        right: indices of the columns to right-align (numbers); the others are left-aligned.
        indent: prefix of every line.
    """
    widths = [max([len(h), *(len(r[k]) for r in rows)]) for k, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return indent + "  ".join(c.rjust(w) if k in right else c.ljust(w)
                                  for k, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [line(head), *(line(r) for r in rows)]
