"""Placement of parallelism groups on fabric dimensions."""

import pytest

from libra_opt.errors import InputError, input_context
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.mapping import place_groups

F4 = Fabric(
    (
        Dim("chiplet", "ring", 4, "C"),
        Dim("package", "fully_connected", 8, "P"),
        Dim("node", "ring", 4, "N"),
        Dim("pod", "switch", 32, "D"),
    )
)  # 4096 NPUs


def test_automatic_order_is_tp_cp_ep_dp_pp_innermost_first():
    p = place_groups(F4, {"tp": 16, "cp": 2, "ep": 4, "edp": 4, "pp": 8})
    assert p.spans["tp"] == (4, 4, 1, 1)
    assert p.spans["cp"] == (1, 2, 1, 1)
    assert p.spans["ep"] == (1, 1, 4, 1)
    assert p.spans["edp"] == (1, 1, 1, 4)
    assert p.spans["pp"] == (1, 1, 1, 8)
    groups = p.groups()
    assert groups["dp"] == (1, 2, 4, 4)  # ep x edp x cp
    assert groups["edp"] == (1, 2, 1, 4)
    # every dimension is exactly filled
    for d, size in enumerate(F4.sizes):
        prod = 1
        for span in p.spans.values():
            prod *= span[d]
        assert prod == size


def test_explicit_whole_dimensions_and_partial_counts():
    p = place_groups(
        F4, {"tp": 32, "edp": 128}, {"tp": ["chiplet", "package"], "dp": ["node", "pod"]}
    )
    assert p.spans["tp"] == (4, 8, 1, 1) and p.spans["edp"] == (1, 1, 4, 32)
    f = Fabric((Dim("node", "switch", 8, "A"), Dim("pod", "switch", 32, "B")))
    p = place_groups(f, {"tp": 4, "edp": 64}, {"dp": {"node": 2, "pod": 32}})
    assert p.spans["edp"] == (2, 32) and p.spans["tp"] == (4, 1)


def test_ep_is_carved_from_the_innermost_part_of_dp():
    f = Fabric((Dim("node", "switch", 8, "A"), Dim("pod", "switch", 32, "B")))
    p = place_groups(f, {"ep": 16, "edp": 16}, {"dp": ["node", "pod"]})
    assert p.spans["ep"] == (8, 2) and p.spans["edp"] == (1, 16)
    p = place_groups(f, {"ep": 16, "edp": 16}, {"dp": ["node", "pod"], "ep": {"pod": 16}})
    assert p.spans["ep"] == (1, 16) and p.spans["edp"] == (8, 2)
    with pytest.raises(InputError, match="ep must be a part of dp"):
        place_groups(
            f, {"tp": 4, "ep": 8, "edp": 8}, {"dp": {"node": 2, "pod": 32}, "ep": {"node": 4, "pod": 2}}
        )


@pytest.mark.parametrize(
    ("degrees", "mapping", "message", "field"),
    [
        ({"tp": 8, "edp": 16}, None, "= 128 NPUs, the fabric has 4096", "m"),
        ({"tp": 16, "edp": 256}, {"tp": ["chiplet"]}, "tp spans 4 NPUs (chiplet: 4), the parallelism has tp = 16", "m.tp"),
        ({"tp": 16, "edp": 256}, {"tp": {"chiplet": 3}}, "3 does not divide the size 4", "m.tp.chiplet"),
        ({"tp": 32, "edp": 128}, {"tp": ["package", "chiplet"], "dp": {"package": 2, "pod": 32, "node": 2}},
         "'package' (size 8) is over-subscribed: tp 8 x dp 2", "m"),
        ({"tp": 32, "edp": 128}, {"tp": ["rack"]}, "no dimension named 'rack'", "m.tp"),
        ({"tp": 32, "edp": 128}, {"sp": ["chiplet"]}, "unknown group(s) sp", "m"),
        ({"tp": 32, "edp": 128}, {"tp": [3]}, "expected dimension names", "m.tp"),
    ],
)
def test_mapping_errors(degrees, mapping, message, field):
    with pytest.raises(InputError) as e:
        with input_context("s.yaml"):
            place_groups(F4, degrees, mapping, prefix="m")
    assert message in e.value.message
    assert e.value.field == field and e.value.source == "s.yaml"


def test_partial_explicit_mapping_places_the_rest_automatically():
    f = Fabric((Dim("a", "ring", 6, "A"), Dim("b", "ring", 6, "B")))
    p = place_groups(f, {"tp": 4, "pp": 9})
    assert p.spans["tp"] == (2, 2) and p.spans["pp"] == (3, 3)
    p = place_groups(f, {"tp": 4, "pp": 9}, {"pp": {"a": 3, "b": 3}})
    assert p.spans["tp"] == (2, 2)
    p = place_groups(F4, {"tp": 4, "edp": 1024}, {"tp": {"package": 4}})
    assert p.spans["tp"] == (1, 4, 1, 1) and p.spans["edp"] == (4, 2, 4, 32)
