"""NIR graphs in and out (hetsim.snn.nir): NIR's neuron ODEs stepped as docs/models.md states (hand-worked
membranes), refusals that name the node (exit code 2 on the command line), and the round trip spec -> NIR ->
hetsim with identical parameters, spikes, predictions and latency for every shipped network."""

from __future__ import annotations

import json

import nir
import numpy as np
import pytest
import yaml
from conftest import ROOT, assert_input_error, run_cli

import hetsim
from hetsim.errors import WorkloadError
from hetsim.pipeline import run as run_pipeline
from hetsim.snn.network import load_snn, replay
from hetsim.snn.nir import NEVER_FIRES, load_nir, save_nir, snn_from_nir

PLATFORM = ROOT / "platforms" / "efr32mg24.yaml"
SHIPPED = sorted((ROOT / "workloads" / "snn").glob("*.yaml"))
DT = 1e-4
#: the hand-worked input: one input channel, five timesteps
X = np.array([1, 1, 1, 0, 1], bool).reshape(1, 5, 1)


def _graph(neuron, weight=((1.0,),), meta=None, extra_nodes=None, edges=None):
    """Input(1) -> Linear -> neuron -> Output, or ``extra_nodes``/``edges`` instead."""
    w = np.asarray(weight, np.float32)
    nodes = {"in": nir.Input(input_type={"input": np.array([w.shape[1]])}), "fc": nir.Linear(weight=w),
             "cell": neuron, "out": nir.Output(output_type={"output": np.array([w.shape[0]])})}
    nodes.update(extra_nodes or {})
    return nir.NIRGraph(nodes=nodes, edges=edges or [("in", "fc"), ("fc", "cell"), ("cell", "out")],
                        metadata=meta or {}, type_check=False)


def _lif(tau=5e-4, r=2.5, v_leak=0.5, v_threshold=1.0, v_reset=0.0, n=1, **meta):
    f = lambda v: np.full(n, v, np.float64)  # noqa: E731
    return nir.LIF(tau=f(tau), r=f(r), v_leak=f(v_leak), v_threshold=f(v_threshold), v_reset=f(v_reset),
                   metadata=meta)


def _timeless(summary: dict) -> dict:
    """A run's summary without the planner's wall-clock solve time (the only field that may differ)."""
    return {**summary, "plan_stats": {k: v for k, v in summary["plan_stats"].items() if k != "solve_time_s"},
            "mapper_stats": {k: v for k, v in summary.get("mapper_stats", {}).items() if k != "solve_time_s"}}


def _run(graph, x=X, **kw):
    net = snn_from_nir(graph, {"input": x}, **kw)
    return net, replay(net, x)


# -- NIR's neuron equations, stepped with dt (docs/models.md, "NIR graphs"): hand-worked ------------------------

def test_lif_by_hand_reset_to_zero():
    # k = dt/tau = 0.2 -> beta 0.8; gain k*r = 0.5; leak k*v_leak = 0.1:  v[t] = 0.8 v[t-1] + 0.5 x[t] + 0.1
    # t0: 0.6 | t1: 0.48 + 0.6 = 1.08 > 1, fires, v -> 0 | t2: 0.6 | t3: 0.48 + 0.1 = 0.58 | t4: 0.464 + 0.6 = 1.064
    net, r = _run(_graph(_lif()))
    assert net.reset == "zero" and net.readout == "spike_count"
    assert net.beta[0][0] == np.float32(0.8) and net.weights[0][0, 0] == np.float32(0.5)
    assert net.biases[0][0] == np.float32(0.1) and net.threshold[0][0] == 1.0
    assert r.spikes[0][0, :, 0].tolist() == [False, True, False, False, True]
    # hetsim records the membrane before the reset (the value compared with the threshold)
    assert r.membrane_out[0, :, 0] == pytest.approx([0.6, 1.08, 0.6, 0.58, 1.064], abs=1e-6)


