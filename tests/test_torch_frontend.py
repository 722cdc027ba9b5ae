"""The PyTorch front end (hetsim/workload/torch_import.py): a ResNet-18 module and a saved torch.export program
run end to end through an ONNX export held in memory; without torch, one line and exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hetsim

torch = pytest.importorskip("torch")
nn = torch.nn
ROOT = Path(__file__).resolve().parents[1]
PUMA = str(ROOT / "platforms" / "puma.yaml")


class _Block(nn.Module):
    """torchvision's BasicBlock (two 3x3 convolutions, a projection shortcut when the shape changes)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(y + (x if self.downsample is None else self.downsample(x)))


def resnet18() -> nn.Module:
    """torchvision's ResNet-18 (He et al. 2016; 11.7 M parameters), or the same architecture written here when
    torchvision does not import beside this torch."""
    try:
        from torchvision.models import resnet18 as tv_resnet18

        return tv_resnet18(weights=None)
    except Exception:
        pass
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [_Block(cin, cout, stride), _Block(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))


def test_resnet18_module_end_to_end():
    model = resnet18()
    assert sum(p.numel() for p in model.parameters()) == 11_689_512  # torchvision's count
    r = hetsim.run(PUMA, model, example_inputs=torch.zeros(1, 3, 64, 64), mapper="heft")
    convs = [v for v in r.workload.topological_order() if r.workload.op(v).op_type == "Conv"]
    assert len(convs) == 20  # 17 3x3/7x7 + 3 projection shortcuts (BatchNorm folded into them by the export)
    gemm = r.workload.op(convs[0]).gemm
    assert (gemm.m_v, gemm.n_v, gemm.n_mvm) == (64, 3 * 7 * 7, 32 * 32)  # the stem on a 64x64 input
    assert r.makespan_s > 0 and r.speedup is not None and r.speedup >= 1.0
    assert model.training  # the export ran in eval mode and left the module as it was


def test_saved_program_on_the_command_line(tmp_path, capsys):
    from hetsim.cli import main

    small = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 10))
    pytest.importorskip("onnxscript")  # the torch.export-based ONNX exporter needs it (hetsim[torch])
    torch.export.save(torch.export.export(small.eval(), (torch.zeros(1, 3, 8, 8),)), tmp_path / "small.pt2")
    assert main(["run", PUMA, str(tmp_path / "small.pt2"), "--mapper", "heft", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["workload"] == "small" and s["operators"] >= 4 and s["makespan_s"] > 0
    (tmp_path / "bad.pt2").write_bytes(b"not a program")
    assert main(["run", PUMA, str(tmp_path / "bad.pt2")]) == 2
    assert "is not a saved torch.export program" in capsys.readouterr().err


def test_without_torch_one_line_and_exit_2(tmp_path):
    (tmp_path / "m.pt2").write_bytes(b"x")
    code = ("import sys; sys.modules['torch'] = None; from hetsim.cli import main; "
            f"sys.exit(main(['run', {PUMA!r}, {str(tmp_path / 'm.pt2')!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == "hetsim: error: reading a PyTorch model needs torch: pip install 'hetsim[torch]' " \
                                 "(torch and onnxscript)"
