"""The numba replay against the slow reference (analyzer/reference.py) on random hybrid traces."""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_trace

from kernel_references import reference_replay
from analyzer.replay import replay


def _rows(table, cols):
    return sorted(tuple(None if (isinstance(v, float) and np.isnan(v)) else round(float(v), 9)
                        for v in (table[c][i] for c in cols)) for i in range(len(table)))


def _ref_rows(rows, cols):
    return sorted(tuple(None if r[c] is None else round(float(r[c]), 9) for c in cols) for r in rows)


@pytest.mark.parametrize("seed", range(12))
def test_fast_replay_matches_reference(seed):
    trace = random_trace(seed, n_ranks=3 + seed % 2, n_threads=2 + seed % 3, steps=20 + seed)
    ctx = replay(trace)
    ref = reference_replay(trace)

    # call tree: same nodes in the same order with the same parents and regions
    assert ctx.calltree.parent.tolist() == ref["parent"]
    reg = [int(r) for r in ctx.calltree.region]
    if ref["synthetic"]:
        assert ctx.synthetic_root
        reg[0] = None
    assert reg == ref["region"]

    # visits and times per (call path, location)
    for (c, l), v in ref["visits"].items():
        assert ctx.visits[c, l] == v
    assert ctx.visits.sum() == sum(ref["visits"].values())
    for (c, l), v in ref["incl"].items():
        assert ctx.incl_time[c, l] == pytest.approx(v, abs=1e-9)
    for (c, l), v in ref["excl"].items():
        assert ctx.excl_time[c, l] == pytest.approx(v, abs=1e-9)

    # tables
    mcols = ["send_loc", "send_time", "send_cnode", "send_enter", "sendc_cnode", "sendc_enter", "sendc_exit",
             "recv_loc", "recv_time", "recv_cnode", "recv_enter", "recv_exit", "recvp_cnode", "recvp_enter", "bytes"]
    assert _rows(ctx.tables["messages"], mcols) == _ref_rows(ref["messages"], mcols)
    ccols = ["loc", "comm", "seq", "cnode", "enter", "exit", "root", "sent", "recvd"]
    assert _rows(ctx.tables["collectives"], ccols) == _ref_rows(ref["collectives"], ccols)

    teams = ctx.tables["omp_teams"]
    assert len(teams) == len(ref["teams"])
    got = sorted((int(teams["process"][i]), int(teams["team_id"][i]), int(teams["master_loc"][i]),
                  round(teams["fork_time"][i], 9), round(teams["join_time"][i], 9), int(teams["parallel_cnode"][i]))
                 for i in range(len(teams)))
    want = sorted((p, t, d["master_loc"], round(d["fork_time"], 9), round(d["join_time"], 9), d["parallel_cnode"])
                  for (p, t), d in ref["teams"].items())
    assert got == want
    # members and barriers: key the dense team by its (process, team id)
    key = {int(teams["team"][i]): (int(teams["process"][i]), int(teams["team_id"][i])) for i in range(len(teams))}
    mem = ctx.tables["omp_team_members"]
    assert sorted((key[int(mem["team"][i])], int(mem["loc"][i]), int(mem["thread_num"][i]), round(mem["enter"][i], 9))
                  for i in range(len(mem))) == \
        sorted((m["team"], m["loc"], m["thread_num"], round(m["enter"], 9)) for m in ref["members"])
    bar = ctx.tables["omp_barriers"]
    assert sorted((key[int(bar["team"][i])], int(bar["seq"][i]), int(bar["loc"][i]), int(bar["cnode"][i]),
                   bool(bar["implicit"][i]), round(bar["enter"][i], 9)) for i in range(len(bar))) == \
        sorted((b["team"], b["seq"], b["loc"], b["cnode"], b["implicit"], round(b["enter"], 9)) for b in ref["barriers"])
    # barrier instances group exactly the rows with the same (team, seq)
    inst = {}
    for i in range(len(bar)):
        inst.setdefault(int(bar["instance"][i]), set()).add((int(bar["team"][i]), int(bar["seq"][i])))
    assert all(len(v) == 1 for v in inst.values())

    lcols = ["process", "lock", "order", "loc", "acquire_time", "release_time", "prev_release_time", "cnode",
             "call_enter"]
    lk = ctx.tables["locks"]
    assert [tuple(None if np.isnan(x) else round(float(x), 9) for x in (lk[c][i] for c in lcols))
            for i in range(len(lk))] == \
        [tuple(None if r[c] is None else round(float(r[c]), 9) for c in (c.replace("call_", "") for c in lcols))
         for r in ref["locks"]]
