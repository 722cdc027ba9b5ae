"""Audit of the numbers hetsim reports, recomputed from first principles over the shipped ONNX workloads.

For every workload (``workloads/*.onnx``, ``workloads/paper/*.onnx``; the transformers bert, gpt2 and vit are
skipped unless ``--all``) x platform x mapper (all-host, greedy, heft; cpsat with ``time_limit_s=5`` on the
models named in ``CPSAT_MODELS``) x contention (none, all), one run through :func:`hetsim.run`, then checks:

* trace: every op has compute rows on exactly the devices of its parts; ``start <= end`` (zero length only for
  ops of zero latency); the op's start/finish equal its first row's start / last row's end; each op starts
  after its predecessors finish, plus the edge's transfer time (CPU-CIM ILP Eq. 4) when it moves data; on a
  serial device no more than ``units`` intervals at once;
* makespan: ``>=`` the critical path at each op's fastest latency (no transfers), ``>=`` each serial device's
  busy time / units, ``==`` the latest end in the trace; ``==`` the mapper's predicted makespan (1e-9 rel.)
  without contention when the mapper predicts one (else ``>=`` the contention-free replay: reported only);
* busy time and utilisation (:func:`hetsim.analysis.metrics.device_table`'s docstring): serial devices sum their
  intervals, others take the length of the union; utilisation = busy / (units x makespan) in [0, 1];
* energy (ODiMO Eq. 4 generalised, the same docstring): per device and link ``active_w * busy + idle_w *
  (units * makespan - busy)`` + per-op energy + cell writes + ``energy_pj_per_byte`` x bytes on links, plus the
  memories' weight reads; total equal to ``summary["energy_j"]`` to 1e-9 relative; and the per-op shares plus
  idle energies equal the total minus the links' energy (:func:`hetsim.analysis.metrics.op_energy`);
* speed-up == baseline makespan / makespan, and the baseline's replay equals an explicit run of the platform's
  baseline mapper (same trace);
* determinism: the same run twice gives the same summary and trace.

Usage: ``PYTHONPATH=. python bench/audit_numbers.py [--all] [--models SUBSTR,...] [--platforms NAME,...]``;
prints one line per failed check and a count; exit 1 when any check failed. Single-threaded.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import hetsim
from hetsim.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ["puma.yaml", "puma-x86.yaml", "cim-npu.yaml", "soc-2npu.yaml", "cim-npu-dram.yaml", "diana.yaml"]
MAPPERS = ["all-host", "greedy", "heft", "cpsat"]
CPSAT_MODELS = ("resnet20_cifar10", "mobilenet_v1_025_vww")
#: the platform's own mappers beyond the grid's (DIANA's channel splits, ODiMO)
EXTRA_MAPPERS = {"diana.yaml": [("min-cost", {}), ("min-cost", {"objective": "energy"}), ("all-ternary", {}),
                                ("io8-backbone-ternary", {})]}
SLOW = ("bert", "gpt2", "vit")
REL = 1e-9
#: variants that exercise paths the shipped platforms leave at zero (one-core hosts, links without power):
#: (platform file, overrides)
VARIANTS = [("puma.yaml", {"devices.host.cores": 4, "links.bus.active_w": 0.2, "links.bus.idle_w": 0.05,
                           "links.bus.energy_pj_per_byte": 10.0}),
            ("cim-npu.yaml", {"devices.host.cores": 2, "links.bus.active_w": 0.2, "links.bus.idle_w": 0.05,
                              "links.bus.energy_pj_per_byte": 10.0}),
            # small weight memories: streamed and reprogrammed ops, weight-port contention
            ("cim-npu-dram.yaml", {"devices.npu.weight_memory_kib": 64, "devices.cim.crossbars": 40,
                                   "devices.host.cores": 2})]


def close(a: float, b: float, rel: float = REL, abs_: float = 1e-15) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


class Audit:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.notes: list[str] = []
        self.checks = 0

    def check(self, ok: bool, where: str, what: str) -> None:
        self.checks += 1
        if not ok:
            self.failures.append(f"{where}: {what}")
            print(f"FAIL {where}: {what}", flush=True)


def fastest_latency(costs, bound, schedule, v: str) -> float:
    """A lower bound on op ``v``'s duration in the replay: its fastest latency over every device (resident or as
    its schedule binds it); for a channel-split op, its longest part (the op finishes with it)."""
    parts = schedule.parts[v]
    if len(parts) > 1:
        return max((costs.part_latency(v, p.device, p.n_channels) or 0.0) for p in parts)
    lats = list(costs.latency[v].values()) + list(bound.latency[v].values())
    return min(lats)


def audit_run(a: Audit, where: str, r, base_trace=None) -> None:
    costs, sched, res, s = r.costs, r.schedule, r.result, r.summary
    bound = costs.for_schedule(sched)
    g = costs.workload.graph
    tr = res.trace
    T = res.makespan_s
    a.check(close(s["makespan_s"], T), where, "summary makespan != replay makespan")
    ends = float(tr["end_s"].max()) if len(tr) else 0.0
    a.check(close(T, ends), where, f"makespan {T!r} != latest trace end {ends!r}")
    a.check(bool((tr["start_s"] <= tr["end_s"]).all()), where, "a trace row ends before it starts")
    a.check(bool((tr["start_s"] >= 0).all()), where, "a trace row starts before 0")

    comp = tr[tr["kind"] == "compute"]
    rows_dev: dict[str, set] = {}
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for v, d, st, en in zip(comp["op"], comp["device"], comp["start_s"], comp["end_s"], strict=True):
        rows_dev.setdefault(v, set()).add(d)
        first[v] = min(first.get(v, math.inf), st)
        last[v] = max(last.get(v, -math.inf), en)
    ops = list(costs.workload.topological_order())
    missing = [v for v in ops if v not in rows_dev]
    a.check(not missing, where, f"{len(missing)} ops without a compute row, e.g. {missing[:3]}")
    extra = set(rows_dev) - set(ops)
    a.check(not extra, where, f"trace rows of unknown ops {sorted(extra)[:3]}")
    bad_dev = [v for v in ops if v in rows_dev and rows_dev[v] != set(sched.devices_of(v))]
    a.check(not bad_dev, where, f"{len(bad_dev)} ops whose trace devices differ from their parts, e.g. {bad_dev[:3]}")
    # each (op, device, phase) row once
    key_dups = comp.duplicated(["op", "device", "phase"]).sum()
    a.check(key_dups == 0, where, f"{key_dups} duplicated (op, device, phase) trace rows")
    zero_bad = [v for v in ops if v in first and last[v] <= first[v] and fastest_latency(costs, bound, sched, v) > 0]
    a.check(not zero_bad, where, f"{len(zero_bad)} ops of non-zero latency with zero-length rows, e.g. {zero_bad[:3]}")
    sf = [v for v in ops if v in first and not (close(first[v], res.start_s[v]) and close(last[v], res.finish_s[v]))]
    a.check(not sf, where, f"{len(sf)} ops whose start/finish differ from their trace rows, e.g. {sf[:3]}")

    # precedence with transfers (Eq. 8), and the transfers' own rows
    xfer = tr[tr["kind"] == "transfer"]
    xrows = {op: (st, en) for op, st, en in zip(xfer["op"], xfer["start_s"], xfer["end_s"], strict=True)}
    a.check(len(xrows) == len(xfer), where, "a transfer appears twice in the trace")
    bad_prec, bad_x, bad_xlen = [], [], []
    asg = res.assignment
    for u, v in g.edges:
        du, dv = asg[u], asg[v]
        need = 0.0
        label = f"{u}->{v}"
        moves = (not sched.is_split(u) and not sched.is_split(v) and costs.needs_transfer(u, v, du, dv))
        if moves:
            need = costs.transfer_time(u, v, du, dv)
            if label not in xrows:
                bad_x.append(label)
            else:
                st, en = xrows[label]
                if st < res.finish_s[u] * (1 - REL) - 1e-15:
                    bad_x.append(label)
                if not close(en - st, need, 1e-6, 1e-15) and not res.contention:
                    bad_xlen.append(label)
        elif label in xrows:
            bad_x.append(label)
        if res.start_s[v] < (res.finish_s[u] + need) * (1 - REL) - 1e-15:
            bad_prec.append(label)
    a.check(not bad_prec, where, f"{len(bad_prec)} edges violate precedence + transfer, e.g. {bad_prec[:3]}")
    a.check(not bad_x, where, f"{len(bad_x)} transfer rows missing/extra/early, e.g. {bad_x[:3]}")
    a.check(not bad_xlen, where, f"{len(bad_xlen)} transfer rows != Eq. 4 time, e.g. {bad_xlen[:3]}")

    # critical path at the fastest latency, no transfers
    fast = {v: fastest_latency(costs, bound, sched, v) for v in ops}
    ef: dict[str, float] = {}
    for v in ops:
        ef[v] = max((ef[u] for u in g.predecessors(v)), default=0.0) + fast[v]
    cp = max(ef.values(), default=0.0)
    a.check(cp * (1 - REL) <= T, where, f"makespan {T:.9g} < critical path {cp:.9g}")

    # busy, utilisation, energy per device (device_table's docstring)
    devrows = {row["device"]: row for row in s["devices"]}
    total = 0.0
    link_j = 0.0
    idle_total = 0.0
    write_j: dict[str, float] = {}
    for st in (res.weights or {}).values():
        write_j[st.device] = write_j.get(st.device, 0.0) + st.write_j
    entries = list(costs.devices.items()) + list(costs.platform.links.items())
    for name, cfg in entries:
        sub = tr[tr["device"] == name]
        s_, e_ = sub["start_s"].to_numpy(float), sub["end_s"].to_numpy(float)
        # concurrency: max intervals running at once
        ev = sorted([(x, 1) for x, y in zip(s_, e_, strict=True) if y > x] +
                    [(y, -1) for x, y in zip(s_, e_, strict=True) if y > x], key=lambda p: (p[0], p[1]))
        conc = mx = 0
        for _, dlt in ev:
            conc += dlt
            mx = max(mx, conc)
        units = cfg.units
        union = 0.0
        cur_s = cur_e = None
        for x, y in sorted(zip(s_, e_, strict=True)):
            if cur_e is None or x > cur_e:
                if cur_e is not None:
                    union += cur_e - cur_s
                cur_s, cur_e = x, y
            else:
                cur_e = max(cur_e, y)
        if cur_e is not None:
            union += cur_e - cur_s
        serial = cfg.serial
        if serial:
            a.check(mx <= units, where, f"{name}: {mx} intervals at once on a serial device of {units} units")
            busy = float((e_ - s_).sum())
            a.check(busy / units * (1 - REL) <= T, where, f"{name}: makespan < busy/units")
        else:
            busy = union
        if name in costs.platform.links and "links" in res.contention:
            a.check(mx <= 1, where, f"link {name}: {mx} transfers at once with links contention")
        row = devrows.get(name)
        a.check(row is not None, where, f"{name}: no device row")
        if row is None:
            continue
        a.check(close(row["busy_s"], busy, 1e-9, 1e-18), where,
                f"{name}: busy {row['busy_s']!r} != recomputed {busy!r}")
        util = busy / (units * T) if T > 0 else 0.0
        a.check(close(row["utilisation"], util, 1e-9, 1e-15), where, f"{name}: utilisation != busy/(units*T)")
        a.check(-1e-12 <= row["utilisation"] <= 1 + 1e-9, where,
                f"{name}: utilisation {row['utilisation']} outside [0,1]")
        active = cfg.active_w * busy
        idle = cfg.idle_w * max(units * T - busy, 0.0)
        opj = 0.0
        nbytes = 0.0
        if name in costs.platform.links:
            for lab in sub["op"]:
                u, v = lab.split("->", 1)
                nbytes += costs.transfer_bytes(u, v, asg[u], asg[v])
            xj = cfg.energy_pj_per_byte * 1e-12 * nbytes
            link_j += active + idle + xj
        else:
            xj = 0.0
            seen = set()
            for v, ch in zip(sub["op"], sub["channels"], strict=True):
                if v in seen or v in costs.folded:
                    continue
                seen.add(v)
                opj += cfg.op_energy_j(costs.workload.op(v), None if pd.isna(ch) else int(ch))
            opj += write_j.get(name, 0.0)
            idle_total += idle
        e = active + idle + opj + xj
        a.check(close(row["energy_j"], e, 1e-9, 1e-18), where,
                f"{name}: energy {row['energy_j']!r} != recomputed {e!r}")
        total += e
    for mem in costs.platform.memories:
        mine = [st for st in (res.weights or {}).values() if st.memory == mem]
        total += sum(st.read_j for st in mine)
    a.check(close(s["energy_j"], total, 1e-9, 1e-18), where, f"energy {s['energy_j']!r} != recomputed {total!r}")
    op_e = r.ops["energy_j"].sum()
    a.check(close(op_e + idle_total, s["energy_j"] - link_j, 1e-9, 1e-15), where,
            f"sum op energy + idle {op_e + idle_total!r} != energy - links {s['energy_j'] - link_j!r}")

    # each op lasts its latency on its device (the cost model's, as the schedule binds it) without contention
    if not res.contention:
        bad_lat = []
        for v in ops:
            if sched.is_split(v) or v in sched.after:
                continue
            d = asg[v]
            want = bound.latency[v][d]
            if not close(res.finish_s[v] - res.start_s[v], want, 1e-9, 1e-15):
                bad_lat.append((v, d, res.finish_s[v] - res.start_s[v], want))
        a.check(not bad_lat, where, f"{len(bad_lat)} ops whose replayed duration != latency, e.g. {bad_lat[:2]}")
        if sched.start_s and sched.makespan_s is not None:
            off = [v for v in ops if v in sched.start_s and not close(sched.start_s[v], res.start_s[v], 1e-9, 1e-15)]
            a.check(not off, where, f"{len(off)} ops start off their predicted time, e.g. {off[:3]}")
    else:  # contention only delays: the same schedule without it is no slower (fixed device orders)
        from hetsim.sim import simulate

        free = simulate(costs, sched, frozenset())
        a.check(free.makespan_s * (1 - REL) <= T, where,
                f"contended makespan {T!r} < contention-free replay {free.makespan_s!r}")
    if not res.contention:  # CPU-CIM ILP Eq. 2-3 from the op's sizes and the device's fields, per phase row
        bad_ph = []
        ph_rows = tr[(tr["kind"] == "compute") & tr["phase"].notna() & (tr["phase"] != "")]
        for v, d, ph, st, en in zip(ph_rows["op"], ph_rows["device"], ph_rows["phase"], ph_rows["start_s"],
                                    ph_rows["end_s"], strict=True):
            dev = costs.devices[d]
            if v in costs.folded or v in sched.policies or not hasattr(dev, "t_mvm_ns"):
                continue
            op = costs.workload.op(v)
            bw = dev.internal_bandwidth_gb_s * 1e9
            want = {"load": dev.element_bits / 8 * op.n_in / bw, "mvm": op.gemm.n_mvm * dev.t_mvm_ns * 1e-9,
                    "store": dev.element_bits / 8 * op.n_out / bw}.get(ph)
            if want is not None and not close(en - st, want, 1e-9, 1e-15):
                bad_ph.append((v, ph, en - st, want))
        a.check(not bad_ph, where, f"{len(bad_ph)} CIM phases != Eq. 2-3, e.g. {bad_ph[:2]}")
    if "memory" in res.contention:
        for row in s["devices"]:
            if row["kind"] == "memory":
                a.check(row["utilisation"] <= 1 + 1e-9, where, f"memory {row['device']}: utilisation "
                        f"{row['utilisation']} > 1 with memory contention on")
    bad_w = []  # weight policies (hetsim.weights' docstring): T_read, E_read and the policy's latency
    for v, st in (res.weights or {}).items():
        mem = costs.platform.memories[st.memory]
        port = mem.weights_for[st.device]
        t_read = st.nbytes / (min(mem.bandwidth_gb_s, port.bandwidth_gb_s) * 1e9) + (mem.latency_ns
                                                                                     + port.latency_ns) * 1e-9
        e_read = st.nbytes * (mem.energy_pj_per_byte + port.energy_pj_per_byte) * 1e-12
        if st.policy == "streamed":
            t = max(t_read, st.compute_s) if st.overlapped else t_read + st.compute_s
        else:
            t = t_read + st.write_s + st.compute_s
        if not (close(st.read_s, t_read) and close(st.read_j, e_read) and close(st.latency_s, t)
                and close(bound.latency[v][st.device], t)):
            bad_w.append((v, st.policy, st.read_s, t_read, st.latency_s, t))
    a.check(not bad_w, where, f"{len(bad_w)} weight steps off their formula, e.g. {bad_w[:2]}")
    host = costs.host
    if all(sched.devices_of(v) == [host] for v in ops):  # all on the host: its latencies, back to back
        total_h = sum(costs.latency[v][host] for v in ops)
        hu = costs.devices[host].units
        if hu == 1:
            a.check(close(T, total_h), where, f"all-host makespan {T!r} != sum of host latencies {total_h!r}")
        else:
            a.check(total_h / hu * (1 - REL) <= T, where, "all-host makespan < sum of host latencies / cores")
    for v, parts in sched.parts.items():
        if len(parts) > 1:
            got = comp[comp["op"] == v].drop_duplicates("device")["channels"].astype(int).sum()
            a.check(got == costs.out_channels(v), where, f"split {v}: channels {got} != C_out {costs.out_channels(v)}")
    n_on = {d: sum(1 for v in ops if d in sched.devices_of(v)) for d in costs.devices}
    for d, n in n_on.items():
        a.check(devrows[d]["ops"] == n, where, f"{d}: device row counts {devrows[d]['ops']} ops, schedule {n}")
    n_off = sum(1 for v in ops if any(d != host for d in sched.devices_of(v)))
    a.check(s["ops_offloaded"]["count"] == n_off, where, "ops_offloaded count != ops with a non-host part")
    audit_memory(a, where, r)

    # predicted makespan
    pred = sched.makespan_s
    if pred is not None and not res.contention:
        a.check(close(T, pred), where, f"replayed {T!r} != predicted {pred!r} without contention")
    # speed-up and baseline
    if s["baseline_makespan_s"] is None:
        a.check(bool(s.get("baseline_error")), where, "no baseline and no baseline_error saying why")
    else:
        a.check(close(s["speedup"], s["baseline_makespan_s"] / T), where, "speedup != baseline / makespan")
        a.check(close(s["baseline_makespan_s"], r.baseline.makespan_s), where, "baseline makespan != baseline replay")
        if base_trace is not None:
            a.check(r.baseline.trace.reset_index(drop=True).equals(base_trace.reset_index(drop=True)), where,
                    "baseline replay's trace differs from an explicit baseline run")
            a.check(close(r.baseline.makespan_s, float(base_trace["end_s"].max())), where,
                    "baseline makespan != explicit baseline run")


def audit_memory(a: Audit, where: str, r) -> None:
    """Peak live activation bytes per memory, recomputed by brute force from the footprint module's docstring
    (:mod:`hetsim.analysis.footprint`), and its stated lower bound (the inputs plus outputs of any op of
    positive duration)."""
    from hetsim.analysis.footprint import platform_memories

    costs, res, s = r.costs, r.result, r.summary
    wl, plat = costs.workload, costs.platform
    g = wl.graph
    resolve = platform_memories(plat)
    lane = {}
    for d in plat.devices:
        got = resolve(d)
        lane[d] = got[0] if got else f"local:{d}"
    asg = res.assignment
    T = res.makespan_s

    def size(v, dev):
        op = wl.op(v)
        wb = costs.devices[dev].wire_bits
        if wb is None:
            return op.out_bytes if op.out_bytes else -(-op.n_out * op.bits // 8)
        return -(-op.n_out * wb // 8)

    keep = {v for v in g.nodes if v not in costs.folded and not wl.op(v).is_constant and wl.op(v).n_out > 0}
    outs = set(wl.meta["output_producers"].values()) if "output_producers" in wl.meta else set(wl.sinks())
    bufs = []  # (memory, bytes, alloc, free)
    for u in keep:
        home = lane[asg[u]]
        cons = [v for v in g.successors(u) if not g.edges[u, v].get("param")]
        free = T if u in outs else max([res.finish_s[u], *(res.finish_s[v] for v in cons)])
        bufs.append((home, size(u, asg[u]), res.start_s[u], free))
        remote: dict[str, list] = {}
        for v in cons:
            if lane[asg[v]] != home:
                remote.setdefault(lane[asg[v]], []).append(v)
        for m, vs in remote.items():
            bufs.append((m, max(size(u, asg[v]) for v in vs), res.finish_s[u], max(res.finish_s[v] for v in vs)))
    from hetsim.analysis.footprint import _input_bytes

    readers = wl.meta.get("input_readers") or {}
    in_bytes = _input_bytes(wl.meta.get("inputs", []))
    for name, vs in readers.items():
        by: dict[str, float] = {}
        for v in vs:
            by[lane[asg[v]]] = max(by.get(lane[asg[v]], 0.0), res.finish_s[v])
        for m, f in by.items():
            bufs.append((m, in_bytes.get(name, 0), 0.0, f))
    lanes = s["memory"]["memories"]
    for m, info in lanes.items():
        ev = []
        for mm, b, t0, t1 in bufs:
            if mm == m and t1 > t0:
                ev += [(t0, b), (t1, -b)]
        ev.sort(key=lambda e: (e[0], e[1]))
        live = peak = 0
        for _, b in ev:
            live += b
            peak = max(peak, live)
        a.check(info["peak_bytes"] == peak, where, f"memory {m}: peak {info['peak_bytes']} != brute force {peak}")
    # the docstring's lower bound: an op of positive duration holds its inputs and output at once
    bad = []
    input_of: dict[str, list[str]] = {}
    for name, vs in readers.items():
        for v in vs:
            input_of.setdefault(v, []).append(name)
    for v in g.nodes:
        if res.finish_s[v] <= res.start_s[v] or v in costs.folded:
            continue
        m = lane[asg[v]]
        need = size(v, asg[v]) if v in keep else 0
        for u in g.predecessors(v):
            if u in keep and not g.edges[u, v].get("param"):
                need += size(u, asg[u]) if lane[asg[u]] == m else size(u, asg[v])
        need += sum(in_bytes.get(n, 0) for n in input_of.get(v, []))
        if m in lanes and lanes[m]["peak_bytes"] < need:
            bad.append((v, m, need, lanes[m]["peak_bytes"]))
    a.check(not bad, where, f"{len(bad)} ops hold more than their memory's peak, e.g. {bad[:2]}")


def audit_files(a: Audit, platform: str, model: Path, mapper: str, contention: str) -> None:
    """``hetsim run --out DIR``: summary.json equals the API's summary, and the busy time, utilisation and energy
    of every device recomputed from trace.csv (times to the nanosecond) and the platform's powers agree with it
    to the rounding of the file's times (1 ns per interval end)."""
    import subprocess
    import tempfile

    where = f"files {model.stem} {platform} {mapper} {contention}"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "hetsim", "run", str(ROOT / "platforms" / platform), str(model),
               "--mapper", mapper, "--contention", contention, "--out", str(out)]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        a.check(p.returncode == 0, where, f"exit {p.returncode}: {p.stderr[-300:]}")
        if p.returncode:
            return
        summ = json.loads((out / "summary.json").read_text())
        tr = pd.read_csv(out / "trace.csv")
        ops = pd.read_csv(out / "ops.csv")
    r = hetsim.run(ROOT / "platforms" / platform, model, mapper=mapper, contention=contention)
    for k in ("makespan_s", "energy_j", "speedup", "baseline_makespan_s", "predicted_makespan_s"):
        x, y = summ[k], r.summary[k]
        a.check((x is None and y is None) or close(x, y, 1e-12), where, f"summary.json {k} {x!r} != API {y!r}")
    plat = r.platform
    T = summ["makespan_s"]
    a.check(abs(float(ops["finish_s"].max()) - T) <= 1e-12 * T, where, "ops.csv last finish != makespan")
    a.check(abs(float(tr["end_s"].max()) - T) <= 1e-9, where, "trace.csv last end != makespan to the ns")
    a.check(len(ops) == len(r.costs.workload), where, "ops.csv rows != operators")
    total = 0.0
    for row in summ["devices"]:
        name = row["device"]
        cfg = plat.devices.get(name) or plat.links.get(name)
        if cfg is None:  # a memory's row: its weight reads
            total += row["energy_j"]
            continue
        sub = tr[tr["device"] == name]
        s_, e_ = sub["start_s"].to_numpy(float), sub["end_s"].to_numpy(float)
        if cfg.serial:
            busy = float((e_ - s_).sum())
        else:
            from hetsim.analysis.metrics import merge_intervals

            busy = sum(y - x for x, y in merge_intervals(s_, e_))
        tol = 1e-9 * max(len(sub), 1)
        a.check(abs(busy - row["busy_s"]) <= tol, where, f"{name}: trace.csv busy {busy!r} vs {row['busy_s']!r}")
        a.check(abs(row["utilisation"] - busy / (cfg.units * T)) <= tol / (cfg.units * T) + 1e-12, where,
                f"{name}: utilisation {row['utilisation']} vs trace.csv {busy / (cfg.units * T)}")
        e = cfg.active_w * busy + cfg.idle_w * max(cfg.units * T - busy, 0.0) + row["op_j"] + row["transfer_j"]
        etol = (cfg.active_w + cfg.idle_w) * tol + 1e-15
        a.check(abs(e - row["energy_j"]) <= etol, where, f"{name}: energy {row['energy_j']!r} vs trace.csv {e!r}")
        total += row["energy_j"]
    a.check(close(total, summ["energy_j"], 1e-9), where, "summary.json energy != sum of its device rows")
    op_e = float(ops["energy_j"].sum())
    idle = sum(row["idle_j"] for row in summ["devices"] if row["kind"] not in ("link", "memory"))
    links = sum(row["energy_j"] for row in summ["devices"] if row["kind"] == "link")
    a.check(close(op_e + idle, summ["energy_j"] - links, 1e-9, 1e-15), where,
            "ops.csv energies + idle != energy - links (op_energy's docstring)")


