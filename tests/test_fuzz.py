"""The input fuzzer: mutated platform YAMLs and small ONNX graphs through the CLI, in process.

Every outcome must be exit 0, or exit 2 with exactly one ``hetsim: error:`` line; never a traceback, never exit 1
(an internal error), and never exit 0 on an input the mutation certainly made invalid. The CI run is small and
derandomised (reproducible); ``HETSIM_FUZZ_EXAMPLES=2000`` makes a long, randomised run, and
``HETSIM_FUZZ_LOG=findings.jsonl`` records every finding instead of stopping at the first (docs/fuzzing.md).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from fuzz_helpers import (
    FIXED_BUGS,
    KNOWN_BUGS,
    KNOWN_PROBLEM,
    ROOT,
    Case,
    chain_model,
    excused,
    node_named,
    onnx_cases,
    platform_cases,
    problems,
    record,
    residual_model,
    run_cli,
    set_attr,
)
from hypothesis import HealthCheck, given, settings
from onnx import TensorProto

LONG = int(os.environ.get("HETSIM_FUZZ_EXAMPLES", "0"))


def fuzz_settings(ci_examples: int):
    return settings(
        max_examples=LONG or ci_examples,
        deadline=None,
        derandomize=not LONG,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        print_blob=True,
    )


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="hetsim-fuzz-") as d:
        d = Path(d)
        (d / "model.onnx").write_bytes(chain_model().SerializeToString())
        yield d


@pytest.fixture(scope="module")
def open_bugs(workdir):
    """The KNOWN_BUGS that still reproduce here: a fixed bug is no longer excused in the fuzz tests."""
    still = set()
    for bug, (problem, *_) in KNOWN_PROBLEM.items():
        if problem != "exit 0 on an invalid input":
            still.add(bug)  # excused only with its own error message (KNOWN_PROBLEM)
            continue
        if bug.startswith("platform-"):
            continue
        model = workdir / f"open-{bug}.onnx"
        model.write_bytes(_known_model(bug))
        for argv in (["inspect", str(model)],
                     ["run", str(ROOT / "platforms/puma.yaml"), str(model), "--mapper", "heft"]):
            if run_cli(argv).code == 0:
                still.add(bug)
    return still


def check(kind: str, case: Case, argv: list[str], open_bugs: set[str]) -> None:
    o = run_cli(argv)
    found = problems(o, case.must_fail)
    if excused(found, case, o.stderr, open_bugs):
        return  # a known bug (KNOWN_BUGS), reproduced by an xfail test below
    if found and not record(kind, case, argv, o, found):
        raise AssertionError(f"{kind}: {', '.join(found)}\n  mutation: {case.desc}\n  argv: hetsim {' '.join(argv)}"
                             f"\n  exit {o.code}, stderr:\n{o.stderr[-2000:]}")


def test_base_inputs_pass(workdir):
    """The unmutated inputs run: exit 0 (the fuzzer's 'valid' baseline)."""
    for argv in (["run", str(ROOT / "platforms/puma.yaml"), str(workdir / "model.onnx"), "--mapper", "heft"],
                 ["inspect", str(workdir / "model.onnx"), "--platform", str(ROOT / "platforms/puma.yaml")]):
        o = run_cli(argv)
        assert o.code == 0, o.stderr


@fuzz_settings(ci_examples=600)
@given(case=platform_cases())
def test_fuzz_platform_yaml(workdir, open_bugs, case):
    plat = workdir / "platform.yaml"
    plat.write_bytes(case.data)
    check("platform", case, ["run", str(plat), str(workdir / "model.onnx"), "--mapper", "heft"], open_bugs)


@fuzz_settings(ci_examples=200)
@given(case=platform_cases())
def test_fuzz_platform_yaml_inspect(workdir, open_bugs, case):
    plat = workdir / "platform-i.yaml"
    plat.write_bytes(case.data)
    check("platform-inspect", case, ["inspect", str(workdir / "model.onnx"), "--platform", str(plat)], open_bugs)


# what the importer tells the user about a mutated header or node, as it should: expected here, not a finding
EXPECTED_IMPORT_WARNINGS = (
    pytest.mark.filterwarnings(r"ignore:.*is newer than the installed onnx:UserWarning"),
    pytest.mark.filterwarnings(r"ignore:.*node\(s\) of custom domain:UserWarning"),
)


def _expect_import_warnings(test):
    for mark in EXPECTED_IMPORT_WARNINGS:
        test = mark(test)
    return test


@_expect_import_warnings
@fuzz_settings(ci_examples=400)
@given(case=onnx_cases())
def test_fuzz_onnx_run(workdir, open_bugs, case):
    model = workdir / "mutated.onnx"
    model.write_bytes(case.data)
    check("onnx-run", case, ["run", str(ROOT / "platforms/puma.yaml"), str(model), "--mapper", "heft"], open_bugs)


@_expect_import_warnings
@fuzz_settings(ci_examples=400)
@given(case=onnx_cases())
def test_fuzz_onnx_inspect(workdir, open_bugs, case):
    model = workdir / "mutated-i.onnx"
    model.write_bytes(case.data)
    check("onnx-inspect", case, ["inspect", str(model)], open_bugs)


def _known_model(bug: str) -> bytes:
    """The smallest reproducer of each of KNOWN_BUGS (docs/fuzzing.md), with every other shape consistent."""
    if bug == "onnx-gemm-k":
        m = chain_model()
        set_attr(node_named(m, "conv"), "strides", [2, 2])  # conv out 1x4x4x4: K = 64, the Gemm W has 256
    elif bug == "onnx-conv-kernel":
        m = residual_model()  # kernel 5x5 with pads 2 keeps 8x8, but the weight wa is 4x4x3x3
        set_attr(node_named(m, "conv_a"), "kernel_shape", [5, 5])
        set_attr(node_named(m, "conv_a"), "pads", [2, 2, 2, 2])
    elif bug == "onnx-conv-autopad":
        m = residual_model()
        set_attr(node_named(m, "conv_a"), "auto_pad", "SAME_UPPER")  # together with explicit pads
    elif bug == "onnx-dangling-output":
        m = chain_model()
        m.graph.output[0].name = "ghost"
    elif bug == "onnx-duplicate-init":
        m = chain_model()
        m.graph.initializer.add().CopyFrom(m.graph.initializer[0])
    elif bug == "onnx-unknown-op":
        m = chain_model()
        node_named(m, "gemm").op_type = "FooBar"
    elif bug == "onnx-zero-dim":
        m = residual_model()
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 0
    elif bug == "onnx-dtype":
        m = chain_model()
        m.graph.input[0].type.tensor_type.elem_type = TensorProto.INT64  # Conv's X int64, W float
    elif bug == "onnx-old-opset-shapes":
        m = residual_model(opset=6)
        set_attr(node_named(m, "conv_a"), "strides", [2, 2])  # Add of (1, 4, 4, 4) and (1, 4, 8, 8)
    elif bug == "onnx-optype-bytes":
        raw = chain_model().SerializeToString()
        i = raw.index(b"Relu")
        return raw[:i] + bytes([raw[i] ^ 0xFF]) + raw[i + 1:]  # op_type b"\xadelu"
    else:
        m = residual_model()
        m.graph.initializer[1].dims[0] = 5  # ba: 5 biases for 4 output channels, its data holds 4
    return m.SerializeToString()


@pytest.mark.parametrize("bug", sorted(b for b in KNOWN_BUGS if b.startswith("onnx-")) + ["onnx-conv-autopad"])
@pytest.mark.parametrize("command", ["run", "inspect"])
def test_known_bug(workdir, bug, command, request):
    """Each finding of the fuzzer not fixed yet: the invalid model must be refused with exit 2 and one line."""
    reason = KNOWN_BUGS[bug.replace("-autopad", "-kernel")]
    if bug.replace("-autopad", "-kernel") not in FIXED_BUGS:  # open: expected to fail until fixed; fixed ones pass
        request.applymarker(pytest.mark.xfail(strict=False, reason=f"fuzzer finding {bug}: {reason}"))
    model = workdir / f"known-{bug}.onnx"
    model.write_bytes(_known_model(bug))
    if command == "run":
        argv = ["run", str(ROOT / "platforms/puma.yaml"), str(model), "--mapper", "heft"]
    else:
        argv = ["inspect", str(model)]
    o = run_cli(argv)
    assert not problems(o, must_fail=True), o.stderr
    assert REFUSAL.get(bug, "") in o.stderr


#: what the refusal of a fixed finding says (the reason, not only that it is refused)
REFUSAL = {
    "onnx-dtype": "input 'x' (X) has type tensor(int64), which Conv-11 does not take",
    "onnx-conv-kernel": "kernel_shape [5, 5] does not match the weight's kernel [3, 3]",
    "onnx-conv-autopad": "has both auto_pad SAME_UPPER and pads",
    "onnx-old-opset-shapes": "operand shapes (1, 4, 4, 4) ('cb') and (1, 4, 8, 8) ('x') do not match",
}


@pytest.mark.parametrize("value", ["7", "true", "[[1]]", "{x: 1}"])  # fuzzer finding platform-latency-table, fixed
def test_known_bug_latency_table(workdir, value):
    """A latency_table that is not a path must be refused with exit 2 and one line, not an internal error."""
    text = (ROOT / "platforms/puma-host.yaml").read_text()
    plat = workdir / "latency-table.yaml"
    plat.write_text(re.sub(r"latency_table: \S+", f"latency_table: {value}", text))
    o = run_cli(["run", str(plat), str(workdir / "model.onnx"), "--mapper", "heft"])
    assert not problems(o, must_fail=True), o.stderr
