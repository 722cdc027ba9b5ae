"""Hypothesis strategies for the input fuzzer (``tests/test_fuzz.py``, ``docs/fuzzing.md``).

Each strategy draws a :class:`Case`: the bytes of one mutated input file, whether the mutation certainly made it
invalid (``must_fail``: hetsim must refuse it with exit 2) and a one-line description of the mutation. Mutations
whose effect on validity depends on details the fuzzer does not model (a positive value changed to another, an
opset changed, ...) have ``must_fail = False``: such inputs may pass or be refused, but never crash.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import yaml
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
PLATFORM_FILES = sorted((ROOT / "platforms").glob("*.yaml"))
PLATFORM_TEXTS = {p.name: p.read_text() for p in PLATFORM_FILES}
PLATFORM_DATA = {name: yaml.safe_load(text) for name, text in PLATFORM_TEXTS.items()}

#: sections whose mapping keys are free names (devices, links, memories) rather than field names
NAMED_SECTIONS = ("devices", "links", "memories")


@dataclass
class Case:
    data: bytes
    must_fail: bool
    desc: str
    #: ids of KNOWN_BUGS this input triggers (hetsim accepts it with exit 0 although it is invalid)
    known: frozenset = frozenset()


class Raw(str):
    """A scalar written into the YAML text verbatim (e.g. ``1.0e+400``, which PyYAML reads as infinity)."""


def _dump(data: object) -> str:
    raws: dict[str, str] = {}

    def swap(x):
        if isinstance(x, Raw):
            key = f"__raw_{len(raws)}__"
            raws[key] = str(x)
            return key
        if isinstance(x, dict):
            return {swap(k) if isinstance(k, Raw) else k: swap(v) for k, v in x.items()}
        if isinstance(x, list):
            return [swap(v) for v in x]
        return x

    text = yaml.safe_dump(swap(data), sort_keys=False, allow_unicode=True, width=10_000)
    for key, raw in raws.items():
        text = text.replace(key, raw)
    return text


def _paths(x: object, prefix: tuple = ()) -> list[tuple]:
    """Every path into ``x`` (dict keys and list indices), the root excluded."""
    out = []
    if isinstance(x, dict):
        for k, v in x.items():
            out.append(prefix + (k,))
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out.append(prefix + (i,))
            out.extend(_paths(v, prefix + (i,)))
    return out


def _get(x: object, path: tuple) -> object:
    for k in path:
        x = x[k]
    return x


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _in_model(path: tuple) -> bool:
    """Whether the key at ``path`` is a field name of a Pydantic model (unknown names there are errors): a top-level
    key, or a key of one device, link or memory entry."""
    return len(path) == 1 or (len(path) == 3 and path[0] in NAMED_SECTIONS)


#: (value, certainly invalid in a number field, description)
BAD_NUMBERS = [
    (-1, True, "-1"), (-0.5, True, "-0.5"), (-(10**9), True, "-1e9 (int)"),
    (Raw(".inf"), True, ".inf"), (Raw("-.inf"), True, "-.inf"), (Raw(".nan"), True, ".nan"),
    (Raw("1.0e+400"), True, "1.0e+400"), (10**400, True, "a 401-digit integer"), (1e300, True, "1e300"),
    (True, True, "true"), (False, True, "false"), ("fast", True, "'fast'"), ("", True, "''"),
    (Raw("'12'"), True, "'12' (a string)"), ([1, 2], True, "[1, 2]"), ({"a": 1}, True, "{a: 1}"),
    (0, False, "0"), (None, False, "null"), (1, False, "1"), (3.5, False, "3.5"), (10**6, False, "1e6 (int)"),
    (1e-30, False, "1e-30"),
]
#: replacements for a string or a list (names, op lists, kinds)
BAD_OTHERS = [
    (None, False, "null"), (7, False, "7"), (True, False, "true"), ("", False, "''"), ([], False, "[]"),
    ("no-such-device", False, "'no-such-device'"), ({"x": 1}, False, "{x: 1}"), ([[1]], False, "[[1]]"),
]


@st.composite
def platform_cases(draw) -> Case:
    """A shipped platform YAML with one mutation of its values, keys, structure or YAML features."""
    name = draw(st.sampled_from(sorted(PLATFORM_DATA)))
    data = copy.deepcopy(PLATFORM_DATA[name])
    paths = _paths(data)
    kind = draw(st.sampled_from(["value", "value", "value", "delete", "rename", "duplicate-key", "structure",
                                 "top", "anchor", "billion-laughs", "nesting", "tag", "text"]))
    must_fail = False
    desc = f"{name}: {kind}"
    text: str | None = None
    known: set[str] = set()

    if kind == "value":
        path = draw(st.sampled_from(paths))
        parent, key = _get(data, path[:-1]), path[-1]
        old = parent[key]
        if _is_number(old):
            value, must_fail, what = draw(st.sampled_from(BAD_NUMBERS))
            # a number key inside macs_per_cycle-like maps is a count too; null may be a legal "off" (e.g.
            # weight_memory_kib), 0 may be legal (latency_ns, power)
        elif isinstance(old, (str, list, dict)) or old is None or isinstance(old, bool):
            value, must_fail, what = draw(st.sampled_from(BAD_OTHERS))
            if path[-1] == "latency_table" and value and not isinstance(value, str):
                known.add("platform-latency-table")
            if len(path) == 1 and path[0] == "devices":
                must_fail = True  # devices must be a non-empty mapping of device entries
            if len(path) == 2 and path[0] in NAMED_SECTIONS and not isinstance(value, dict):
                must_fail = True  # one device/link/memory entry replaced by a non-mapping
            if len(path) == 3 and path[0] == "devices" and path[2] == "kind":
                must_fail = True  # no device kind is named like these
        else:
            value, what = "x", "'x'"
        parent[key] = value
        desc += f" {'.'.join(map(str, path))}: {old!r} -> {what}"

    elif kind == "delete":
        path = draw(st.sampled_from(paths))
        parent, key = _get(data, path[:-1]), path[-1]
        del parent[key]
        required = (path == ("devices",)
                    or (len(path) == 3 and path[0] == "devices" and path[2] == "kind")
                    or (len(path) == 3 and path[0] == "links" and path[2] == "connects"))
        must_fail = required
        desc += f" del {'.'.join(map(str, path))}"

    elif kind == "rename":
        dict_paths = [p for p in paths if isinstance(_get(data, p[:-1]), dict)]
        path = draw(st.sampled_from(dict_paths))
        parent, key = _get(data, path[:-1]), path[-1]
        new = draw(st.sampled_from([f"{key}x", f"{key}".upper() + "_", "", "kind ", "Host"]))
        if new in parent:
            new = f"{new}_renamed"
        items = [(new if k == key else k, v) for k, v in parent.items()]
        parent.clear()
        parent.update(items)
        must_fail = _in_model(path)  # an unknown field name (extra="forbid"); a renamed required field is missing
        desc += f" rename {'.'.join(map(str, path))} -> {new!r}"

    elif kind == "duplicate-key":
        text = _dump(data)
        lines = text.splitlines()
        # a "key: value" line (not a list item, not a nested mapping's header) repeated just after itself
        cands = [i for i, ln in enumerate(lines) if ":" in ln and not ln.lstrip().startswith("-")
                 and not ln.rstrip().endswith(":")]
        i = draw(st.sampled_from(cands))
        lines.insert(i + 1, lines[i])
        text = "\n".join(lines) + "\n"
        must_fail = True
        desc += f" repeat line {i + 1}: {lines[i].strip()!r}"

    elif kind == "structure":
        section = draw(st.sampled_from([s for s in NAMED_SECTIONS if s in data] + ["devices"]))
        entries = data.get(section, {})
        shape = draw(st.sampled_from(["list", "scalar", "empty", "list-of-entries", "nested"]))
        if shape == "list":
            data[section] = list(entries)
        elif shape == "scalar":
            data[section] = "none"
        elif shape == "empty":
            data[section] = {}
        elif shape == "list-of-entries":
            data[section] = [{k: v} for k, v in entries.items()]
        else:
            data[section] = {"wrapper": entries}
        must_fail = section == "devices" or (shape in ("list", "scalar", "list-of-entries") and bool(entries))
        if shape == "nested" and entries:
            must_fail = True  # "wrapper" is an entry without the entry's fields
        desc += f" {section} -> {shape}"

    elif kind == "top":
        text = draw(st.sampled_from(["", "~\n", "- a\n- b\n", "42\n", "name: x\n", "devices:\n", "[1, 2\n",
                                     "devices: {host: {kind: cpu}}\n---\nname: two documents\n", "\t: x\n"]))
        must_fail = True
        desc += f" document {text!r}"

    elif kind == "anchor":
        # a valid use of anchors: one device's mapping reused by alias under a second name (PyYAML's dumper writes
        # &id001 / *id001 for an object it meets twice)
        dev = draw(st.sampled_from(sorted(data["devices"])))
        data["devices"][f"{dev}_copy"] = data["devices"][dev]
        text = _dump(data)
        desc += f" alias a copy of device {dev}"

    elif kind == "billion-laughs":
        depth = draw(st.integers(4, 12))
        width = draw(st.integers(5, 10))
        lines = ['a0: &a0 ["lol"]']
        for d in range(1, depth):
            lines.append(f"a{d}: &a{d} [{', '.join([f'*a{d - 1}'] * width)}]")
        text = _dump(data) + "\n".join(lines) + "\n"
        must_fail = True  # unknown top-level keys a0..; and beyond the alias bounds
        desc += f" {depth} levels of {width} aliases"

    elif kind == "nesting":
        depth = draw(st.integers(30, 3000))
        bracket = draw(st.booleans())
        nested = "[" * depth + "]" * depth if bracket else "{a: " * depth + "1" + "}" * depth
        text = _dump(data) + f"extra: {nested}\n"
        must_fail = True  # 'extra' is not a field, and too deep beyond the bound
        desc += f" nesting depth {depth} ({'lists' if bracket else 'maps'})"

    elif kind == "tag":
        num_paths = [p for p in paths if _is_number(_get(data, p))]
        path = draw(st.sampled_from(num_paths))
        tag, must_fail = draw(st.sampled_from([
            ("!!str 5", True), ("!!python/object/apply:os.system ['true']", True), ("!foo 5", True),
            ("!!binary aGk=", True), ("!!timestamp 2001-12-14", True), ("!!float '1e400'", True),
            ("!!int '12'", False), ("!!float 2", False), ("!!null ''", False),
            ("!!python/name:os.system", True), ("!!set {a, b}", True),
        ]))
        _set(data, path, Raw(tag))
        text = _dump(data)
        desc += f" {'.'.join(map(str, path))}: {tag}"

    elif kind == "text":
        text = _dump(data)
        op = draw(st.sampled_from(["truncate", "bytes", "tab", "bom", "crlf"]))
        if op == "truncate":
            cut = draw(st.integers(0, len(text)))
            text = text[:cut]
        elif op == "tab":
            text = text.replace("  ", "\t", 1)
        elif op == "bom":
            text = "\ufeff" + text
        elif op == "crlf":
            text = text.replace("\n", "\r\n")
        if op == "bytes":
            raw = bytearray(text.encode())
            pos = draw(st.integers(0, len(raw) - 1))
            raw[pos:pos] = draw(st.sampled_from([b"\xff\xfe", b"\x00", b"\xc3", b"\x80\x80"]))
            desc += f" insert bytes at {pos}"
            return Case(bytes(raw), True, desc)  # not UTF-8 (or a NUL, which YAML forbids)
        desc += f" {op}"

    if text is None:
        text = _dump(data)
    return Case(text.encode(), must_fail, desc, frozenset(known))


def _set(data: object, path: tuple, value: object) -> None:
    _get(data, path[:-1])[path[-1]] = value


# ---------------------------------------------------------------------------------------------------- ONNX models


def _init(name: str, shape: tuple, seed: int) -> TensorProto:
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def chain_model(opset: int = 17) -> onnx.ModelProto:
    """Conv -> Relu -> Flatten -> Gemm on a 1x3x8x8 input."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[1, 1], dilations=[1, 1], group=1),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], name="gemm", transB=1, alpha=1.0, beta=1.0),
    ]
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [_init("w1", (4, 3, 3, 3), 1), _init("b1", (4,), 2), _init("w2", (10, 256), 3), _init("b2", (10,), 4)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def residual_model(opset: int = 17) -> onnx.ModelProto:
    """Conv -> Relu -> Conv -> Add(input) -> Relu on a 1x4x8x8 input."""
    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1], "dilations": [1, 1], "group": 1}
    nodes = [
        helper.make_node("Conv", ["x", "wa", "ba"], ["ca"], name="conv_a", **conv),
        helper.make_node("Relu", ["ca"], ["ra"], name="relu_a"),
        helper.make_node("Conv", ["ra", "wb", "bb"], ["cb"], name="conv_b", **conv),
        helper.make_node("Add", ["cb", "x"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["y"], name="relu_b"),
    ]
    graph = helper.make_graph(
        nodes, "residual",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [_init("wa", (4, 4, 3, 3), 5), _init("ba", (4,), 6), _init("wb", (4, 4, 3, 3), 7), _init("bb", (4,), 8)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


BASE_MODELS = {"chain": chain_model(), "residual": residual_model()}
#: per model, the input dimension that must match the first Conv's weights
CHANNEL_DIM = 1

#: Bugs the fuzzer found that are not fixed yet (docs/fuzzing.md): hetsim exits 0 on these invalid models. The
#: fuzz tests tolerate exit 0 on an input tagged with one of them (test_fuzz.py has an xfail test for each); any
#: other problem on such an input still fails.
KNOWN_BUGS = {
    "platform-latency-table": "a device's latency_table that is not a string (7, true, [[1]], {x: 1}) is an internal "
                              "error, exit 1: TypeError in Path() (hetsim/platform.py: load_platform resolves the "
                              "path before validation)",
    "onnx-gemm-k": "a Gemm whose inner dimension contradicts its input's shape is accepted "
                   "(hetsim/workload/onnx_import.py: load_onnx, non-strict shape inference, no Gemm shape check)",
    "onnx-conv-kernel": "a Conv whose kernel_shape contradicts its weight's shape, or that sets both auto_pad and "
                        "pads, is accepted (hetsim/workload/onnx_import.py: load_onnx)",
    "onnx-dtype": "a graph input or initializer whose element type breaks the op's type constraint (Conv's X and W "
                  "of different types) is accepted (hetsim/workload/onnx_import.py: load_onnx, check_type=False)",
    "onnx-init-size": "an initializer whose data size does not match its dims and type is accepted "
                      "(hetsim/workload/onnx_import.py: load_onnx)",
    "onnx-old-opset-shapes": "at opset <= 6 (no shape inference for Add there) a residual Add of operands of "
                             "different shapes (after a Conv's strides/pads/kernel change) is accepted "
                             "(hetsim/workload/onnx_import.py: load_onnx)",
    "onnx-dangling-output": "a graph output that no node produces is accepted (hetsim/workload/onnx_import.py: "
                            "load_onnx)",
    "onnx-duplicate-init": "an initializer defined twice is accepted (hetsim/workload/onnx_import.py: load_onnx)",
    "onnx-unknown-op": "an op type that no ONNX opset defines, in the default domain, is accepted "
                       "(hetsim/workload/onnx_import.py: load_onnx)",
    "onnx-zero-dim": "a zero-size or negative dimension of a graph input or output is accepted "
                     "(hetsim/workload/onnx_import.py: load_onnx)",
    "onnx-optype-bytes": "a node or tensor name that is not valid UTF-8 (one flipped byte) is an internal error, "
                         "exit 1: TypeError from onnx.defs.has (hetsim/workload/onnx_import.py: _check_op_types) "
                         "or from sorting or concatenating names of mixed str and bytes",
}

#: KNOWN_BUGS fixed since the fuzzer found them: their reproducers in test_fuzz.py are plain regression tests now.
FIXED_BUGS = {"platform-latency-table", "onnx-gemm-k", "onnx-init-size", "onnx-dangling-output", "onnx-duplicate-init",
              "onnx-unknown-op", "onnx-zero-dim", "onnx-optype-bytes", "onnx-conv-kernel", "onnx-dtype",
              "onnx-old-opset-shapes"}

#: (model, node, attribute, value, certainly invalid[, known bug])
ATTR_MUTATIONS = [
    ("chain", "conv", "kernel_shape", [5, 5], True, "onnx-conv-kernel"), ("chain", "conv", "kernel_shape", [3], True),
    ("chain", "conv", "kernel_shape", [0, 0], True), ("chain", "conv", "strides", [0, 1], True),
    ("chain", "conv", "strides", [-1, 1], True), ("chain", "conv", "dilations", [0, 0], True),
    ("chain", "conv", "group", 0, True), ("chain", "conv", "group", 3, True), ("chain", "conv", "group", -1, True),
    # the next three change the Conv's output size, so the Gemm's K no longer matches the flattened size
    ("chain", "conv", "strides", [2, 2], True, "onnx-gemm-k"),
    ("chain", "conv", "pads", [0, 0, 0, 0], True, "onnx-gemm-k"),
    ("chain", "conv", "dilations", [2, 2], True, "onnx-gemm-k"),
    ("chain", "conv", "pads", [1, 1], True), ("chain", "conv", "pads", [-1, -1, -1, -1], False),
    ("chain", "gemm", "transB", 0, True, "onnx-gemm-k"), ("chain", "gemm", "transA", 1, True, "onnx-gemm-k"),
    ("chain", "gemm", "alpha", 2.5, False),
    ("chain", "flatten", "axis", 2, True, "onnx-gemm-k"), ("chain", "flatten", "axis", 7, True),
    ("chain", "flatten", "axis", 0, False),
    ("residual", "conv_a", "strides", [2, 2], True),  # the Add's operands no longer match
    ("residual", "conv_b", "pads", [0, 0, 0, 0], True), ("residual", "conv_a", "group", 4, True),
    ("residual", "conv_a", "group", 2, True), ("residual", "conv_b", "kernel_shape", [1, 1], True),
    ("residual", "conv_a", "auto_pad", "SAME_UPPER", True, "onnx-conv-kernel"),  # auto_pad together with pads
]


def node_named(m: onnx.ModelProto, name: str) -> onnx.NodeProto:
    return next(n for n in m.graph.node if n.name == name)


def set_attr(node: onnx.NodeProto, name: str, value: object) -> None:
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    node.attribute.append(helper.make_attribute(name, value))


@st.composite
def onnx_cases(draw) -> Case:
    """A small Conv/Gemm chain or residual block with one mutation (two, sometimes) of its attributes, shapes,
    dtypes, edges, opsets or initializers."""
    model_name = draw(st.sampled_from(sorted(BASE_MODELS)))
    m = onnx.ModelProto()
    m.CopyFrom(BASE_MODELS[model_name])
    kinds = ["attr", "shape", "dtype", "edge", "opset", "init", "op", "bytes", "none"]
    n_mut = draw(st.integers(1, 2))
    chosen = draw(st.lists(st.sampled_from(kinds), min_size=n_mut, max_size=n_mut, unique=True))
    must_fail, descs, known, shape_bad, bads = False, [], set(), False, []
    for kind in chosen:
        if kind == "bytes":
            bads.append(False)
            continue  # applied last, on the serialised model
        bad, d, *bug = _mutate_onnx(draw, m, model_name, kind)
        bads.append(bad)
        must_fail |= bad
        shape_bad |= bad and kind in ("attr", "shape")
        known.update(bug)
        descs.append(d)
    if shape_bad and any(o.domain in ("", "ai.onnx") and o.version <= 6 for o in m.opset_import):
        known.add("onnx-old-opset-shapes")
    if shape_bad and any("com.example.MyOp" in d or " input 0: '" in d for d in descs):
        # a custom op (unknown shapes) or a rewired input can take the contradicting shape out of every check:
        # either outcome is fine (long-run false alarms, docs/fuzzing.md)
        must_fail = any(k not in ("attr", "shape") and b for k, b in zip(chosen, bads, strict=True))
    data = m.SerializeToString()
    if "bytes" in chosen:
        op = draw(st.sampled_from(["truncate", "flip", "empty", "garbage"]))
        known.add("onnx-optype-bytes")
        if op == "truncate":
            data = data[:draw(st.integers(0, len(data) - 1))]
        elif op == "flip":
            pos = draw(st.integers(0, len(data) - 1))
            data = data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1:]
        elif op == "empty":
            data = b""
            must_fail = True
        else:
            data = b"not an onnx model\n"
            must_fail = True
        descs.append(f"bytes {op}")
    return Case(data, must_fail, f"{model_name}: " + "; ".join(descs), frozenset(known))


def _mutate_onnx(draw, m: onnx.ModelProto, model_name: str, kind: str) -> tuple[bool, str]:
    g = m.graph
    if kind == "none":
        return False, "unchanged"
    if kind == "attr":
        muts = [a for a in ATTR_MUTATIONS if a[0] == model_name]
        _, node, attr, value, bad, *bug = draw(st.sampled_from(muts))
        set_attr(node_named(m, node), attr, value)
        return (bad, f"{node}.{attr} = {value!r}", *bug)
    if kind == "shape":
        which = draw(st.sampled_from(["input", "output", "initializer"]))
        if which == "initializer":
            init = draw(st.sampled_from(list(g.initializer)))
            i = draw(st.integers(0, len(init.dims) - 1))
            v = draw(st.sampled_from([0, 1, 2, 5, 300]))
            if v == init.dims[i]:
                return False, f"initializer {init.name} dim {i} unchanged"
            init.dims[i] = v
            return True, f"initializer {init.name} dim {i} = {v} (data size no longer matches)", "onnx-init-size"
        vi = g.input[0] if which == "input" else g.output[0]
        dims = vi.type.tensor_type.shape.dim
        i = draw(st.integers(0, len(dims) - 1))
        v = draw(st.sampled_from([0, -1, -7, 1, 2, 5, 16, "N", "batch"]))
        old = dims[i].dim_value
        if isinstance(v, str):
            dims[i].dim_param = v
            return False, f"{which} {vi.name} dim {i} = {v!r} (symbolic)"
        dims[i].dim_value = v
        if v == old:
            return False, f"{which} dim {i} unchanged"
        bad = which == "input" and (v <= 0 or i == CHANNEL_DIM)
        if which == "input" and model_name == "chain" and i in (2, 3):
            bad = True  # the flattened size no longer matches the Gemm's weights
        if which == "input" and model_name == "residual" and i == 0 and v > 0:
            bad = False
        if which == "output" and v <= 0 and v != -1:
            bad = True  # a zero-size or negative declared output dimension (-1: dynamic, as onnxruntime reads it)
        bug = ("onnx-gemm-k",) if which == "input" and model_name == "chain" and i in (2, 3) and v > 0 else ()
        bug += ("onnx-zero-dim",) if v <= 0 else ()
        return (bad, f"{which} {vi.name} dim {i}: {old} -> {v}", *bug)
    if kind == "dtype":
        which = draw(st.sampled_from(["input", "output", "initializer"]))
        t = draw(st.sampled_from([TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT8,
                                  TensorProto.BFLOAT16, TensorProto.STRING, TensorProto.BOOL, TensorProto.INT32]))
        tname = TensorProto.DataType.Name(t)
        if which == "initializer":
            init = draw(st.sampled_from(list(g.initializer)))
            init.data_type = t
            return True, f"initializer {init.name} dtype FLOAT -> {tname}", "onnx-dtype", "onnx-init-size"
        vi = g.input[0] if which == "input" else g.output[0]
        vi.type.tensor_type.elem_type = t
        # the input's type must equal the float weights' type (Conv's T); a declared output type contradicting the
        # graph may or may not be checked
        if which == "input":
            return True, f"input {vi.name} dtype FLOAT -> {tname}", "onnx-dtype"
        return False, f"output {vi.name} dtype FLOAT -> {tname}"
    if kind == "edge":
        op = draw(st.sampled_from(["ghost-input", "ghost-output", "extra-output", "rename-node-output",
                                   "duplicate-producer", "cycle", "rewire"]))
        nodes = list(g.node)
        if op == "ghost-input":
            n = draw(st.sampled_from(nodes))
            j = draw(st.integers(0, len(n.input) - 1))
            n.input[j] = "ghost"
            return True, f"{n.name} input {j} -> 'ghost' (undefined)"
        if op == "ghost-output":
            g.output[0].name = "ghost"
            return True, "graph output renamed to 'ghost' (no node produces it)", "onnx-dangling-output"
        if op == "extra-output":
            g.output.append(helper.make_tensor_value_info("ghost2", TensorProto.FLOAT, [1]))
            return True, "extra graph output 'ghost2' (no node produces it)", "onnx-dangling-output"
        if op == "rename-node-output":
            n = draw(st.sampled_from(nodes[:-1]))
            n.output[0] = f"{n.output[0]}_renamed"
            return True, f"{n.name} output renamed (its consumers read an undefined tensor)"
        if op == "duplicate-producer":
            a, b = draw(st.sampled_from([(i, j) for i in range(len(nodes)) for j in range(len(nodes)) if i < j]))
            nodes[b].output[0] = nodes[a].output[0]
            return True, f"{nodes[b].name} writes {nodes[a].output[0]!r}, which {nodes[a].name} writes too"
        if op == "cycle":
            nodes[0].input[0] = nodes[-1].output[0]
            return True, f"{nodes[0].name} reads the last node's output (a cycle)"
        n = draw(st.sampled_from(nodes[1:]))
        tensors = [t for t in ["x"] + [o for k in nodes for o in k.output] if t not in n.output]
        src = draw(st.sampled_from(tensors))
        old = n.input[0]
        n.input[0] = src
        return False, f"{n.name} input 0: {old!r} -> {src!r}"
    if kind == "opset":
        which = draw(st.sampled_from(["opset", "ir", "drop", "extra-domain"]))
        if which == "opset":
            v = draw(st.sampled_from([1, 6, 7, 9, 11, 13, 17, 21, 22, 23, 30, 99, 10**6]))
            m.opset_import[0].version = v
            return False, f"opset {v}"
        if which == "ir":
            v = draw(st.sampled_from([1, 3, 4, 7, 10, 11, 12, 99]))
            m.ir_version = v
            return False, f"ir_version {v}"
        if which == "drop":
            del m.opset_import[:]
            return False, "no opset_import"
        m.opset_import.append(helper.make_opsetid("com.example", 1))
        return False, "extra opset domain com.example"
    if kind == "init":
        op = draw(st.sampled_from(["remove", "duplicate"]))
        init = draw(st.sampled_from(list(g.initializer)))
        if op == "remove":
            g.initializer.remove(init)
            return True, f"initializer {init.name} removed"
        dup = TensorProto()
        dup.CopyFrom(init)
        g.initializer.append(dup)
        return True, f"initializer {init.name} defined twice", "onnx-duplicate-init"
    if kind == "op":
        n = draw(st.sampled_from(list(g.node)))
        new, domain, bad = draw(st.sampled_from([
            ("FooBar", "", True), ("conv", "", True), ("Convolution", "", True), ("MyOp", "com.example", False),
        ]))
        old = n.op_type
        n.op_type = new
        if domain:
            n.domain = domain
            if not any(o.domain == domain for o in m.opset_import):
                m.opset_import.append(helper.make_opsetid(domain, 1))
        bug = ("onnx-unknown-op",) if bad else ()
        return (bad, f"{n.name}: {old} -> {domain + '.' if domain else ''}{new}", *bug)
    raise AssertionError(kind)


# ------------------------------------------------------------------------------------------------------- running

#: the one problem each known bug is allowed to cause, and a text its stderr must contain (any other problem on
#: its input still fails)
KNOWN_PROBLEM = {bug: ("exit 0 on an invalid input", "") for bug in KNOWN_BUGS}
KNOWN_PROBLEM["platform-latency-table"] = ("exit 1", "TypeError: expected str, bytes or os.PathLike object")
KNOWN_PROBLEM["onnx-optype-bytes"] = ("exit 1", "has_schema(): incompatible function arguments",
                                      "not supported between instances of 'bytes'",
                                      'can only concatenate str (not "bytes") to str')


def excused(found: list[str], case: Case, stderr: str, open_bugs: set[str]) -> bool:
    """Whether every problem found is the one a known bug of ``case`` still open (``open_bugs``) causes."""
    ok = {KNOWN_PROBLEM[b][0] for b in case.known & open_bugs
          if any(text in stderr for text in KNOWN_PROBLEM[b][1:])}
    return bool(found) and set(found) <= ok


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


def run_cli(argv: list[str]) -> Outcome:
    """``hetsim argv`` in this process; SystemExit (argparse) is an exit code like any other."""
    from hetsim.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # pragma: no cover - argparse errors
            code = e.code if isinstance(e.code, int) else 2
    return Outcome(code, out.getvalue(), err.getvalue())


def problems(o: Outcome, must_fail: bool) -> list[str]:
    """What is wrong with an outcome: an exit code other than 0 and 2, a traceback, not exactly one
    ``hetsim: error:`` line on exit 2, or exit 0 on an input that must be refused."""
    found = []
    if o.code not in (0, 2):
        found.append(f"exit {o.code}")
    if "Traceback" in o.stderr or "Traceback" in o.stdout:
        found.append("traceback")
    errors = [ln for ln in o.stderr.splitlines() if ln.startswith("hetsim: error:")]
    if o.code == 2 and len(errors) != 1:
        found.append(f"{len(errors)} 'hetsim: error:' lines")
    if o.code == 0 and errors:
        found.append("exit 0 with an error line")
    if must_fail and o.code == 0:
        found.append("exit 0 on an invalid input")
    return found


def record(kind: str, case: Case, argv: list[str], o: Outcome, found: list[str]) -> bool:
    """In collect mode (``HETSIM_FUZZ_LOG=path``) append a finding to that JSON-lines file and return True (the
    test goes on); otherwise return False (the test asserts)."""
    log = os.environ.get("HETSIM_FUZZ_LOG")
    if not log:
        return False
    last = [ln for ln in o.stderr.splitlines() if ln.strip()][-1:] or [""]
    with open(log, "a") as f:
        f.write(json.dumps({"kind": kind, "desc": case.desc, "argv": argv[:1], "code": o.code, "found": found,
                            "stderr_last": last[0][:400], "input_head": case.data[:200].decode("latin-1")}) + "\n")
    return True