def audit_processes(a: Audit, platform: str, model: Path, mapper: str, contention: str) -> None:
    """Determinism across processes: ``hetsim run --out`` under two string-hash seeds (``PYTHONHASHSEED``: set
    and dict orders of strings differ) writes the same trace.csv and ops.csv and the same summary.json (less
    the solver's wall times)."""
    import os
    import subprocess
    import tempfile

    where = f"processes {model.stem} {platform} {mapper} {contention}"
    got = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in ("1", "2"):
            out = Path(tmp) / seed
            cmd = [sys.executable, "-m", "hetsim", "run", str(ROOT / "platforms" / platform), str(model),
                   "--mapper", mapper, "--contention", contention, "--out", str(out),
                   *(["--time-limit", "5", "--threads", "1"] if mapper == "cpsat" else [])]
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONHASHSEED": seed})
            if p.returncode:
                a.check(False, where, f"exit {p.returncode}: {p.stderr[-300:]}")
                return
            summ = json.loads((out / "summary.json").read_text())
            summ["mapper_stats"] = untimed(summ.get("mapper_stats"))
            got.append((json.dumps(summ, sort_keys=True), (out / "trace.csv").read_bytes(),
                        (out / "ops.csv").read_bytes()))
    for i, name in enumerate(("summary.json", "trace.csv", "ops.csv")):
        a.check(got[0][i] == got[1][i], where, f"{name} differs between PYTHONHASHSEED=1 and 2")