def test_lif_by_hand_reset_by_subtraction_from_metadata():
    # as above until t1; then v[t] = 0.8 v[t-1] + 0.5 x[t] + 0.1 - 1.0 * s[t-1]
    # t2: 0.864 + 0.6 - 1 = 0.464 | t3: 0.3712 + 0.1 = 0.4712 | t4: 0.37696 + 0.6 = 0.97696: no spike
    net, r = _run(_graph(_lif(reset="subtract")))
    assert net.reset == "subtract"
    assert r.spikes[0][0, :, 0].tolist() == [False, True, False, False, False]
    assert r.membrane_out[0, :, 0] == pytest.approx([0.6, 1.08, 0.464, 0.4712, 0.97696], abs=1e-6)
    # the caller's reset= overrides the graph
    assert _run(_graph(_lif(reset="subtract")), reset="zero")[0].reset == "zero"


def test_dt_comes_from_the_argument_then_the_graph_metadata_then_the_default():
    # tau = 5e-4: dt 1e-4 -> beta 0.8; dt 2.5e-4 (metadata) -> 0.5; dt 4e-4 (argument) -> 0.2
    assert _run(_graph(_lif()))[0].beta[0][0] == np.float32(0.8)
    assert _run(_graph(_lif(), meta={"dt": 2.5e-4}))[0].beta[0][0] == np.float32(0.5)
    net = _run(_graph(_lif(), meta={"dt": 2.5e-4}), dt=4e-4)[0]
    assert net.beta[0][0] == np.float32(0.2) and net.weights[0][0, 0] == np.float32(0.8 * 2.5)


def test_if_adds_r_times_the_input_per_timestep():
    # v[t] = v[t-1] + 0.4 x[t]: 0.4, 0.8, 1.2 (fires, -> 0), 0 (no input), 0.4
    node = nir.IF(r=np.array([0.4]), v_threshold=np.array([1.0]), v_reset=np.array([0.0]))
    net, r = _run(_graph(node))
    assert net.beta[0][0] == 1.0 and net.weights[0][0, 0] == np.float32(0.4)
    assert r.spikes[0][0, :, 0].tolist() == [False, False, True, False, False]
    assert r.membrane_out[0, :, 0] == pytest.approx([0.4, 0.8, 1.2, 0.0, 0.4], abs=1e-6)


def test_cuba_lif_with_an_instantaneous_synapse_is_a_lif_and_other_synapses_are_refused():
    # tau_syn = dt: I[t] = w_in * (W x[t]) = 2 x[t]; then the LIF step with k = 0.2, r = 2.5: gain 2 * 0.5 = 1
    # v: 1.1 (fires) | 0 + 1.1 (fires) | 1.1 (fires) | 0.1 | 0.08 + 1.1 = 1.18 (fires)
    one = np.ones(1)
    node = nir.CubaLIF(tau_syn=DT * one, tau_mem=5e-4 * one, r=2.5 * one, v_leak=0.5 * one, v_threshold=one,
                       v_reset=0 * one, w_in=2 * one)
    net, r = _run(_graph(node))
    assert net.weights[0][0, 0] == 1.0 and net.beta[0][0] == np.float32(0.8)
    assert r.spikes[0][0, :, 0].tolist() == [True, True, True, False, True]
    node.tau_syn = 2 * DT * one
    with pytest.raises(WorkloadError, match=r"CubaLIF node 'cell': tau_syn = 0.0002 s .* second state"):
        _run(_graph(node))


def test_a_leaky_integrator_last_is_a_membrane_readout_and_is_refused_inside():
    li = nir.LI(tau=np.full(2, 5e-4), r=np.full(2, 2.5), v_leak=np.zeros(2))
    net, r = _run(_graph(li, weight=((1.0,), (-1.0,))))
    assert net.readout == "membrane_sum" and net.threshold[0][0] == np.float32(NEVER_FIRES)
    assert not r.spikes[0].any()
    # v = 0.8 v + 0.5 x: 0.5, 0.9, 1.22, 0.976, 1.2808 summed: 4.8768 for neuron 0, the negation for neuron 1
    assert r.membrane_out[0, :, 0].sum() == pytest.approx(4.8768, abs=1e-5)
    assert r.prediction.tolist() == [0]
    nodes = {"fc2": nir.Linear(weight=np.ones((1, 2), np.float32)), "lif2": _lif()}
    g = _graph(li, weight=((1.0,), (-1.0,)), extra_nodes=nodes,
               edges=[("in", "fc"), ("fc", "cell"), ("cell", "fc2"), ("fc2", "lif2"), ("lif2", "out")])
    with pytest.raises(WorkloadError, match=r"LI node 'cell': a leaky integrator .* only be the last layer"):
        _run(g)


