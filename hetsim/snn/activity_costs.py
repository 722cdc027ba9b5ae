"""The activity-aware cost model (SpikeDuet): what every op of an unrolled spiking network costs on every
engine, per sample of a recorded split, from the devices' cycle formulas (:mod:`hetsim.devices.efr32`).

An SNN's unrolled ops (:mod:`hetsim.snn.unroll`) cost what their input spikes make them cost: an affine op
at timestep ``t`` visits the active columns of its input raster (sparse Cortex-M), or launches the MVP once per
range of active columns. :class:`ActivityCostModel` is the :class:`~hetsim.costs.CostModel` of such a workload:

* per affine layer and split, the activity counts (:class:`LayerCosts`: active columns, active hot columns,
  MVP launches and processed columns after gap merging) over ``[samples, T]``, so that a mapping's cost is
  priced for every sample at once (the planner's inner loop, :mod:`hetsim.mappers.spikeduet`);
* ``latency[op][device]`` for one sample (:attr:`ActivityCostModel.sample`) and one mapping (each affine
  layer's engine and weight residency, ``Schedule.config["layers"]``): :meth:`ActivityCostModel.for_schedule`
  gives the cost model the simulator replays a schedule with;
* the weight memories (``memories.sram`` minus the host's ``sram_reserved_kib``, ``memories.flash``) as
  capacities the one checker enforces (:meth:`ActivityCostModel.schedule_violations`).

Engines (``m33`` = sparse Cortex-M, FP32; ``mvp-dense``; ``mvp-range``, FP16) and residencies (``sram``,
``flash``, ``flash+hot``: Cortex-M only, the table in Flash with its most often active columns on the fit split
copied to SRAM) are :data:`hetsim.devices.efr32.ENGINES` and ``RESIDENCIES``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from hetsim.costs import CostModel
from hetsim.devices import kind_name
from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE, SNN_ACCELERATOR, SNN_HOST, CortexM, Mvp
from hetsim.errors import PlatformError
from hetsim.platform import Platform
from hetsim.snn.activity import hot_order, range_counts
from hetsim.snn.unroll import SnnWorkload


@dataclass(frozen=True)
class LayerChoice:
    """Engine and weight residency of one affine layer; ``hot_columns`` for ``flash+hot``."""

    engine: str
    residency: str
    hot_columns: int = 0

    def to_dict(self) -> dict:
        return {"engine": self.engine, "residency": self.residency, "hot_columns": self.hot_columns}

    @classmethod
    def from_dict(cls, d: dict) -> LayerChoice:
        return cls(str(d["engine"]), str(d["residency"]), int(d.get("hot_columns", 0)))


def engines_of(platform: Platform) -> tuple[CortexM, Mvp]:
    """The platform's ``cortex-m`` host and its ``mvp``.

    Raises:
        PlatformError: the platform has no ``cortex-m`` host, no ``mvp`` device, or no ``sram`` memory.
    """
    m33 = platform.devices[platform.host]
    mvps = [d for d in platform.devices.values() if d.snn_engine == SNN_ACCELERATOR]
    if m33.snn_engine != SNN_HOST or not mvps:
        raise PlatformError(f"platform {platform.name!r} cannot run spiking networks: it needs a "
                            f"{kind_name(CortexM)!r} host and an {kind_name(Mvp)!r} device "
                            "(see platforms/efr32mg24.yaml)")
    others = [n for n, d in platform.devices.items() if n != platform.host and d.snn_engine != SNN_ACCELERATOR]
    if len(mvps) > 1 or others:
        raise PlatformError(f"platform {platform.name!r}: SNN planning models one {kind_name(CortexM)!r} host and "
                            f"one {kind_name(Mvp)!r}; it has {len(mvps)} {kind_name(Mvp)} device(s) and other devices "
                            f"{others or 'none'}")
    if "sram" not in platform.memories:
        raise PlatformError(f"platform {platform.name!r}: SNN planning needs a memory named 'sram' (its size is "
                            "the weight budget)")
    return m33, mvps[0]


def sram_budget_bytes(platform: Platform) -> int:
    """SRAM available to weight tables: ``memories.sram.size_kib - <host>.sram_reserved_kib``, bytes.

    Raises:
        PlatformError: see :func:`engines_of`, or the reserved SRAM exceeds the memory.
    """
    m33, _ = engines_of(platform)
    size = platform.memories["sram"].size_kib
    if m33.sram_reserved_kib > size:
        raise PlatformError(f"platform {platform.name!r}: devices.{m33.name}.sram_reserved_kib = "
                            f"{m33.sram_reserved_kib:g} exceeds memories.sram.size_kib = {size:g}")
    return int((size - m33.sram_reserved_kib) * 1024)


def once_on_counts(A: np.ndarray) -> np.ndarray:
    """The raster a layer evaluated once on accumulated spike counts sees (SpikeDuet Sec. III-D's readout,
    ``readout_form: once``): no column active before the last timestep, and at the last one every column that
    fired at least once (a count of 0 contributes nothing and is skipped, as a zero spike is). bool ``[S, T, n]``.
    """
    A = np.asarray(A, dtype=bool)
    out = np.zeros_like(A)
    out[:, -1, :] = A.any(axis=1)
    return out


@dataclass
class LayerCosts:
    """Per-sample, per-timestep activity of one affine layer (``n_out x n_in``) and its cycles on every engine
    and residency, for one split's input raster ``A`` bool ``[samples, T, n_in]``.

    ``hot_cum[..., k]`` is the number of active columns among the ``k`` hottest (``k = 0..n_in``), so that any
    hot-column count is one lookup.
    """

    n_in: int
    n_out: int
    m33: CortexM
    mvp: Mvp
    active: np.ndarray           # int [S, T]
    hot_cum: np.ndarray          # int [S, T, n_in + 1]
    launches: dict[str, np.ndarray]   # residency -> N_L [S, T]
    processed: dict[str, np.ndarray]  # residency -> N_P [S, T]

    only_last: bool = False           # the layer runs at the last timestep only (readout_form: once)

    @classmethod
    def build(cls, A: np.ndarray, n_out: int, m33: CortexM, mvp: Mvp, hot: np.ndarray,
              only_last: bool = False) -> LayerCosts:
        """Args: ``A`` bool ``[S, T, n_in]``; ``hot`` the column order of :func:`~hetsim.snn.activity.hot_order`;
        ``only_last``: every cost and launch is 0 before the last timestep (the layer is evaluated once, on
        :func:`once_on_counts` of its raster)."""
        A = np.asarray(A, dtype=bool)
        n_in = A.shape[-1]
        cum = np.concatenate([np.zeros(A.shape[:-1] + (1,), np.int32),
                              np.cumsum(A[..., hot], axis=-1, dtype=np.int32)], axis=-1)
        launches, processed = {}, {}
        for mem in ("sram", "flash"):
            launches[mem], processed[mem] = range_counts(A, mvp.max_gap(n_out, mem))
        return cls(n_in, n_out, m33, mvp, A.sum(axis=-1), cum, launches, processed, only_last)

    def _when(self, cycles: np.ndarray) -> np.ndarray:
        """``cycles`` ``[S, T]`` with the timesteps before the last zeroed when the layer runs once."""
        if self.only_last:
            cycles = cycles.copy()
            cycles[..., :-1] = 0.0
        return cycles

    def m33_cycles(self, residency: str, hot_columns: int = 0) -> np.ndarray:
        """Sparse Cortex-M affine cycles ``[S, T]`` (:meth:`~hetsim.devices.efr32.CortexM.affine_cycles`), with
        every active column read from SRAM (``sram``), none (``flash``) or the active hot ones (``flash+hot``)."""
        act = self.active.astype(np.float64)
        if residency == "sram":
            n_sram = act
        elif residency == "flash":
            n_sram = np.zeros_like(act)
        else:
            n_sram = self.hot_cum[..., min(hot_columns, self.n_in)].astype(np.float64)
        return self._when(self.m33.affine_cycles(self.n_out, act, n_sram))

    def mvp_dense_cycles(self, residency: str) -> np.ndarray:
        """Dense MVP affine cycles, the same at every timestep (:meth:`~hetsim.devices.efr32.Mvp.dense_cycles`)."""
        return self._when(np.full(self.active.shape, self.mvp.dense_cycles(self.n_in, self.n_out, residency),
                                  dtype=np.float64))

    def mvp_range_cycles(self, residency: str) -> np.ndarray:
        """Range-sparse MVP affine cycles ``[S, T]`` (:meth:`~hetsim.devices.efr32.Mvp.range_cycles`)."""
        return self._when(self.mvp.range_cycles(self.n_out, residency, self.launches[residency],
                                                self.processed[residency]))

    def cycles(self, engine: str, residency: str, hot_columns: int = 0) -> np.ndarray:
        """Cycles ``[S, T]`` of this layer on ``engine`` with weights in ``residency``.

        Raises:
            ValueError: ``flash+hot`` on an MVP engine.
        """
        if engine == ENGINE_M33:
            return self.m33_cycles(residency, hot_columns)
        if residency == "flash+hot":
            raise ValueError("flash+hot residency is for the M33 only (the MVP reads contiguous FP16 ranges)")
        if engine == ENGINE_MVP_DENSE:
            return self.mvp_dense_cycles(residency)
        return self.mvp_range_cycles(residency)

    def launches_of(self, engine: str, residency: str) -> np.ndarray:
        """MVP launches ``[S, T]`` of this layer on ``engine``: 0 on the Cortex-M, 1 per timestep dense, ``N_L``
        range-sparse."""
        if engine == ENGINE_M33:
            return np.zeros(self.active.shape)
        if engine == ENGINE_MVP_DENSE:
            return self._when(np.ones(self.active.shape))
        return self.launches[residency]  # 0 before the last timestep under only_last (once_on_counts)

    def program_cycles(self, engine: str, residency: str) -> np.ndarray:
        """Host cycles ``[S, T]`` to program the layer's MVP launches (:meth:`~hetsim.devices.efr32.CortexM.
        program_cycles`; 0 on the Cortex-M)."""
        return self.m33.program_cycles(self.launches_of(engine, residency))

    def weight_bytes(self, engine: str) -> int:
        """Size of the layer's weight table in the engine's format (FP32 on the Cortex-M, FP16 on the MVP)."""
        per = self.m33.weight_bytes if engine == ENGINE_M33 else self.mvp.weight_bytes
        return self.n_in * self.n_out * per


class ActivityCostModel(CostModel):
    """The cost model of an unrolled SNN (:class:`~hetsim.snn.unroll.SnnWorkload`) on a Cortex-M + MVP platform,
    on one split of its recorded activity (module docstring).

    Attributes:
        workload, platform, devices: as :class:`~hetsim.costs.CostModel`.
        snn: the network.
        split: the split name its costs are for; ``samples``, ``timesteps``: its raster shape.
        layers: per affine layer, a :class:`LayerCosts` on the split's input rasters.
        hot_freq: per layer, fit-split firing rate of the input columns in hot order (float ``[n_in]``).
        host, mvp_name: the platform's names of the Cortex-M host and the MVP.
        m33, mvp: their configs; ``m33_hz``, ``mvp_hz``: their clocks.
        budget_sram: SRAM bytes for weight tables; ``flash_bytes``: Flash bytes (``None``: no Flash memory).
        sample: the sample whose costs ``latency`` holds (default 0; :meth:`at_sample`).
        latency: op -> {device: seconds} for :attr:`sample`, affine layers at their default choice (SRAM, the
            sparse kernel on the Cortex-M, the range-sparse kernel on the MVP) until :meth:`for_schedule` binds
            a schedule's choices.

    Raises:
        PlatformError: see :func:`engines_of` and :func:`sram_budget_bytes`.
        WorkloadError: the network has no such split.
    """

    def __init__(self, workload: SnnWorkload, platform: Platform, split: str = "eval", sample: int = 0,
                 _fit: tuple | None = None):
        snn = workload.snn
        self.workload, self.platform, self.snn = workload, platform, snn
        self.fold_constants = False
        self.folded = frozenset()
        self.fusion_on, self.fusion, self.fusion_offered = False, {}, 0  # no fused groups in an SNN's program
        self.m33, self.mvp = engines_of(platform)
        self.devices = dict(platform.devices)
        self.mvp_name = self.mvp.name
        self.phases, self.need, self.resident, self.budget = {}, {}, {}, {}
        self.per_op = {n: [] for n in self.devices}
        rasters = snn.split(split)
        self.split = snn.roles.name_of(split)
        self.samples, self.timesteps = rasters[0].shape[0], rasters[0].shape[1]
        sizes = snn.layer_sizes
        if _fit is None:
            fit = snn.split("fit")
            orders = [hot_order(fit[li]) for li in range(snn.n_layers)]
            freqs = [fit[li].reshape(-1, sizes[li]).mean(axis=0)[o] for li, o in enumerate(orders)]
            _fit = (orders, freqs)
        self._fit = _fit
        self.hot_freq: list[np.ndarray] = list(_fit[1])
        self.readout_once = self.m33.readout_form == "once"
        self.layers: list[LayerCosts] = [
            LayerCosts.build(once_on_counts(rasters[li]) if self.readout_once and li == snn.n_layers - 1
                             else rasters[li], sizes[li + 1], self.m33, self.mvp, _fit[0][li],
                             only_last=self.readout_once and li == snn.n_layers - 1)
            for li in range(snn.n_layers)]
        self.m33_hz, self.mvp_hz = self.m33.hz, self.mvp.hz
        self.budget_sram = sram_budget_bytes(platform)
        flash = platform.memories.get("flash")
        self.flash_bytes = int(flash.size_kib * 1024) if flash is not None else None  # None: no Flash residency
        self._splits = {self.split: self}
        self.sample = 0
        self.choices: list[LayerChoice] | None = None
        self._bind(None, sample)

    @classmethod
    def of(cls, snn, platform: Platform, split: str = "eval") -> ActivityCostModel:
        """The cost model of an :class:`~hetsim.snn.network.SNN` (unrolled here) on ``split``."""
        from hetsim.snn.unroll import unroll

        return cls(unroll(snn), platform, split)

    # ------------------------------------------------------------------ splits and samples
    def on_split(self, split: str) -> ActivityCostModel:
        """The same workload and platform priced on another split (by name or role), built once."""
        name = self.snn.roles.name_of(split)
        if name not in self._splits:
            cm = ActivityCostModel(self.workload, self.platform, name, _fit=self._fit)
            cm._splits = self._splits
            self._splits[name] = cm
        return self._splits[name]

    def _bind(self, choices: list[LayerChoice] | None, sample: int) -> None:
        self.sample, self.choices = int(sample), choices
        per_layer, program = {}, {}
        for li, lc in enumerate(self.layers):
            c = None if choices is None else choices[li]
            on_m33 = c is not None and c.engine == ENGINE_M33
            m33 = self.layer_cycles(li, c if on_m33 else LayerChoice(ENGINE_M33, "sram"))
            mvp = self.layer_cycles(li, c) if c is not None and not on_m33 else lc.mvp_range_cycles("sram")
            per_layer[li + 1] = {self.host: m33[sample] / self.m33_hz, self.mvp_name: mvp[sample] / self.mvp_hz}
            prog = (lc.program_cycles(c.engine, c.residency) if c is not None else np.zeros(lc.active.shape))[sample]
            program[li + 1] = prog / self.m33_hz
            if choices is not None:  # a bound schedule: the layer runs where it was mapped
                keep = self.host if c.engine == ENGINE_M33 else self.mvp_name
                per_layer[li + 1] = {keep: per_layer[li + 1][keep]}
        lat = {}
        for name, s in self.workload.steps.items():
            if s.kind == "affine":
                lat[name] = {d: float(v[s.t]) for d, v in per_layer[s.layer].items()}
            elif s.kind == "program":
                lat[name] = {self.host: float(program[s.layer][s.t])}
            elif s.kind == "lif":
                lat[name] = {self.host: self.lif_step_cycles(s.layer) / self.m33_hz}
            else:
                lat[name] = {self.host: self.readout_step_cycles() / self.m33_hz}
        self.latency = lat

    def at_sample(self, sample: int, choices: list[LayerChoice] | None = None) -> ActivityCostModel:
        """A copy whose ``latency`` holds ``sample``'s costs under ``choices`` (``None``: the defaults).

        Raises:
            IndexError: ``sample`` is outside ``0..samples-1``.
        """
        if not 0 <= sample < self.samples:
            raise IndexError(f"sample {sample} outside 0..{self.samples - 1}")
        out = copy.copy(self)
        out._bind(choices, sample)
        return out

    def for_schedule(self, schedule) -> ActivityCostModel:
        """The cost model to replay ``schedule`` with: :attr:`sample`'s costs under the schedule's per-layer
        engine and residency (``schedule.config["layers"]``; the defaults when it has none)."""
        layers = schedule.config.get("layers") if schedule.config else None
        if not layers:
            return self
        return self.at_sample(self.sample, [LayerChoice.from_dict(x) for x in layers])

    # ------------------------------------------------------------------ memory
    def allocate(self, combo: tuple[tuple[str, str], ...]) -> tuple[list[LayerChoice], int] | None:
        """Layer choices with hot-column counts and the SRAM bytes used, or ``None`` if the SRAM-resident tables
        exceed the SRAM budget or the Flash-resident ones (``flash``, ``flash+hot``: the whole table stays in
        Flash) exceed ``memories.flash`` (no ``flash`` memory: no Flash residency).

        ``flash+hot`` layers share the SRAM left over: their columns are taken greedily by decreasing fit-split
        firing rate (all columns of a layer have the same size, so each layer gets a prefix of its hot order).
        """
        used = sum(lc.weight_bytes(e) for lc, (e, r) in zip(self.layers, combo, strict=True) if r == "sram")
        if used > self.budget_sram:
            return None
        in_flash = sum(lc.weight_bytes(e) for lc, (e, r) in zip(self.layers, combo, strict=True) if r != "sram")
        if in_flash and (self.flash_bytes is None or in_flash > self.flash_bytes):
            return None
        hot = [0] * len(combo)
        hot_layers = [i for i, (_, r) in enumerate(combo) if r == "flash+hot"]
        if hot_layers:
            left = self.budget_sram - used
            items = sorted((-float(self.hot_freq[i][k]), i, k) for i in hot_layers
                           for k in range(self.layers[i].n_in) if self.hot_freq[i][k] > 0)
            for _, i, _k in items:
                size = self.layers[i].n_out * self.m33.weight_bytes
                if size <= left:
                    hot[i] += 1
                    left -= size
            used = self.budget_sram - left
        return [LayerChoice(e, r, hot[i]) for i, (e, r) in enumerate(combo)], used

    def memory_use(self, choices: list[LayerChoice]) -> dict[str, int]:
        """Bytes of weight tables in ``sram`` (resident tables and hot columns) and ``flash`` under ``choices``."""
        sram = flash = 0
        for lc, c in zip(self.layers, choices, strict=True):
            table = lc.weight_bytes(c.engine)
            if c.residency == "sram":
                sram += table
            else:
                flash += table
                if c.residency == "flash+hot":
                    sram += c.hot_columns * lc.n_out * self.m33.weight_bytes
        return {"sram": sram, "flash": flash}

    def schedule_violations(self, schedule) -> list[str]:
        """What does not fit in a schedule's SNN decisions: a missing or malformed ``config["layers"]``, an
        engine or residency that does not exist or does not match the device of the layer's affine ops, more
        hot columns than inputs, and weight tables over the SRAM budget or the Flash (the one capacity check,
        :func:`hetsim.check.fit_violations`)."""
        from hetsim.devices.efr32 import ENGINES, RESIDENCIES

        layers = (schedule.config or {}).get("layers")
        if layers is None:
            return ["an SNN schedule needs config.layers (per affine layer its engine and residency)"]
        if not isinstance(layers, list) or len(layers) != self.snn.n_layers:
            return [f"config.layers must list {self.snn.n_layers} affine layers"]
        out, choices = [], []
        for li, x in enumerate(layers):
            try:
                c = LayerChoice.from_dict(x)
            except (KeyError, TypeError, ValueError, AttributeError):
                out.append(f"config.layers[{li}] is not {{engine, residency, hot_columns}}: {x!r}")
                continue
            if c.engine not in ENGINES or c.residency not in RESIDENCIES or (
                    c.engine != ENGINE_M33 and c.residency == "flash+hot"):
                out.append(f"config.layers[{li}]: no engine/residency {c.engine}/{c.residency}")
                continue
            if not 0 <= c.hot_columns <= self.layers[li].n_in:
                out.append(f"config.layers[{li}]: {c.hot_columns} hot columns for {self.layers[li].n_in} inputs")
            want = self.host if c.engine == ENGINE_M33 else self.mvp_name
            wrong = [v for v, s in self.workload.steps.items() if s.kind == "affine" and s.layer == li + 1
                     and v in schedule.parts and schedule.devices_of(v) != [want]]
            if wrong:
                out.append(f"affine layer {li + 1} runs as {c.engine} but {wrong[0]!r} is not on {want!r}")
            choices.append(c)
        if out:
            return out
        use = self.memory_use(choices)
        if use["sram"] > self.budget_sram:
            out.append(f"weight tables in SRAM need {use['sram']} B > the {self.budget_sram} B budget "
                       f"(memories.sram minus {self.host}.sram_reserved_kib)")
        cap = self.flash_bytes or 0
        if use["flash"] > cap:
            out.append(f"weight tables in Flash need {use['flash']} B > memories.flash ({cap} B)")
        return out

    # ------------------------------------------------------------------ costs over every sample
    def layer_cycles(self, li: int, choice: LayerChoice) -> np.ndarray:
        """Cycles ``[samples, T]`` of affine layer ``li + 1`` under ``choice`` (in its engine's clock)."""
        return self.layers[li].cycles(choice.engine, choice.residency, choice.hot_columns)

    def layer_seconds(self, li: int, choice: LayerChoice) -> np.ndarray:
        """Seconds ``[samples, T]`` of affine layer ``li + 1`` under ``choice``."""
        hz = self.m33_hz if choice.engine == ENGINE_M33 else self.mvp_hz
        return self.layer_cycles(li, choice) / hz

    def program_seconds(self, li: int, choice: LayerChoice) -> np.ndarray:
        """Host seconds ``[samples, T]`` to program affine layer ``li + 1``'s MVP launches under ``choice``."""
        return self.layers[li].program_cycles(choice.engine, choice.residency) / self.m33_hz

    def step_costs(self, steps, choices: list[LayerChoice]) -> np.ndarray:
        """Durations in seconds, float ``[len(steps), samples]``, of the unrolled ops ``steps``
        (:class:`~hetsim.snn.unroll.SnnStep`) under ``choices``."""
        sizes = self.snn.layer_sizes
        per_layer = [self.layer_seconds(li, c) for li, c in enumerate(choices)]
        program = [self.program_seconds(li, c) for li, c in enumerate(choices)]
        lif = [self.lif_step_cycles(layer) / self.m33_hz for layer in range(1, len(sizes))]
        ro = self.readout_step_cycles() / self.m33_hz
        out = np.empty((len(steps), self.samples))
        for i, op in enumerate(steps):
            if op.kind == "affine":
                out[i] = per_layer[op.layer - 1][:, op.t]
            elif op.kind == "program":
                out[i] = program[op.layer - 1][:, op.t]
            elif op.kind == "lif":
                out[i] = lif[op.layer - 1]
            else:
                out[i] = ro
        return out

    @property
    def fixed_m33_s(self) -> float:
        """Cortex-M time per inference that no mapping changes: LIF updates and readout over T timesteps, s."""
        sizes = self.snn.layer_sizes
        return self.timesteps * (sum(self.lif_step_cycles(layer) for layer in range(1, len(sizes)))
                                 + self.readout_step_cycles()) / self.m33_hz

    def lif_step_cycles(self, layer: int) -> float:
        """Cortex-M cycles of ``lif_layer[t]`` (layer 1..L), every timestep: the LIF update of the layer's
        neurons; 0 for the output layer under ``readout_form: once`` (a linear readout has no neuron state)."""
        if self.readout_once and layer == self.snn.n_layers:
            return 0.0
        return self.m33.lif_cycles(self.snn.layer_sizes[layer])

    def readout_step_cycles(self) -> float:
        """Cortex-M cycles of ``readout[t]``, every timestep: ``n_out * c_readout`` (accumulating the outputs,
        hetsim's form) or, under ``readout_form: once``, ``n_in * c_readout`` (adding the last affine layer's
        ``n_in`` input spikes to their counts; the layer itself runs once, at the last timestep)."""
        sizes = self.snn.layer_sizes
        return self.m33.readout_cycles(sizes[-2] if self.readout_once else sizes[-1])

    def engine_work(self, choices: list[LayerChoice]) -> tuple[np.ndarray, np.ndarray]:
        """Total Cortex-M and MVP busy time per sample, seconds (each is a lower bound on the makespan)."""
        m33 = np.full(self.samples, self.fixed_m33_s)
        mvp = np.zeros(self.samples)
        for li, c in enumerate(choices):
            cyc = self.layer_cycles(li, c).sum(axis=1)
            if c.engine == ENGINE_M33:
                m33 = m33 + cyc / self.m33_hz
            else:
                mvp = mvp + cyc / self.mvp_hz
                if self.m33.mvp_launch_cycles:  # (skipped at 0: the sums stay bit-identical to the cost without it)
                    m33 = m33 + self.program_seconds(li, c).sum(axis=1)
        return m33, mvp
