"""Front ends: the one registry of what hetsim can read as a workload.

A front end is a name, the file suffixes it reads, the workload kind it produces (:mod:`hetsim.workload.kinds`:
``dag`` or ``snn``), the loader options it takes, and a loader ``load(source, **options) -> Workload``. The
pipeline (:func:`hetsim.pipeline.run`, :func:`load_workload`), the command line (``run``, ``map``, ``validate``,
``inspect``), sweeps, the ODiMO search and ``hetsim profile`` all go through it; nothing else names a suffix or
calls an importer.

Built in (their loaders are imported only when used):

=============== ==================== ====== ================================================================
name            suffixes             kind   loader
=============== ==================== ====== ================================================================
``onnx``        ``.onnx``            dag    :func:`hetsim.workload.onnx_import.load_onnx`
``torch``       ``.pt2``             dag    :func:`hetsim.workload.torch_import.load_torch` (``torch.export``
                                            program, or an ``nn.Module`` with ``example_inputs``; needs torch)
``snn-spec``    ``.yaml`` ``.yml``   snn    :func:`hetsim.snn.frontend.load_spec` (SpikeDuet's spec + npz)
``nir``         ``.nir``             snn    :func:`hetsim.snn.frontend.load_nir_graph` (with ``spikes``)
``llm``         ``.llm.yaml``        dag    :func:`hetsim.llm.load_frontend` (an LLM description; ``phase``,
                ``.llm.yml``                ``prompt_tokens``, ``context_tokens``)
=============== ==================== ====== ================================================================

A path is read by the front end of the **longest** registered suffix its name ends with (case aside), so a
suffix may have more than one part: ``gpt2-small.llm.yaml`` is an LLM description, ``braille384.yaml`` an SNN
spec. Nothing is opened to decide.

A new front end registers like a device kind, from hetsim itself, at run time, or from a plugin module
(:mod:`hetsim.plugins`: the ``hetsim.plugins`` entry point or ``HETSIM_PLUGINS``)::

    from hetsim.workload.frontends import FrontEnd, register_frontend

    def load_tflite(path, input_shape=None):   # -> hetsim.workload.Workload
        ...

    register_frontend(FrontEnd("tflite", kind="dag", suffixes=(".tflite",), load=load_tflite,
                               options=("input_shape",), description="a TFLite flatbuffer"))

``load`` may also be a ``"module:function"`` string (imported on first use), and ``accepts(obj) -> bool`` lets
a front end take in-memory objects (the ``torch`` front end takes an ``nn.Module``, ``snn-spec`` an
:class:`~hetsim.snn.network.SNN`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hetsim.errors import InputError, WorkloadError
from hetsim.input_files import refuse_special_file
from hetsim.workload.kinds import DAG, SNN, kind_name

#: what each loader option means, for messages (CLI flag, and what it does)
OPTION_HELP = {
    "input_shape": ("--input-shape", "fixes the dynamic dims of a tensor-operator model's graph inputs"),
    "spikes": ("--spikes", "gives the input raster of a NIR graph (.nir)"),
    "example_inputs": ("example_inputs", "gives the example inputs a PyTorch module is exported with"),
    "phase": ("--phase", "picks the prefill or a decode step of an LLM description (.llm.yaml)"),
    "prompt_tokens": ("--prompt-tokens", "sets the prompt length of an LLM description's prefill (.llm.yaml)"),
    "context_tokens": ("--context-tokens", "sets the context length of an LLM description's decode step "
                       "(.llm.yaml)"),
}


@dataclass(frozen=True)
class FrontEnd:
    """One front end (module docstring).

    Attributes:
        name: registry name (``onnx``, ``torch``, ``snn-spec``, ``nir``, ...).
        kind: the workload kind its loader returns (:data:`~hetsim.workload.kinds.DAG` or
            :data:`~hetsim.workload.kinds.SNN`; ``"onnx"`` is read as ``"dag"``).
        suffixes: file suffixes it reads, lower case with the dot (``(".onnx",)``); none: in-memory objects only.
        load: ``load(source, **options) -> Workload`` (``source``: a :class:`~pathlib.Path`, or an object
            ``accepts`` took), or its ``"module:function"``.
        options: the keyword options ``load`` takes (:data:`OPTION_HELP` names the common ones).
        description: a phrase for messages and ``--help`` (``"an ONNX model"``).
        accepts: ``accepts(obj) -> bool`` for in-memory sources (or its ``"module:function"``); ``None``: files
            only.
    """

    name: str
    kind: str
    suffixes: tuple[str, ...] = ()
    load: Callable | str = ""
    options: tuple[str, ...] = ()
    description: str = ""
    accepts: Callable | str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", kind_name(self.kind))
        object.__setattr__(self, "suffixes", tuple(s.lower() if s.startswith(".") else f".{s.lower()}"
                                                   for s in self.suffixes))

    def read(self, source, **options):
        """Run the loader on ``source`` with the options given (``None`` values dropped).

        Raises:
            InputError: an option this front end does not take (the message says what it is for).
            WorkloadError: a path naming a FIFO, a device, a socket or a symbolic link loop (refused before the
                loader opens it); (from the loader) a missing or malformed input.
        """
        given = {k: v for k, v in options.items() if v is not None}
        refuse_options(self, given)
        if isinstance(source, str | os.PathLike):
            refuse_special_file(source, "model", WorkloadError)  # before any loader opens it
        return _resolve(self.load)(source, **given)

    def takes(self, obj) -> bool:
        """Whether this front end reads the in-memory object ``obj``."""
        return self.accepts is not None and bool(_resolve(self.accepts)(obj))


_FRONTENDS: dict[str, FrontEnd] = {}


def _resolve(ref):
    if callable(ref):
        return ref
    module, _, attr = str(ref).partition(":")
    return getattr(importlib.import_module(module), attr)


def register_frontend(fe: FrontEnd, replace: bool = False) -> FrontEnd:
    """Add ``fe`` to the registry; returns it.

    Raises:
        ValueError: another front end has that name, or claims one of its suffixes (unless ``replace``).
    """
    if not replace:
        if fe.name in _FRONTENDS and _FRONTENDS[fe.name] != fe:
            raise ValueError(f"a front end named {fe.name!r} is already registered")
        for other in _FRONTENDS.values():
            clash = set(other.suffixes) & set(fe.suffixes)
            if other.name != fe.name and clash:
                raise ValueError(f"front end {fe.name!r}: {sorted(clash)[0]} is already read by {other.name!r}")
    _FRONTENDS[fe.name] = fe
    return fe


def unregister_frontend(name: str) -> None:
    """Remove a front end (tests, or a plugin replacing a built-in one)."""
    _FRONTENDS.pop(name, None)


def frontends() -> dict[str, FrontEnd]:
    """The registered front ends, name -> :class:`FrontEnd` (plugins loaded first)."""
    from hetsim.plugins import load_plugins

    load_plugins()
    return dict(_FRONTENDS)


def suffixes(kind: str | None = None) -> tuple[str, ...]:
    """Every suffix a front end reads (of workload ``kind`` only, when given)."""
    want = None if kind is None else kind_name(kind)
    return tuple(s for fe in frontends().values() if want in (None, fe.kind) for s in fe.suffixes)


def get_frontend(name: str) -> FrontEnd:
    """The front end registered as ``name``.

    Raises:
        InputError: no such front end (the message lists them).
    """
    fes = frontends()
    if name not in fes:
        from hetsim.errors import did_you_mean

        raise InputError(f"unknown front end {name!r}{did_you_mean(name, sorted(fes))} (known: "
                         f"{', '.join(sorted(fes))})")
    return fes[name]


def frontend_for(source) -> FrontEnd:
    """The front end that reads ``source``: a path (by the longest registered suffix its name ends with, e.g.
    ``.llm.yaml`` before ``.yaml``) or an in-memory object (by ``accepts``).

    Raises:
        WorkloadError: no front end reads it (the message lists the suffixes that are read).
    """
    fes = frontends()
    if isinstance(source, str | Path):
        name = Path(source).name.lower()
        matches = [(len(s), fe) for fe in fes.values() for s in fe.suffixes if name.endswith(s) and len(name) > len(s)]
        if matches:
            return max(matches, key=lambda m: m[0])[1]
        suffix = Path(source).suffix.lower()
        known = ", ".join(f"{'/'.join(fe.suffixes)} ({fe.description or fe.name})" for fe in fes.values()
                          if fe.suffixes)
        raise WorkloadError(f"{str(source)!r}: no front end reads {suffix or 'files without a suffix'}; hetsim "
                            f"reads {known}")
    for fe in fes.values():
        if fe.takes(source):
            return fe
    raise WorkloadError(f"no front end reads a {type(source).__name__}: give a model path "
                        f"({', '.join(suffixes())}), a hetsim Workload, or an object a front end takes")


def kind_of(source) -> str:
    """The workload kind ``source`` (a path, an object a front end takes, or a Workload) is.

    Raises:
        WorkloadError: no front end reads it.
    """
    k = getattr(source, "kind", None)
    if isinstance(k, str) and not isinstance(source, str | Path):
        return kind_name(k)
    return frontend_for(source).kind


def load_workload(source, **options):
    """Read ``source`` (a path, or an in-memory object a front end takes) with the front end that reads it.

    Args:
        source: a model path, or e.g. a ``torch.nn.Module`` (front end ``torch``), an
            :class:`~hetsim.snn.network.SNN` (``snn-spec``).
        options: the front end's loader options (``input_shape``, ``spikes``, ``example_inputs``; ``None``
            values are ignored).

    Returns:
        A :class:`~hetsim.workload.op.Workload` of the front end's kind (an
        :class:`~hetsim.snn.unroll.SnnWorkload` for spiking networks).

    Raises:
        InputError: an option the front end does not take; (:class:`~hetsim.errors.WorkloadError`) no front end
            reads ``source``, or it is missing or malformed.
    """
    return frontend_for(source).read(Path(source) if isinstance(source, str) else source, **options)


def refuse_options(fe: FrontEnd, given: Mapping[str, object] | Iterable[str], flags: bool = False) -> None:
    """Refuse the options in ``given`` that ``fe`` does not take: one line, saying what the option is for
    and what ``fe`` reads (``flags``: name them as the command line does, ``--input-shape``).

    Raises:
        InputError: the first option ``fe`` does not take.
    """
    for k in given:
        if k in fe.options:
            continue
        flag, what = OPTION_HELP.get(k, (k, "is a loader option"))
        shown = flag if flags else k
        raise InputError(f"{shown} {what}, not of {fe.description or fe.name}")


register_frontend(FrontEnd("onnx", DAG, (".onnx",), "hetsim.workload.onnx_import:load_frontend",
                           ("input_shape",), "an ONNX model"))
register_frontend(FrontEnd("torch", DAG, (".pt2",), "hetsim.workload.torch_import:load_torch",
                           ("input_shape", "example_inputs"),
                           "a PyTorch program (torch.export .pt2, or an nn.Module with example_inputs)",
                           accepts="hetsim.workload.torch_import:is_torch_source"))
register_frontend(FrontEnd("snn-spec", SNN, (".yaml", ".yml"), "hetsim.snn.frontend:load_spec", (),
                           "an SNN spec (a spiking network: .yaml with its .npz files)",
                           accepts="hetsim.snn.frontend:is_snn_object"))
register_frontend(FrontEnd("llm", DAG, (".llm.yaml", ".llm.yml"), "hetsim.llm:load_frontend",
                           ("phase", "prompt_tokens", "context_tokens"),
                           "an LLM description (a decoder-only transformer: .llm.yaml)"))
register_frontend(FrontEnd("nir", SNN, (".nir",), "hetsim.snn.frontend:load_nir_graph", ("spikes",),
                           "a NIR graph (a spiking network in .nir, with its input raster)"))
