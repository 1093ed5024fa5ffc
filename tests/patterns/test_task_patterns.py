"""The OpenMP task properties (patterns/tasks.py) on hand-built traces with answers worked out by hand,
and their kernels (patterns/kernels/tasks.py) against slow, obvious references."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import analyzer
import tracefmt
from analyzer.replay import replay
from patterns.kernels.tasks import innermost_team, pending_until
from patterns.tasks import OmpTaskManagement, OmpTaskStarvation

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tracefmt"))
from test_task_thread_events import CHILD, TASK, close_team, task_trace, team  # noqa: E402

BAR = "!$omp barrier @t.c:30"
TASK_METRICS = ("omp_taskwait", "omp_task_management", "omp_task_starvation", "omp_task_imbalance",
                "omp_task_execution", "omp_ebarrier_wait", "omp_ibarrier_wait")


def results(b):
    """{metric: {(call path, location): value}} of the nonzero cells, call paths as region names."""
    cube = analyzer.analyze(b.build(), plugins=False)
    ctx = cube.context
    names = ctx.region_name
    path = []
    for c in range(ctx.n_cnodes):
        p, n = [], c
        while n >= 0:
            p.append(names[ctx.calltree.region[n]])
            n = ctx.calltree.parent[n]
        path.append("/".join(reversed(p[:-1])))  # below main
    out = {}
    for m in TASK_METRICS:
        dense = ctx.results[m]
        out[m] = {(path[c], int(loc)): float(dense[c, loc]) for c, loc in zip(*np.nonzero(dense))}
    return out


def approx(d):
    return {k: pytest.approx(v, abs=1e-9) for k, v in d.items()}


PAR = "!$omp parallel @t.c:5"


def producer_trace():
    """A serial producer: the master creates tasks 1, 2 (TASK), 3 (CHILD) and 4 (TASK) at 0.3, 0.6, 0.9 and
    0.95 in a single; the worker, in the barrier from 0.2, runs 1 (0.35-0.45) and 2 (0.65-0.75); the master
    runs 3 (1.0-1.5) and 4 (1.5-1.7) in the barrier it entered at 1.0; both leave it at 2.0."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.enter(m, 0.2, "!$omp single @t.c:8")
    b.task_create(m, 0.3, 1, TASK)
    b.task_create(m, 0.6, 2, TASK)
    b.task_create(m, 0.9, 3, CHILD)
    b.task_create(m, 0.95, 4, TASK)
    b.exit(m, 1.0)
    b.enter(m, 1.0, BAR)
    b.task_run(m, 1.0, 1.5, 3)
    b.task_run(m, 1.5, 1.7, 4)
    b.omp_coll_exit(m, 2.0)
    b.enter(w, 0.2, BAR)
    b.task_run(w, 0.35, 0.45, 1)
    b.task_run(w, 0.65, 0.75, 2)
    b.omp_coll_exit(w, 2.0)
    close_team(b, m, w, 2.0)
    return b


def test_serial_producer_starves_the_worker():
    r = results(producer_trace())
    bar, task, child = f"{PAR}/{BAR}", f"{PAR}/{TASK}", f"{PAR}/{CHILD}"
    # worker's gaps: 0.2-0.35 (task 1 created at 0.3), 0.45-0.65 (task 2 at 0.6), 0.75-2.0 (no task of its
    # own any more; task 4, queued from 0.95, starts at 1.5: the team has an unstarted task until then)
    assert r["omp_task_starvation"] == approx({(bar, 1): 0.1 + 0.15 + (1.5 - 0.75)})
    # created but not yet running on the worker: 0.3-0.35 and 0.6-0.65; the master starts 3 and 4 at once
    assert r["omp_task_management"] == approx({(bar, 1): 0.05 + 0.05})
    # the barrier wait as before tasks, minus the tasks the worker ran before the master arrived at 1.0
    assert r["omp_ebarrier_wait"] == approx({(bar, 1): 1.0 - 0.2 - 0.2})
    # team task time: master 0.5 + 0.2, worker 0.2; mean 0.45; max - mean = 0.25 on the master, split over
    # its constructs as its task time is
    assert r["omp_task_imbalance"] == approx({(child, 0): 0.25 * 0.5 / 0.7, (task, 0): 0.25 * 0.2 / 0.7})
    assert r["omp_task_execution"] == approx({(child, 0): 0.5, (task, 0): 0.2, (task, 1): 0.2})
    assert r["omp_taskwait"] == {}