def test_snntorch_style_float32_tau_and_r_are_read_as_unit_gain():
    # snnTorch's export_to_nir stores tau = dt/(1-beta) and r = tau/dt in float32: r*dt/tau is 1 +- 1e-7
    beta = np.float32(0.8)
    tau = np.float32(DT) / (np.float32(1) - beta)
    node = nir.LIF(tau=np.array([tau]), r=np.array([tau / np.float32(DT)]), v_leak=np.zeros(1, np.float32),
                   v_threshold=np.ones(1, np.float32), v_reset=np.zeros(1, np.float32))
    assert float(node.r[0]) * DT / float(node.tau[0]) != 1.0  # the premise
    net, _ = _run(_graph(node, weight=((0.3,),)))
    assert net.weights[0][0, 0] == np.float32(0.3) and net.beta[0][0] == beta


# -- refusals: one line naming the node, exit code 2 --------------------------------------------------------

def _conv():
    return nir.Conv1d(input_shape=4, weight=np.ones((1, 1, 2)), stride=1, padding=0, dilation=1, groups=1,
                      bias=np.zeros(1))


@pytest.mark.parametrize("make, needle", [
    (lambda: _graph(_lif(), extra_nodes={"conv": _conv()}, edges=[("in", "conv"), ("conv", "fc"), ("fc", "cell"),
                                                                   ("cell", "out")]),
     "node 'conv' is a Conv1d"),
    (lambda: _graph(_lif(), extra_nodes={"rec": nir.Linear(weight=np.ones((1, 1), np.float32))},
                    edges=[("in", "fc"), ("fc", "cell"), ("cell", "rec"), ("rec", "cell"), ("cell", "out")]),
     "node 'cell' feeds 2 nodes"),
    (lambda: _graph(_lif(), extra_nodes={"rec": nir.Linear(weight=np.ones((1, 1), np.float32))},
                    edges=[("in", "fc"), ("fc", "cell"), ("rec", "cell"), ("cell", "out")]),
     "node 'cell' has 2 inputs (fc, rec): a merge or a recurrent edge"),
    (lambda: _graph(nir.NIRGraph(nodes={"i": nir.Input(input_type={"input": np.array([1])}),
                                        "o": nir.Output(output_type={"output": np.array([1])})},
                                 edges=[("i", "o")], type_check=False)),
     "node 'cell' is a subgraph (NIRGraph"),
    (lambda: _graph(_lif(v_reset=0.25)), "LIF node 'cell': v_reset = 0.25 (neuron 0)"),
    (lambda: _graph(_lif(tau=DT)), "LIF node 'cell': tau = 0.0001 s (neuron 0) is not longer than dt"),
    (lambda: _graph(_lif(v_threshold=0.0)), "LIF node 'cell': v_threshold = 0 (neuron 0)"),
    (lambda: _graph(nir.Linear(weight=np.ones((1, 1), np.float32))),
     "Linear node 'cell' follows 'fc' with no neuron layer between"),
    (lambda: _graph(_lif(), extra_nodes={"fc2": nir.Linear(weight=np.ones((1, 1), np.float32))},
                    edges=[("in", "fc"), ("fc", "cell"), ("cell", "fc2"), ("fc2", "out")]),
     "the graph ends with Linear node 'fc2'"),
    (lambda: _graph(_lif(), extra_nodes={"lif2": _lif(reset="subtract"),
                                         "fc2": nir.Linear(weight=np.ones((1, 1), np.float32))},
                    edges=[("in", "fc"), ("fc", "cell"), ("cell", "fc2"), ("fc2", "lif2"), ("lif2", "out")]),
     "node 'cell' resets by 'zero' but node 'lif2' by 'subtract'"),
    (lambda: _graph(_lif(n=2)), "LIF node 'cell': tau has shape (2,); expected (1,) or a scalar"),
])
def test_what_hetsim_does_not_model_is_refused_naming_the_node(tmp_path, capsys, make, needle):
    np.savez(tmp_path / "x.npz", spikes=X)
    g = make()
    nir.write(tmp_path / "net.nir", g)
    with pytest.raises(WorkloadError) as err:
        load_snn(tmp_path / "net.nir", spikes=tmp_path / "x.npz")
    assert needle in str(err.value) and "\n" not in str(err.value)
    code, _, stderr = run_cli(capsys, "run", PLATFORM, tmp_path / "net.nir", "--spikes", tmp_path / "x.npz")
    assert_input_error(code, stderr, needle)


