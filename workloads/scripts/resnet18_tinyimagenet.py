"""Build ``workloads/resnet18_tinyimagenet_int8_qdq.onnx``: the ResNet-18 that ODiMO's Tiny-ImageNet scripts run.

ODiMO's scripts (eml-eda/odimo ``image_classification/tiny-imagenet/run_ic.sh``) pass ``--no-std-head``: the stem is
a 3x3 stride-1 convolution (64 channels, padding 1) with no max-pool, on 64x64 inputs, so every later layer sees
16x the pixels of torchvision's 7x7/2 stem + max-pool. The rest is torchvision's ResNet-18 (BasicBlocks 64-128-256-
512, 1x1 stride-2 shortcut convolutions where the shape changes, global average pool, FC 512 -> 200), with
torchvision's module names so the ONNX op names match (``/layer2/layer2.0/conv1/Conv``). Written here without
torchvision. Seeded random weights (seed 0) and BatchNorm statistics, folded by the exporter; then int8 QDQ by
onnxruntime ``quantize_static`` as the other int8 files (per-channel weights, MinMax on 8 random-normal inputs).

Run: ``python workloads/scripts/resnet18_tinyimagenet.py OUT.onnx`` (needs torch and onnxruntime).
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
                           if stride != 1 or c_in != c_out else None)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet18NoStdHead(nn.Module):
    def __init__(self, num_classes: int = 200):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)  # ODiMO --no-std-head: 3x3/1, no max-pool
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        widths, c_in = (64, 128, 256, 512), 64
        for i, w in enumerate(widths, start=1):
            stride = 1 if i == 1 else 2
            setattr(self, f"layer{i}", nn.Sequential(BasicBlock(c_in, w, stride), BasicBlock(w, w, 1)))
            c_in = w
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class _Random(CalibrationDataReader):
    def __init__(self, n: int = 8):
        rng = np.random.default_rng(0)
        self.data = iter([{"input": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.data, None)


def main(out: str) -> None:
    torch.manual_seed(0)
    net = ResNet18NoStdHead()
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_(0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    net.eval()
    buf = io.BytesIO()
    torch.onnx.export(net, torch.zeros(1, 3, 64, 64), buf, dynamo=False, opset_version=13,
                      input_names=["input"], output_names=["output"])
    with tempfile.TemporaryDirectory() as tmp:
        fp32, pre = Path(tmp) / "fp32.onnx", Path(tmp) / "pre.onnx"
        fp32.write_bytes(buf.getvalue())
        quant_pre_process(str(fp32), str(pre))
        quantize_static(str(pre), out, _Random(), quant_format=QuantFormat.QDQ, per_channel=True,
                        weight_type=QuantType.QInt8, activation_type=QuantType.QInt8)
    onnx.checker.check_model(out)


if __name__ == "__main__":
    main(sys.argv[1])
