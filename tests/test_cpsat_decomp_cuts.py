"""The decomposition's clean cuts (hetsim.mappers._decomp.clean_cuts) on a split bus: a skip edge whose transfer
is zero on every linked device pair but whose ends may sit on two devices no link joins couples the two sides of
the cut it jumps over, so that cut is not clean (hand-built three-op instance)."""

from __future__ import annotations

from hetsim.mappers import _bounds as B
from hetsim.mappers._decomp import clean_cuts


def _problem(tr_ac):
    ops = ["a", "b", "c"]
    devices = {"a": ["cim", "npu"], "b": ["host"], "c": ["cim", "npu"]}
    tr = {("a", "b"): {("cim", "host"): 0, ("npu", "host"): 0},
          ("b", "c"): {("host", "cim"): 0, ("host", "npu"): 0},
          ("a", "c"): tr_ac}
    return B.IntProblem(tick=1e-9, ops=ops, pos={v: i for i, v in enumerate(ops)},
                        preds={"a": [], "b": ["a"], "c": ["a", "b"]}, succs={"a": ["b", "c"], "b": ["c"], "c": []},
                        devices=devices, dur={v: dict.fromkeys(devices[v], 1) for v in ops}, tr=tr,
                        cpus={"host": 1}, budget={}, ncb={}, host="host")


def test_zero_skip_edge_over_every_pair_keeps_the_cut_clean():
    full = {(x, y): 0 for x in ("cim", "npu") for y in ("cim", "npu")}
    assert "b" in clean_cuts(_problem(full), set())


def test_zero_skip_edge_with_an_unlinked_pair_makes_the_cut_dirty():
    split = {("cim", "cim"): 0, ("npu", "npu"): 0}  # no link joins the CIM and the NPU
    assert "b" not in clean_cuts(_problem(split), set())