def test_bad_files_and_missing_spikes_are_one_line_errors(tmp_path, capsys):
    nir.write(tmp_path / "net.nir", _graph(_lif()))
    (tmp_path / "junk.nir").write_text("not hdf5")
    np.savez(tmp_path / "x.npz", spikes=X)
    np.savez(tmp_path / "wide.npz", spikes=np.zeros((1, 5, 3), bool))
    np.savez(tmp_path / "nokey.npz", other=X)
    cases = [
        (("run", PLATFORM, tmp_path / "net.nir"), "a NIR graph holds no spikes; give the input raster"),
        (("run", PLATFORM, tmp_path / "junk.nir", "--spikes", tmp_path / "x.npz"),
         "not a NIR graph that the nir package can read"),
        (("run", PLATFORM, tmp_path / "none.nir", "--spikes", tmp_path / "x.npz"), "does not exist"),
        (("run", PLATFORM, tmp_path / "net.nir", "--spikes", tmp_path / "wide.npz"),
         "spikes 'input' is 3 neurons wide but layer 0 has 1 neurons"),
        (("run", PLATFORM, tmp_path / "net.nir", "--spikes", tmp_path / "nokey.npz"),
         "holds no input raster (keys: other)"),
        (("run", PLATFORM, ROOT / "workloads" / "snn" / "braille64.yaml", "--spikes", tmp_path / "x.npz"),
         "--spikes gives the input raster of a NIR graph (.nir), not of an SNN spec"),
        (("map", PLATFORM, tmp_path / "net.nir", "-o", tmp_path / "s.json"),
         "a NIR graph holds no spikes; give the input raster"),
    ]
    for argv, needle in cases:
        code, _, err = run_cli(capsys, *argv)
        assert_input_error(code, err, needle)


def test_input_spikes_file_layouts(tmp_path):
    g = _graph(_lif(n=2), weight=((1.0, 0.0), (0.0, 1.0)))
    nir.write(tmp_path / "net.nir", g)
    x = np.random.default_rng(0).random((3, 5, 2)) < 0.5
    # one raster under 'spikes' (optionally [samples, T, *input_shape]): one split, all three roles
    np.savez(tmp_path / "one.npz", spikes=x.reshape(3, 5, 2, 1), labels=np.array([0, 1, 1]))
    net = load_snn(tmp_path / "net.nir", spikes=tmp_path / "one.npz")
    assert (net.roles.fit, net.roles.plan, net.roles.eval) == ("input", "input", "input")
    assert np.array_equal(net.activity["input"][0], x) and net.labels["input"].tolist() == [0, 1, 1]
    assert net.timesteps == 5 and net.name == "net"
    # hetsim's activity layout: spk_<split>_L0 per split; hidden layers in the file are ignored (replayed)
    np.savez(tmp_path / "splits.npz", spk_val_L0=x, spk_test_L0=x[:1], spk_test_L1=np.ones((1, 5, 2), bool))
    net = load_snn(tmp_path / "net.nir", spikes=tmp_path / "splits.npz")
    assert (net.roles.fit, net.roles.plan, net.roles.eval) == ("val", "val", "test")
    assert np.array_equal(net.activity["test"][1], replay(net, x[:1]).spikes[0])


# -- the round trip spec -> NIR -> hetsim, every shipped network ---------------------------------------------

