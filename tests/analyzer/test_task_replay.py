"""The replay of OpenMP tasks and POSIX threads (format 2.1): task-aware call paths, the task and thread
tables, barrier waits without the tasks run in them; against the slow reference and by hand."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from random_hybrid_traces import random_trace

import analyzer
from analyzer.replay import replay
from kernel_references import reference_replay
from tracefmt.validate import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tracefmt"))
from test_task_thread_events import task_trace, thread_trace  # noqa: E402


def paths(ctx):
    names, tree = ctx.region_name, ctx.calltree
    out = []
    for c in range(len(tree)):
        p, n = [], c
        while n >= 0:
            p.append(names[tree.region[n]])
            n = tree.parent[n]
        out.append("/".join(reversed(p)))
    return out


def _r(v):
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else round(float(v), 9)


@pytest.mark.parametrize("seed", range(8))
def test_fast_replay_matches_reference_with_tasks_and_threads(seed):
    trace = random_trace(seed, n_ranks=2 + seed % 2, n_threads=2 + seed % 3, steps=25 + seed, tasks=True)
    ctx = replay(trace)
    ref = reference_replay(trace)
    assert ctx.calltree.parent.tolist() == ref["parent"]
    for (c, l), v in ref["excl"].items():
        assert ctx.excl_time[c, l] == pytest.approx(v, abs=1e-9)
    for (c, l), v in ref["incl"].items():
        assert ctx.incl_time[c, l] == pytest.approx(v, abs=1e-9)

    fr = ctx.tables["omp_task_fragments"]
    cols = ["loc", "task", "cnode", "enter", "exit", "begin_how", "end_how", "host_cnode", "own_time"]
    assert sorted(tuple(_r(fr[c][i]) for c in cols) for i in range(len(fr))) == \
        sorted(tuple(_r(f[c]) for c in cols) for f in ref["task_fragments"])
    tk = ctx.tables["omp_tasks"]
    cols = ["process", "task", "parent", "create_loc", "create_time", "create_cnode", "cnode", "start_time",
            "end_time", "n_fragments", "own_time", "complete"]
    assert [tuple(_r(tk[c][i]) for c in cols) for i in range(len(tk))] == \
        sorted(tuple(_r(t[c]) for c in cols) for t in ref["tasks"])
    th = ctx.tables["threads"]
    cols = ["process", "thread", "create_loc", "create_time", "create_cnode", "loc", "begin_time", "end_time",
            "join_loc", "join_time", "join_cnode", "join_enter", "join_exit"]
    assert [tuple(_r(th[c][i]) for c in cols) for i in range(len(th))] == \
        sorted(tuple(_r(t[c]) for c in cols) for t in ref["threads"])
    bar = ctx.tables["omp_barriers"]
    assert sorted((int(bar["loc"][i]), _r(bar["enter"][i]), _r(bar["task_busy"][i])) for i in range(len(bar))) == \
        sorted((b["loc"], _r(b["enter"]), _r(b["task_busy"])) for b in ref["barriers"])
    assert len(tk) and len(th) and (bar["task_busy"] > 0).any()


@pytest.mark.parametrize("seed", range(6))
def test_task_dependences_and_ready_times_match_reference(seed):
    """Random task traces with dependences: the omp_task_dependences rows, and every task's ready_time (its
    creation, or its latest predecessor's completion)."""
    trace = random_trace(seed, n_ranks=2, n_threads=2 + seed % 3, steps=30, tasks=True, deps=True)
    assert not [p for p in validate(trace) if "task" in str(p)]  # (its messages need not keep the clock condition)
    ctx = replay(trace, tables=("omp_tasks", "omp_task_dependences"))
    ref = reference_replay(trace)
    d = ctx.tables["omp_task_dependences"]
    cols = ["process", "loc", "time", "predecessor", "successor"]
    assert sorted(tuple(_r(d[c][i]) for c in cols) for i in range(len(d))) == \
        sorted(tuple(_r(x[c]) for c in cols) for x in ref["task_dependences"])
    tk = ctx.tables["omp_tasks"]
    assert [(int(tk["process"][i]), int(tk["task"][i]), _r(tk["ready_time"][i])) for i in range(len(tk))] == \
        sorted((t["process"], t["task"], _r(t["ready_time"])) for t in ref["tasks"])
    assert len(d) and (tk["ready_time"] > tk["create_time"]).any()  # some task was held back


