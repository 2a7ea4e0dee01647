"""compare_fabrics: hand-derived reductions, brute-force equal-budget optimum, errors."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import minimize_scalar

from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.cost.tco import TcoModel, cluster_rate_coefficients
from libra_opt.errors import InputError
from libra_opt.explore.compare import budget_optimum, compare_fabrics
from libra_opt.fabric.builders import multi_dim, rail_only, rail_optimized_fat_tree
from libra_opt.io.presets import catalog_cost_model
from libra_opt.report.plots import plot_comparison
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.rail import native_step_time_s
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

CM = CostModel.from_tables(
    {"HB": {"link": 1.0, "switch": 3.0, "nic": 0.0},
     "SO": {"link": 2.0, "switch": 10.0, "nic": 40.0, "transceiver": 14.0}},
    {"HB": {"link": 0.1, "switch": 0.2, "nic": 0.0},
     "SO": {"link": 0.0, "switch": 0.25, "nic": 0.4, "transceiver": 0.16}},
)


def fabrics(n=4096, h=8):
    kw = dict(hb_tier="HB", scale_out_tier="SO")
    return {"fat_tree": rail_optimized_fat_tree(n, h, 64, **kw), "rail_only": rail_only(n, h, 64, **kw)}


def moe(h=8, k1=8, dp=512):
    a2a = Collective("all_to_all", 2e8, "ep")
    ar = Collective("all_reduce", 5e8, "dp")
    return Workload("moe", (Layer("l", Phase(0.01, (a2a,)), Phase(0.01, (a2a,)),
                                  Phase(0.01, (ar,)), count=4),),
                    {"ep": (h, k1), "dp": (1, dp)})


def test_equal_bandwidth_reductions_by_hand():
    df = compare_fabrics(moe(), fabrics(), cost_model=CM, bw_gbps=[450.0, 50.0],
                         timing=TimingModel("sequential", traffic_model="native"),
                         modes=["equal_bw"])
    ft, ro = df.iloc[0], df.iloc[1]
    # Scale-out per NPU per GB/s: fat-tree (3 tiers) 6 + 50 + 40 + 84 = 180, rail-only
    # (2 tiers) 4 + 30 + 40 + 56 = 130; HB 4 $/GB/s in both.
    cost_ft = 4096 * (4 * 450 + 180 * 50)
    cost_ro = 4096 * (4 * 450 + 130 * 50)
    assert (ft.network_cost_usd, ro.network_cost_usd) == pytest.approx((cost_ft, cost_ro))
    assert ro.cost_reduction_pct == pytest.approx(100 * (1 - cost_ro / cost_ft))
    p_ft = 4096 * (0.3 * 450 + (5 * 0.25 + 0.4 + 6 * 0.16) * 50)
    p_ro = 4096 * (0.3 * 450 + (3 * 0.25 + 0.4 + 4 * 0.16) * 50)
    assert ro.power_reduction_pct == pytest.approx(100 * (1 - p_ro / p_ft))
    assert (ft.scaleout_tiers, ro.scaleout_tiers) == (3, 2)
    # Step time: each all-to-all of 0.2 GB over (8, 8): scale-out 0.2 x 7/8 / 50 in both;
    # HB 0.2 x 7/64 (fat-tree) or 0.2 x 7/8 (rail-only) / 450; all-reduce within a rail.
    so, ar = 0.2 * 7 / 8 / 50, 2 * 0.5 * 511 / 512 / 50
    t_ft = 4 * (0.03 + 2 * (so + 0.2 * 7 / 64 / 450) + ar)
    t_ro = 4 * (0.03 + 2 * (so + 0.2 * 7 / 8 / 450) + ar)
    assert (ft.step_time_s, ro.step_time_s) == pytest.approx((t_ft, t_ro), rel=1e-12)
    assert ro.step_time_change_pct == pytest.approx(100 * (t_ro / t_ft - 1))


def test_hierarchical_traffic_model_hides_forwarding():
    df = compare_fabrics(moe(), fabrics(), cost_model=CM, bw_gbps=[450.0, 50.0],
                         timing=TimingModel("sequential", traffic_model="hierarchical"),
                         modes=["equal_bw"])
    assert df.step_time_s.iloc[0] == pytest.approx(df.step_time_s.iloc[1], rel=1e-15)


def test_equal_budget_matches_brute_force_on_the_budget_line():
    f = rail_only(4096, 8, 64, hb_tier="HB", scale_out_tier="SO")
    kappa = cost_coefficients(f, CM).usd_per_gbps
    budget = 4.0e7
    w = moe()
    for model in ("pipelined", "sequential"):
        timing = TimingModel(model, traffic_model="native")
        bw = budget_optimum([w], f, kappa, budget, timing=timing)
        assert kappa @ bw == pytest.approx(budget, rel=1e-6)
        # Step time decreases in every B, so the optimum spends the budget: search the line.
        b1 = np.linspace(1e-3, budget / kappa[1] * (1 - 1e-9), 200001)
        b0 = (budget - kappa[1] * b1) / kappa[0]
        cand = [native_step_time_s(w, f, (x, y), timing) for x, y in zip(b0[::50], b1[::50], strict=True)]
        best = int(np.argmin(cand)) * 50
        lo, hi = max(best - 50, 0), min(best + 50, b1.size - 1)

        def on_line(y, timing=timing):
            return native_step_time_s(w, f, ((budget - kappa[1] * y) / kappa[0], y), timing)

        res = minimize_scalar(on_line, bounds=(b1[lo], b1[hi]), method="bounded",
                              options={"xatol": 1e-12})
        fine = min(res.fun, min(on_line(b1[i]) for i in range(lo, hi + 1)))
        got = native_step_time_s(w, f, bw, timing)
        assert got <= fine * (1 + 1e-9)
        assert got == pytest.approx(fine, rel=1e-6)


def test_equal_budget_rows_and_tco_columns():
    tco = TcoModel(25000, 5000, 700, 300, 1.2, 0.1, 4, steps=1e5)
    df = compare_fabrics(moe(), fabrics(), cost_model=CM, bw_gbps=[450.0, 50.0], tco=tco)
    assert list(df["mode"]) == ["equal_bw"] * 2 + ["equal_budget"] * 2 + ["equal_budget_joint"] * 2
    assert df.attrs["traffic_model"] == "native"  # workloads without a timing: routing-aware
    # equal_budget: the fat-tree's scale-out cost at equal bandwidth, 4096 x 180 $ x 50 GB/s,
    # spent on the scale-out of each family; the HB domain held at 450 GB/s.
    so_budget = df.attrs["scaleout_budget_usd"]
    assert so_budget == pytest.approx(4096 * 180 * 50, rel=1e-12)
    assert df.attrs["hb_gbps"] == (450.0,)
    eb = df[df["mode"] == "equal_budget"]
    assert eb.scaleout_cost_usd.to_numpy() == pytest.approx([so_budget] * 2, rel=1e-6)
    assert [b[0] for b in eb.bw_gbps] == pytest.approx([450.0, 450.0], rel=1e-9)
    # Rail-only: 130 $ per GB/s on the scale-out, so 180/130 x 50 GB/s.
    assert eb.bw_gbps.iloc[1][1] == pytest.approx(50 * 180 / 130, rel=1e-6)
    # equal_budget_joint: the fat-tree's total cost, HB and scale-out re-optimized jointly.
    budget = df.attrs["budget_usd"]
    assert budget == pytest.approx(df.network_cost_usd.iloc[0])
    joint = df[df["mode"] == "equal_budget_joint"]
    assert joint.network_cost_usd.to_numpy() == pytest.approx([budget, budget], rel=1e-6)
    # The cheaper fabric buys more bandwidth and wins at equal budget, in both modes.
    assert eb.step_time_s.iloc[1] < eb.step_time_s.iloc[0]
    assert joint.step_time_s.iloc[1] < joint.step_time_s.iloc[0]
    row = df.iloc[1]
    r0, r = cluster_rate_coefficients(tco, fabrics()["rail_only"],
                                      cost_coefficients(fabrics()["rail_only"], CM))
    rate = r0 + r @ np.array(row.bw_gbps)
    assert row.usd_per_hour == pytest.approx(3600 * rate)
    assert row.run_cost_usd == pytest.approx(1e5 * row.step_time_s * rate)


def test_budget_usd_leaves_the_scaleout_the_rest():
    df = compare_fabrics(moe(), fabrics(), cost_model=CM, bw_gbps=[450.0, 50.0],
                         budget_usd=5e7, modes=["equal_budget"])
    hb_cost = 4096 * 4 * 450
    assert df.attrs["scaleout_budget_usd"] == pytest.approx(5e7 - hb_cost)
    assert df.scaleout_cost_usd.to_numpy() == pytest.approx([5e7 - hb_cost] * 2, rel=1e-6)
    with pytest.raises(InputError, match="does not cover the HB domain"):
        compare_fabrics(moe(), fabrics(), cost_model=CM, bw_gbps=[450.0, 50.0],
                        budget_usd=hb_cost / 2, modes=["equal_budget"])


def test_switch_columns_by_hand_radix_32():
    kw = dict(hb_tier="HB", scale_out_tier="SO")
    fs = {"fat_tree": rail_optimized_fat_tree(4096, 8, 32, **kw),
          "rail_only": rail_only(4096, 8, 32, **kw)}
    df = compare_fabrics(moe(), fs, cost_model=CM, bw_gbps=[450.0, 50.0], modes=["equal_bw"])
    # HB: one ideal 8-port switch per domain, 4096 / 8 = 512 in both.
    assert list(df.hb_switches) == [512, 512]
    # Fat-tree over 4096 with k = 32: 3 tiers (k^3/4 = 8192 >= 4096 > k^2/2 = 512):
    # 2 x 4096 / 32 = 256 leaves, 256 aggregation, 4096 / 32 = 128 cores.
    # Rail-only: 8 rails of 512 = k^2/2, 2 tiers each: 1024 / 32 = 32 leaves + 16 spines.
    assert list(df.scaleout_switches) == [256 + 256 + 128, 8 * (32 + 16)]
    assert list(df.scaleout_tiers) == [3, 2]
    assert "switches" not in df


def bounded_scenario(f=None):
    from libra_opt.scenario.constraints import parse_constraint

    f = f or fabrics()["fat_tree"]
    cons = tuple(parse_constraint(c, f) for c in
                 ("bw[0] >= 100", "bw[0] <= 600", "bw[1] >= 12.5", "bw[1] <= 60"))
    return Scenario(f, CM, (moe(),), constraints=cons, budget_usd=3.0e7)


def test_every_row_respects_the_scenario_bounds():
    scen = bounded_scenario()
    # Without the bounds the rail-only joint optimum leaves them (the cap binds).
    free = compare_fabrics(moe(), fabrics(), cost_model=CM, bw_gbps=[100.0, 60.0],
                           modes=["equal_budget_joint"])
    assert max(b[1] for b in free.bw_gbps) > 60 * (1 + 1e-6)
    df = compare_fabrics(scen, fabrics())
    assert set(df["mode"]) == {"equal_bw", "equal_budget", "equal_budget_joint"}
    for bw in df.bw_gbps:
        assert 100 * (1 - 1e-6) <= bw[0] <= 600 * (1 + 1e-6)
        assert 12.5 * (1 - 1e-6) <= bw[1] <= 60 * (1 + 1e-6)
    # equal_budget holds the HB at the equal-bandwidth value (the scenario's optimum).
    hb = df[df["mode"] == "equal_bw"].bw_gbps.iloc[0][0]
    assert df.attrs["hb_gbps"] == pytest.approx((hb,))
    for bw in df[df["mode"] == "equal_budget"].bw_gbps:
        assert bw[0] == pytest.approx(hb, rel=1e-6)


def dp_only():
    ar = Collective("all_reduce", 5e8, "dp")
    return Workload("dp", (Layer("l", Phase(0.01, (ar,)), count=4),), {"dp": (1, 512)})


UNPRICED_HB = CostModel.from_tables({"HB": {"link": 0.0, "switch": 0.0, "nic": 0.0},
                                     "SO": {"link": 2.0, "switch": 10.0, "nic": 40.0}})


def _idle_hb(floor, model):
    from libra_opt.scenario.constraints import parse_constraint

    f = fabrics()["fat_tree"]
    cons = () if floor is None else (parse_constraint(f"bw[0] >= {floor}", f),)
    df = compare_fabrics(dp_only(), fabrics(), cost_model=UNPRICED_HB, bw_gbps=[450.0, 50.0],
                         modes=["equal_budget_joint"], constraints=cons,
                         timing=TimingModel(model, traffic_model="native"))
    return [b[0] for b in df.bw_gbps]


def test_unused_unpriced_hb_gets_its_least_bandwidth():
    # The HB carries nothing and costs nothing: the joint budget row does not bound it, and
    # solve's idle-dimension LP gives it the least bandwidth, 0.
    assert _idle_hb(None, "pipelined") == pytest.approx([0.0, 0.0], abs=1e-6)


@pytest.mark.parametrize(("floor", "model"), [(None, "sequential"), (100.0, "pipelined")])
def test_unused_unpriced_hb_least_bandwidth_when_the_budget_binds(floor, model):
    """Regression: the idle-dimension LP was infeasible when the used dimensions, held at the
    solver's answer, exceeded the binding budget row by round-off (73.2 and 150.7 GB/s)."""
    assert _idle_hb(floor, model) == pytest.approx([floor or 0.0] * 2, abs=1e-6)