def test_nested_untied_tasks_in_barrier_and_taskwait():
    """task_trace (tests/tracefmt): the worker runs task 1 in the barrier (0.7-5.0) from 0.8 to 3.5; task 1
    creates 3 and waits in a taskwait (1.0-3.0) in which the worker resumes the untied task 2 (1.6-2.0, first
    part on the master in its barrier, 1.0-1.5) and runs 3 (2.0-3.0).  Tasks 1 and 2 were created at 0.3
    and 0.4, before the first barrier (master 0.5-0.6, worker 0.25-0.6), 3 at 0.9."""
    r = results(task_trace())
    first, bar = f"{PAR}/!$omp barrier", f"{PAR}/{BAR}"
    wait = f"{PAR}/{TASK}/!$omp taskwait @t.c:12"
    task, child = f"{PAR}/{TASK}", f"{PAR}/{CHILD}"
    # the taskwait without the tasks run in it: 2.0 - (0.4 + 1.0)
    assert r["omp_taskwait"] == approx({(wait, 1): 0.6})
    # first barrier: tasks 1 and 2 exist unstarted the whole time (they start at 0.8 and 1.0); second: the
    # master idles from 1.5 while task 3 waits to start (2.0); the worker idles 0.7-0.8 with task 1 ready
    assert r["omp_task_starvation"] == approx({(first, 0): 0.1, (first, 1): 0.35, (bar, 0): 2.0 - 1.5})
    # only the START of task 1 counts: a resumed fragment's readiness is not recorded, and task 3 starts
    # as soon as task 2's fragment ends
    assert r["omp_task_management"] == approx({(bar, 1): 0.1})
    # master 0.5 of task 2; worker 1.3 of task 1, 0.4 of task 2, 1.0 of task 3: mean 1.6, max - mean 1.1
    assert r["omp_task_imbalance"] == approx({(task, 1): 1.1 * 1.7 / 2.7, (child, 1): 1.1 * 1.0 / 2.7})
    assert r["omp_ebarrier_wait"] == approx({(first, 1): 0.25, (bar, 1): 0.1})


