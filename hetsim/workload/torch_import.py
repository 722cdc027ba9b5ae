"""The PyTorch front end (``torch`` in :mod:`hetsim.workload.frontends`): a PyTorch model as hetsim's operator DAG,
through an ONNX export held in memory and the ONNX importer (:func:`hetsim.workload.onnx_import.load_onnx`).

Two sources:

* a saved ``torch.export`` program (``torch.export.save(torch.export.export(model, args), "model.pt2")``):
  ``hetsim run PLATFORM model.pt2``. Its example inputs are in the program; it is exported with torch's
  ``torch.export``-based ONNX exporter (``torch.onnx.export(program, dynamo=True)``, which needs
  ``onnxscript``: ``pip install 'hetsim[torch]'``);
* an ``nn.Module`` with ``example_inputs`` (a tensor or a tuple of tensors): ``hetsim.run(platform, module,
  example_inputs=torch.zeros(1, 3, 224, 224))``. It is exported in eval mode with torch's TorchScript-based
  exporter (``dynamo=False``, opset 17), the exporter hetsim's ODiMO search already uses, which needs nothing
  beyond torch and is several times faster on the same module; where it is gone from torch, with the
  ``dynamo=True`` one.

The workload's name is the file's stem, or the module's class name. torch is an optional dependency: without it
the front end raises a one-line :class:`~hetsim.errors.WorkloadError` saying what to install.
"""

from __future__ import annotations

import io
import logging
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from hetsim.errors import WorkloadError

_LOAD_LOCK = threading.Lock()
#: the ONNX opset of the TorchScript-based export
OPSET = 17
INSTALL = "pip install 'hetsim[torch]' (torch and onnxscript)"


def _torch():
    try:
        import torch
    except ImportError:
        raise WorkloadError(f"reading a PyTorch model needs torch: {INSTALL}") from None
    return torch


def is_torch_source(obj) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module`` or a ``torch.export.ExportedProgram`` (checked without importing
    torch when it is not imported yet: then ``obj`` cannot be one)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    return isinstance(obj, torch.nn.Module | torch.export.ExportedProgram)


def load_torch(source, input_shape: Mapping[str, Sequence[int]] | None = None, example_inputs=None):
    """Read a PyTorch model (module docstring) into a :class:`~hetsim.workload.op.Workload`.

    Args:
        source: a ``.pt2`` path (a saved ``torch.export`` program), an ``ExportedProgram``, or an ``nn.Module``.
        input_shape: graph input name -> dims for dynamic dims left in the export (see
            :func:`~hetsim.workload.onnx_import.load_onnx`).
        example_inputs: for an ``nn.Module``: the inputs it is traced with (a tensor, or a tuple of them).

    Raises:
        WorkloadError: torch (or, for a ``.pt2``, onnxscript) is not installed; a missing or unreadable ``.pt2``;
            an ``nn.Module`` without ``example_inputs``; an export torch refuses (the message gives torch's
            reason); whatever :func:`~hetsim.workload.onnx_import.load_onnx` refuses in the exported graph.
    """
    from hetsim.workload.onnx_import import load_onnx

    if isinstance(source, str | Path):  # a folder, a device, a missing file: refused before torch is asked for
        from hetsim.input_files import MAX_MODEL_BYTES, check_input_file
        from hetsim.workload.pt2_archive import WHAT

        check_input_file(Path(source), WHAT, WorkloadError, MAX_MODEL_BYTES)
    torch = _torch()
    if isinstance(source, str | Path):
        path = Path(source)
        program = _load_program(torch, path)
        name = path
    elif isinstance(source, torch.export.ExportedProgram):
        program, name = source, Path("exported_program.onnx")
    elif isinstance(source, torch.nn.Module):
        if example_inputs is None:
            raise WorkloadError(f"a PyTorch module ({type(source).__name__}) needs example_inputs to be exported, "
                                "e.g. example_inputs=torch.zeros(1, 3, 224, 224)")
        data = _export_module(torch, source, example_inputs)
        return load_onnx(Path(f"{type(source).__name__}.onnx"), input_shapes=input_shape, data=data)
    else:
        raise WorkloadError(f"not a PyTorch model: {type(source).__name__}")
    if example_inputs is not None:
        raise WorkloadError("example_inputs apply to an nn.Module; an exported program carries its own")
    return load_onnx(Path(name).with_suffix(".onnx"), input_shapes=input_shape, data=_export_program(torch, program))


