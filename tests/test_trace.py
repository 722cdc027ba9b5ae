"""Tests of the Chrome Trace Event Format export (``trace.json``) against the format's specification.

:func:`check_trace_format` is a small validator of the "Trace Event Format" document (Google; the JSON
object format that Perfetto and chrome://tracing open), written for these tests because Perfetto's own trace
processor cannot run here (``pip install perfetto`` works, but its ``TraceProcessor`` downloads a
``trace_processor_shell`` binary at run time). It checks what the specification requires of every event
kind hetsim writes, plus what Perfetto's JSON importer needs to draw the file as intended:

* the file: a JSON object with a ``traceEvents`` list and ``displayTimeUnit`` ``"ms"`` or ``"ns"``;
* every event: a known ``ph``; ``pid``/``tid`` integers; ``args`` an object when present;
* complete events (``X``): ``name``, ``cat``, ``ts`` and ``dur`` finite numbers >= 0; on one thread, slices
  nest or are disjoint (the specification's rule; hetsim's never even nest);
* metadata events (``M``): ``process_name``/``thread_name`` with ``args.name``, ``process_labels`` with
  ``args.labels``, ``*_sort_index`` with an integer ``args.sort_index``; every pid and (pid, tid) that holds an
  event is named; a tid belongs to one pid only and is no pid (Perfetto treats tids as system-wide);
* flow events (``s``/``t``/``f``): ``name``, ``cat``, ``id``, ``ts``; per id exactly one ``s`` first, any
  ``t``, exactly one ``f`` last, with one ``cat`` and ``name`` and timestamps that never go back; ``bp`` only
  ``"e"``; each binds to a slice: ``s``, ``t`` and ``f`` with ``bp: "e"`` to the slice enclosing its ``ts`` on
  its thread, ``f`` without ``bp`` to the next slice starting on its thread;
* times: ``ts``/``dur`` in microseconds with at most 3 decimals (whole nanoseconds).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, diamond, make_platform, run_cli

from hetsim.analysis.lanes import ACCELERATOR, HOST, LINK, lane_names
from hetsim.costs import CostModel
from hetsim.report.export import FLOW_CAT, chrome_trace, flow_chains, round_ns, to_ns, write_chrome_trace
from hetsim.schedule import Schedule
from hetsim.sim.engine import simulate

PHASES = set("BEXIiCbnesftPOND(MRc)")  # every ph the specification defines ("R"/"c": mark and clock sync)
METADATA = {"process_name": "name", "thread_name": "name", "process_labels": "labels",
            "process_sort_index": "sort_index", "thread_sort_index": "sort_index", "process_uptime_seconds": None}


def _num(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _whole_ns(us: float) -> bool:
    """``us`` microseconds has at most 3 decimals as JSON writes it (``repr``)."""
    text = repr(float(us))
    if "e" in text or "E" in text:
        return abs(us * 1000 - round(us * 1000)) < 1e-6
    return len(text.split(".")[1]) <= 3


def check_trace_format(doc) -> list[str]:
    """Problems of a Trace Event Format object (the parsed JSON of ``trace.json``); ``[]`` when valid."""
    bad: list[str] = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not a JSON object with a traceEvents list"]
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        bad.append(f"displayTimeUnit {doc['displayTimeUnit']!r} is neither 'ms' nor 'ns'")
    if "otherData" in doc and not isinstance(doc["otherData"], dict):
        bad.append("otherData is not an object")
    proc_named: set[int] = set()
    thread_named: set[tuple[int, int]] = set()
    used: set[tuple[int, int]] = set()
    slices: dict[tuple[int, int], list[tuple[float, float]]] = {}
    flows: dict[object, list[dict]] = {}
    pid_of_tid: dict[int, int] = {}
    for n, ev in enumerate(doc["traceEvents"]):
        where = f"event {n} ({ev.get('name') if isinstance(ev, dict) else ev!r})"
        if not isinstance(ev, dict):
            bad.append(f"{where}: not an object")
            continue
        ph = ev.get("ph")
        if not isinstance(ph, str) or len(ph) != 1 or ph not in PHASES:
            bad.append(f"{where}: unknown ph {ph!r}")
            continue
        pid, tid = ev.get("pid"), ev.get("tid")
        if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(tid, int) or isinstance(tid, bool):
            bad.append(f"{where}: pid/tid {pid!r}/{tid!r} are not integers")
            continue
        if "args" in ev and not isinstance(ev["args"], dict):
            bad.append(f"{where}: args is not an object")
        if ph == "M":
            name = ev.get("name")
            if name not in METADATA:
                bad.append(f"{where}: unknown metadata event {name!r}")
                continue
            key = METADATA[name]
            val = ev.get("args", {}).get(key) if key else None
            if key == "sort_index" and not (isinstance(val, int) and not isinstance(val, bool)):
                bad.append(f"{where}: {name} needs an integer args.sort_index")
            elif key in ("name", "labels") and not isinstance(val, str):
                bad.append(f"{where}: {name} needs a string args.{key}")
            if name == "process_name":
                proc_named.add(pid)
            elif name == "thread_name":
                thread_named.add((pid, tid))
            if name.startswith("thread_") and pid_of_tid.setdefault(tid, pid) != pid:
                bad.append(f"{where}: tid {tid} is in pids {pid_of_tid[tid]} and {pid}")
            continue
        if not isinstance(ev.get("name"), str):
            bad.append(f"{where}: no name")
        if not _num(ev.get("ts")) or ev["ts"] < 0:
            bad.append(f"{where}: ts {ev.get('ts')!r} is not a number >= 0")
            continue
        if not _whole_ns(ev["ts"]):
            bad.append(f"{where}: ts {ev['ts']!r} has more than 3 decimals (sub-ns noise)")
        used.add((pid, tid))
        if pid_of_tid.setdefault(tid, pid) != pid:
            bad.append(f"{where}: tid {tid} is in pids {pid_of_tid[tid]} and {pid}")
        if ph == "X":
            if not isinstance(ev.get("cat"), str):
                bad.append(f"{where}: no cat")
            dur = ev.get("dur")
            if not _num(dur) or dur < 0:
                bad.append(f"{where}: dur {dur!r} is not a number >= 0")
                continue
            if not _whole_ns(dur):
                bad.append(f"{where}: dur {dur!r} has more than 3 decimals (sub-ns noise)")
            slices.setdefault((pid, tid), []).append((ev["ts"], ev["ts"] + dur))
        elif ph in "stf":
            if not isinstance(ev.get("cat"), str):
                bad.append(f"{where}: flow event without cat")
            fid = ev.get("id")
            if not (isinstance(fid, str) or (isinstance(fid, int) and not isinstance(fid, bool))):
                bad.append(f"{where}: flow event without an integer or string id")
                continue
            if "bp" in ev and (ph != "f" or ev["bp"] != "e"):
                bad.append(f"{where}: bp {ev['bp']!r} (only 'e', on a flow end)")
            flows.setdefault((ev.get("cat"), fid), []).append(ev)
    for pid, _ in used:
        if pid not in proc_named:
            bad.append(f"pid {pid} has events but no process_name")
    for key in sorted(used - thread_named):
        bad.append(f"thread {key} has events but no thread_name")
    for pid_tid, spans in slices.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack: list[float] = []
        for s, e in spans:
            while stack and stack[-1] <= s + 1e-9:
                stack.pop()
            if stack and e > stack[-1] + 1e-9:
                bad.append(f"thread {pid_tid}: slice [{s}, {e}] overlaps the end of another ({stack[-1]})")
            stack.append(e)
    for (cat, fid), evs in flows.items():
        phs = "".join(ev["ph"] for ev in evs)
        if not re.fullmatch(r"st*f", phs):
            bad.append(f"flow {cat}/{fid}: phases {phs!r} (need one s, any t, one f, in that order)")
        if len({ev.get("name") for ev in evs}) != 1:
            bad.append(f"flow {cat}/{fid}: names differ")
        ts = [ev["ts"] for ev in evs]
        if ts != sorted(ts):
            bad.append(f"flow {cat}/{fid}: goes back in time {ts}")
        for ev in evs:
            spans = slices.get((ev["pid"], ev["tid"]), [])
            if ev["ph"] == "f" and ev.get("bp") != "e":
                ok = any(s >= ev["ts"] for s, _ in spans)
            else:
                ok = any(s <= ev["ts"] <= e for s, e in spans)
            if not ok:
                bad.append(f"flow {cat}/{fid}: its {ev['ph']!r} event at {ev['ts']} binds to no slice on its thread")
    return bad


def perfetto_flow_binding(doc) -> dict[tuple, list[dict | None]]:
    """The slice each flow event of ``doc`` binds to when Perfetto imports it, replayed from Perfetto's JSON
    importer (trace processor: ``json_trace_parser_impl.cc``, ``slice_tracker.cc``, ``flow_tracker.cc``):
    events sorted by timestamp (ties keep file order), ``ts`` rounded to the ns (``llround(ts * 1000)``); a
    complete event first pops the slices of its thread that ended before it (or at its start, unless both are
    instants), then opens; ``s``, ``t`` and ``f`` with ``bp: "e"`` bind to the slice last opened and not popped
    on their thread (``GetTopmostSliceOnTrack``), whether or not it has ended. Returns ``(cat, id)`` -> bound
    X events in flow order (``None``: nothing open)."""
    evs = sorted((e for e in doc["traceEvents"] if e["ph"] != "M"), key=lambda e: round(e["ts"] * 1000))
    stacks: dict[tuple[int, int], list[tuple[int, int, dict]]] = {}
    bound: dict[tuple, list[dict | None]] = {}
    for e in evs:
        stack = stacks.setdefault((e["pid"], e["tid"]), [])
        ts = round(e["ts"] * 1000)
        if e["ph"] == "X":
            dur = round(e["dur"] * 1000)
            while stack and (stack[-1][0] + stack[-1][1] < ts
                             or (stack[-1][0] + stack[-1][1] == ts and not (stack[-1][1] == 0 and dur == 0))):
                stack.pop()
            stack.append((ts, dur, e))
        elif e["ph"] in "st" or (e["ph"] == "f" and e.get("bp") == "e"):
            bound.setdefault((e["cat"], e["id"]), []).append(stack[-1][2] if stack else None)
    return bound


def check_flow_ends(doc) -> list[str]:
    """Flows that Perfetto would draw from or to the wrong slice (:func:`perfetto_flow_binding`): every arrow
    named ``"u->v"`` must start on a slice of op ``u``, pass through the transfer ``u->v`` (if any) and end on a
    slice of op ``v``."""
    names = {(e["cat"], e["id"]): e["name"] for e in doc["traceEvents"] if e["ph"] in "stf"}
    bad = []
    for key, xs in perfetto_flow_binding(doc).items():
        ops = [None if x is None else x["args"]["op"] for x in xs]
        name = names[key]
        if None in ops or f"{ops[0]}->{ops[-1]}" != name or any(o != name for o in ops[1:-1]):
            bad.append(f"flow {key} {name!r} binds to {ops}")
    return bad


def _by(doc, ph):
    return [e for e in doc["traceEvents"] if e["ph"] == ph]


def _enclosing(doc, ev):
    """The X event a flow event binds to (the slice enclosing its ts on its thread)."""
    hits = [x for x in _by(doc, "X") if (x["pid"], x["tid"]) == (ev["pid"], ev["tid"])
            and x["ts"] <= ev["ts"] <= x["ts"] + x["dur"]]
    assert len(hits) == 1, (ev, hits)
    return hits[0]


def _names(doc):
    procs = {e["pid"]: e["args"]["name"] for e in _by(doc, "M") if e["name"] == "process_name"}
    threads = {(procs[e["pid"]], e["args"]["name"]) for e in _by(doc, "M") if e["name"] == "thread_name"}
    labels = {procs[e["pid"]]: e["args"]["labels"] for e in _by(doc, "M") if e["name"] == "process_labels"}
    return procs, threads, labels


# --- the validator itself ---------------------------------------------------------------------------------------


def _valid_doc():
    return {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "host"}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "core 0"}},
        {"name": "a", "cat": "compute", "ph": "X", "ts": 0.0, "dur": 1.5, "pid": 1, "tid": 2},
        {"name": "b", "cat": "compute", "ph": "X", "ts": 2.0, "dur": 1.0, "pid": 1, "tid": 2},
        {"name": "a->b", "cat": "dataflow", "ph": "s", "id": 1, "ts": 0.75, "pid": 1, "tid": 2},
        {"name": "a->b", "cat": "dataflow", "ph": "f", "id": 1, "ts": 2.5, "pid": 1, "tid": 2, "bp": "e"},
    ], "displayTimeUnit": "ns"}


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d.pop("traceEvents"), "traceEvents"),
    (lambda d: d.update(displayTimeUnit="us"), "displayTimeUnit"),
    (lambda d: d["traceEvents"][2].update(dur=-1.0), "dur"),
    (lambda d: d["traceEvents"][2].update(ts=5120.000000000001), "3 decimals"),
    (lambda d: d["traceEvents"][3].update(ts=1.0), "overlaps"),
    (lambda d: d["traceEvents"].pop(1), "no thread_name"),
    (lambda d: d["traceEvents"].pop(0), "no process_name"),
    (lambda d: d["traceEvents"].pop(5), "phases 's'"),
    (lambda d: d["traceEvents"][5].update(ts=0.5), "back in time"),
    (lambda d: d["traceEvents"][4].update(ts=1.75), "binds to no slice"),
    (lambda d: d["traceEvents"][5].update(name="x"), "names differ"),
    (lambda d: d["traceEvents"][4].update(bp="e"), "bp"),
    (lambda d: d["traceEvents"][3].update(ph="Q"), "unknown ph"),
    (lambda d: d["traceEvents"][3].update(pid=2), "tid 2 is in pids"),
])
def test_validator_catches(mutate, needle):
    assert check_trace_format(_valid_doc()) == []
    doc = _valid_doc()
    mutate(doc)
    problems = check_trace_format(doc)
    assert any(needle in p for p in problems), problems


# --- times ------------------------------------------------------------------------------------------------------


def test_times_rounded_to_the_ns():
    noisy = 5.120000000000001e-3  # a float sum of phase times, as the replay produces them
    tr = pd.DataFrame([("a", "host", "compute", "", 0.0, noisy), ("b", "host", "compute", "", noisy, 0.0123456789)],
                      columns=["op", "device", "kind", "phase", "start_s", "end_s"])
    doc = chrome_trace(tr)
    a, b = _by(doc, "X")
    assert (a["ts"], a["dur"], b["ts"], b["dur"]) == (0.0, 5120.0, 5120.0, 7225.679)
    assert a["args"]["end_s"] == 0.00512 and b["args"]["end_s"] == 0.012345679
    text = json.dumps(doc)
    assert "5120.000000000001" not in text and check_trace_format(doc) == []
    assert to_ns(noisy) == 5_120_000
    rounded = round_ns(tr)
    assert rounded["end_s"].tolist() == [0.00512, 0.012345679] and tr["end_s"].iat[0] == noisy  # a copy
    csv = rounded.to_csv(index=False)
    assert "0.00512," in csv and "000000001" not in csv


# --- a run: args, tracks, arrows --------------------------------------------------------------------------------


def _diamond_run(**kw):
    costs = CostModel(diamond(), make_platform(**kw))
    sch = Schedule("manual", {"a": "host", "b": "cim", "c": "cim", "d": "host"},
                   placement={"b": [(0, 1)], "c": [(0, 1)]})
    return costs, sch, simulate(costs, sch)


def test_run_trace_args_tracks_and_arrows():
    costs, sch, res = _diamond_run()
    doc = chrome_trace(res.trace, {"workload": "diamond"}, costs=costs, schedule=sch)
    assert check_trace_format(doc) == [] and check_flow_ends(doc) == []
    procs, threads, labels = _names(doc)
    assert list(procs.values()) == ["host", "cim", "bus"]
    # b and c run at once on the CIM (each on its own crossbar): two lanes, explained; one core on the host
    assert threads == {("host", "core 0"), ("cim", "lane 0"), ("cim", "lane 1"), ("bus", "lane 0"), ("bus", "lane 1")}
    assert labels["host"] == "host, cpu"
    assert labels["cim"].startswith("accelerator, puma; lanes: ops run at the same time")
    assert labels["bus"].startswith("link; lanes: transfers in flight at once")
    tids = [e["tid"] for e in _by(doc, "M") if e["name"] == "thread_name"]
    assert len(set(tids)) == len(tids) and not set(tids) & set(procs)

    xs = {e["name"]: e for e in _by(doc, "X")}
    b_load = xs["b [load]"]["args"]
    assert b_load["op_type"] == "Conv" and b_load["macs"] == 16 * 16 * 10 and b_load["crossbars"] == 1
    assert b_load["placement"] == [[0, 1]] and b_load["weight_shape"] == [16, 16] and b_load["phase"] == "load"
    assert b_load["track"] == "lane 0" and b_load["device"] == "cim"
    assert xs["a"]["args"]["op_type"] == "Relu" and xs["a"]["args"]["track"] == "core 0"
    assert {"input_shapes", "output_shapes"} <= set(xs["a"]["args"])
    xfer = xs["b->d"]["args"]
    assert (xfer["producer"], xfer["consumer"], xfer["src"], xfer["dst"], xfer["bytes"]) == ("b", "d", "cim", "host",
                                                                                              50)

    # one arrow per transfer: producer's last slice -> transfer -> consumer's first slice
    flows: dict[int, list[dict]] = {}
    for e in doc["traceEvents"]:
        if e["ph"] in "stf":
            flows.setdefault(e["id"], []).append(e)
    got = {}
    for evs in flows.values():
        assert [e["ph"] for e in evs] == ["s", "t", "f"] and evs[-1]["bp"] == "e"
        assert {e["cat"] for e in evs} == {FLOW_CAT}
        got[evs[0]["name"]] = [_enclosing(doc, e)["name"] for e in evs]
    assert got == {"a->b": ["a", "a->b", "b [load]"], "a->c": ["a", "a->c", "c [load]"],
                   "b->d": ["b [store]", "b->d", "d"], "c->d": ["c [store]", "c->d", "d"]}


def test_run_trace_cores_of_a_multicore_host_and_serial_links():
    # two host cores: the two CIM-less branches run at once on "core 0" and "core 1"; links contention: one track
    costs = CostModel(diamond(), make_platform(host_cores=2))
    sch = Schedule("manual", {"a": "host", "b": "host", "c": "host", "d": "host"})
    doc = chrome_trace(simulate(costs, sch).trace, costs=costs, schedule=sch)
    assert check_trace_format(doc) == []
    _, threads, labels = _names(doc)
    assert threads == {("host", "core 0"), ("host", "core 1")}
    assert "2 cores" in labels["host"]
    assert not [e for e in doc["traceEvents"] if e["ph"] in "stf"]  # one device: no arrows

    costs, sch, _ = _diamond_run()
    doc = chrome_trace(simulate(costs, sch, {"links"}).trace, costs=costs, schedule=sch)
    assert check_trace_format(doc) == []
    _, threads, labels = _names(doc)
    assert ("bus", "transfers") in threads and labels["bus"] == "link"


def test_flow_chains_shared_memory_and_split_ends():
    # rows: u on A, a part of v on A and one on B (a channel split), w on B; no transfers
    keys = ["u", "v", "v", "w"]
    devs = ["A", "A", "B", "B"]
    start = [0, 10, 10, 30]
    end = [10, 20, 25, 40]
    chains = flow_chains(keys, devs, start, end, [("u", "v"), ("v", "w"), ("u", "x")])
    # u -> v ends on v's part on the other device (tie at start 10); v -> w starts at v's last-ending part (on B,
    # the same device as w: no arrow); the edge to an op not in the trace is skipped
    assert chains == [("u->v", [0, 2])]
    assert flow_chains(keys, devs, start, end, [("u", "v")], eligible=[True, True, False, True]) == []


def test_flows_bind_to_their_slices_among_instants():
    # free host ops (0 ns, as on DIANA) at the same time as a real one: each arrow must leave its own op
    tr = pd.DataFrame([("z1", "host", "compute", "", 0.0, 0.0), ("z2", "host", "compute", "", 0.0, 0.0),
                       ("a", "host", "compute", "", 0.0, 1e-6), ("b", "acc", "compute", "", 1e-6, 2e-6)],
                      columns=["op", "device", "kind", "phase", "start_s", "end_s"])
    flows = flow_chains(list(tr["op"]), list(tr["device"]), [0, 0, 0, 1000], [0, 0, 1000, 2000],
                        [("z1", "b"), ("z2", "b"), ("a", "b")])
    doc = chrome_trace(tr, host="host", flows=flows)
    assert check_trace_format(doc) == [] and check_flow_ends(doc) == []
    # the same events with every slice before the flow events of its time: Perfetto would misbind
    naive = dict(doc, traceEvents=sorted(doc["traceEvents"], key=lambda e: (e["ph"] != "M", e.get("ts", 0),
                                                                            e["ph"] != "X")))
    assert check_trace_format(naive) == [] and check_flow_ends(naive)


def test_lane_names():
    assert lane_names(1, HOST, serial=True, units=1, can_host=True).names == ("core 0",)
    four = lane_names(3, HOST, serial=True, units=4, can_host=True)
    assert four.names == ("core 0", "core 1", "core 2") and four.unit == "core" and "4 cores" in four.note
    assert lane_names(1, ACCELERATOR, serial=True, units=1).names == ("ops",)
    assert lane_names(2, ACCELERATOR, serial=True, units=2).names == ("unit 0", "unit 1")
    assert lane_names(1, ACCELERATOR, serial=False).names == ("ops",)
    lanes = lane_names(3, ACCELERATOR, serial=False)
    assert lanes.names == ("lane 0", "lane 1", "lane 2") and "same time" in lanes.note
    assert lane_names(1, LINK).names == ("transfers",)
    assert lane_names(2, LINK).names == ("lane 0", "lane 1") and "no link contention" in lane_names(2, LINK).note
    assert lane_names(0, ACCELERATOR).names == ()


# --- the files hetsim run writes --------------------------------------------------------------------------------


def _check_file(path: Path) -> dict:
    doc = json.loads(path.read_text())
    assert check_trace_format(doc) == []
    assert check_flow_ends(doc) == []
    assert not re.search(r'"(ts|dur)":-?\d+\.\d{4,}', path.read_text())  # no sub-ns noise in the text
    return doc


def _csv_times_whole_ns(path: Path) -> None:
    tr = pd.read_csv(path)
    for c in ("start_s", "end_s"):
        assert (tr[c] * 1e9 - (tr[c] * 1e9).round()).abs().max() < 1e-6


def test_cli_trace_puma(tmp_path, capsys):
    code, _, err = run_cli(capsys, "run", ROOT / "platforms/puma.yaml", ROOT / "workloads/mobilenet_v2.onnx",
                           "--out", tmp_path)
    assert code == 0, err
    doc = _check_file(tmp_path / "trace.json")
    procs, threads, labels = _names(doc)
    assert ("host", "core 0") in threads and labels["host"].startswith("host")
    xs = _by(doc, "X")
    cim = [e for e in xs if e["args"]["device"] == "cim"]
    assert cim and all(e["args"]["crossbars"] >= 1 and e["args"]["op_type"] in ("Conv", "Gemm", "MatMul")
                       and e["args"]["macs"] > 0 and e["args"]["output_shapes"] for e in cim)
    transfers = [e for e in xs if e["args"]["kind"] == "transfer"]
    steps = [e for e in doc["traceEvents"] if e["ph"] == "t"]
    assert len(steps) == len(transfers) > 0  # every transfer carries an arrow
    _csv_times_whole_ns(tmp_path / "trace.csv")


def test_cli_trace_diana_splits(tmp_path, capsys):
    # the latency objective splits one layer between the accelerators (the energy one of the README splits none)
    code, _, err = run_cli(capsys, "run", ROOT / "platforms/diana.yaml", ROOT / "workloads/resnet20_cifar10.onnx",
                           "--mapper", "min-cost", "--objective", "latency", "--out", tmp_path)
    assert code == 0, err
    doc = _check_file(tmp_path / "trace.json")
    _, threads, labels = _names(doc)
    assert ("host", "core 0") in threads
    assert all(name == "ops" for dev, name in threads if dev != "host")  # serial accelerators: one track each
    parts = [e for e in _by(doc, "X") if "channels" in e["args"]]
    assert parts and all(e["args"]["out_channels"] >= e["args"]["channels"] for e in parts)
    # shared L1: no transfers, arrows go straight from producer to consumer across devices
    assert not [e for e in doc["traceEvents"] if e["ph"] == "t"] and _by(doc, "s")
    _csv_times_whole_ns(tmp_path / "trace.csv")


def test_cli_trace_snn(tmp_path, capsys):
    code, _, err = run_cli(capsys, "run", ROOT / "platforms/efr32mg24.yaml", ROOT / "workloads/snn/braille64.yaml",
                           "--out", tmp_path)
    assert code == 0, err
    doc = _check_file(tmp_path / "trace.json")
    procs, threads, labels = _names(doc)
    assert list(procs.values()) == ["m33 (async)", "mvp (async)", "m33 (blocking)", "mvp (blocking)"]
    assert labels["m33 (async)"] == "host, cortex-m" and labels["mvp (async)"] == "accelerator, mvp"
    assert ("m33 (blocking)", "core 0") in threads and ("mvp (async)", "ops") in threads
    affine = [e for e in _by(doc, "X") if e["cat"] == "affine"]
    assert all({"layer", "t", "cycles", "n_in", "n_out", "engine", "residency"} <= set(e["args"]) for e in affine)
    # arrows only between the M33 and the MVP, never from the M33's polling while it waits (blocking)
    flows = _by(doc, "s") + _by(doc, "f")
    assert flows
    for ev in flows:
        x = _enclosing(doc, ev)
        assert x["cat"] != "poll" and "->" in ev["name"] and "(" not in ev["name"]
    _csv_times_whole_ns(tmp_path / "trace.csv")


def test_write_chrome_trace_passes_layout(tmp_path):
    costs, sch, res = _diamond_run()
    path = write_chrome_trace(res.trace, tmp_path / "t.json", {"x": 1}, costs=costs, schedule=sch)
    doc = _check_file(path)
    assert doc["otherData"] == {"x": 1} and _by(doc, "s")