def test_tasks_run_in_barriers_and_taskwaits_have_the_task_s_call_path():
    """task_trace (tests/tracefmt): the worker runs task 1 in the explicit barrier, task 1 runs tasks 2 (resumed)
    and 3 in its taskwait; the master runs the first part of the untied task 2 in the same barrier."""
    ctx = replay(task_trace().build())
    p = paths(ctx)
    task, child = p.index("main/!$omp parallel @t.c:5/!$omp task @t.c:10"), \
        p.index("main/!$omp parallel @t.c:5/!$omp task @t.c:20")
    bar = p.index("main/!$omp parallel @t.c:5/!$omp barrier @t.c:30")
    wait = p.index("main/!$omp parallel @t.c:5/!$omp task @t.c:10/!$omp taskwait @t.c:12")
    assert not [x for x in p if x.count("!$omp task @") > 1]  # no task below another: one path per construct
    # worker: task 1 (0.8-3.5) runs 2 (1.6-2.0) and 3 (2.0-3.0) in its taskwait (1.0-3.0)
    # task 1 without its taskwait (0.7), plus the resumed part of task 2 (same construct, 0.4)
    assert ctx.excl_time[task, 1] == pytest.approx(0.7 + 0.4)
    assert ctx.excl_time[task, 0] == pytest.approx(0.5)  # the master's part of task 2
    assert ctx.excl_time[wait, 1] == pytest.approx(2.0 - 1.4)  # the taskwait without the tasks in it
    assert ctx.excl_time[child, 1] == pytest.approx(1.0)
    # the barrier (worker 0.7-5.0 with task 1 in 0.8-3.5; master 1.0-5.0 with task 2 in 1.0-1.5)
    assert ctx.excl_time[bar, 1] == pytest.approx(4.3 - 2.7)
    assert ctx.excl_time[bar, 0] == pytest.approx(4.0 - 0.5)
    tk = ctx.tables["omp_tasks"]
    assert tk["parent"].tolist() == [0, 0, 1] and tk["complete"].all()
    assert tk["own_time"].tolist() == pytest.approx([2.7 - 1.4, 0.5 + 0.4, 1.0])
    assert tk["n_fragments"].tolist() == [1, 2, 1] and tk["first_loc"].tolist() == [1, 0, 1]


def test_barrier_wait_excludes_the_tasks_run_before_the_last_arrival():
    cube = analyzer.analyze(task_trace().build())
    # first barrier: worker waits 0.25 (0.25-0.5); second: worker arrives at 0.7, the master at 1.0, but the
    # worker runs task 1 from 0.8: it waited 0.1, not 0.3
    assert cube.total("omp_ebarrier_wait") == pytest.approx(0.25 + 0.1)


def test_thread_lifetimes_continue_the_creator_s_call_path():
    for reuse in (True, False):
        ctx = replay(thread_trace(reuse).build())
        p = paths(ctx)
        assert "main/pthread_create/worker" in p and "worker" not in p
        th = ctx.tables["threads"]
        assert th["thread"].tolist() == [1, 2] and th["loc"].tolist() == ([1, 1] if reuse else [1, 2])
        assert th["create_cnode"].tolist() == [p.index("main/pthread_create")] * 2
        assert th["join_cnode"].tolist() == [p.index("main/pthread_join")] * 2
        w = p.index("main/pthread_create/worker")
        assert ctx.excl_time[w].sum() == pytest.approx(2 * 0.95)
