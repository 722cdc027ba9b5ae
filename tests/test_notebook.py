"""docs/notebooks/quickstart.ipynb runs from top to bottom (nbclient, a fresh ipykernel) and draws its figures
inline: the notebook the README points to never rots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_executes_and_draws_inline(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_before = os.environ.get("MPLBACKEND")
    os.environ.pop("MPLBACKEND", None)  # the kernel must pick the inline backend itself
    try:
        client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                         resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()
    finally:
        if env_before is not None:
            os.environ["MPLBACKEND"] = env_before
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    images = [c for c in code if any("image/png" in o.get("data", {}) for o in c.outputs)]
    assert len(images) == 6  # timeline, breakdown, DataFrame plot, sweep figure, the scenario's CDF and timeline
    printed = "".join(o.get("text", "") for c in code for o in c.outputs if o.output_type == "stream")
    assert "puma-arm with devices.cim.crossbars=200, links.bus.bandwidth_gb_s=10.24" in printed  # named changes
    # the scenario's stream table: both streams served, their p99 shown
    tables = "".join(o.get("data", {}).get("text/plain", "") for c in code for o in c.outputs)
    assert "latency_p99_s" in tables and "resnet" in tables and "mobilenet" in tables
    assert "<ScenarioResult two-models-puma on puma-arm" in tables  # its repr: one screen


def test_quickstart_notebook_uses_public_names_only():
    """The notebook is the API's showcase: everything through ``hetsim.NAME`` and the results' methods, no import
    of a module inside hetsim."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "import hetsim" in code
    assert "from hetsim" not in code and "import hetsim." not in code
    import hetsim

    for name in ("run", "load_platform", "load_workload", "sweep_figure"):
        assert f"hetsim.{name}(" in code and name in hetsim.__all__
