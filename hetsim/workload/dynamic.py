"""Dynamic dims of an ONNX model's graph inputs and outputs: what hetsim reads as free, and what it suggests.

Exporters write a dynamic dim three ways: a name (``dim_param: "batch"``), nothing (an unknown dim), or, as
paddle2onnx and some older converters do, ``dim_value: -1``. ONNX's IR has no negative dims, but onnxruntime runs
such a model as if the -1 were an unknown dim, and so does hetsim (:func:`free_minus_one_dims`): ``--input-shape``
then fixes the inputs and shape inference the rest. Other negative dims stay errors.

When an input's dims are still dynamic, :func:`suggest_shape` writes an ``--input-shape`` value that runs:
numbers only (a static dim as it is, a dynamic batch dim as 1, the other dynamic dims a size the user should
check, 224 for a rank-4 (NCHW image-like) input and 128 otherwise: our choice, not the model's).
"""

from __future__ import annotations

import onnx


def free_minus_one_dims(graph: onnx.GraphProto) -> bool:
    """Turn every ``dim_value: -1`` of the graph's inputs, outputs and value_info into an unknown dim (in
    place); returns whether any was changed."""
    changed = False
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if vi.type.WhichOneof("value") != "tensor_type" or not vi.type.tensor_type.HasField("shape"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.WhichOneof("value") == "dim_value" and d.dim_value == -1:
                d.Clear()
                changed = True
    return changed


def _static(d) -> int | None:
    return int(d.dim_value) if d.WhichOneof("value") == "dim_value" and d.dim_value > 0 else None


def suggest_shape(vi: onnx.ValueInfoProto) -> tuple[str, list[int]]:
    """``(example, dynamic dim indices)`` for graph input ``vi``: an ``--input-shape`` value of numbers only
    (module docstring) and the dims the user has to choose."""
    dims = list(vi.type.tensor_type.shape.dim)
    image_like = len(dims) == 4
    out, free = [], []
    for k, d in enumerate(dims):
        v = _static(d)
        if v is None:
            free.append(k)
            v = 1 if k == 0 else 224 if image_like else 128
        out.append(str(v))
    return ",".join(out), free


def describe_free(vi: onnx.ValueInfoProto, free: list[int]) -> str:
    """``dims 2 ('height'), 3 ('width')`` for the dynamic dims ``free`` of graph input ``vi``."""
    dims = vi.type.tensor_type.shape.dim
    parts = [f"{k} ({dims[k].dim_param!r})" if dims[k].dim_param else f"{k}" for k in free]
    return ("dim " if len(parts) == 1 else "dims ") + ", ".join(parts)