def long_child_trace():
    """The master creates child 1 (TASK) at 0.3 in a single and waits for it in a taskwait from 0.5 to 1.5; the
    worker, in the single's barrier from 0.2, runs it from 0.35 to 1.5.  Then the master creates child 2
    (CHILD) at 1.6 in a taskgroup and waits at the group's end from 1.7 to 2.2 while the worker runs it from
    1.62 to 2.2."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    single, ibar = "!$omp single @t.c:8", "!$omp implicit barrier @t.c:8"
    b.enter(m, 0.2, single)
    b.task_create(m, 0.3, 1, TASK)
    b.enter(m, 0.5, "!$omp taskwait @t.c:12")
    b.exit(m, 1.5)
    b.enter(m, 1.55, "!$omp taskgroup @t.c:14")
    b.task_create(m, 1.6, 2, CHILD)
    b.enter(m, 1.7, "!$omp taskgroup wait @t.c:14")
    b.exit(m, 2.2)
    b.exit(m, 2.2)
    b.exit(m, 2.3)
    b.barrier(m, 2.3, 2.4, implicit=True, region=ibar)
    b.enter(w, 0.2, ibar)
    b.task_run(w, 0.35, 1.5, 1)
    b.task_run(w, 1.62, 2.2, 2)
    b.omp_coll_exit(w, 2.4, ibar)
    close_team(b, m, w, 3.0)
    return b


def test_taskwait_and_taskgroup_wait_for_a_long_child():
    r = results(long_child_trace())
    single = f"{PAR}/!$omp single @t.c:8"
    wait = f"{single}/!$omp taskwait @t.c:12"
    group_wait = f"{single}/!$omp taskgroup @t.c:14/!$omp taskgroup wait @t.c:14"
    assert r["omp_taskwait"] == approx({(wait, 0): 1.0, (group_wait, 0): 0.5})
    ibar = f"{PAR}/!$omp implicit barrier @t.c:8"
    # worker: 0.2-0.35 before task 1 (created 0.3), 1.5-1.62 before task 2 (created 1.6): starvation until the
    # creation, management after; 2.2-2.4 at the end: nothing left to start
    assert r["omp_task_starvation"] == approx({(ibar, 1): 0.1 + 0.1})
    assert r["omp_task_management"] == approx({(ibar, 1): 0.05 + 0.02})
    # the barrier wait: the worker waits for the master's arrival at 2.3 but for the 1.73 s of tasks it ran
    assert r["omp_ibarrier_wait"] == approx({(ibar, 1): 2.3 - 0.2 - (1.15 + 0.58)})
    # all task time on the worker: 1.15 + 0.58, mean 0.865
    assert r["omp_task_imbalance"] == approx({(f"{PAR}/{TASK}", 1): 0.865 * 1.15 / 1.73,
                                             (f"{PAR}/{CHILD}", 1): 0.865 * 0.58 / 1.73})


def test_a_call_inside_a_barrier_that_is_no_task_caps_its_gaps():
    """A call recorded inside a barrier besides the tasks (not on traces of our runtime): the scheduling gaps
    span it, the barrier's exclusive time does not, and the gap properties stay within the barrier's time."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.enter(m, 0.2, "!$omp single @t.c:8")
    b.task_create(m, 0.8, 1, TASK)
    b.exit(m, 0.85)
    b.barrier(m, 0.85, 1.0, region=BAR)
    b.enter(w, 0.2, BAR)
    b.enter(w, 0.2, "poll")
    b.exit(w, 0.85)
    b.task_run(w, 0.9, 0.95, 1)
    b.omp_coll_exit(w, 1.0, BAR)
    close_team(b, m, w, 1.0)
    # computed directly: the whole analysis refuses this trace, as the barrier wait exceeds the barrier there
    ctx = replay(b.build())
    bar = next(c for c in range(ctx.n_cnodes) if ctx.region_name[ctx.calltree.region[c]] == BAR)
    got = {}
    for pat in (OmpTaskStarvation(), OmpTaskManagement()):
        with ctx.computing(pat):
            got[pat.name] = pat.compute(ctx)
    # the gap 0.2-0.9 holds 0.6 of starvation (until the creation) and 0.1 of management, but the barrier's
    # own time is 0.8 - 0.65 (poll) - 0.05 (task) = 0.1
    assert ctx.excl_time[bar, 1] == pytest.approx(0.1)
    assert got["omp_task_starvation"][bar, 1] == pytest.approx(0.1)
    assert got["omp_task_management"][bar, 1] == pytest.approx(0.1)
    # and the master idles in its barrier from 0.85 until the worker starts the task at 0.9
    assert got["omp_task_starvation"][bar, 0] == pytest.approx(0.05)
    assert got["omp_task_starvation"].sum() == pytest.approx(0.1 + 0.05)


def two_instances(heavy_first: int, heavy_second: int):
    """Two instances of one parallel region, each with one task per thread run in the closing barrier:
    1.0 s on thread ``heavy_*``, 0.2 s on the other."""
    b = tracefmt.TraceBuilder()
    locs = b.location(0, 0), b.location(0, 1)
    b.enter(locs[0], 0.0, "main")
    task_id, t0 = 1, 0.0
    for team_id, heavy in ((1, heavy_first), (2, heavy_second)):
        b.fork(locs[0], t0, team_id, 2)
        for loc in locs:
            b.enter(loc, t0 + 0.1, PAR, team=team_id)
        for th, loc in enumerate(locs):
            b.task_create(loc, t0 + 0.2, task_id + th, TASK)
        for th, loc in enumerate(locs):
            b.enter(loc, t0 + 0.3, "!$omp implicit barrier")
            b.task_run(loc, t0 + 0.3, t0 + 0.3 + (1.0 if th == heavy else 0.2), task_id + th)
            b.omp_coll_exit(loc, t0 + 1.5, "!$omp implicit barrier", team=team_id)
            b.exit(loc, t0 + 1.5)
        b.join(locs[0], t0 + 1.6, team_id, 2)
        task_id, t0 = task_id + 2, t0 + 2.0
    b.exit(locs[0], t0, "main")
    return b


