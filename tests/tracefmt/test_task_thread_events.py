"""Format 2.1: OpenMP task and thread events through TraceBuilder, the reader and the validator."""
from __future__ import annotations

import pytest

import tracefmt
from tracefmt import layout
from tracefmt.builder import BuilderError
from tracefmt.layout import EventType, Role, TaskFlag, TaskSwitch
from tracefmt.validate import validate

TASK = "!$omp task @t.c:10"
CHILD = "!$omp task @t.c:20"


def team(b, t_fork=0.0):
    """A process with a master and one worker in team 1, inside main; returns (master, worker)."""
    m, w = b.location(0, 0), b.location(0, 1)
    b.enter(m, 0.0, "main")
    b.fork(m, t_fork, 1, 2)
    b.enter(m, 0.1, "!$omp parallel @t.c:5", team=1)
    b.enter(w, 0.1, "!$omp parallel @t.c:5", team=1)
    return m, w


def close_team(b, m, w, t):
    b.barrier(m, t, t + 1.0, implicit=True)
    b.barrier(w, t, t + 1.0, implicit=True)
    b.exit(m, t + 1.0)
    b.exit(w, t + 1.0)
    b.join(m, t + 1.1, 1, 2)
    b.exit(m, t + 1.2, "main")


def task_trace():
    """Master creates tasks 1 and 2 in a single; the worker runs 1 in the barrier; task 1 creates 3 and
    waits for it; 2 is untied: suspended on the master, resumed on the worker; 3 depends on 2."""
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.enter(m, 0.2, "!$omp single @t.c:8")
    b.task_create(m, 0.3, 1, TASK)
    b.task_create(m, 0.4, 2, TASK, flags=TaskFlag.UNTIED)
    b.exit(m, 0.5)
    b.barrier(m, 0.5, 0.6)  # explicit barrier, no tasks in it
    b.barrier(w, 0.25, 0.6)
    b.enter(m, 1.0, "!$omp barrier @t.c:30")
    b.task_begin(m, 1.0, 2)
    b.task_end(m, 1.5, 2, status=TaskSwitch.SUSPEND)
    b.omp_coll_exit(m, 5.0)
    b.enter(w, 0.7, "!$omp barrier @t.c:30")
    b.task_begin(w, 0.8, 1)
    assert b.running_task(w) == 1
    b.task_create(w, 0.9, 3, CHILD, dependences=1)  # parent: task 1
    b.task_dependence(w, 0.9, 2, 3)
    b.enter(w, 1.0, "!$omp taskwait @t.c:12")
    b.task_begin(w, 1.6, 2, resume=True)
    b.task_end(w, 2.0, 2)
    b.task_run(w, 2.0, 3.0, 3)
    b.exit(w, 3.0)
    b.task_end(w, 3.5, 1)
    b.omp_coll_exit(w, 5.0)
    close_team(b, m, w, 5.0)
    return b


def problems(b):
    return [str(p) for p in validate(b.build())]


def test_task_events_round_trip_and_validate():
    b = task_trace()
    trace = b.build()
    assert trace.header.version == (2, layout.VERSION_MINOR) >= (2, 1)  # task events came with 2.1
    assert validate(trace) == []
    ev = trace.events(1)
    creates = ev.type == EventType.OMP_TASK_CREATE
    assert ev.d[creates].tolist() == [3] and ev.e[creates].tolist() == [1] and ev.c[creates].tolist() == [1]
    regions = {r.name: r for r in trace.defs.regions.values()}
    assert regions[TASK].role == Role.OMP_TASK and regions[TASK].paradigm == layout.Paradigm.OPENMP
    assert ev.a[creates].tolist() == [regions[CHILD].id]
    begins = ev.type == EventType.OMP_TASK_BEGIN
    assert ev.d[begins].tolist() == [1, 2, 3]
    assert ev.c[begins].tolist() == [TaskSwitch.START, TaskSwitch.RESUME, TaskSwitch.START]
    m = trace.events(0)
    assert m.flags[m.type == EventType.OMP_TASK_CREATE].tolist() == [0, int(TaskFlag.UNTIED)]
    assert m.e[m.type == EventType.OMP_TASK_CREATE].tolist() == [0, 0]