def test_scenario_input_defaults_to_its_optimum():
    f = fabrics()["fat_tree"]
    from libra_opt.scenario.constraints import parse_constraint

    scen = Scenario(f, CM, (moe(),), constraints=(parse_constraint("sum(bw) == 500", f),))
    df = compare_fabrics(scen, fabrics(), modes=["equal_bw"])
    assert sum(df.bw_gbps.iloc[0]) == pytest.approx(500, rel=1e-6)
    assert df.bw_gbps.iloc[0] == df.bw_gbps.iloc[1]


def test_errors_name_the_problem():
    with pytest.raises(InputError, match="fabric 'torus'"):
        compare_fabrics(moe(), {**fabrics(), "torus": multi_dim((8, 8, 64), ("ring",) * 3,
                                                                 tiers=("HB",) * 3)},
                        cost_model=CM, bw_gbps=[450.0, 50.0])
    with pytest.raises(InputError, match="bw_gbps is required"):
        compare_fabrics(moe(), fabrics(), cost_model=CM)
    with pytest.raises(InputError, match="cost_model is required"):
        compare_fabrics(moe(), fabrics(), bw_gbps=[1, 1])
    with pytest.raises(InputError, match="baseline"):
        compare_fabrics(moe(), fabrics(), cost_model=CM, bw_gbps=[1, 1], baseline="x")
    with pytest.raises(InputError, match="cost nothing"):
        free = CostModel.from_tables({"HB": {"link": 0.0, "switch": 0.0, "nic": 0.0},
                                      "SO": {"link": 1.0, "switch": 1.0, "nic": 1.0}})
        compare_fabrics(moe(), fabrics(), cost_model=free, bw_gbps=[1, 1])
    with pytest.raises(InputError, match="modes"):
        compare_fabrics(moe(), fabrics(), cost_model=CM, bw_gbps=[1, 1], modes=["best"])