@pytest.mark.parametrize("heavy", [(0, 0), (0, 1)])
def test_imbalance_is_per_team_instance(heavy):
    r = results(two_instances(*heavy))
    task = f"{PAR}/{TASK}"
    # each instance: max 1.0 - mean 0.6 = 0.4, on its heavy thread, also when the threads take turns
    expect = {}
    for h in heavy:
        expect[(task, h)] = expect.get((task, h), 0.0) + 0.4
    assert r["omp_task_imbalance"] == approx(expect)
    assert r["omp_task_starvation"] == {}  # every task starts at once
    assert r["omp_task_management"] == approx({})


def test_included_task_is_no_scheduling_gap():
    """An undeferred task runs inside the construct that creates it, not in a barrier or taskwait: it is task
    time but no scheduling point; alone in its team it is balanced against nothing but idle threads."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.enter(m, 0.2, "!$omp single @t.c:8")
    b.task_create(m, 0.3, 1, TASK, flags=tracefmt.layout.TaskFlag.UNDEFERRED)
    b.task_run(m, 0.3, 0.7, 1)
    b.exit(m, 0.8)
    b.barrier(m, 0.8, 0.9, implicit=True, region="!$omp implicit barrier @t.c:8")
    b.barrier(w, 0.2, 0.9, implicit=True, region="!$omp implicit barrier @t.c:8")
    close_team(b, m, w, 1.0)
    r = results(b)
    task = f"{PAR}/{TASK}"
    assert r["omp_task_execution"] == approx({(task, 0): 0.4})
    assert r["omp_task_imbalance"] == approx({(task, 0): 0.4 - 0.2})
    assert r["omp_task_starvation"] == {} and r["omp_task_management"] == {}


# ---------------------------------------------------------------- kernels against references
def innermost_team_reference(m_loc, m_enter, m_exit, m_team, q_loc, q_time):
    out = []
    for loc, t in zip(q_loc, q_time):
        best = None
        for i in range(len(m_loc)):
            if m_loc[i] == loc and m_enter[i] <= t <= m_exit[i]:
                if best is None or (m_enter[i], -m_exit[i]) > (m_enter[best], -m_exit[best]):
                    best = i
        out.append(-1 if best is None else int(m_team[best]))
    return out


def nested_members(rng, n_locs):
    """Properly nested parallel-region intervals per location (a random walk of opens and closes)."""
    rows = []
    team = 0
    for loc in range(n_locs):
        t, stack = 0.0, []
        for _ in range(rng.integers(0, 30)):
            t += float(rng.integers(1, 4))  # integer times: ties between queries and bounds happen
            if stack and (len(stack) > 3 or rng.random() < 0.5):
                i = stack.pop()
                rows[i][2] = t
            else:
                rows.append([loc, t, np.nan, team])
                stack.append(len(rows) - 1)
                team += 1
        for i in reversed(stack):
            t += 1.0
            rows[i][2] = t
    return np.array(rows, np.float64).reshape(-1, 4)


@pytest.mark.parametrize("seed", range(6))
def test_innermost_team_matches_reference(seed):
    rng = np.random.default_rng(seed)
    rows = nested_members(rng, 4)
    m_loc, m_enter, m_exit, m_team = rows[:, 0].astype(np.int64), rows[:, 1], rows[:, 2], rows[:, 3].astype(np.int64)
    q_loc = rng.integers(0, 5, 200)
    q_time = rng.integers(0, 60, 200).astype(np.float64)
    mo = np.lexsort((-m_exit, m_enter, m_loc))
    qo = np.lexsort((q_time, q_loc))
    got = innermost_team(m_loc[mo], m_enter[mo], m_exit[mo], m_team[mo], q_loc[qo], q_time[qo])
    assert got.tolist() == innermost_team_reference(m_loc, m_enter, m_exit, m_team, q_loc[qo], q_time[qo])


def pending_until_reference(k_team, k_create, k_start, q_team, q_time):
    out = []
    for team, t in zip(q_team, q_time):
        starts = [s for tm, c, s in zip(k_team, k_create, k_start) if tm == team and c < t and not np.isnan(s)]
        out.append(max(starts) if starts else -np.inf)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_pending_until_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 80))
    k_team = rng.integers(-1, 4, n)
    k_create = rng.integers(0, 40, n).astype(np.float64)
    k_start = k_create + rng.integers(0, 20, n)
    k_start[rng.random(n) < 0.1] = np.nan  # never started
    q_team = rng.integers(-1, 5, 100)
    q_time = rng.integers(0, 60, 100).astype(np.float64)
    ko = np.lexsort((k_create, k_team))
    qo = np.lexsort((q_time, q_team))
    got = pending_until(k_team[ko], k_create[ko], k_start[ko], q_team[qo], q_time[qo])
    assert got.tolist() == pending_until_reference(k_team, k_create, k_start, q_team[qo], q_time[qo])


@pytest.mark.parametrize("deps", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_random_task_traces_keep_the_metric_tree(seed, deps):
    """Random hybrid traces with tasks: every task metric is finite, never negative, and no child exceeds its
    parent in any cell (analyze checks the subset rule and raises otherwise)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analyzer"))
    from random_hybrid_traces import random_trace

    trace = random_trace(seed, n_ranks=2, n_threads=2 + seed % 2, steps=25 + seed, tasks=True, deps=deps)
    cube = analyzer.analyze(trace, plugins=False)
    for m in TASK_METRICS:
        assert (cube.context.results[m] >= 0).all()
    assert cube.total("omp_task_execution") > 0


