"""Plugins: device kinds, mappers, front ends and arrival processes defined outside hetsim, found without editing it.

A plugin is a Python module that registers what it defines when imported (``@register_kind`` on a
:class:`~hetsim.devices.base.DeviceBase` subclass, ``@register("name")`` on a mapper class,
:func:`~hetsim.workload.frontends.register_frontend` for a front end that reads a new model format,
:func:`~hetsim.scenario.arrivals.register_arrival` for a scenario's arrival process). hetsim imports:

* the modules named by the entry points of the group ``hetsim.plugins`` of installed packages, e.g. in the
  plugin package's ``pyproject.toml``::

      [project.entry-points."hetsim.plugins"]
      my_kinds = "my_kinds"

* the modules listed, comma-separated, in the environment variable ``HETSIM_PLUGINS``: a module name
  (``HETSIM_PLUGINS=my_kinds hetsim run dsp.yaml model.onnx``, with ``my_kinds.py`` importable: in the current
  folder or on ``PYTHONPATH``) or a file path ending in ``.py`` (``HETSIM_PLUGINS=~/soc/my_kinds.py``; imported as
  the module named by its stem, from wherever it is).

:func:`load_plugins` runs once per process, when the command line starts, a platform or scenario file is loaded
or a mapper is looked up by name, or a model's front end is looked up.
"""

from __future__ import annotations

import importlib
import os
import sys

from hetsim.errors import InputError

GROUP = "hetsim.plugins"
ENV = "HETSIM_PLUGINS"
_loaded: list[str] | None = None


def load_plugins() -> list[str]:
    """Import every plugin module once (module docstring); returns their names.

    Raises:
        InputError: a plugin module cannot be imported (the message names it and the cause).
    """
    global _loaded
    if _loaded is not None:
        return _loaded
    names: list[str] = []
    from importlib.metadata import entry_points

    names += [ep.value.split(":")[0] for ep in entry_points(group=GROUP)]
    names += [n.strip() for n in os.environ.get(ENV, "").split(",") if n.strip()]
    _loaded = []
    if names and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # HETSIM_PLUGINS=my_kinds finds ./my_kinds.py, as `python -m` would
    for name in dict.fromkeys(names):
        from hetsim import _interrupt

        signals = len(_interrupt.seen)
        try:
            _import(name)
        except (Exception, SystemExit, KeyboardInterrupt) as err:  # a broken plugin is the user's input
            _loaded = None
            if isinstance(err, KeyboardInterrupt) and len(_interrupt.seen) > signals:
                raise  # a real Ctrl-C while the plugin imported: the command is interrupted (exit 130)
            if isinstance(err, SystemExit):
                why = f"it called sys.exit({err.code!r}) while importing"
            elif isinstance(err, KeyboardInterrupt):
                why = "it raised KeyboardInterrupt while importing (no Ctrl-C arrived)"
            else:
                why = f"{type(err).__name__}: {err}"
            raise InputError(f"plugin {name!r} (from {ENV} or the {GROUP!r} entry points) failed to import: "
                             f"{why}") from None
        _loaded.append(name)
    return _loaded


def _import(name: str) -> None:
    """Import plugin ``name``: a module name, or a ``.py`` file path (module docstring).

    Raises:
        FileNotFoundError: a ``.py`` path that is not a file; whatever the module raises when imported.
    """
    if not name.endswith(".py"):
        importlib.import_module(name)
        return
    from importlib.util import module_from_spec, spec_from_file_location
    from pathlib import Path

    path = Path(name).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no file {str(path)!r}")
    mod_name = path.stem
    spec = spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {str(path)!r}")
    module = module_from_spec(spec)
    sys.modules[mod_name] = module  # a kind's class must be picklable by module name (sweep workers)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
