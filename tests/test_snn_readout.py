"""The SpikeDuet readout form (``devices.<cortex-m>.readout_form``): hetsim's default (the last affine layer and its
LIF every timestep, the outputs accumulated) and the paper's (Sec. III-D: the readout evaluated once on
accumulated counts), by hand on a 2-layer network."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hetsim.platform import load_platform
from hetsim.snn.activity_costs import ActivityCostModel, LayerChoice, once_on_counts
from hetsim.snn.network import make_snn
from hetsim.snn.unroll import unroll

ROOT = Path(__file__).resolve().parent.parent

# input 3 columns -> hidden 4 -> output 2, T = 3, one sample
X = np.array([[[1, 0, 1], [0, 0, 0], [1, 1, 1]]], dtype=bool)
H = np.array([[[1, 0, 0, 1], [0, 1, 0, 0], [1, 0, 0, 0]]], dtype=bool)  # column 2 never fires
OUT = np.zeros((1, 3, 2), dtype=bool)


@pytest.fixture(scope="module")
def net():
    ws = [np.ones((4, 3), np.float32), np.ones((2, 4), np.float32)]
    return make_snn(ws, name="tiny", activity={"train": [X, H, OUT], "val": [X, H, OUT]})


def model(net, form):
    plat = load_platform(ROOT / "platforms" / "efr32mg24.yaml")
    if form is not None:
        plat = plat.with_overrides({"devices.m33.readout_form": form})
    return ActivityCostModel(unroll(net), plat, "val")


def test_once_on_counts():
    np.testing.assert_array_equal(once_on_counts(H)[0], [[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 1]])


def test_every_timestep_is_the_default_and_unchanged(net):
    cm = model(net, None)
    assert cm.m33.readout_form == "every-timestep"
    # Linear 2 on the M33, SRAM: 40 + N_act * 7.4 + 2 * N_act * 3.65 with N_act = 2, 1, 1
    np.testing.assert_allclose(cm.layers[1].m33_cycles("sram")[0], [40 + 2 * 7.4 + 2 * 2 * 3.65,
                                                                    40 + 7.4 + 2 * 3.65, 40 + 7.4 + 2 * 3.65])
    assert cm.lif_step_cycles(2) == 40 + 2 * 20         # LIF of the 2 output neurons
    assert cm.readout_step_cycles() == 2 * 4             # n_out * c_readout


def test_once_by_hand(net):
    cm = model(net, "once")
    lc = cm.layers[1]
    # evaluated once, at t = 2, on the counts of columns {0, 1, 3}: 40 + 3 * 7.4 + 2 * 3 * 3.65 = 84.1 cycles
    np.testing.assert_allclose(lc.m33_cycles("sram")[0], [0, 0, 40 + 3 * 7.4 + 2 * 3 * 3.65])
    # on the range-sparse MVP (SRAM, C_P = 4 + 2 * 0.5 = 5; the gap at column 2 merges): 150 + 2510 + 4 * 5
    np.testing.assert_allclose(lc.mvp_range_cycles("sram")[0], [0, 0, 150 + 2510 + 4 * 5])
    np.testing.assert_allclose(lc.mvp_dense_cycles("sram")[0], [0, 0, 150 + 2510 + 4 * 5])
    np.testing.assert_allclose(lc.launches_of("mvp-dense", "sram")[0], [0, 0, 1])
    assert cm.lif_step_cycles(2) == 0.0                  # a linear readout has no neuron state
    assert cm.lif_step_cycles(1) == 40 + 4 * 20          # the hidden layer's LIF is unchanged
    assert cm.readout_step_cycles() == 4 * 4             # counts += s[t] over the 4 hidden columns
    # the first layer is not affected
    np.testing.assert_allclose(cm.layers[0].m33_cycles("sram"), model(net, None).layers[0].m33_cycles("sram"))
    # fixed Cortex-M work per inference: T * (LIF of layer 1 + accumulation) = 3 * (120 + 16) cycles
    assert cm.fixed_m33_s == pytest.approx(3 * (120 + 16) / 39e6)
    # the op costs the mappers and the replay read agree
    choices = [LayerChoice("m33", "sram"), LayerChoice("m33", "sram")]
    steps = [s for s in cm.workload.steps.values() if s.kind == "affine" and s.layer == 2]
    np.testing.assert_allclose(cm.step_costs(steps, choices)[:, 0] * 39e6, [0, 0, 84.1])


def test_unknown_form_is_refused(net):
    from hetsim.errors import HetsimError

    with pytest.raises((HetsimError, ValueError)):
        model(net, "sometimes")