def _load_program(torch, path: Path):
    """The ``ExportedProgram`` saved in ``path``, loaded so that nothing in the file runs
    (:mod:`hetsim.workload.pt2_archive` checks the archive first and hands torch a fresh copy of it)."""
    from hetsim.workload.pt2_archive import read_pt2

    checked = read_pt2(path)
    with _LOAD_LOCK:  # the environment and torch's loggers are the process's: one load at a time
        return _load_checked(torch, path, checked)


def _load_checked(torch, path: Path, checked: bytes):
    """``torch.export.load`` of the checked archive, every ``torch.load`` in it held to ``weights_only``."""
    import contextlib
    import os

    saved = {k: os.environ.get(k) for k in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")}
    loggers = [logging.getLogger(n) for n in ("torch.export", "torch._export")]
    kept = _KeepErrors()
    before = [(lg.handlers, lg.propagate) for lg in loggers]
    try:
        # no torch.load inside torch's loader may fall back to weights_only=False
        os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
        os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
        for lg in loggers:  # torch logs the reason a load failed, with its traceback, and raises another
            lg.handlers, lg.propagate = [kept], False
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            return torch.export.load(io.BytesIO(checked))
    except Exception as err:  # torch raises many kinds for a file that is not a saved program
        cause = kept.errors[0] if kept.errors and "warnings above" in str(err) else err
        first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
        raise WorkloadError(f"{path} is not a saved torch.export program (torch.export.save): "
                            f"{type(cause).__name__}: {first}") from None
    finally:
        for lg, (handlers, propagate) in zip(loggers, before, strict=True):
            lg.handlers, lg.propagate = handlers, propagate
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _KeepErrors(logging.Handler):
    """Keeps the exceptions of the log records it receives (and prints nothing)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])


def _quiet_export(fn):
    """Run an export with torch's warnings and its exporter's progress lines silenced."""
    import contextlib
    import logging

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")]
        levels = [lg.level for lg in loggers]
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            return fn()
        except WorkloadError:
            raise
        except Exception as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise WorkloadError(f"torch could not export the model to ONNX: {type(err).__name__}: {first}") from None
        finally:
            for lg, lv in zip(loggers, levels, strict=True):
                lg.setLevel(lv)


def _export_program(torch, program) -> bytes:
    """An ``ExportedProgram`` as ONNX bytes (the ``torch.export``-based exporter, which needs onnxscript)."""
    try:
        import onnxscript  # noqa: F401
    except ImportError:
        raise WorkloadError(f"exporting a torch.export program to ONNX needs onnxscript: {INSTALL}") from None
    prog = _quiet_export(lambda: torch.onnx.export(program, dynamo=True, verbose=False))
    return prog.model_proto.SerializeToString()


def _export_module(torch, module, example_inputs) -> bytes:
    """An ``nn.Module`` (in eval mode) as ONNX bytes, traced with ``example_inputs``."""
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    was_training = module.training
    module.eval()
    buf = io.BytesIO()
    try:
        with torch.no_grad():
            _quiet_export(lambda: torch.onnx.export(module, args, buf, dynamo=False, opset_version=OPSET))
    except WorkloadError:
        # the TorchScript exporter may be gone from a newer torch: the torch.export-based one
        program = _quiet_export(lambda: torch.export.export(module, args))
        return _export_program(torch, program)
    finally:
        module.train(was_training)
    return buf.getvalue()