def test_plot_comparison_returns_the_figure():
    import matplotlib.pyplot as plt

    df = compare_fabrics(moe(), {"ft": rail_optimized_fat_tree(4096, 8, 64),
                                 "ro": rail_only(4096, 8, 64)},
                         cost_model=catalog_cost_model(), bw_gbps=[450.0, 50.0],
                         modes=["equal_bw"])
    fig, ax = plt.subplots()
    assert plot_comparison(df, ax=ax) is fig
    heights = sorted(round(b.get_height(), 6) for b in ax.patches)
    assert heights[-1] == 1.0 and heights[0] < 1.0  # fat-tree bars at 1, rail-only cheaper
    plt.close(fig)
    with pytest.raises(InputError, match="no rows"):
        plot_comparison(df, mode="equal_budget")


def _violations(scen, fabric, bw):
    import dataclasses

    from libra_opt.scenario.evaluate import evaluate

    ev = evaluate(dataclasses.replace(scen, fabric=fabric, budget_usd=None), np.asarray(bw))
    return [k for k, v in ev.residuals.items() if v > 1e-6 * ev.residual_scales[k]]


@pytest.mark.parametrize("bw", [[50.0, 20.0], [1000.0, 300.0], [450.0, 250.0]])
def test_budget_rows_keep_the_scenario_bounds_whatever_the_equal_bw_vector(bw):
    """Regression: an equal-bandwidth vector outside the bounds (HB 50 against a 100 floor,
    scale-out 300 against a 200 cap) must not carry into the budget rows."""
    from libra_opt.fabric.builders import as_family
    from libra_opt.io import load_scenario

    scen = load_scenario("deepseek_v3_rail_only")
    fabrics = {f: as_family(scen.fabric, f, 64) for f in ("fat_tree", "rail_only", "multi_dim")}
    df = compare_fabrics(scen, fabrics, bw_gbps=bw)
    for _, row in df[df["mode"] != "equal_bw"].iterrows():
        assert _violations(scen, fabrics[row["fabric"]], row["bw_gbps"]) == [], row.to_dict()
    held = df[df["mode"] == "equal_budget"]
    # the HB is held at the bound nearest the requested value (hb in [100, 900])
    assert_allclose([b[0] for b in held["bw_gbps"]], min(max(bw[0], 100.0), 900.0), rtol=1e-9)


def test_rail_only_example_saves_a_clos_tier():
    """4,096 GPUs in 8-GPU domains on radix 64: the fat-tree's Clos over 4,096 needs 3 tiers
    (2 tiers reach 64^2/2 = 2,048), a rail's Clos over 512 needs 2."""
    from libra_opt.fabric.builders import as_family
    from libra_opt.io import load_scenario

    scen = load_scenario("deepseek_v3_rail_only")
    fabrics = {f: as_family(scen.fabric, f, 64) for f in ("fat_tree", "rail_only")}
    df = compare_fabrics(scen, fabrics, modes=["equal_bw"]).set_index("fabric")
    assert df.loc["fat_tree", "scaleout_tiers"] == 3 and df.loc["rail_only", "scaleout_tiers"] == 2
    assert df.loc["rail_only", "cost_reduction_pct"] > 20