# ---------------------------------------------------------------- task dependences (ready_time)
def chain_trace():
    """A chain 1 -> 2 -> 3 created by the master in a single (0.3, 0.35, 0.4); the worker, in the barrier from
    0.2, runs 1 (0.32-1.0) and 3 (1.6-2.0); the master, in it from 0.5, runs 2 (1.05-1.5): each waits for a
    predecessor on the other thread.  Both leave at 2.5."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.enter(m, 0.2, "!$omp single @t.c:8")
    b.task_create(m, 0.3, 1, TASK)
    b.task_create(m, 0.35, 2, TASK, dependences=1)
    b.task_dependence(m, 0.35, 1, 2)
    b.task_create(m, 0.4, 3, TASK, dependences=1)
    b.task_dependence(m, 0.4, 2, 3)
    b.exit(m, 0.5)
    b.enter(m, 0.5, BAR)
    b.task_run(m, 1.05, 1.5, 2)
    b.omp_coll_exit(m, 2.5)
    b.enter(w, 0.2, BAR)
    b.task_run(w, 0.32, 1.0, 1)
    b.task_run(w, 1.6, 2.0, 3)
    b.omp_coll_exit(w, 2.5)
    close_team(b, m, w, 2.5)
    return b


def test_a_chain_across_threads_is_starvation_until_the_predecessor_completes():
    r = results(chain_trace())
    bar = f"{PAR}/{BAR}"
    # worker: 0.2-0.32 before task 1 (created 0.3); 1.0-1.6 before task 3, ready when 2 completed at 1.5;
    # 2.0-2.5 at the end: the last task started at 1.6, nothing left.  Master: 0.5-1.05 before task 2, ready
    # when 1 completed at 1.0; 1.5-2.5 at the end, task 3 unstarted until 1.6
    assert r["omp_task_starvation"] == approx({(bar, 1): 0.1 + 0.5, (bar, 0): 0.5 + 0.1})
    assert r["omp_task_management"] == approx({(bar, 1): 0.02 + 0.1, (bar, 0): 0.05})
    t = replay(chain_trace().build(), tables=("omp_tasks", "omp_task_dependences")).table("omp_tasks")
    assert t["ready_time"].tolist() == pytest.approx([0.3, 1.0, 1.5])


def diamond_trace():
    """1 -> 2, 1 -> 3, 2 -> 4, 3 -> 4, created by the master at 0.3, 0.35, 0.4, 0.45: the worker runs 1
    (0.31-1.0) and 3 (1.03-2.0), the master 2 (1.02-1.5) and 4 (2.05-2.4), both in the barrier (master from
    0.5, worker from 0.2, both leave at 3.0).  Task 4 waits for the later of its two predecessors."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.enter(m, 0.2, "!$omp single @t.c:8")
    b.task_create(m, 0.3, 1, TASK)
    for t, task, preds in ((0.35, 2, (1,)), (0.4, 3, (1,)), (0.45, 4, (2, 3))):
        b.task_create(m, t, task, CHILD if task == 4 else TASK, dependences=len(preds))
        for p in preds:
            b.task_dependence(m, t, p, task)
    b.exit(m, 0.5)
    b.enter(m, 0.5, BAR)
    b.task_run(m, 1.02, 1.5, 2)
    b.task_run(m, 2.05, 2.4, 4)
    b.omp_coll_exit(m, 3.0)
    b.enter(w, 0.2, BAR)
    b.task_run(w, 0.31, 1.0, 1)
    b.task_run(w, 1.03, 2.0, 3)
    b.omp_coll_exit(w, 3.0)
    close_team(b, m, w, 3.0)
    return b


