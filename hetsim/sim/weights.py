"""The replay of weight policies (:mod:`hetsim.weights`): a streamed or reprogrammed op reads its weights from
a memory before (or, on a double-buffering device, while) it computes; a reprogrammed op then writes them into
its device's time-shared crossbars.

With ``memory`` contention on, each memory's port is one :class:`~hetsim.sim.port.Port`: it serves one weight
read at a time, first come first served (ours, as a link under ``links`` contention). Off, reads overlap freely
and each op's time is exactly :func:`hetsim.weights.policy_step`'s, as the contention-free evaluation assumes.

Trace rows: the read of a streamed op that does not overlap its compute is a row of phase ``weights`` on the op's
device (the device waits for it), a reprogrammed op's read and writes one row of phase ``program``; the memory's
traffic is summed from :attr:`hetsim.sim.engine.SimResult.weights`.
"""

from __future__ import annotations

from collections.abc import Callable


def read(req, v: str, step, then: Callable[[], None]) -> None:
    """Read op ``v``'s weights (``step``) over its memory's port (waiting for the port under ``memory``
    contention), then call ``then()``. The read is a trace row on the memory's own track: ``(v, memory,
    "memory", "read", start, end)``, so a port's traffic and its queueing show in trace.csv and trace.json."""
    env = req.env
    port = req.hw.memories.get(step.memory)

    def done(t0: float) -> None:
        if req.rows is not None:
            req.rows.append((v, step.memory, "memory", "read", t0, env.now, None))
        then()

    if port is None:
        t0 = env.now
        env.timeout(step.read_s).callbacks.append(lambda _e: done(t0))
        return

    def got(_e) -> None:
        t0 = env.now

        def released(_e2) -> None:
            port.release()
            done(t0)

        env.timeout(step.read_s).callbacks.append(released)

    port.request(got)


def prelude(req, v: str, dv: str, step, then: Callable[[], None]) -> None:
    """A reprogrammed op on a device whose ops overlap (a PUMA CIM): read its weights, write them (one trace row
    ``program``), then run it (``then()``); the op starts with the read. (A streamed op on such a device, a kind
    of a plug-in's, reads first: a row ``weights``.) In a scenario the op holds its device's time-shared
    crossbars from the read to its end, so reprogrammed ops of all requests take turns on them."""
    env = req.env
    t0 = env.now
    req.start[v] = t0

    def written(_e) -> None:
        req.record(v, dv, "program" if step.policy == "reprogrammed" else "weights", t0, env.now)
        then()

    read(req, v, step, lambda: env.timeout(step.write_s).callbacks.append(written))


def serial(req, v: str, dv: str, token, step) -> None:
    """A streamed op holding its serial device (an NPU): read its weights, then compute (a ``weights`` row, then
    the compute row); on a double-buffering device read while computing, the op ending with the later of the
    two (one compute row)."""
    env = req.env
    t0 = env.now
    compute = step.compute_s
    if not step.overlapped:
        def fetched() -> None:
            t1 = env.now
            req.record(v, dv, "weights", t0, t1)
            env.timeout(compute).callbacks.append(lambda e: req.serial_done(v, dv, token, t1, e))

        read(req, v, step, fetched)
        return
    left = [2]

    def one_done(e=None) -> None:
        left[0] -= 1
        if left[0] == 0:
            req.serial_done(v, dv, token, t0, e)

    env.timeout(compute).callbacks.append(one_done)
    read(req, v, step, one_done)
