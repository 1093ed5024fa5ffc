"""benchmarks/scaling.py: option parsing, the per-rank summary and the analytic model's arithmetic.

The measurements themselves are the benchmark's job (docs/performance.md), not the tests'.
"""

from __future__ import annotations

import pytest

from benchmarks.scaling import (COLL_CANDIDATES, DENSE_PER_SHARE, TREE_NODE, crossing, model_constants, model_gather,
                                model_share, parse_ints, parse_sizes, pattern_names, summarize)


def test_sizes_and_rank_counts_parse():
    assert parse_sizes("1e7, 1e8") == [10_000_000, 100_000_000]
    assert parse_sizes("") == []
    assert parse_ints("1,2,16") == [1, 2, 16]
    with pytest.raises(ValueError):
        parse_sizes("0")
    with pytest.raises(ValueError):
        parse_ints("2,0")
    with pytest.raises(ValueError):
        pattern_names("fast")


def test_core_pattern_set_leaves_out_the_root_cause_modules():
    from analyzer.analyze import select_patterns
    from benchmarks.analysis import SCALASCA2

    names = set(pattern_names("core"))
    assert pattern_names("all") is None  # no --patterns option: every built-in pattern
    every = {p.name: type(p).__module__ for p in select_patterns(None, plugins=False)}
    root_cause = {n for n, mod in every.items() if mod in SCALASCA2}
    assert root_cause and not root_cause & names
    assert names == set(every) - root_cause


def _rec(rank, peak_mib, cpu, traffic=None):
    return {"rank": rank, "peak_kib": peak_mib * 1024, "base_kib": 100 * 1024, "cpu_s": cpu, "wall_s": cpu + 1,
            "traffic": traffic or {}}


def test_summary_takes_rank_0_apart_from_the_largest_other_rank():
    recs = [_rec(2, 300, 1.0, {"gather_bytes_sent": 10}), _rec(0, 900, 2.0), _rec(1, 250, 1.5,
                                                                                   {"gather_bytes_sent": 7})]
    s = summarize(recs)
    assert (s["ranks"], s["rank0_peak_mb"], s["other_peak_mb"], s["other_rank"]) == (3, 900, 300, 2)
    assert s["sum_peak_mb"] == 1450 and s["cpu_s"] == 4.5 and s["rank_wall_s"] == 3.0
    assert s["bytes_exchanged"] == 17


def test_summary_prefers_the_analysis_counters_and_says_n_a_without_any():
    recs = [_rec(0, 500, 1.0, {"counters": {"bytes_sent": 40}}), _rec(1, 400, 1.0, {"counters": {"bytes_sent": 2}})]
    assert summarize(recs)["bytes_exchanged"] == 42
    alone = summarize([_rec(0, 500, 1.0)])
    assert alone["bytes_exchanged"] is None and alone["other_peak_mb"] is None


CONSTS = {"E0": 1000, "L0": 16, "C0": 10, "P0": 4, "metrics": 5, "M0": 1e6, "send_bytes": 50,
          "sets": {"all": {"m": 300.0, "g": 20.0, "w": 90.0}, "core": {"m": 100.0, "g": 10.0, "w": 40.0}},
          "rows": {"messages": 0.02, "collectives": 0.01, "mpi_rma_ops": 0.001},
          "bytes": {"messages": 200, "collectives": 80, "mpi_rma_ops": 64}}


def test_gather_model_puts_every_event_on_rank_0():
    E = 1e6
    m1, m2 = model_gather(CONSTS, "all", E, 1), model_gather(CONSTS, "all", E, 2)
    m8 = model_gather(CONSTS, "all", E, 8, e0=0, emax=E / 4)  # 8 ranks over 4 processes: rank 0's share empty
    assert m1["other"] is None and m1["exchanged"] == 0
    assert m1["rank0"] == m8["rank0"] == pytest.approx(1e6 + (300 + 20) * E)  # flat in K: what issue 17 removes
    assert m2["other"] == pytest.approx(1e6 + 90 * E / 2) and m2["exchanged"] == pytest.approx(20 * E / 2)
    assert m8["other"] == pytest.approx(1e6 + 90 * E / 4) and m8["exchanged"] == pytest.approx(20 * E)
    assert model_gather(CONSTS, "core", E, 2)["rank0"] == pytest.approx(1e6 + 110 * E)


def test_crossing_fraction_of_a_ring():
    assert crossing(1, 4) == 0 and crossing(2, 4) == 0.5 and crossing(4, 4) == 1 and crossing(16, 4) == 1


