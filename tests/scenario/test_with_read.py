"""with_read: reading file-backed entries gives what dataclasses.replace gives; any other
change is checked as an edit."""

from __future__ import annotations

import dataclasses

import pytest

from libra_opt.errors import InputError
from libra_opt.io import load_spec
from libra_opt.scenario.spec import FabricSpec, Ref, WorkloadSpec, with_read


def test_reading_refs_matches_replace():
    w = WorkloadSpec("w", astra_sim=Ref("w.txt"), communicator=Ref("c.yml"))
    changes = {"astra_sim": Ref("w.txt", "parsed", "/x/w.txt"),
               "communicator": Ref("c.yml", {"dp": (2,)}, "/x/c.yml")}
    got, want = with_read(w, **changes), dataclasses.replace(w, **changes)
    assert got == want and got.astra_sim.resolved and got.communicator.path == "/x/c.yml"
    assert not w.astra_sim.resolved  # the original is untouched
    f = FabricSpec(libra_network=Ref("n.yml"))
    assert with_read(f, libra_network=Ref("n.yml", "net")) == FabricSpec(
        libra_network=Ref("n.yml", "net"))


def test_other_changes_are_checked():
    w = WorkloadSpec("w", astra_sim=Ref("w.txt"), communicator=Ref("c.yml"))
    with pytest.raises(InputError, match="weight -1.0 is out of range: expected a number > 0"):
        with_read(w, weight=-1.0)
    # a Ref naming another entry is an edit: made (and checked) by dataclasses.replace
    assert with_read(w, astra_sim=Ref("other.txt")).astra_sim.ref == "other.txt"
    with pytest.raises(InputError):
        with_read(FabricSpec(libra_network=Ref("n.yml")), libra_network=None)


def test_loaded_spec_equals_its_round_trip():
    spec = load_spec("gpt3_175b_4d")
    assert not spec.unresolved
    assert spec == dataclasses.replace(spec)
