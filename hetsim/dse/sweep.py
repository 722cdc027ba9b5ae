"""``hetsim sweep SWEEP.yaml``: a grid of design points, run in parallel, appended to a results table as
each point finishes, resumable after a kill.

A sweep file::

    name: cpu-cim-ilp
    workloads: [../workloads/paper/resnet18_int8_ort.onnx, ...]   # paths relative to this file
    platforms: [../platforms/puma.yaml, ../platforms/puma-x86.yaml]
    parameters:                                                   # dotted platform paths -> values
      devices.cim.crossbars: [25, 50, 100, 200]
      devices.cim.t_mvm_ns: [50, 100, 500, 1000]
    mappers: [cpsat]
    mapper_options: {work_limit: 2}
    contention: none
    output: ../results/cpu-cim-ilp.csv                            # default: results/<name>.csv

``input_shape: {x: [1, 3, 224, 224]}`` (or ``x: "1,3,224,224"``) fixes the dynamic dims of graph input ``x`` of
every workload, as ``hetsim run --input-shape x=1,3,224,224`` does (each workload must have that input; ONNX
sweeps only); it is part of each point's key.

Points = workloads x platforms x the parameter grid x mappers. Each point is identified by a key made of
its workload file, platform file, parameter values and mapper, the ``key`` column of the table
(:func:`point_key`): ``resnet18_int8_ort.onnx|puma.yaml|devices.cim.crossbars=25,devices.cim.t_mvm_ns=50|cpsat``
(parameters sorted by name), kept for humans. Every finished point is appended at once as one CSV line
(written with a single ``write`` and ``fsync``; a torn last line from a kill is dropped on resume). A table
written by an older hetsim, whose keys are JSON lists (``["resnet18_int8_ort.onnx","puma.yaml",{...},"cpsat"]``),
has its keys rewritten to this form when a sweep resumes it.

**Settings.** Each row also holds the settings it was computed under, as its last columns
(:data:`hetsim.dag.sweep.SETTINGS_COLUMNS`): ``workload_sha256`` (the first 16 hex digits of the SHA-256 of the
workload file's bytes), ``platform_sha256`` (of the platform's content after the point's overrides: the canonical
JSON of the platform model, latency table paths included, and the bytes of its latency tables), ``mapper_options``
(the options this mapper got, ``work_limit=2``; a mapper's defaults are covered by the version), ``contention``
(normalised: ``cim-bus,links`` or ``none``), ``fold_constants`` (``true``; ``false`` when the sweep file says
``fold_constants: false``, which charges ops computed only from constants) and ``hetsim_version``. SNN rows hold
``workload_sha256`` (of the spec file and the npz files it names, :func:`hetsim.snn.sweep.snn_spec_sha256`; empty for
a synthetic network, whose arguments are in the key), ``platform_sha256`` and ``hetsim_version``
(:data:`hetsim.snn.sweep.SNN_SETTINGS_COLUMNS`); their mode, reorder and synthetic arguments are in the key. A point
whose key is in the output table with the same settings is not run again, so a killed sweep resumes where it stopped
without duplicates. A row computed under other settings is never reused: rerunning after a change of contention, of a
mapper option, of the platform or workload file's contents or of hetsim's version recomputes those points, says "3
points changed settings (changed contention): recomputed", and moves their old rows to ``<output name>.replaced.csv``
beside the table (nothing computed is lost; the table holds one row per point, all under today's settings). Rows of
points no longer in the sweep stay. A table of an older hetsim without these columns gets them; its rows, whose
settings are unknown, are recomputed.

**ONNX rows** (:data:`hetsim.dag.sweep.RESULT_COLUMNS`) hold the run's summary: makespan, baseline and speed-up,
energy, ops offloaded, crossbars used and available, busy time and op counts of host and accelerators, the mapper's
status, solve time, MIP gap, incumbent, bound and model size, the predicted makespan, and its memory figures: the
largest activation peak of any memory (``peak_activation_bytes``), whether every memory with a capacity holds its peak
(``activation_fits``; empty when none has one; false on a point refused because they do not), and, on a
platform whose devices read weights from a memory, the ops streamed and reprogrammed and the weight bytes read
from such memories per inference (``weight_read_bytes``; empty elsewhere); then ``error`` (why the point failed)
and ``baseline_error``: why a point that ran has no baseline and so no speed-up (the baseline mapper's refusal, as
``baseline_error`` in a run's ``summary.json``, e.g. DIANA's ``all-8bit`` refusing a layer whose weights exceed the
digital accelerator's weight memory; empty when the baseline ran). A table written before these columns existed
(:data:`hetsim.dag.sweep.ADDED_RESULT_COLUMNS`) gets them, and its rows are recomputed; an added ``baseline_error``
is filled in empty on rows that imply it (a speed-up, or an ``error``), and only the others are recomputed.

**Stopping.** SIGINT (Ctrl-C, or a job scheduler) and SIGTERM stop a sweep within a few seconds: points not
started are cancelled, local workers are terminated (a Dask client cancels its futures and closes), the
finished points stay in the table, and :class:`SweepInterrupted` is raised (``hetsim sweep`` exits with 130 or
143 and says how many points it kept; the same command resumes). Points always run in worker processes (also
with ``--workers 1``): a solve in progress (ortools' CP-SAT catches SIGINT itself and would end the solve as if
at its time limit) is terminated, never recorded.

**SNN sweeps.** A sweep is either all-ONNX or all-SNN (mixing is an :class:`~hetsim.errors.InputError`). It is
an SNN sweep when every workload is a spiking network (an SNN spec ``.yaml``, or a NIR graph ``.nir`` whose input
raster is given under ``spikes: {net.nir: input.npz}``; whatever a front end of kind ``snn`` reads,
:mod:`hetsim.workload.frontends`) and/or a ``synthetic`` grid is given, and then every mapper must be an SNN mapper
(the mappers of :mod:`hetsim.mappers.spikeduet`; default ``spikeduet``)::

    name: snn-crossover
    workloads: [../workloads/snn/braille192.yaml]   # SNN specs; may be omitted when synthetic is given
    synthetic:                       # a grid of generated networks (hetsim.snn.synthetic.synthetic_snn)
      layers: [[24, 192, 192, 27], [24, 384, 384, 27]]   # one network: [24, 192, 27]
      timesteps: [51]
      density: [0.05, 0.1, 0.2]      # a per-layer density (input included) is a list: [[0.1, 0.2, 0.2, 0.2]]
      clustering: [0.0, 0.5, 1.0]
      seed: [0]
      samples: 40                    # a scalar is the same for every network
    platforms: [../platforms/efr32mg24.yaml]
    parameters: {devices.mvp.launch_cycles: [1255, 2510]}
    mappers: [spikeduet]             # spikeduet | all-m33 | all-dense-mvp
    mode: async                      # execution mode of the chosen configuration: async | blocking, or a list
    reorder: [false, true]           # function-preserving neuron reordering first (hetsim.snn.reorder)

``synthetic`` takes the keyword arguments of ``synthetic_snn``: ``layers`` and ``timesteps`` (required),
``density``, ``clustering``, ``samples``, ``seed`` (defaults as there), and optionally ``beta``,
``threshold``, ``shuffle``, ``group_size``; each is a list of values (a grid) or one value, and every
combination is one workload. ``contention`` and ``mapper_options`` apply to ONNX sweeps only; ``mode`` and
``reorder`` to SNN sweeps only. Points = (spec files + synthetic networks) x platforms x the parameter grid x
mappers x modes x reorder. An SNN point's key adds the mode and ``reorder=true|false``; a synthetic network's
key holds its ``synthetic_snn`` arguments (the six above, plus any optional ones given), so a resumed sweep
regenerates exactly the networks it still needs (each worker process caches the networks it built)::

    synthetic(layers=[8,24,4],timesteps=6,density=0.1,clustering=0.0,seed=0,samples=4)|efr32mg24.yaml||spikeduet|...

SNN rows (:data:`hetsim.snn.sweep.SNN_RESULT_COLUMNS`, after ``key``, workload, platform, mapper, mode, reorder, the
synthetic arguments - ``layers`` as ``24-192-192-27``, a per-layer density as ``0.1;0.2;...``; for spec files
``layers``, ``timesteps`` and ``samples`` come from the network - and the sweep parameters) hold, from
:func:`hetsim.pipeline.run` on the eval split: the measured mean spike density of the hidden layers;
the mean latency (ms) of the chosen configuration and of each of SpikeDuet's Table I configurations (all-m33,
all-dense-mvp, spikeduet-blocking, spikeduet-async); the chosen configuration's speed-up over all-m33; mean
energy (uJ) of the chosen configuration and of all-m33; the chosen plan's ``engine/residency`` per affine
layer (``mvp-range/flash;m33/flash+hot;m33/sram``), its SRAM for weights (KiB), the mean MVP launches per
timestep of each layer (``;``-separated; as in ``hetsim run``'s layer table: what the layer's spikes need after
gap merging, also for layers on the M33) and the plan's solve time.

**The code.** The sweep engine knows no workload kind and is split by job: the sweep file, its checks, the grid
expanded into keyed points and the settings' hashes (:mod:`hetsim.dse.points`), the results table with its schema
migration and torn-line repair (:mod:`hetsim.dse.store`; the lock on it, :mod:`hetsim.dse.lock`), the runner with
its workers and signals (:mod:`hetsim.dse.runner`). A workload kind gives its points, columns and rows as a
:class:`~hetsim.dse.points.SweepKind` (the DAG kind's, :mod:`hetsim.dag.sweep`; the spiking networks',
:mod:`hetsim.snn.sweep`). This module names the public pieces in one place.
"""

from __future__ import annotations

from hetsim.dse.points import (
    SweepKind,
    SweepSpec,
    default_output,
    expand_points,
    file_sha256,
    load_sweep,
    options_for,
    platform_sha256,
    point_key,
    result_columns,
    settings_columns,
    unique_keys,
)
from hetsim.dse.runner import (
    MAX_WORKERS,
    SweepInterrupted,
    available_cores,
    format_progress,
    plan_parallelism,
    run_point,
    run_sweep,
)

__all__ = ["MAX_WORKERS", "SweepInterrupted", "SweepKind", "SweepSpec", "available_cores", "default_output",
           "expand_points", "file_sha256", "format_progress", "load_sweep", "options_for", "plan_parallelism",
           "platform_sha256", "point_key", "result_columns", "run_point", "run_sweep", "settings_columns",
           "unique_keys"]
