"""POP efficiencies in the JSON summary and the cube attributes, and expert-check gating on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tracefmt
from analyzer import analyze
from analyzer.cli.tools import check_main
from analyzer.cube import read_cubex, write_cubex, write_json
from analyzer.cube.json_summary import to_json_dict
from patterns.pop import NAMES, PATTERNS, efficiencies

POP = [p.name for p in PATTERNS]


def _two_ranks(work1: float):
    """Rank 0 computes 4 s, rank 1 ``work1`` s; both leave an MPI_Barrier at 5 s."""
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    for loc, work in ((r0, 4.0), (r1, work1)):
        b.enter(loc, 0.0, "main")
        b.enter(loc, 0.0, "work"); b.exit(loc, work)
        b.collective(loc, work, 5.0, "MPI_Barrier")
        b.exit(loc, 5.0)
    return b.build()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("pop")
    out = {}
    for name, work1 in (("balanced", 4.0), ("imbalanced", 2.0)):
        cube = analyze(_two_ranks(work1), patterns=POP, plugins=False)
        write_json(cube, str(d / f"{name}.json"))
        write_cubex(cube, str(d / f"{name}.cubex"))
        out[name] = cube
        out[name + ".json"], out[name + ".cubex"] = str(d / f"{name}.json"), str(d / f"{name}.cubex")
    out["plain.json"] = str(d / "plain.json")
    write_json(analyze(_two_ranks(2.0), patterns=["time"], plugins=False), out["plain.json"])
    return out


def test_json_summary_holds_the_efficiencies_of_the_run(results):
    doc = json.loads(Path(results["imbalanced.json"]).read_text())
    cube = results["imbalanced"]
    assert doc["efficiencies"] == efficiencies({n: cube.total(n) for n in NAMES})
    # designed: average useful 3 s, the busiest 4 s, T = 5 s
    assert doc["efficiencies"]["load_balance"] == pytest.approx(0.75)
    assert doc["efficiencies"]["parallel_efficiency"] == pytest.approx(0.6)
    assert doc["efficiencies"]["communication_efficiency"] == pytest.approx(0.8)
    assert set(doc["efficiencies"]) == {"parallel_efficiency", "load_balance", "communication_efficiency",
                                        "serialisation_efficiency", "transfer_efficiency"}


def test_a_stored_cubex_keeps_them(results):
    again = to_json_dict(read_cubex(results["imbalanced.cubex"]))
    assert again["efficiencies"] == json.loads(Path(results["imbalanced.json"]).read_text())["efficiencies"]


def test_without_the_pop_metrics_there_are_none(results):
    assert "efficiencies" not in json.loads(Path(results["plain.json"]).read_text())


def _check(*argv):
    return check_main([str(a) for a in argv])


def test_check_fails_when_an_efficiency_drops(results, capsys):
    rc = _check(results["imbalanced.json"], "--baseline", results["balanced.json"], "--max-decrease", "load_balance=5%")
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "REGRESSION load_balance = 0.75" in out and "baseline 1" in out
    # the other way round it rose: passes; a cube is read as well as a JSON summary
    assert _check(results["balanced.cubex"], "--baseline", results["imbalanced.json"],
                  "--max-decrease", "load_balance=5%") == 0


def test_min_value_on_the_parallel_efficiency(results, capsys):
    assert _check(results["imbalanced.json"], "--min-value", "parallel_efficiency=0.7") == 1
    assert "below the minimum" in capsys.readouterr().out
    assert _check(results["balanced.json"], "--min-value", "parallel_efficiency=0.7") == 0  # 0.8


def test_an_efficiency_the_result_lacks_is_bad_input(results, capsys):
    assert _check(results["plain.json"], "--min-value", "parallel_efficiency=0.7") == 2
    err = capsys.readouterr().err
    assert "no metric 'parallel_efficiency'" in err and len(err.strip().splitlines()) == 1