def test_a_diamond_waits_for_its_latest_predecessor():
    trace = diamond_trace().build()
    ctx = replay(trace, tables=("omp_tasks", "omp_task_dependences"))
    assert ctx.table("omp_tasks")["ready_time"].tolist() == pytest.approx([0.3, 1.0, 1.0, 2.0])
    d = ctx.table("omp_task_dependences")
    assert list(zip(d["predecessor"].tolist(), d["successor"].tolist())) == [(1, 2), (1, 3), (2, 4), (3, 4)]
    assert d["loc"].tolist() == [0] * 4 and d["time"].tolist() == pytest.approx([0.35, 0.4, 0.45, 0.45])
    r = results(diamond_trace())
    bar = f"{PAR}/{BAR}"
    # master: 0.5-1.02 before 2 (ready 1.0), 1.5-2.05 before 4 (ready 2.0, when 3 completed on the worker);
    # worker: 0.2-0.31 before 1 (0.3), 1.0-1.03 before 3 (ready 1.0), 2.0-3.0 with 4 unstarted until 2.05
    assert r["omp_task_starvation"] == approx({(bar, 0): 0.5 + 0.5, (bar, 1): 0.1 + 0.05})
    assert r["omp_task_management"] == approx({(bar, 0): 0.02 + 0.05, (bar, 1): 0.01 + 0.03})


def taskwait_dependence_trace():
    """The master creates 1 at 0.3 and 2 (after 1) at 0.35 in a single and waits in a taskwait (0.4-1.5) in
    which it runs 2 (1.05-1.5) once the worker completed 1 (0.32-1.0, in the single's barrier from 0.2).  Then
    it creates 3 at 1.6, after 1, which completed long before, and waits in a taskwait (1.7-2.2) while the
    worker runs 3 (1.8-2.2); the master's barrier: 2.3-2.4."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    single, ibar = "!$omp single @t.c:8", "!$omp implicit barrier @t.c:8"
    b.enter(m, 0.2, single)
    b.task_create(m, 0.3, 1, TASK)
    b.task_create(m, 0.35, 2, CHILD, dependences=1)
    b.task_dependence(m, 0.35, 1, 2)
    b.enter(m, 0.4, "!$omp taskwait @t.c:12")
    b.task_run(m, 1.05, 1.5, 2)
    b.exit(m, 1.5)
    b.task_create(m, 1.6, 3, TASK, dependences=1)
    b.task_dependence(m, 1.6, 1, 3)
    b.enter(m, 1.7, "!$omp taskwait @t.c:16")
    b.exit(m, 2.2)
    b.exit(m, 2.3)
    b.barrier(m, 2.3, 2.4, implicit=True, region=ibar)
    b.enter(w, 0.2, ibar)
    b.task_run(w, 0.32, 1.0, 1)
    b.task_run(w, 1.8, 2.2, 3)
    b.omp_coll_exit(w, 2.4, ibar)
    close_team(b, m, w, 3.0)
    return b


def test_a_taskwait_child_held_back_and_a_predecessor_done_before_creation():
    b = taskwait_dependence_trace()
    assert tracefmt.validate.validate(b.build()) == []
    ctx = replay(b.build(), tables=("omp_tasks",))
    # 3's predecessor completed at 1.0, before 3 was created: ready at its creation
    assert ctx.table("omp_tasks")["ready_time"].tolist() == pytest.approx([0.3, 1.0, 1.6])
    r = results(b)
    single = f"{PAR}/!$omp single @t.c:8"
    tw1, tw2 = f"{single}/!$omp taskwait @t.c:12", f"{single}/!$omp taskwait @t.c:16"
    ibar = f"{PAR}/!$omp implicit barrier @t.c:8"
    # the first taskwait waits 0.4-1.05 but for 2's dispatch after 1.0 (without the dependence: 0.65 of it)
    assert r["omp_task_management"] == approx({(tw1, 0): 0.05, (ibar, 1): 0.02 + 0.2})
    assert r["omp_taskwait"] == approx({(tw1, 0): 0.65, (tw2, 0): 0.5})
    # the worker: 0.2-0.32 before 1 (created 0.3); 1.0-1.8 before 3 (created and ready at 1.6)
    assert r["omp_task_starvation"] == approx({(ibar, 1): 0.1 + 0.6})


def test_a_dependence_on_a_task_that_never_completes_holds_nothing_back():
    """A damaged trace: the predecessor (2) is suspended and never resumed, another (99) never created; the
    successor is ready at its creation (the validator reports both)."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.enter(m, 0.2, "!$omp single @t.c:8")
    b.task_create(m, 0.3, 1, TASK)
    b.task_create(m, 0.35, 2, TASK)
    b.task_create(m, 0.4, 3, TASK, dependences=2)
    b.task_dependence(m, 0.4, 2, 3)
    b.task_dependence(m, 0.4, 99, 3)
    b.exit(m, 0.5)
    b.enter(m, 0.5, BAR)
    b.task_begin(m, 0.6, 2)
    b.task_end(m, 0.7, 2, status=tracefmt.layout.TaskSwitch.SUSPEND)
    b.task_run(m, 0.8, 0.9, 3)
    b.omp_coll_exit(m, 1.0)
    b.enter(w, 0.2, BAR)
    b.task_run(w, 0.3, 0.9, 1)
    b.omp_coll_exit(w, 1.0)
    close_team(b, m, w, 1.0)
    assert tracefmt.validate.validate(b.build())
    t = replay(b.build(), tables=("omp_tasks",)).table("omp_tasks")
    assert t["ready_time"].tolist() == pytest.approx([0.3, 0.35, 0.4])


