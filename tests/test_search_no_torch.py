"""Without torch, every ``hetsim search`` path ends in the one-line "needs torch" error with exit 2:
the settings are checked by torch-free code first (``hetsim.search.recipe``), so ``--epochs`` or ``--preset`` no
longer reach an import of torch. Runs in a subprocess whose ``import torch`` fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIANA = str(ROOT / "platforms" / "diana.yaml")

SCRIPT = """
import json
import sys


class NoTorch:  # import torch raises ModuleNotFoundError, as on a machine without it
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, NoTorch())
from hetsim.cli import main

codes = [main(argv) for argv in json.loads(sys.argv[1])]
print(json.dumps(codes))
"""

EXTRAS = [[], ["--epochs", "1,1,1"], ["--preset", "small"],
          ["--temperature", "1", "--anneal", "--smooth-max", "logsumexp", "--normalise", "all-8bit", "--strength", "1"],
          ["--dataset", "cifar10", "--data-root", "."]]


def test_every_search_path_without_torch_is_one_line_exit_2(tmp_path):
    import json

    argvs = [["search", DIANA, "--out", str(tmp_path / f"o{i}"), *extra] for i, extra in enumerate(EXTRAS)]
    out = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(argvs)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [2] * len(EXTRAS), out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == len(EXTRAS), out.stderr
    assert all("needs torch" in line and "hetsim[search]" in line for line in lines), out.stderr
    assert not any((tmp_path / f"o{i}").exists() for i in range(len(EXTRAS)))