def untimed(x):
    """``x`` without the keys that hold wall times (``*time*``, ``*_s``: solver statistics), at any depth."""
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if not ("time" in k or k.endswith("_s"))}
    if isinstance(x, list):
        return [untimed(v) for v in x]
    return x


def summary_key(r) -> str:
    s = dict(r.summary)
    s["mapper_stats"] = untimed(s.get("mapper_stats"))
    return json.dumps(s, sort_keys=True, default=str)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="include the transformers (bert, gpt2, vit)")
    ap.add_argument("--models", default="", help="comma-separated substrings of model names")
    ap.add_argument("--platforms", default="", help="comma-separated platform files")
    ap.add_argument("--no-repeat", action="store_true", help="skip the determinism re-run")
    ap.add_argument("--no-files", action="store_true", help="skip the --out file checks (CLI runs)")
    args = ap.parse_args(argv)
    models = sorted([*ROOT.glob("workloads/*.onnx"), *ROOT.glob("workloads/paper/*.onnx")],
                    key=lambda p: p.stat().st_size)
    if not args.all:
        models = [m for m in models if not any(x in m.name for x in SLOW)]
    if args.models:
        models = [m for m in models if any(x in m.name for x in args.models.split(","))]
    plats = args.platforms.split(",") if args.platforms else PLATFORMS
    a = Audit()
    runs = 0
    t0 = time.perf_counter()
    for mp in models:
        wl = hetsim.load_workload(mp)
        for pf, over in [*((p, None) for p in plats), *(() if args.platforms else VARIANTS)]:
            try:
                plat = hetsim.load_platform(ROOT / "platforms" / pf)
                if over:
                    plat = plat.with_overrides(over)
                    pf = f"{pf}+{','.join(f'{k.split(chr(46))[-1]}={v}' for k, v in over.items())}"
            except InputError as e:
                print(f"skip {pf}: {e}")
                continue
            for cont in ("none", "all"):
                base = None
                grid = [(m, {}) for m in [plat.baseline, *[m for m in MAPPERS if m != plat.baseline]]]
                grid += EXTRA_MAPPERS.get(pf, [])
                for mapper, opts in grid:
                    if mapper == "cpsat" and not any(x in mp.stem for x in CPSAT_MODELS):
                        continue
                    opts = {"time_limit_s": 5, "threads": 1} if mapper == "cpsat" else opts
                    where = f"{mp.stem} {pf} {mapper}{''.join(f' {k}={v}' for k, v in opts.items())} {cont}"
                    t = time.perf_counter()
                    try:
                        r = hetsim.run(plat, wl, mapper=mapper, contention=cont, **opts)
                    except InputError as e:
                        print(f"refused {where}: {type(e).__name__}: {str(e)[:120]}")
                        continue
                    runs += 1
                    if mapper == plat.baseline:
                        base = r.result.trace
                    try:
                        audit_run(a, where, r, base)
                    except Exception as e:  # noqa: BLE001 - an audit crash is a finding
                        a.check(False, where, f"audit raised {type(e).__name__}: {e}")
                    if not args.no_repeat and mapper != "cpsat":
                        r2 = hetsim.run(plat, wl, mapper=mapper, contention=cont, **opts)
                        a.check(summary_key(r) == summary_key(r2), where, "summary differs on a re-run")
                        a.check(r.trace.equals(r2.trace), where, "trace differs on a re-run")
                    print(f"ok? {where}: {r.makespan_s * 1e3:.4f} ms, {time.perf_counter() - t:.1f} s", flush=True)
    if not args.no_files:
        small = ROOT / "workloads" / "resnet20_cifar10.onnx"
        for pf in plats:
            for mapper, cont in (("heft", "all"), ("greedy", "none")):
                audit_files(a, pf, small, mapper, cont)
                runs += 1
        for model in ("resnet20_cifar10.onnx", "yolov5n_int8_qdq.onnx"):
            for pf in ("cim-npu-dram.yaml", "diana.yaml", "soc-2npu.yaml"):
                for mapper in ("heft", "greedy", "cpsat"):
                    if pf in plats:
                        audit_processes(a, pf, ROOT / "workloads" / model, mapper, "all")
                        runs += 2
    print(f"\n{runs} runs, {a.checks} checks, {len(a.failures)} failures in {time.perf_counter() - t0:.0f} s")
    for f in a.failures:
        print("  " + f)
    return 1 if a.failures else 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
