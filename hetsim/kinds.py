"""The registry of workload kinds: what a run of each kind of workload does.

A workload kind (a DAG of tensor operators, a spiking network, ...) is one package that subclasses
:class:`WorkloadKind` and is named here by one registry line, ``register_workload_kind("name",
"package.module:ATTRIBUTE")``; the package is imported the first time its kind is asked for (so nothing generic
imports a kind's modules, and the layer contract sees no arrow from the pipeline to a kind). The pipeline
(:func:`hetsim.pipeline.run`, :func:`hetsim.pipeline.cost_model`), the command line, the output stages
(:mod:`hetsim.report.outputs`) and the sweeps (:mod:`hetsim.dse`) ask this registry and never compare kind names.

A kind declares:

* ``name`` and ``description`` (how messages name it), ``default_mapper`` (the mapper a run uses when none is
  given);
* ``options``: its typed run options, a frozen dataclass whose fields are the keyword arguments of
  :func:`hetsim.run` only this kind takes; :meth:`WorkloadKind.make_options` checks them once (an option of
  another kind is an :class:`~hetsim.errors.InputError`), and :meth:`WorkloadKind.options_summary` is what
  ``summary.json`` records of them (``"run_options"``);
* :meth:`WorkloadKind.cost_model` and :meth:`WorkloadKind.run` (one run: map, replay, summarise, returning a
  :class:`~hetsim.result.RunResult`);
* ``outputs``: the names of the output stages its runs write (:mod:`hetsim.report.outputs`; a stage registered
  with ``runs`` naming the kind serves it too), and :meth:`WorkloadKind.text_report` (the terminal report);
* ``sweep``: how a sweep expands, checks and runs its points (a :class:`hetsim.dse.points.SweepKind`), or
  ``None`` when it has no sweep points;
* optionally ``inspect`` (``hetsim inspect``'s view of a workload) and ``validate`` (``hetsim
  validate``'s replay check).

:func:`register_workload_kind` takes a kind object (a plug-in registers one, and :func:`unregister_workload_kind`
removes it) or a ``"module:attribute"`` string (the built-in kinds: :mod:`hetsim.dag`, :mod:`hetsim.snn.kind`).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, ClassVar

from hetsim.errors import InputError, WorkloadError
from hetsim.workload import kinds as _names


@dataclasses.dataclass(frozen=True)
class NoOptions:
    """The run options of a kind that takes none beyond the pipeline's."""


class WorkloadKind:
    """One kind of workload: what the generic pipeline asks of it (module docstring). Subclass it, set the class
    attributes and override :meth:`run` (and :meth:`cost_model` for ``hetsim map``/``validate``)."""

    #: the kind's name, as front ends, device kinds and mappers name it (their ``workloads``)
    name: ClassVar[str] = ""
    #: how messages name it ("a spiking network (an SNN spec .yaml, ...)")
    description: ClassVar[str] = ""
    #: the mapper a run uses when none is given
    default_mapper: ClassVar[str] = ""
    #: the typed run options: a frozen dataclass; its fields are keyword arguments of :func:`hetsim.run`
    options: ClassVar[type] = NoOptions
    #: the output stages its runs write, by name (:mod:`hetsim.report.outputs`), besides stages naming the kind
    outputs: ClassVar[tuple[str, ...]] = ()
    #: the ``hetsim run`` flags only this kind takes: ``(flag, argparse attribute, its value when not given)``;
    #: another kind's run refuses them in one line
    cli_flags: ClassVar[tuple[tuple[str, str, Any], ...]] = ()
    #: how ``hetsim run``'s messages name its models ("ONNX models")
    cli_noun: ClassVar[str] = ""
    #: how a sweep expands, checks and runs its points (:class:`hetsim.dse.points.SweepKind`), or None
    sweep: ClassVar[Any] = None

    def make_options(self, given: dict[str, Any]) -> Any:
        """``self.options`` from ``given`` (the run keywords that differ from their defaults), checked once.

        Raises:
            InputError: a keyword this kind does not take (one line naming them).
        """
        fields = {f.name for f in dataclasses.fields(self.options)}
        foreign = [k for k in given if k not in fields]
        if foreign:
            raise InputError(self.foreign_options_message(foreign))
        return self.options(**given)

    def foreign_options_message(self, foreign: list[str]) -> str:
        """The one line refusing run options of another kind (``foreign``: their keyword names)."""
        verb = "applies" if len(foreign) == 1 else "apply"
        return f"{', '.join(foreign)} {verb} to other workload kinds, not to {self.description or self.name}"

    def options_summary(self, options: Any) -> dict[str, Any]:
        """What ``summary.json`` records of ``options`` (a plain, JSON-ready dict)."""
        return dataclasses.asdict(options)

    def cost_model(self, workload, platform, options: Any):
        """The cost model a mapper reads for ``workload`` on ``platform`` (a :class:`~hetsim.costs.CostModel`).

        Raises:
            InputError: (subclasses) a platform that does not run this kind.
        """
        raise NotImplementedError(f"workload kind {self.name!r} has no cost model")

    def run(self, platform, workload, mapper: str, contention: frozenset[str], mapper_options: dict, schedule,
            options: Any, load: Any):
        """One run: map ``workload`` (or replay ``schedule``) on ``platform``, replay, summarise; returns a
        :class:`~hetsim.result.RunResult`. ``workload`` is what :func:`hetsim.run` was given (a path or an
        object); ``load(workload)`` reads it with its front end (the loader options of the run applied)."""
        raise NotImplementedError(f"workload kind {self.name!r} has no run")

    #: ``text_report(result, max_names) -> str``: the terminal report of a run (``hetsim run`` without ``--json``),
    #: or None for the operator DAG's (:func:`hetsim.report.text.format_report`)
    text_report: ClassVar[Any] = None

    #: ``inspect(workload, platform) -> str``: ``hetsim inspect``'s text for a workload of this kind (``platform``
    #: may be None), or None to show it as an operator DAG
    inspect: ClassVar[Any] = None

    #: ``validate(costs, schedule, rel_tol) -> ValidationReport``: ``hetsim validate``'s check of a schedule, or
    #: None for the operator DAG's (:func:`hetsim.validate.validate_schedule`)
    validate: ClassVar[Any] = None
    #: what ``hetsim validate`` says it checked, ``(feasibility, the replay's reference)``, or None for the
    #: operator DAG's words
    validate_words: ClassVar[tuple[str, str] | None] = None


