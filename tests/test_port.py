"""hetsim.sim.port.Port against simpy.Resource(capacity=1), SimPy itself as the truth: random clients that take
ports one after another (holding zero or more seconds, many at the same instants) see every grant and every other
callback at the same time and in the same order on both."""

from __future__ import annotations

import random

import pytest
import simpy

from hetsim.sim.port import Port


def _run(programs, starts, noise, use_port: bool) -> list[tuple]:
    """Clients ``programs[k]`` (a list of ``(port, hold_s)`` steps, each port released before the next is asked
    for, and a step ``(p, h, q)`` asking for ``q`` while still holding ``p``: a fixed lock order) start at
    ``starts[k]``; ``noise`` timeouts log themselves too. The log: (what, time) in callback order."""
    env = simpy.Environment()
    n_ports = 1 + max(max(s[0], s[-1] if len(s) == 3 else 0) for p in programs for s in p)
    ports = [Port(env) if use_port else simpy.Resource(env, capacity=1) for _ in range(n_ports)]
    log: list[tuple] = []

    def ask(i, then):
        if use_port:
            ports[i].request(lambda _e: then(None))
        else:
            req = ports[i].request()
            req.callbacks.append(lambda _e: then(req))

    def free(i, token):
        if use_port:
            ports[i].release()
        else:
            ports[i].release(token)

    def step(k, j):
        if j == len(programs[k]):
            log.append(("done", k, env.now))
            return
        s = programs[k][j]

        def held(token):
            log.append(("got", k, j, env.now))
            if len(s) == 3:  # hold s[0], take s[2] too, then release both
                def both(token2):
                    log.append(("got2", k, j, env.now))

                    def end(_e):
                        free(s[0], token)
                        free(s[2], token2)
                        step(k, j + 1)

                    env.timeout(s[1]).callbacks.append(end)

                ask(s[2], both)
                return

            def end(_e):
                free(s[0], token)
                log.append(("freed", k, j, env.now))
                step(k, j + 1)

            env.timeout(s[1]).callbacks.append(end)

        ask(s[0], held)

    for k, t in enumerate(starts):
        env.timeout(t).callbacks.append(lambda _e, k=k: step(k, 0))
    for i, t in enumerate(noise):
        env.timeout(t).callbacks.append(lambda _e, i=i: log.append(("noise", i, env.now)))
    env.run()
    return log


@pytest.mark.parametrize("seed", range(300))
def test_a_port_grants_as_a_simpy_resource_does(seed):
    rng = random.Random(seed)
    n_ports = rng.randint(1, 3)
    holds = [0.0, 0.0, 1.0, 2.0, 0.5]  # zero holds and equal ends: ties at every instant
    programs = []
    for _ in range(rng.randint(2, 7)):
        prog = []
        for _ in range(rng.randint(1, 5)):
            p = rng.randrange(n_ports)
            if n_ports > 1 and p < n_ports - 1 and rng.random() < 0.3:
                prog.append((p, rng.choice(holds), rng.randrange(p + 1, n_ports)))
            else:
                prog.append((p, rng.choice(holds)))
        programs.append(prog)
    starts = [rng.choice([0.0, 0.0, 0.5, 1.0, 2.0]) for _ in programs]
    noise = [rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]) for _ in range(rng.randint(0, 6))]
    want = _run(programs, starts, noise, use_port=False)
    assert _run(programs, starts, noise, use_port=True) == want


@pytest.mark.parametrize("use_port", [False, True])
def test_a_waiter_is_granted_two_events_after_the_release(use_port):
    """Hand-worked: A holds the port from 0 to 1 s, B asks at 0 and waits. At 1 s A releases it and schedules a
    zero-delay step of its own. SimPy processes its Release event (which hands the port to B and schedules B's
    grant), then A's step, then B's grant: B runs after A's step. A port that granted B at the release (no
    events) or with one event would run B first."""
    env = simpy.Environment()
    port = Port(env) if use_port else simpy.Resource(env, capacity=1)
    log = []

    def ask(name, then):
        if use_port:
            port.request(lambda _e: then(None))
        else:
            req = port.request()
            req.callbacks.append(lambda _e: then(req))

    def a_holds(token):
        log.append(("A got", env.now))

        def end(_e):
            port.release() if use_port else port.release(token)
            log.append(("A released", env.now))
            env.timeout(0).callbacks.append(lambda _e: log.append(("A's next step", env.now)))

        env.timeout(1.0).callbacks.append(end)

    ask("A", a_holds)
    ask("B", lambda _token: log.append(("B got", env.now)))
    env.run()
    assert log == [("A got", 0.0), ("A released", 1.0), ("A's next step", 1.0), ("B got", 1.0)]