@pytest.mark.parametrize("spec", SHIPPED, ids=lambda p: p.stem)
def test_round_trip_gives_the_same_network_spikes_predictions_and_latency(spec, tmp_path):
    a = load_snn(spec)
    save_nir(a, tmp_path / "net.nir")
    activity = spec.parent / yaml.safe_load(spec.read_text())["activity"]
    b = load_snn(tmp_path / "net.nir", spikes=activity)
    assert (b.name, b.reset, b.readout, b.timesteps, b.roles) == (a.name, a.reset, a.readout, a.timesteps, a.roles)
    for field in ("weights", "biases", "beta", "threshold"):
        for x, y in zip(getattr(a, field), getattr(b, field), strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y), field
    assert sorted(a.activity) == sorted(b.activity)
    for split, rasters in a.activity.items():  # recorded (spec) == replayed (NIR), every layer
        assert all(np.array_equal(x, y) for x, y in zip(rasters, b.activity[split], strict=True)), split
        assert np.array_equal(replay(a, rasters[0]).prediction, replay(b, rasters[0]).prediction)
        assert np.array_equal(a.labels[split], b.labels[split])
    ra, rb = run_pipeline(PLATFORM, a, timeline=False), run_pipeline(PLATFORM, b, timeline=False)
    assert rb.summary["mean_latency_ms"] == ra.summary["mean_latency_ms"]
    assert _timeless(rb.summary) == _timeless(ra.summary)


def test_cli_export_then_run_equals_the_spec_run_and_export_refuses_to_overwrite(tmp_path, capsys):
    spec = ROOT / "workloads" / "snn" / "braille64.yaml"
    out = tmp_path / "sub" / "b64.nir"
    code, text, err = run_cli(capsys, "export-nir", spec, "-o", out)
    assert code == 0, err
    assert "braille7_12-64-7_T100: 2 layers [12, 64, 7], reset subtract, readout spike_count" in text
    assert [p.name for p in out.parent.iterdir()] == ["b64.nir"]  # no temporary file left behind
    before = out.read_bytes()
    code, _, err = run_cli(capsys, "export-nir", spec, "-o", out)
    assert_input_error(code, err, "exists; pass --force")
    assert out.read_bytes() == before
    assert run_cli(capsys, "export-nir", spec, "-o", out, "--force", "--dt", "1e-3")[0] == 0
    assert nir.read(out).metadata["dt"] == 1e-3
    for argv, needle in (((spec, "-o", tmp_path / "x.onnx"), "give a .nir path"),
                         ((out, "-o", tmp_path / "y.nir"), "export-nir reads an SNN spec (.yaml)")):
        code, _, err = run_cli(capsys, "export-nir", *argv)
        assert_input_error(code, err, needle)
    code, yaml_run, err = run_cli(capsys, "run", PLATFORM, spec, "--json")
    assert code == 0, err
    spikes = ROOT / "workloads" / "snn" / "braille7_12-64-7_T100.npz"
    code, nir_run, err = run_cli(capsys, "run", PLATFORM, out, "--spikes", spikes, "--json")
    assert code == 0, err
    assert _timeless(json.loads(nir_run)) == _timeless(json.loads(yaml_run))
    r = hetsim.run(PLATFORM, out, spikes=spikes, timeline=False)
    assert r.summary["mean_latency_ms"] == json.loads(yaml_run)["mean_latency_ms"]


def test_export_writes_lif_nodes_other_tools_read(tmp_path):
    a = load_snn(ROOT / "workloads" / "snn" / "braille64.yaml")
    save_nir(a, tmp_path / "n.nir")
    g = nir.read(tmp_path / "n.nir")  # NIR's own reader with its type check
    assert [type(g.nodes[k]).__name__ for k in ("input", "linear1", "lif1", "linear2", "lif2", "output")] == \
        ["Input", "Linear", "LIF", "Linear", "LIF", "Output"]
    lif = g.nodes["lif1"]
    assert np.allclose(DT / lif.tau, 1 - 0.9) and np.allclose(lif.r * DT / lif.tau, 1)
    assert lif.metadata == {"reset": "subtract"} and g.metadata["readout"] == "spike_count"


