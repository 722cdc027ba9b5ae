"""torchvision's classification zoo through hetsim: export, quantise, inspect, run.

    python bench/export_torchvision.py                           # the default handful, fp32 + QDQ + QOperator
    python bench/export_torchvision.py --models vit_b_16 swin_t  # any torchvision.models classification builder
    python bench/export_torchvision.py --all                     # every classification model (slow: ~1 h)
    python bench/export_torchvision.py --formats fp32 --out /tmp/zoo --platform platforms/cim-npu.yaml

For each model: ``torchvision.models.<name>(weights=None)`` (random weights: shapes and costs do not depend on the
values, and nothing is downloaded) is exported with ``torch.onnx.export`` (TorchScript exporter, opset 17, static
input 1x3x224x224, or the size the model needs), then quantised by ONNX Runtime
(``onnxruntime.quantization.quantize_static``, int8 weights and uint8 activations, calibrated on a few random
inputs, after its ``quant_pre_process``) in the QDQ and in the QOperator format. Each file goes through
``hetsim inspect`` and ``hetsim run PLATFORM MODEL --mapper heft`` in a fresh process; the table printed at the
end (and written as ``results.json`` and ``results.md`` beside the models) holds the exit code, nodes, makespan
and wall time of each, and the first error line when one failed. The exports are written to ``--out`` (default
``results/zoo``, not committed: ViT-B/16 alone is 330 MB).

torchvision from PyPI is built against a CUDA torch; beside a CPU-only torch its C extension does not load and
``import torchvision`` fails with "operator torchvision::nms does not exist" (its fake-tensor registrations
need the ops). The classification models use none of those ops, so this script declares the two operators
(``nms``, ``qnms``) before importing torchvision; nothing is registered beyond their schemas. Install it without
touching torch: ``pip install --no-deps torchvision==0.28.0`` (the release for torch 2.13), or into a folder
given with ``--torchvision-path``.

Timings depend on the machine and its load: docs/models.md, "torchvision zoo", records one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = ["resnet18", "mobilenet_v3_small", "shufflenet_v2_x0_5", "efficientnet_b0", "regnet_x_400mf",
                  "squeezenet1_0", "convnext_tiny", "vit_b_16", "swin_t"]
FORMATS = ("fp32", "qdq", "qoperator")
#: input sizes other than 224 (inception needs 299)
INPUT_SIZE = {"inception_v3": 299}


def import_torchvision(extra_path: str | None):
    """``torchvision`` importable beside a CPU-only torch (see the module docstring)."""
    if extra_path:
        sys.path.insert(0, extra_path)
    import torch

    try:
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        import_torchvision.lib = lib  # keep the library alive
    except RuntimeError:
        pass  # torchvision's own extension is loaded already
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torchvision
    return torchvision


def classification_models(torchvision) -> list[str]:
    return sorted(torchvision.models.list_models(module=torchvision.models))


def export(torchvision, name: str, path: Path) -> float:
    import torch

    size = INPUT_SIZE.get(name, 224)
    kwargs = {"aux_logits": False, "init_weights": False} if name in ("inception_v3", "googlenet") else {}
    model = torchvision.models.get_model(name, weights=None, **kwargs).eval()
    # nn.MultiheadAttention's inference fast path (aten::_native_multi_head_attention) has no ONNX export
    torch.backends.mha.set_fastpath_enabled(False)
    t = time.perf_counter()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.randn(1, 3, size, size), str(path), opset_version=17, dynamo=False,
                          input_names=["x"], output_names=["logits"])
    return time.perf_counter() - t


def quantise(fp32: Path, out: Path, fmt: str, samples: int = 4) -> float:
    import numpy as np
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    t = time.perf_counter()
    # ONNX Runtime's recommended pre-processing (its optimiser, shape inference); without it QOperator
    # quantisation of the TorchScript export fails in _adjust_weight_scale_for_int32_bias (onnxruntime 1.32)
    pre = out.with_name(out.stem + "_pre.onnx")
    # in the output folder: a failing symbolic shape inference leaves sym_shape_infer_temp.onnx and its data in
    # the working directory
    with contextlib.chdir(out.parent):
        try:
            quant_pre_process(str(fp32), str(pre))
        except Exception:  # noqa: BLE001 - "Incomplete symbolic shape inference" (Swin): ONNX shape inference
            quant_pre_process(str(fp32), str(pre), skip_symbolic_shape=True)
    model = onnx.load(str(pre), load_external_data=False)
    x = model.graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.left = samples

        def get_next(self):
            if self.left == 0:
                return None
            self.left -= 1
            return {x.name: rng.standard_normal(shape).astype(np.float32)}

    quantize_static(str(pre), str(out), Reader(),
                    quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=False)
    pre.unlink()
    return time.perf_counter() - t


def hetsim(*argv: str, timeout: float) -> dict:
    """``python -m hetsim argv`` in a fresh process: exit code, wall time, stdout, last stderr line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "hetsim", *argv], capture_output=True, text=True, env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"code": None, "time_s": timeout, "out": "", "err": f"timeout after {timeout:g} s"}
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    err = next((ln for ln in lines if ln.startswith("hetsim: error") or "internal error" in ln),
               lines[-1] if lines and r.returncode else "")
    return {"code": r.returncode, "time_s": time.perf_counter() - t, "out": r.stdout, "err": err}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=None, help=f"default: {' '.join(DEFAULT_MODELS)}")
    ap.add_argument("--all", action="store_true", help="every torchvision classification model")
    ap.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "zoo")
    ap.add_argument("--platform", type=Path, default=ROOT / "platforms" / "puma.yaml")
    ap.add_argument("--mapper", default="heft")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per hetsim command, s")
    ap.add_argument("--torchvision-path", default=None, help="a folder holding torchvision (pip --target)")
    ap.add_argument("--reuse", action="store_true", help="keep model files already in --out")
    args = ap.parse_args(argv)

    tv = import_torchvision(args.torchvision_path)
    names = classification_models(tv) if args.all else (args.models or DEFAULT_MODELS)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        fp32 = args.out / f"{name}.onnx"
        row = {"model": name}
        try:
            if not (args.reuse and fp32.exists()):
                row["export_s"] = round(export(tv, name, fp32), 1)
        except Exception as e:  # noqa: BLE001 - a model that does not export is a result too
            row["export_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            rows.append(row)
            print(f"{name}: export failed: {row['export_error']}", flush=True)
            continue
        for fmt in args.formats:
            path = fp32 if fmt == "fp32" else args.out / f"{name}_{fmt}.onnx"
            cell = {}
            try:
                if fmt != "fp32" and not (args.reuse and path.exists()):
                    cell["quantise_s"] = round(quantise(fp32, path, fmt), 1)
            except Exception as e:  # noqa: BLE001
                cell["quantise_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                row[fmt] = cell
                continue
            ins = hetsim("inspect", str(path), timeout=args.timeout)
            run = hetsim("run", str(args.platform), str(path), "--mapper", args.mapper, "--json",
                         timeout=args.timeout)
            cell.update({"mb": round(path.stat().st_size / 1e6, 1), "inspect_code": ins["code"],
                         "inspect_s": round(ins["time_s"], 1), "run_code": run["code"],
                         "run_s": round(run["time_s"], 1)})
            if run["code"] == 0:
                s = json.loads(run["out"])
                cell.update({"ops": s["operators"], "makespan_ms": round(s["makespan_s"] * 1e3, 3),
                             "all_host_ms": round(s["baseline_makespan_s"] * 1e3, 3)
                             if s.get("baseline_makespan_s") else None,
                             "offloaded": s["ops_offloaded"]["count"], "folded": s.get("folded_ops")})
            err = ins["err"] or run["err"]
            if err:
                cell["error"] = err[:300]
            row[fmt] = cell
            print(f"{name} {fmt}: inspect exit {ins['code']} ({ins['time_s']:.1f} s), run exit {run['code']} "
                  f"({run['time_s']:.1f} s){', ' + cell['error'] if err else ''}", flush=True)
        rows.append(row)
    (args.out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    md = ["| model | format | MB | nodes | inspect | run (heft) | makespan ms | all-host ms | offloaded |",
          "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if "export_error" in row:
            md.append(f"| {row['model']} | export failed | | | | | {row['export_error']} | | |")
            continue
        for fmt in args.formats:
            c = row.get(fmt, {})
            if "quantise_error" in c:
                md.append(f"| {row['model']} | {fmt} | quantisation failed: {c['quantise_error']} | | | | | | |")
                continue
            ok = c.get("run_code") == 0 and c.get("inspect_code") == 0
            md.append(f"| {row['model']} | {fmt} | {c.get('mb', '')} | {c.get('ops', '')} | "
                      f"exit {c.get('inspect_code')}, {c.get('inspect_s')} s | exit {c.get('run_code')}, "
                      f"{c.get('run_s')} s | {c.get('makespan_ms', '')} | {c.get('all_host_ms', '')} | "
                      f"{c.get('offloaded', '')} |" + ("" if ok else f" {c.get('error', '')}"))
    (args.out / "results.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    failed = sum(1 for r in rows for f in args.formats
                 if "export_error" in r or r.get(f, {}).get("run_code") != 0 or r.get(f, {}).get("inspect_code") != 0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        sys.exit(main())
