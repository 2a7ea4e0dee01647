"""``libra-opt in-network``: prints every choice best first, writes CSV, bad input exits 2."""

import csv

from libra_opt.cli.main import main


def test_prints_choices_and_writes_csv(tmp_path, capsys):
    out = tmp_path / "choices.csv"
    rc = main(["in-network", "gpt3_175b_a100_cluster", "--set", "budget_usd=3e7",
               "--csv", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    # a plain-language header, not the class name ('InNetworkResult: 4 choices, best first')
    assert text.splitlines()[0] == "In-network reduction: 4 choices, each solved exactly, best first"
    assert "InNetworkResult" not in text
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 4
    objs = [float(r["objective"]) for r in rows]
    assert objs == sorted(objs)
    assert {r["in_network_dims"] for r in rows} == {"", "hb", "scaleout", "hb;scaleout"}


def test_bad_dims_exit_2(capsys):
    rc = main(["in-network", "gpt3_175b_a100_cluster", "--dims", "nope"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--dims" in err and len(err.strip().splitlines()) == 1
