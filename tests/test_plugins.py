"""Plugins: a device kind defined outside hetsim reaches the command line through HETSIM_PLUGINS."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _example(tmp_path: Path) -> None:
    """docs/extending.md's kind module and platform, as written there."""
    doc = (ROOT / "docs" / "extending.md").read_text()
    code = re.search(r"Save this as `my_kinds.py`:\n\n```python\n(.*?)```", doc, re.S).group(1)
    yml = re.search(r"and a platform that uses it as `dsp.yaml`:\n\n```yaml\n(.*?)```", doc, re.S).group(1)
    (tmp_path / "my_kinds.py").write_text(code)
    (tmp_path / "dsp.yaml").write_text(yml)


def _hetsim(tmp_path: Path, env_plugins: str | None, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in __import__("os").environ.items() if k != "HETSIM_PLUGINS"}
    if env_plugins is not None:
        env["HETSIM_PLUGINS"] = env_plugins
    return subprocess.run([sys.executable, "-m", "hetsim", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_kind_from_hetsim_plugins_runs_on_the_command_line(tmp_path):
    _example(tmp_path)
    model = str(ROOT / "workloads" / "resnet20_cifar10.onnx")
    out = _hetsim(tmp_path, "my_kinds", "run", "dsp.yaml", model, "--mapper", "heft")
    assert out.returncode == 0, out.stderr
    assert re.search(r"^\s+dsp\s+dsp\s+\d+", out.stdout, re.M), out.stdout  # ops land on the plugin's device
    missing = _hetsim(tmp_path, None, "run", "dsp.yaml", model)
    assert missing.returncode == 2 and "unknown device kind 'dsp'" in missing.stderr
    broken = _hetsim(tmp_path, "no_such_plugin", "run", "dsp.yaml", model)
    assert broken.returncode == 2 and "plugin 'no_such_plugin'" in broken.stderr
    assert "Traceback" not in broken.stderr + missing.stderr


def test_a_plugin_found_by_its_file_path(tmp_path):
    _example(tmp_path)
    elsewhere = tmp_path / "plugins"
    elsewhere.mkdir()
    (tmp_path / "my_kinds.py").rename(elsewhere / "my_kinds.py")  # not in the current folder nor on the path
    model = str(ROOT / "workloads" / "resnet20_cifar10.onnx")
    out = _hetsim(tmp_path, str(elsewhere / "my_kinds.py"), "run", "dsp.yaml", model, "--mapper", "heft")
    assert out.returncode == 0, out.stderr
    assert re.search(r"^\s+dsp\s+dsp\s+\d+", out.stdout, re.M), out.stdout
    gone = _hetsim(tmp_path, str(elsewhere / "nope.py"), "run", "dsp.yaml", model)
    assert gone.returncode == 2 and "nope.py" in gone.stderr and "Traceback" not in gone.stderr
