"""A device's sleep state in a scenario replay (the race-to-idle question): a serial device whose
units have all been idle for ``idle_timeout_s`` falls asleep (drawing ``power_w``, not ``idle_w``); the next op
granted a unit there first waits ``wake_latency_s`` while the device wakes (it holds its unit meanwhile, drawing
``active_w``: ours), and ops granted during the wake-up start when it ends. The device starts awake at time 0.

Configured per device in the platform YAML (``sleep: {power_w, wake_latency_s, idle_timeout_s}``,
:class:`hetsim.devices.base.SleepConfig`); only the scenario replay uses it (one inference alone, as the
mappers time it, keeps every device awake), and a platform without it replays exactly as before (no hook runs).
"""

from __future__ import annotations

__all__ = ["SleepState"]


class SleepState:
    """The sleep bookkeeping of one serial device.

    Attributes:
        timeout_s, wake_s: the idle timeout and the wake-up latency (seconds).
        busy: ops granted and not finished (a wake-up counts: its op holds a unit).
        idle_since: when the device last became idle (0 at the start).
        awake_at: when the wake-up in progress ends.
        sleep_s: seconds spent asleep so far (closed by :meth:`close`); ``wakes``: wake-ups so far.
    """

    __slots__ = ("awake_at", "busy", "idle_since", "sleep_s", "timeout_s", "wake_s", "wakes")

    def __init__(self, timeout_s: float, wake_s: float) -> None:
        self.timeout_s = float(timeout_s)
        self.wake_s = float(wake_s)
        self.busy = 0
        self.idle_since = 0.0
        self.awake_at = float("-inf")
        self.sleep_s = 0.0
        self.wakes = 0

    def start(self, now: float) -> float:
        """An op was granted a unit at ``now``: the seconds it waits before it runs (the rest of a wake-up)."""
        if self.busy == 0 and now - self.idle_since > self.timeout_s:
            self.sleep_s += now - self.idle_since - self.timeout_s
            self.awake_at = now + self.wake_s
            self.wakes += 1
        self.busy += 1
        return max(0.0, self.awake_at - now)

    def end(self, now: float) -> None:
        """An op of the device finished at ``now``."""
        self.busy -= 1
        if self.busy == 0:
            self.idle_since = now

    def close(self, end_s: float) -> None:
        """The replay ended at ``end_s``: count the sleep since the last op."""
        if self.busy == 0 and end_s - self.idle_since > self.timeout_s:
            self.sleep_s += end_s - self.idle_since - self.timeout_s
            self.idle_since = end_s