def test_share_model_terms():
    E, K, L, C, f = 1e9, 8, 32, 10, 0.5
    m = model_share(CONSTS, E, K, L, C, f)
    procs = 4 * L / 16  # processes at this scale: as many threads each as measured
    ke = min(K, procs)
    inst = 0.01 * E / procs
    assert m["parts"]["messages"] == pytest.approx(f * 0.02 * E * (50 + 200))
    assert m["parts"]["collectives"] == pytest.approx(2 * COLL_CANDIDATES * 80 * inst * ke)
    assert m["parts"]["rma"] == pytest.approx((K - 1) * 0.001 * E * 64)
    assert m["parts"]["trees"] == pytest.approx(K * (K - 1) * C * TREE_NODE)
    assert m["parts"]["result_blocks"] == pytest.approx(5 * C * L * 8 * (K - 1) / K)
    assert m["exchanged"] == pytest.approx(sum(m["parts"].values()))
    fixed = 2 * COLL_CANDIDATES * 80 * inst + 0.001 * E * 64 + DENSE_PER_SHARE * C * L * 8 + K * C * TREE_NODE
    other = 1e6 + 100 * E / ke + f * 0.02 * (E / ke) * 200 + fixed
    assert m["other"] == pytest.approx(other)
    assert m["rank0"] == pytest.approx(other + 5 * C * L * 8)
    assert m["fallback"] == 0
    glob = model_share(CONSTS, E, K, L, C, f, global_patterns=True)
    assert glob["rank0"] == pytest.approx(1e6 + 300 * E + 5 * C * L * 8 + fixed)  # the serial analysis' tables
    assert glob["fallback"] == pytest.approx(20 * (E - E / ke))
    # measured constants replace the bounds; the shares' sizes replace E/K'
    fit = model_share(dict(CONSTS, c_coll=2.0, g_fb=7.0), E, K, L, C, f, global_patterns=True, e0=0, emax=E / 2)
    assert fit["parts"]["collectives"] == pytest.approx(2 * 2.0 * 80 * inst * ke)
    assert fit["fallback"] == pytest.approx(7.0 * E)
    assert fit["other"] == pytest.approx(1e6 + 100 * E / 2 + f * 0.02 * (E / 2) * 200 + fixed
                                         - 2 * (COLL_CANDIDATES - 2.0) * 80 * inst + 7.0 * E / 2)  # + its payload


def test_share_constants_fitted_at_two_ranks_reproduce_that_point():
    tables = {"events": 1000, "locations": 16, "callpaths": 10, "metrics": 5,
              "tables": {"messages": {"rows_per_event": 0.02, "bytes_per_row": 200, "send_side_bytes": 34},
                         "collectives": {"rows_per_event": 0.01, "bytes_per_row": 80}}}
    serial = {"all": {"rank0_peak_mb": 2.0}, "core": {"rank0_peak_mb": 1.5}}
    # at K = 2 over 4 processes (f = 1/2): messages 0.5 0.02 1000 (34 + 16 + 200) = 2500, trees 2 10 24 = 480,
    # result blocks 5 10 16 8 / 2 = 3200; 2.5 collective instances over 2 shares: 2 c 80 2.5 2 = 800 c
    rest, c_coll = 2500 + 480 + 3200, 1.5
    two = {"core": {"bytes_exchanged": rest + 800 * c_coll}, "all": {"bytes_exchanged": rest + 800 * c_coll + 5000}}
    c = model_constants(tables, 2**20, serial, two, 4, "share", e0_two=500)
    assert c["sets"]["core"]["m"] == pytest.approx(0.5 * 2**20 / 1000)
    assert c["c_coll"] == pytest.approx(c_coll) and c["g_fb"] == pytest.approx(5000 / 500)
    assert model_share(c, 1000, 2, f=crossing(2, 4))["exchanged"] == pytest.approx(rest + 800 * c_coll)


def test_share_model_falls_with_k_where_the_events_dominate():
    E = 1e10
    peaks = [model_share(CONSTS, E, k, f=crossing(k, 4))["rank0"] for k in (1, 2, 4)]
    assert peaks[0] > peaks[1] > peaks[2]
    assert model_share(CONSTS, E, 1)["exchanged"] == 0


def test_rank_peak_writes_what_one_process_cost(tmp_path):
    import importlib
    import json

    from benchmarks import rank_peak
    from random_hybrid_traces import random_builder

    trace = tmp_path / "t.elg"
    random_builder(3, n_ranks=2, n_threads=2, steps=10).write(trace)
    pipeline = importlib.import_module("analyzer.analyze")
    before = pipeline.analyze
    out = tmp_path / "ranks"
    assert rank_peak.main([str(out), "--", str(trace), "-q", "-j", "1", "-o", str(tmp_path / "t.cubex")]) == 0
    assert pipeline.analyze is before  # the wrapper that kept the cube is gone again
    rec = json.loads((out / "rank0.json").read_text())
    assert rec["rank"] == 0 and rec["rc"] == 0 and (tmp_path / "t.cubex").exists()
    assert rec["peak_kib"] >= rec["base_kib"] > 0 and rec["cpu_s"] > 0 and rec["wall_s"] > 0
    assert "gather_bytes_sent" not in rec["traffic"]  # one process sends nothing
    # a bad option is the CLI's exit status, still recorded
    assert rank_peak.main([str(out), "--", str(trace), "--no-such-option"]) == 2
    assert json.loads((out / "rank0.json").read_text())["rc"] == 2
    assert rank_peak.main([str(out)]) == 2  # no "--": usage