def test_builder_refuses_what_a_measurement_cannot_write():
    b = tracefmt.TraceBuilder()
    m = b.location()
    with pytest.raises(BuilderError):
        b.task_create(m, 0.0, 0)
    with pytest.raises(BuilderError):
        b.task_begin(m, 0.0, 5)  # never created: no region known
    with pytest.raises(BuilderError):
        b.task_end(m, 0.0)
    b.task_create(m, 0.0, 5, TASK)
    b.task_begin(m, 0.0, 5)
    with pytest.raises(BuilderError):
        b.task_end(m, 1.0, 6)


def raw_trace(edit):
    """A small valid task trace on one location, with ``edit(b, loc)`` writing what comes in between."""
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.enter(loc, 0.0, "main")
    edit(b, loc)
    b.exit(loc, 9.0, "main")
    return problems(b)


def test_wrong_parent_and_duplicate_id():
    def edit(b, loc):
        b.task_create(loc, 0.1, 1, TASK)
        b.task_create(loc, 0.2, 1, TASK)
        b.task_begin(loc, 0.3, 1)
        b.task_create(loc, 0.4, 2, TASK, parent=7)
        b.task_end(loc, 0.5, 1)
        b.task_run(loc, 0.6, 0.7, 2)
    got = raw_trace(edit)
    assert any("task id 1 created again" in p for p in got)
    assert any("task 2 is created with parent 7, but task 1 is executing here" in p for p in got)


def test_task_never_completes_or_never_runs():
    def edit(b, loc):
        b.task_create(loc, 0.1, 1, TASK)
        b.task_create(loc, 0.1, 2, TASK)
        b.task_begin(loc, 0.3, 1)
        b.task_end(loc, 0.5, 1, status=TaskSwitch.SUSPEND)
    got = raw_trace(edit)
    assert any("task 1 never completes" in p for p in got)
    assert any("task 2 created here never executes" in p for p in got)


def test_runs_after_completion_before_creation_and_against_a_dependence():
    def edit(b, loc):
        b.task_create(loc, 0.5, 1, TASK)
        b.task_create(loc, 0.5, 2, TASK)
        b.task_dependence(loc, 0.5, 1, 2)
        b.task_run(loc, 0.1, 0.2, 1)  # before its creation
        b.task_begin(loc, 0.6, 2)
        b.task_end(loc, 0.7, 2)
        b.task_begin(loc, 0.8, 1, resume=True)  # after it completed
        b.task_end(loc, 0.9, 1)
    got = raw_trace(edit)
    assert any("task 1 begins 0.400000000 s before its creation" in p for p in got)
    assert any("task 1 runs again after its fragment ended with COMPLETE" in p for p in got)
    assert any("task 2 begins" in p and "before task 1, which it depends on, completed" in p for p in got)


def test_fragment_framing_is_checked():
    def edit(b, loc):
        b.task_create(loc, 0.1, 1, TASK)
        rid = b.region(TASK)
        b.event(loc, 0.2, EventType.OMP_TASK_BEGIN, a=rid, d=1)  # no ENTER before it
        b.event(loc, 0.3, EventType.OMP_TASK_END, a=rid, c=TaskSwitch.COMPLETE, d=2)  # not the open task
        b.event(loc, 0.4, EventType.OMP_TASK_END, a=rid, c=TaskSwitch.COMPLETE, d=1)  # no EXIT after it
    got = raw_trace(edit)
    assert any("OMP_TASK_BEGIN of task 1 does not follow the ENTER of its region" in p for p in got)
    assert any("OMP_TASK_END of task 2, but the innermost is task 1" in p for p in got)
    assert any("OMP_TASK_END of task 1 is not followed by the EXIT of its region" in p for p in got)


