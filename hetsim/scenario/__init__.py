"""Scenarios: streams of requests of one or several models on one SoC (``scenarios/*.yaml``).

:func:`load_scenario` reads a scenario file (:mod:`hetsim.scenario.spec`; its streams' arrival processes are
the registry :mod:`hetsim.scenario.arrivals`); :func:`run_scenario` maps its models and replays its requests with
run-time dispatch (:mod:`hetsim.scenario.run`); :mod:`hetsim.scenario.report` writes and prints the results.
``hetsim run PLATFORM SCENARIO.yaml`` and ``hetsim.run(platform, scenario)``.
"""

from __future__ import annotations

from hetsim._lazy import attach

_LAZY = {
    "Scenario": "hetsim.scenario.spec",
    "ScenarioError": "hetsim.scenario.spec",
    "load_scenario": "hetsim.scenario.spec",
    "is_scenario_file": "hetsim.scenario.spec",
    "run_scenario": "hetsim.scenario.run",
    "ScenarioResult": "hetsim.scenario.run",
}

__all__ = list(_LAZY)

__getattr__, __dir__ = attach(__name__, _LAZY, __all__)
