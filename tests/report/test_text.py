"""The text and JSON reports: Rail-only forwarding overhead, by hand."""

import json

import pytest
from numpy.testing import assert_allclose

from libra_opt.cli import main
from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
from libra_opt.io.presets import catalog_cost_model
from libra_opt.report.text import evaluation_to_dict, format_evaluation, rail_forwarding
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.examples import toy_scenario
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload


def a2a_scenario(fabric):
    """One 1 GB all-to-all over 8 HB domains of 8 GPUs, sequential collectives."""
    w = Workload("moe", (Layer("l", Phase(0.0, (Collective("all_to_all", 1e9, "ep"),))),),
                 {"ep": (8, 8)})
    return Scenario(fabric, catalog_cost_model(), (w,), traffic_model="native",
                    collective_model="sequential", name="a2a")


def test_forwarding_overhead_by_hand():
    # Rail-only: 7/8 GB on the HB domain (everything first moves to the destination's rail)
    # and 7/8 GB on the rail; rails joined: only the 7/64 GB for the own domain on HB
    scen = a2a_scenario(rail_only(64, 8, 8))
    ev = evaluate(scen, [450.0, 50.0])
    (row,) = rail_forwarding(scen, ev)
    assert_allclose(row["forwarded_bytes_per_step"], 1e9 * (7 / 8 - 7 / 64), rtol=1e-12)
    t_rail = (7 / 8) / 450 + (7 / 8) / 50
    t_joined = (7 / 64) / 450 + (7 / 8) / 50
    assert_allclose([row["step_time_s"], row["joined_step_time_s"]], [t_rail, t_joined],
                    rtol=1e-12)
    assert_allclose(row["overhead_pct"], 100 * (t_rail / t_joined - 1), rtol=1e-12)
    assert row["overhead_pct"] == pytest.approx(9.59, abs=0.005)
    text = format_evaluation(scen, ev)
    assert "Rail-only forwarding" in text and "+9.59%" in text and "0.766" in text
    assert evaluation_to_dict(scen, ev)["rail_forwarding"] == [row]


def test_forwarding_overhead_with_a_per_dimension_efficiency_by_hand():
    # the same all-to-all with NVLink at half its bandwidth (collectives.efficiency): the
    # HB bytes take twice as long on both fabrics, and the report agrees with the step time
    from libra_opt.traffic.rail import rail_report
    from libra_opt.traffic.topology_aware import CollectiveSettings

    base = a2a_scenario(rail_only(64, 8, 8))
    scen = Scenario(base.fabric, base.cost_model, base.workloads, traffic_model="native",
                    collective_model="sequential", name="a2a",
                    collectives=CollectiveSettings(efficiency={"hb": 0.5}))
    ev = evaluate(scen, [450.0, 50.0])
    (row,) = rail_forwarding(scen, ev)
    t_rail = (7 / 8) / 225 + (7 / 8) / 50
    t_joined = (7 / 64) / 225 + (7 / 8) / 50
    assert_allclose([row["step_time_s"], row["joined_step_time_s"]], [t_rail, t_joined],
                    rtol=1e-12)
    assert_allclose(ev.workloads[0].step_time_s, t_rail, rtol=1e-12)
    rep = rail_report(scen.workloads[0], scen.fabric, [450.0, 50.0], scen.timing)
    assert_allclose([rep["time_s"].iloc[0], rep["joined_time_s"].iloc[0]], [t_rail, t_joined],
                    rtol=1e-12)


def test_no_forwarding_section_on_other_fabrics():
    scen = a2a_scenario(rail_optimized_fat_tree(64, 8, 8))
    ev = evaluate(scen, [450.0, 50.0])
    assert rail_forwarding(scen, ev) == []
    assert "Rail-only forwarding" not in format_evaluation(scen, ev)
    assert "rail_forwarding" not in evaluation_to_dict(scen, ev)
    toy = toy_scenario()
    assert "rail_forwarding" not in evaluation_to_dict(toy, evaluate(toy, [200, 100]))