# -- snnTorch's export_to_nir ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", ["zero", "subtract"])
def test_a_file_written_by_snntorch_export_to_nir(tmp_path, mechanism):
    """snnTorch's spikes equal hetsim's on the file its exporter writes: Leaky layers resetting to zero; and
    (subtract) a Flatten, a Synaptic with alpha = 0 (a CubaLIF with tau_syn = dt) and a Leaky, all subtracting.
    (snnTorch's zero-resetting Synaptic also drops the input of the step after a spike, which NIR's CubaLIF does
    not, so it is not compared.)"""
    torch = pytest.importorskip("torch")
    snn = pytest.importorskip("snntorch")
    pytest.importorskip("nirtorch")
    import snntorch.utils
    from snntorch.export_nir import export_to_nir

    torch.manual_seed(0)
    fc1, fc2 = torch.nn.Linear(6, 8), torch.nn.Linear(8, 3, bias=False)
    for fc in (fc1, fc2):
        fc.weight.data *= 3
    out = snn.Leaky(beta=torch.full((3,), 0.9), threshold=torch.full((3,), 0.5), reset_mechanism=mechanism,
                    init_hidden=True, output=True)
    if mechanism == "zero":
        hidden = snn.Leaky(beta=torch.full((8,), 0.85), threshold=torch.full((8,), 0.5), reset_mechanism="zero",
                           init_hidden=True)
        net, shape = torch.nn.Sequential(fc1, hidden, fc2, out), (6,)
    else:
        hidden = snn.Synaptic(alpha=torch.zeros(8), beta=torch.full((8,), 0.85), threshold=torch.full((8,), 0.5),
                              reset_mechanism="subtract", init_hidden=True)
        net, shape = torch.nn.Sequential(torch.nn.Flatten(), fc1, hidden, fc2, out), (2, 3)
    graph = export_to_nir(net, torch.zeros(1, *shape), ignore_dims=[0])
    nir.write(tmp_path / "snntorch.nir", graph)
    x = np.random.default_rng(1).random((4, 20, *shape)) < 0.4
    np.savez(tmp_path / "x.npz", spikes=x)
    # snnTorch writes every Leaky/Synaptic as a NIR LIF/CubaLIF (reset to v_reset = 0): subtraction needs reset=
    got = load_nir(tmp_path / "snntorch.nir", tmp_path / "x.npz", reset=None if mechanism == "zero" else mechanism)
    assert got.reset == mechanism and got.layer_sizes == [6, 8, 3]
    snntorch.utils.reset(net)
    with torch.no_grad():
        want = [net(torch.from_numpy(x[:, t].astype(np.float32)))[0].numpy() for t in range(x.shape[1])]
    want = np.stack(want, axis=1) > 0
    assert want.any() and not want.all()
    assert np.array_equal(got.activity["input"][-1], want)

def _bare(cls, **fields):
    """A NIR node with exactly ``fields`` (bypassing NIR's constructor checks, as a hand-edited file may)."""
    node = cls.__new__(cls)
    node.__dict__.update(fields, metadata={})
    return node


@pytest.mark.parametrize("cell, fc, meta, needle", [
    (_bare(nir.LIF, tau=None, r=np.ones(1), v_leak=np.zeros(1), v_threshold=np.ones(1)), None, {},
     "LIF node 'cell': tau is missing"),
    (_bare(nir.LIF, tau=np.ones(1), r=np.ones(1, complex), v_leak=np.zeros(1), v_threshold=np.ones(1)), None, {},
     "LIF node 'cell': r has dtype complex128; expected real numbers"),
    (_lif(), _bare(nir.Linear, weight=np.array([["a"]])), {}, "Linear node 'fc': weight has dtype <U1"),
    (_lif(), _bare(nir.Affine, weight=np.ones((1, 1)), bias=np.full(1, np.nan)), {},
     "Affine node 'fc': bias holds a non-finite value (nan)"),
    (_lif(), None, {"dt": "x"}, "dt = 'x'; the time step must be one number of seconds > 0"),
    (_lif(), None, {"readout": "max"}, "metadata readout is 'max'; allowed: spike_count, membrane_sum"),
])
def test_malformed_node_fields_are_workload_errors(cell, fc, meta, needle):
    g = _graph(cell, meta=meta)
    if fc is not None:
        g.nodes["fc"] = fc
    with pytest.raises(WorkloadError) as err:
        _run(g)
    assert needle in str(err.value)