#: name -> the kind, or the "module:attribute" naming it (imported on first use)
_KINDS: dict[str, WorkloadKind | str] = {}
#: kinds whose description :func:`register_workload_kind` added to the names' table (removed with them)
_DESCRIBED: set[str] = set()


def register_workload_kind(kind: WorkloadKind | str, where: str | None = None) -> None:
    """Register a workload kind: a :class:`WorkloadKind` object, or ``register_workload_kind(name,
    "module:attribute")`` for one imported on first use. A name registered again is replaced.

    Raises:
        ValueError: a kind object without a name (a programming error).
    """
    if isinstance(kind, str):
        if where is None:
            raise ValueError("register_workload_kind(name, 'module:attribute') needs where the kind is")
        _KINDS[_names.kind_name(kind)] = where
        return
    if not kind.name:
        raise ValueError(f"workload kind {type(kind).__name__} has no name")
    _KINDS[_names.kind_name(kind.name)] = kind
    if kind.description and kind.name not in _names.DESCRIPTIONS:  # how messages name it
        _names.DESCRIPTIONS[kind.name] = kind.description
        _DESCRIBED.add(kind.name)


def unregister_workload_kind(name: str) -> None:
    """Remove the kind ``name`` (a no-op when it is not registered)."""
    name = _names.kind_name(name)
    _KINDS.pop(name, None)
    if name in _DESCRIBED:
        _DESCRIBED.discard(name)
        _names.DESCRIPTIONS.pop(name, None)


def workload_kind(name: str) -> WorkloadKind:
    """The registered kind ``name`` (an older spelling, ``"onnx"``, is read as ``"dag"``).

    Raises:
        WorkloadError: no kind of that name is registered.
    """
    key = _names.kind_name(name)
    kind = _KINDS.get(key)
    if kind is None:
        raise WorkloadError(f"no workload kind {name!r} is registered (known: {', '.join(sorted(_KINDS))})")
    if isinstance(kind, str):
        module, _, attr = kind.partition(":")
        kind = getattr(importlib.import_module(module), attr)
        _KINDS[key] = kind
    return kind


def workload_kinds() -> list[str]:
    """The names of the registered kinds, in registration order."""
    return list(_KINDS)


def kind_of_workload(workload) -> WorkloadKind:
    """The kind of a :func:`hetsim.run` argument: a workload's own (its ``kind``), else its front end's (by
    suffix or object type; nothing is read).

    Raises:
        WorkloadError: no front end reads it, or its kind is not registered.
    """
    from hetsim.workload.frontends import kind_of

    return workload_kind(kind_of(workload))


def sweep_kinds() -> list[WorkloadKind]:
    """The registered kinds that have sweep points (``sweep`` set), in registration order."""
    return [k for k in map(workload_kind, list(_KINDS)) if k.sweep is not None]


# the built-in kinds: one line each
register_workload_kind(_names.DAG, "hetsim.dag:KIND")
register_workload_kind(_names.SNN, "hetsim.snn.kind:KIND")