def test_solve_shows_the_overhead_for_the_rail_only_example(capsys):
    assert main(["solve", "deepseek_v3_rail_only", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (row,) = out["rail_forwarding"]
    assert row["workload"] == "deepseek_v3" and row["forwarded_bytes_per_step"] > 0
    # pipelined collectives: forwarded HB bytes cost nothing while the rail is the slowest
    assert row["step_time_s"] >= row["joined_step_time_s"]
    assert main(["solve", "deepseek_v3_rail_only"]) == 0
    assert "Rail-only forwarding" in capsys.readouterr().out


# ------------------------------------------------------------------ one number format


def test_numbers_have_one_rule_never_an_exponent_for_large_values():
    from libra_opt.report.text import format_number, format_pct, format_quantity, format_whole

    # the figures the audit saw as 1.93754e+06 W, 3.09146e+06 $/GB/s and 6.2776e+07 $
    assert format_number(1937541.967) == "1,937,542"
    assert format_number(3091456.2) == "3,091,456"
    assert format_number(90112.0) == "90,112"
    assert format_number(10.9748127) == format_number(10.9748127, 6) == "10.9748"
    assert format_number(-0.0) == "0" and format_number(float("inf")) == "n/a"
    assert format_number(-1.583e-08, 4) == "-1.583e-08"   # tiny magnitudes keep the exponent
    assert format_whole(62776039.00766) == "62,776,039"
    assert format_quantity(62776039.00766, "$") == "$62,776,039"
    assert format_quantity(24.49809396849524, "s") == "24.4981 s"
    assert (format_pct(-0.0004, 1), format_pct(-0.0004, 1, sign=True)) == ("0.0%", "0.0%")
    assert (format_pct(5.0, 1, sign=True), format_pct(-0.044835, 2)) == ("+5.0%", "-0.04%")


def _cli_table(text: str, first: str) -> list[list[str]]:
    """Rows (cells split on 2+ spaces) of the text table whose header starts with ``first``."""
    import re

    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(first))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.strip():
            break
        rows.append(re.split(r"\s{2,}", ln.strip()))
    return rows


def test_constraint_table_snaps_solver_noise_and_writes_dollars_whole(capsys):
    """The budget row read 1.73888e+07 <= 4e+07, slack 2.261e+07; active bounds are met to
    the solver's tolerance (slack 4.8e-09) and read 0."""
    from libra_opt.io import load_scenario
    from libra_opt.optimize.problem import solve

    sol = solve(load_scenario("gpt3_175b_a100_cluster"))
    budget = next(c for c in sol.constraints if c.label == "budget_usd")
    cost = sol.evaluation.cost.network_cost_usd
    assert main(["solve", "gpt3_175b_a100_cluster"]) == 0
    rows = {r[0]: r for r in _cli_table(capsys.readouterr().out, "constraint")}
    assert rows["budget_usd"][1:5] == [f"{round(cost):,}", "<=", f"{round(budget.rhs):,}",
                                       f"{round(budget.rhs - cost):,}"]
    assert rows["budget_usd"][1:5] == ["17,388,800", "<=", "40,000,000", "22,611,200"]
    for label in ("bw.hb <= 600.0", "bw.scaleout <= 100.0"):
        c = next(c for c in sol.constraints if c.label == label)
        assert 0 < abs(c.slack) < 1e-6 * c.rhs   # the solver's noise...
        assert rows[label][4] == "0" and rows[label][5] == "yes"   # ...is shown as 0


def test_a_cost_times_time_objective_is_not_in_exponent_form(capsys):
    from libra_opt.io import load_scenario
    from libra_opt.optimize.problem import solve

    value = solve(load_scenario("transformer_1t_4d_ppc")).objective_value
    assert value > 1e6
    assert main(["solve", "transformer_1t_4d_ppc"]) == 0
    out = capsys.readouterr().out
    assert (f"Objective (perf_per_cost): weighted step time x network cost "
            f"{round(value):,} s*$") in out
