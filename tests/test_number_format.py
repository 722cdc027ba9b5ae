"""One number format for what people read (hetsim/numbers.py), checked on the shipped runs' terminal reports and
report.html: every time and energy with at most 4 significant digits, in an engineering prefix that keeps it
below 1,000 (seconds and joules excepted: there is no kilo), the unit of a table's column chosen once from its
values, and no energy printed as a measured 0 where nothing is modelled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_cli

from hetsim.numbers import column_scale, format_column, format_number, format_value

ROOT = Path(__file__).resolve().parents[1]
#: a time or an energy as the reports print it
QUANTITY = re.compile(r"(?<![\w.])(-?[<>]?-?[\d,]*\d(?:\.\d+)?) (ps|ns|us|µs|ms|s|pJ|nJ|uJ|µJ|mJ|J)\b")


def significant(text: str) -> int:
    digits = text.lstrip("<>-").replace(",", "").replace(".", "").lstrip("0")
    return len(digits)


def check_quantities(text: str) -> int:
    """Every time and energy of ``text`` in the one format; returns how many were checked."""
    n = 0
    for num, unit in QUANTITY.findall(text):
        value = float(num.lstrip("<>").replace(",", ""))
        assert significant(num) <= 4, (num, unit)
        if unit not in ("s", "J"):
            assert abs(value) < 1000, (num, unit)  # 8,098.5658 us is 8.099 ms
        n += 1
    return n


@pytest.mark.parametrize("args", [
    ("platforms/puma.yaml", "workloads/yolov5n.onnx"),
    ("platforms/diana.yaml", "workloads/resnet20_cifar10.onnx"),
    ("platforms/efr32mg24.yaml", "workloads/snn/braille384.yaml"),
    ("platforms/cim-npu.yaml", "scenarios/camera-cim-npu.yaml"),
], ids=["puma-yolov5n", "diana-resnet20", "efr32-snn", "camera-scenario"])
def test_shipped_runs_print_one_number_format(capsys, tmp_path, monkeypatch, args):
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli(capsys, "run", *args, "--out", tmp_path / "run")
    assert code == 0, err
    assert check_quantities(out) >= 8
    assert "0.000 mJ" not in out and "0.000 uJ" not in out and "e+0" not in out
    page = (tmp_path / "run" / "report.html").read_text()
    if "efr32" not in args[0]:  # DIANA's host, PUMA's and cim-npu's bus have no power figure: a word, never 0 J
        assert ">not modelled</td>" in page
    if "puma" in args[0] or "cim-npu" in args[0]:  # the bus has no energy figure: a word, not a number
        assert re.search(r"\n  bus +.*not modelled\n", out), out


def test_a_column_keeps_one_unit_and_four_digits_of_its_largest():
    # the units that jumped: 8,098.5658 us beside 39.649 ms, 2,840.6175 ms beside 2.842 s
    assert format_column([8.0985658e-3, 39.649e-3], "s") == ["8.10 ms", "39.65 ms"]
    assert format_column([2.8406175, 2.842], "s") == ["2.841 s", "2.842 s"]
    assert column_scale([96e-3, 2e-6]) == ("m", 1e-3, 2)  # mJ and uJ in one column: mJ, from the largest
    assert format_value(float("nan"), "J") == "-" and format_value(float("inf"), "s") == "inf s"
    assert format_column([1e-3, -2e-9], "s") == ["1.000 ms", ">-0.001 ms"]
    assert format_number(13.3333) == "13.33" and format_number(30.0) == "30" and format_number(1234.56) == "1,235"


def test_a_heuristic_mappers_report_says_it_is_one(capsys, tmp_path):
    """heft on YOLOv5n with 50 crossbars ran 191.6 ms at a 2.56 GB/s bus and 204.4 ms at 5.12 GB/s: a heuristic's
    schedule may lengthen when the platform improves, and the report says which mappers give the optimum."""
    from test_cli import tiny_model

    from hetsim.report.text import heuristic_note

    model = tiny_model(tmp_path / "t.onnx")
    code, out, err = run_cli(capsys, "run", ROOT / "platforms" / "puma.yaml", model, "--mapper", "heft",
                             "--out", tmp_path / "heft")
    assert code == 0, err
    assert "  note: heft is a heuristic: its schedule is not proven optimal" in out and "cpsat and ilp" in out
    assert "heft is a heuristic" in (tmp_path / "heft" / "report.html").read_text()
    code, out, err = run_cli(capsys, "run", ROOT / "platforms" / "puma.yaml", model, "--mapper", "cpsat")
    assert code == 0, err
    assert "is a heuristic" not in out
    assert heuristic_note({"mapper": "x", "mapper_stats": {"status": "optimal"}}) is None
    assert heuristic_note({"mapper": "x", "mapper_stats": {"status": "heuristic"}, "replayed_schedule": True}) is None