# ---------------------------------------------------------------- the backward replay with tasks (as documented)
def late_task_trace():
    """The worker enters the barrier at 0.2 and runs task 1 (created by the master at 0.15) until 1.2; the master
    works until 0.7 and waits in the barrier for the task; both leave at 1.2."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.enter(m, 0.1, "work")
    b.task_create(m, 0.15, 1, TASK)
    b.exit(m, 0.7)
    b.barrier(m, 0.7, 1.2, region=BAR)
    b.enter(w, 0.2, BAR)
    b.task_run(w, 0.2, 1.2, 1)
    b.omp_coll_exit(w, 1.2, BAR)
    close_team(b, m, w, 1.2)
    return b


def test_critical_path_and_delay_costs_are_not_task_aware_yet():
    """What docs/analysis.md ("Critical path and delay costs with tasks") says they do: barrier points keep
    latest ENTER - own ENTER as the wait and the latest arrival as the cause; taskwaits are activities."""
    cube = analyzer.analyze(late_task_trace().build(), plugins=False)
    par = "main/" + PAR
    assert cube.total("critical_path") == pytest.approx(2.4)  # the program's length
    cp = cube.per_callpath("critical_path")
    assert cp[f"{par}/{BAR}"] == pytest.approx(0.5)  # the master waiting for the task is on the path ...
    assert cube.per_callpath("non_critical_path_activities")[f"{par}/{TASK}"] == pytest.approx(1.0)  # ... the task not
    assert cube.total("omp_ebarrier_wait") == pytest.approx(0.0)
    assert cube.per_callpath("delay_ompbarrier")[f"{par}/work"] == pytest.approx(0.5)  # a cost without a wait
    cube = analyzer.analyze(long_child_trace().build(), plugins=False)
    cp = cube.per_callpath("critical_path")
    single = f"{par}/!$omp single @t.c:8"
    assert cube.total("critical_path") == pytest.approx(4.2)
    assert cp[f"{single}/!$omp taskwait @t.c:12"] == pytest.approx(1.0)
    assert cp[f"{single}/!$omp taskgroup @t.c:14/!$omp taskgroup wait @t.c:14"] == pytest.approx(0.5)
    assert cube.total("non_critical_path_activities") == pytest.approx(1.73)
    assert cube.total("delay_ompbarrier") == pytest.approx(2.1)
    assert cube.total("omp_ibarrier_wait") == pytest.approx(0.37)