def thread_trace(reuse=True):
    """The main thread creates threads 1 and 2 and joins them; both run on location 1 one after the other
    (reuse) or on locations 1 and 2."""
    b = tracefmt.TraceBuilder()
    m = b.location(0, 0)
    w1 = b.location(0, 1)
    w2 = w1 if reuse else b.location(0, 2)
    b.enter(m, 0.0, "main")
    for k, (w, t0) in enumerate(((w1, 0.1), (w2, 2.1)), start=1):
        b.enter(m, t0, "pthread_create")
        b.thread_create(m, t0 + 0.01, k)
        b.exit(m, t0 + 0.02)
        b.thread_begin(w, t0 + 0.05, k)
        b.enter(w, t0 + 0.05, "worker")
        b.exit(w, t0 + 1.0)
        b.thread_end(w, t0 + 1.0, k)
        b.enter(m, t0 + 0.5, "pthread_join")
        b.thread_join(m, t0 + 1.01, k)
        b.exit(m, t0 + 1.02)
    b.exit(m, 5.0, "main")
    return b


@pytest.mark.parametrize("reuse", [True, False])
def test_thread_events_validate(reuse):
    b = thread_trace(reuse)
    trace = b.build()
    assert validate(trace) == []
    regions = {r.name: r for r in trace.defs.regions.values()}
    assert (regions["pthread_create"].paradigm, regions["pthread_create"].role) == (layout.Paradigm.PTHREAD,
                                                                                    Role.THREAD_CREATE)
    assert regions["pthread_join"].role == Role.THREAD_JOIN
    ev = trace.events(1)
    assert ev.d[ev.type == EventType.THREAD_BEGIN].tolist() == ([1, 2] if reuse else [1])


def test_thread_problems():
    b = tracefmt.TraceBuilder()
    m, w = b.location(0, 0), b.location(0, 1)
    b.enter(m, 0.0, "main")
    b.thread_create(m, 0.5, 1)
    b.thread_create(m, 0.6, 1)
    b.thread_begin(w, 0.2, 1)  # before its creation
    b.enter(w, 0.2, "worker")
    b.thread_begin(w, 0.3, 2)  # nested, never created, never ends
    b.exit(w, 0.4)
    b.thread_end(w, 0.4, 1)  # not the live one (so neither lifetime is complete)
    b.thread_join(m, 0.65, 1)
    b.thread_join(m, 0.7, 1)
    b.exit(m, 1.0, "main")
    got = problems(b)
    for text in ("thread id 1 created again", "THREAD_BEGIN of thread 2 while thread 1 still lives here",
                 "THREAD_BEGIN of thread 2 inside 1 open region(s)", "THREAD_END of thread 1, which does not live here",
                 "thread 1 created here never begins",
                 "thread 1 joined 2 times"):
        assert any(text in p for p in got), (text, got)


def test_dependences_name_earlier_tasks_where_the_successor_was_created():
    def edit(b, loc):
        b.task_create(loc, 0.1, 1, TASK)
        b.task_dependence(loc, 0.15, 1, 2)  # before 2 was created
        b.task_create(loc, 0.2, 2, TASK)
        b.task_dependence(loc, 0.2, 1, 2)  # fine: 1 created before 2, recorded at 2's creation
        b.task_dependence(loc, 0.2, 2, 1)  # 1 cannot wait for a task created after it
        b.task_dependence(loc, 0.2, 2, 2)
        b.task_run(loc, 0.3, 0.4, 1)
        b.task_run(loc, 0.5, 0.6, 2)
    got = raw_trace(edit)
    assert any("task 1 depends on task 2, created 0.100000000 s after it" in p for p in got), got
    assert any("task 2 depends on itself" in p for p in got)
    assert any("dependence of task 2 recorded at 0.150000000 s on location 0, not where and after it was created "
               "(location 0 at 0.200000000 s)" in p for p in got)
    assert any("task 1 begins 0.300000000 s before task 2, which it depends on, completed" in p for p in got)
    assert len(got) == 4, got  # nothing about the good one
    b = tracefmt.TraceBuilder()
    m, w = team(b)
    b.task_create(m, 0.2, 1, TASK)
    b.task_create(w, 0.2, 2, TASK)
    b.task_dependence(m, 0.3, 1, 2)  # not on 2's creating location
    b.task_run(m, 0.4, 0.5, 1)
    b.task_run(w, 0.6, 0.7, 2)
    close_team(b, m, w, 1.0)
    assert [p for p in problems(b) if "dependence" in p] == [
        p for p in problems(b) if "dependence of task 2 recorded at 0.300000000 s on location 0" in p] != []
