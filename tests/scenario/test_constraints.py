"""The constraint parser: accepted forms and errors that name the constraint and column."""

import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.errors import InputError, input_context
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.scenario.constraints import constraint_rows, parse_constraint

F = Fabric((Dim("node", "ring", 4, "A"), Dim("pod", "switch", 8, "B"), Dim("dc", "ring", 2, "A")))


@pytest.mark.parametrize(
    ("text", "coef", "cost", "power", "sense", "rhs"),
    [
        ("bw[0] >= bw[1]", (1, -1, 0), 0, 0, ">=", 0),
        ("bw.node + bw.pod == 200", (1, 1, 0), 0, 0, "==", 200),
        ("2*bw.pod - 0.5 * bw[0] <= 10", (-0.5, 2, 0), 0, 0, "<=", 10),
        ("cost <= 2e7", (0, 0, 0), 1, 0, "<=", 2e7),
        ("sum(bw) = 1000", (1, 1, 1), 0, 0, "==", 1000),
        ("3 * (bw[0] - bw[2]) / 2 + 1 >= -bw.pod", (1.5, 1, -1.5), 0, 0, ">=", -1),
        ("power + 0.001*cost <= 5e5 - bw[2]", (0, 0, 1), 0.001, 1, "<=", 5e5),
        ("10 >= bw.dc", (0, 0, -1), 0, 0, ">=", -10),
    ],
)
def test_parse(text, coef, cost, power, sense, rhs):
    c = parse_constraint(text, F)
    assert_allclose(c.bw_coef, coef)
    assert (c.cost_coef, c.power_coef, c.sense) == (cost, power, sense)
    assert c.rhs == pytest.approx(rhs)
    assert c.label == text


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("bw[3] <= 1", "(column 4): no dimension 3"),
        ("bw.rack <= 1", "no dimension named 'rack'"),
        ("bw[0] * bw[1] <= 1", "(column 7): product of two variables"),
        ("1 / bw[0] <= 1", "division by a variable"),
        ("bw[0] / 0 <= 1", "division by zero"),
        ("bw[0] < 1", "strict '<'"),
        ("bw[0] + 1", "expected exactly one of"),
        ("bw[0] <= 1 <= 2", "only one comparison"),
        ("bw[0] <= 1 )", "unexpected ')'"),
        ("bw[0] & 1 <= 2", "unexpected character '&'"),
        ("__import__('os') <= 1", "unexpected character"),
        ("os.system <= 1", "unknown name 'os'"),
        ("bw[0] - bw[0] <= 1", "no variable left"),
        ("sum(cost) <= 1", "sum(...) takes only bw"),
        ("", "non-empty"),
    ],
)
def test_errors(text, fragment):
    with pytest.raises(InputError) as info, input_context("s.yaml"):
        parse_constraint(text, F, field="constraints.linear[2]")
    msg = info.value.one_line()
    assert fragment in msg
    assert msg.startswith("s.yaml: constraints.linear[2]")


def test_rows_substitute_cost_and_power():
    cm = CostModel.from_tables(
        {"A": {"link": 1.0}, "B": {"link": 1.0, "switch": 1.0, "nic": 1.0}},
        {"A": {"link": 0.5}, "B": {"link": 0.0, "switch": 0.0, "nic": 1.0}},
    )
    k = cost_coefficients(F, cm)  # 64 NPUs: kappa = (64, 192, 64), pi = (32, 64, 32)
    (row,) = constraint_rows([parse_constraint("cost + 2*power - bw[0] <= 9", F)], k)
    assert_allclose(row.a, [64 + 64 - 1, 192 + 128, 64 + 64])
    no_power = cost_coefficients(F, CostModel.from_tables({"A": {"link": 1.0}, "B": {"link": 1, "switch": 1, "nic": 1}}))
    with pytest.raises(InputError, match="no power model"):
        constraint_rows([parse_constraint("power <= 1", F)], no_power)
