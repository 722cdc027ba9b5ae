"""report.html (``hetsim.report.html``): written by ``run --out`` (ONNX and SNN) and by ``plot`` for sweeps,
self-contained (figures embedded, nothing fetched from the network), and rendered by a real headless Chromium
when one is installed (the test that needs it skips otherwise; a screenshot lands next to each report)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from hetsim.cli import main
from hetsim.report.html import figure_caption, png_css_width, quantity, si_prefix, table_html

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
EFR = ROOT / "platforms" / "efr32mg24.yaml"
R20 = ROOT / "workloads" / "resnet20_cifar10.onnx"
SNN = ROOT / "workloads" / "snn" / "braille64.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """What a test needs of a page: its tables (rows of cell texts, header first), images and every URL-bearing
    attribute."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.images: list[str] = []
        self.urls: list[str] = []
        self.tags: set[str] = set()
        self._cell: list[str] | None = None
        self._depth = 0
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        self.urls += [v for k, v in attrs if k in ("src", "href", "action", "data", "poster") and v]
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self.images.append(a.get("src", ""))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def assert_self_contained(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    low = text.lower()
    assert "http://" not in low and "https://" not in low and "//cdn" not in low
    page = Page(text)
    assert "link" not in page.tags  # no external style sheets or fonts
    assert all(u.startswith("data:") for u in page.urls), [u[:60] for u in page.urls if not u.startswith("data:")]
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG_MAGIC
    return page


def table_with(page: Page, *header: str) -> list[list[str]]:
    """The first table whose header row holds every name of ``header``."""
    for t in page.tables:
        if t and all(h in t[0] for h in header):
            return t
    raise AssertionError(f"no table with columns {header}: {[t[0] for t in page.tables if t]}")


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """report.html of an ONNX run, an SNN run and a sweep (written once for the module)."""
    base = tmp_path_factory.mktemp("html")
    assert main(["run", str(PUMA), str(R20), "--mapper", "greedy", "--out", str(base / "run")]) == 0
    assert main(["run", str(EFR), str(SNN), "--out", str(base / "snn")]) == 0
    spec = {"name": "t", "workloads": [str(R20)], "platforms": [str(PUMA)],
            "parameters": {"devices.cim.crossbars": [10, 100], "devices.cim.t_mvm_ns": [100]}, "mappers": ["heft"],
            "output": str(base / "sweep.csv")}
    (base / "sweep.yaml").write_text(yaml.safe_dump(spec))
    assert main(["sweep", str(base / "sweep.yaml"), "--workers", "1"]) == 0
    assert main(["plot", str(base / "sweep.csv"), "-o", str(base / "figs")]) == 0
    return {"run": base / "run" / "report.html", "snn": base / "snn" / "report.html",
            "sweep": base / "figs" / "report.html"}


def test_run_report_has_summary_tables_and_figures(reports):
    out = reports["run"].parent
    page = assert_self_contained(reports["run"])
    ops = pd.read_csv(out / "ops.csv")
    summary = json.loads((out / "summary.json").read_text())
    head = {row[0]: row[1] for row in table_with(page, "workload")}  # the summary: key, value
    assert head["workload"] == summary["workload"] and head["mapper"] == "greedy"
    assert head["makespan"] == quantity(summary["makespan_s"], "s")
    devices = table_with(page, "device", "kind", "utilisation (%)")
    assert [r[0] for r in devices[1:]] == [d["device"] for d in summary["devices"]]
    op_rows = table_with(page, "op", "type", "device")
    assert len(op_rows) - 1 == len(ops) == summary["operators"]  # every op
    assert [r[0] for r in op_rows[1:]] == list(ops["op"])
    assert len(page.images) == 3  # timeline, breakdown, memory over time
    mem = table_with(page, "memory", "devices", "peak (B)")
    assert [r[0] for r in mem[1:]] == list(summary["memory"]["memories"])


def test_snn_report_has_layers_configs_samples_and_timeline(reports):
    out = reports["snn"].parent
    page = assert_self_contained(reports["snn"])
    layers = table_with(page, "layer", "engine", "residency")
    assert len(layers) - 1 == len(pd.read_csv(out / "layers.csv"))
    configs = table_with(page, "configuration", "mean latency (ms)")
    assert "all sparse M33" in [r[0] for r in configs[1:]]
    samples = table_with(page, "config", "sample", "latency (ms)")
    assert len(samples) - 1 == len(pd.read_csv(out / "samples.csv"))
    assert len(page.images) == 1


def test_sweep_report_has_figures_and_every_row(reports):
    figs = reports["sweep"].parent
    page = assert_self_contained(reports["sweep"])
    df = pd.read_csv(figs.parent / "sweep.csv")
    rows = table_with(page, "workload", "speedup")
    assert len(rows) - 1 == len(df) and "key" not in rows[0]
    assert len(page.images) == len(list(figs.glob("*.png")))
    # and plot refuses to replace it
    assert main(["plot", str(figs.parent / "sweep.csv"), "-o", str(figs)]) == 2


def test_run_refuses_to_replace_a_report_without_force(tmp_path, capsys):
    out = tmp_path / "res"
    out.mkdir()
    (out / "report.html").write_text("mine")
    assert main(["run", str(PUMA), str(R20), "--mapper", "all-host", "--out", str(out)]) == 2
    assert "report.html" in capsys.readouterr().err and (out / "report.html").read_text() == "mine"
    assert main(["run", str(PUMA), str(R20), "--mapper", "all-host", "--out", str(out), "--force"]) == 0
    assert_self_contained(out / "report.html")


def test_table_formatting():
    df = pd.DataFrame({"op": ["<a>", "b"], "start_s": [0.0, 4.5e-3], "energy_j": [2e-6, np.nan],
                       "macs": [1_000_000.0, 3.0], "utilisation": [0.5, 1.0], "ok": [True, False]})
    page = Page(table_html(df))
    (t,) = page.tables
    assert t[0] == ["op", "start (ms)", "energy (µJ)", "macs", "utilisation (%)", "ok"]
    assert t[1] == ["<a>", "0", "2.000", "1,000,000", "50.00", "yes"]  # escaped, then read back as text
    assert t[2][1:4] == ["4.500", "", "3"]
    assert "&lt;a&gt;" in table_html(df)
    assert si_prefix([0.0]) == (1.0, "") and si_prefix([51e-9])[1] == "n"
    assert quantity(0.0450534, "s") == "45.05 ms" and quantity(51e-9, "s") == "51.00 ns"
    assert quantity(None, "s") == "-"
    assert figure_caption("fig3_speedup_resnet18").endswith("Fig. 3): resnet18")


def test_png_css_width(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(3.5, 2))
    fig.savefig(tmp_path / "f.png", dpi=300)
    plt.close(fig)
    assert png_css_width((tmp_path / "f.png").read_bytes()) == 336  # 3.5 in at 96 CSS px per inch
    assert png_css_width(b"not a png") is None


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def run_chromium(*args: str) -> subprocess.CompletedProcess:
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", *args],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.mark.parametrize("kind", ["run", "snn", "sweep"])
def test_report_renders_in_headless_chromium(reports, kind):
    html = reports[kind]
    shot = html.with_name("report.png")
    run_chromium("--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,2000", html.resolve().as_uri())
    data = shot.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 20_000, len(data)
    assert int.from_bytes(data[16:20], "big") == 1280 and int.from_bytes(data[20:24], "big") == 2000
    import matplotlib.image

    img = matplotlib.image.imread(shot)[..., :3]
    ink = (img.min(axis=2) < 0.5).mean()  # dark pixels: text, table rules, figures
    assert 0.005 < ink < 0.6, ink
    assert len(np.unique((img[::4, ::4] * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50  # figures in colour
    print(f"screenshot: {shot}")


def test_tables_sort_in_headless_chromium(reports):
    """The inline script sorts the op table by a clicked header (twice: descending, by the exact value)."""
    html = reports["run"]
    click = ('<script>document.querySelectorAll("table.sortable thead th").forEach(function (th) {'
             ' if (th.title === "latency_s" && th.closest("table").rows.length > 10) { th.click(); th.click(); }'
             ' });</script></body>')
    probe = html.with_name("sorted.html")
    probe.write_text(html.read_text(encoding="utf-8").replace("</body>", click), encoding="utf-8")
    dom = run_chromium("--dump-dom", probe.resolve().as_uri()).stdout
    ops = pd.read_csv(html.with_name("ops.csv"))
    shown = [r[0] for r in table_with(Page(dom), "op", "type", "device")[1:]]
    latency = ops.set_index("op")["latency_s"]
    assert sorted(shown) == sorted(ops["op"]) and shown != list(ops["op"])
    assert all(np.diff(latency[shown].to_numpy()) <= 1e-12)  # non-increasing


class _VisibleText(HTMLParser):
    """The text a reader sees (scripts and styles left out)."""

    def __init__(self, text: str):
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._hidden -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)


@pytest.mark.parametrize("kind", ["run", "snn", "sweep"])
def test_no_long_digit_numbers_in_a_report(reports, kind):
    """The summary.json block of report.html printed floats in full (``"busy_s": 0.0003251519999999786``); every
    visible number has at most 6 significant digits (the file summary.json keeps them all)."""
    import re

    text = " ".join(_VisibleText(reports[kind].read_text(encoding="utf-8")).parts)  # one cell, one part
    long = re.findall(r"\d*\.\d{10,}|\d+\.\d*e[-+]?\d+", text)
    assert [x for x in long if len(re.sub(r"e.*|\D|^0+", "", x.lstrip("0."))) > 6] == []
    if kind != "sweep":
        full = json.loads((reports[kind].parent / "summary.json").read_text())
        assert any(len(repr(v)) > 12 for v in full.values() if isinstance(v, float))  # the file: every digit


def test_rounded_keeps_six_significant_digits_and_leaves_the_rest():
    from hetsim.report.html import _rounded

    got = _rounded({"a": 0.0003251519999999786, "b": [2.599116890588234, np.float64(1 / 3), 7, True, "x"],
                    "c": (float("inf"), 12345678.9), "d": float("nan")})
    assert got["a"] == 0.000325152 and got["b"] == [2.59912, 0.333333, 7, True, "x"]
    assert got["c"] == [float("inf"), 12345700.0] and np.isnan(got["d"])
