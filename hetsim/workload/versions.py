"""ONNX versions hetsim can read: a model's IR version and default-domain opset against the installed libraries.

An ONNX model records the IR version of its file format and, per operator domain, the opset its nodes follow.
A version newer than the installed ``onnx`` knows means operators (or file-format rules) neither ``onnx``'s
checker and shape inference nor ``onnxruntime`` (built against an ONNX release, which it names in its
version table) can interpret, so a cost read from such a model would be a guess: :func:`refuse_newer` refuses
it in one line with both versions, and how to get a readable model.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from hetsim.errors import WorkloadError

_DEFAULT_DOMAINS = ("", "ai.onnx")


def _installed() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ort = f" and onnxruntime {version('onnxruntime')}"
    except PackageNotFoundError:
        ort = ""
    return f"the installed onnx {onnx.__version__}{ort}"


def refuse_newer(p: Path, model: onnx.ModelProto) -> None:
    """Refuse ``model`` (read from ``p``) when its IR version or default-domain opset is newer than the installed
    ``onnx`` knows.

    Raises:
        WorkloadError: the model's version, the newest known one and the installed versions.
    """
    known_ir, known_opset = int(onnx.IR_VERSION), int(onnx.defs.onnx_opset_version())
    if model.ir_version > known_ir:
        raise WorkloadError(f"{p}: IR version {model.ir_version} is newer than {_installed()} read (IR version "
                            f"{known_ir} at most); export the model with an older IR version or upgrade onnx "
                            "and onnxruntime")
    for imp in model.opset_import:
        if imp.domain in _DEFAULT_DOMAINS and imp.version > known_opset:
            raise WorkloadError(f"{p}: opset {imp.version} is newer than {_installed()} read (opset {known_opset} "
                                "at most); export the model with an older opset (onnx.version_converter "
                                "converts one) or upgrade onnx and onnxruntime")
