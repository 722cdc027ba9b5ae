"""A scenario's figures: the latency CDF per stream, the first requests' timeline, the occupancy over time.

Each function takes a :class:`~hetsim.scenario.run.ScenarioResult` (its ``models``, ``requests``, ``trace``,
``devices``, ``summary``, ``scenario``) and returns a matplotlib Figure, left open; ``ScenarioResult.plot_latency``,
``plot_timeline`` and ``plot_occupancy`` call them, and the scenario's output stages save them
(``latency_cdf.png``, ``timeline.png``, ``occupancy.png``). Below :mod:`hetsim.scenario.run`, so the result's
methods import it without importing the report writers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hetsim.analysis.metrics import union_length
from hetsim.analysis.plots import wrap_title

#: figure resolution on screen (a notebook shows a figure at its dpi): about 1,000 pixels across a 10-inch figure
SCREEN_DPI = 100


def _colours(r) -> dict[str, str]:
    cyc = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive"]
    return {n: cyc[i % len(cyc)] for i, n in enumerate(r.models)}


def plot_latency_cdf(r):
    """Latency CDF per stream (measured requests), with each stream's deadline dashed."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=SCREEN_DPI)
    col = _colours(r)
    for name, m in r.models.items():
        sub = r.requests[(r.requests["stream"] == name) & ~r.requests["warmup"]]
        lat = np.sort(sub["latency_s"].to_numpy()) * 1e3
        if len(lat):
            ax.step(lat, np.arange(1, len(lat) + 1) / len(lat), where="post", color=col[name], label=name)
        if m.stream.deadline_s is not None:
            ax.axvline(m.stream.deadline_s * 1e3, color=col[name], ls="--", lw=0.8)
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(wrap_title(f"{r.scenario.name}: latency CDF per stream (dashed: deadline)", 8))
    ax.legend()
    fig.tight_layout()
    return fig


def busy_fractions(trace: pd.DataFrame, lanes: list[str]) -> dict[str, float]:
    """Per device or link of ``lanes``: the length of the union of its busy intervals in ``trace`` over the span
    the trace shows (from 0 to its last end), 0 without rows; the share a timeline lane is really busy."""
    span = float(trace["end_s"].max()) if len(trace) else 0.0
    out = {}
    for lane in lanes:
        sub = trace[trace["device"] == lane]
        out[lane] = union_length(sub["start_s"].to_numpy(), sub["end_s"].to_numpy()) / span if span > 0 else 0.0
    return out


def plot_timeline(r):
    """The first requests' ops and transfers on each device and link, coloured by stream, each interval at its true
    width (no edge line widens a short op, so a device busy 2.5 % of the time looks so), and each lane labelled with
    its busy share of the time shown (:func:`busy_fractions`) and its utilisation over the whole run."""
    import matplotlib.pyplot as plt

    tr = r.trace
    lanes = list(dict.fromkeys([*r.devices["device"]]))
    busy = busy_fractions(tr, lanes)
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(lanes) + 1.6), dpi=SCREEN_DPI)
    col = _colours(r)
    for i, lane in enumerate(lanes):
        sub = tr[tr["device"] == lane]
        for stream, grp in sub.groupby("stream"):
            ax.broken_barh(list(zip(grp["start_s"] * 1e3, (grp["end_s"] - grp["start_s"]) * 1e3, strict=True)),
                           (i - 0.4, 0.8), facecolors=col[stream], linewidth=0, antialiased=False)
    run = dict(zip(r.devices["device"], r.devices["utilisation"], strict=True))
    ax.set_yticks(range(len(lanes)), [f"{lane}\n{busy[lane]:.1%} | {run[lane]:.1%}" for lane in lanes])
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlabel("time (ms)")
    n = tr["request"].nunique() if len(tr) else 0
    ax.set_title(wrap_title(f"{r.scenario.name}: the first {n} requests, bars at their true width (colour = stream: "
                            + ", ".join(f"{s} {c.split(':')[1]}" for s, c in col.items()) + ")\nunder each device: "
                            "busy with these requests over the time shown | utilisation over the whole run", 10))
    fig.tight_layout()
    return fig


def plot_occupancy(r, bins: int = 200):
    """Each device's occupancy over the simulated time (from the requests' start/finish: requests in the SoC),
    and the utilisation of each device as a bar. Requests in flight are counted per stream."""
    import matplotlib.pyplot as plt

    req = r.requests
    T = r.summary["simulated_s"]
    edges = np.linspace(0, T, bins + 1)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 1]}, dpi=SCREEN_DPI)
    col = _colours(r)
    for name in r.models:
        sub = req[req["stream"] == name]
        a = np.searchsorted(np.sort(sub["arrival_s"].to_numpy()), edges[1:], side="right")
        f = np.searchsorted(np.sort(sub["finish_s"].to_numpy()), edges[1:], side="right")
        ax.step(edges[1:] * 1e3, a - f, where="post", color=col[name], label=name)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("requests in the SoC")
    ax.set_title("requests in flight (a growing queue = saturation)")
    ax.legend()
    d = r.devices
    bx.barh(d["device"], d["utilisation"] * 100, color="tab:gray")
    bx.set_xlabel("utilisation (%)")
    bx.set_xlim(0, 100)
    bx.set_title("device occupancy")
    fig.tight_layout()
    return fig
