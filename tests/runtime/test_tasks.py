"""OpenMP tasks recorded through OMPT (format 2.1), clang and GCC code (on LLVM libomp) alike (issue 16).

samples/runtime/omp_tasks.c runs seven task programs, each in a user region named after it: an imbalanced
task tree, a taskwait on a long child, 3000 tiny tasks, a serial producer, a taskgroup with a nested task,
a dependence chain, an untied task that yields and an if(0) task.  The trace must be consistent (the
validator's task checks: parents, fragments framed and nested, every created task completing once after
its creation, dependences respected), record what the source says (counts, parents, flags, dependences,
taskgroup and taskwait regions), and the analysis must charge task execution to the task constructs' call
paths, not to the barriers and taskwaits the tasks ran in.
"""
from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import analyzer
import tracefmt
from runtime_harness import EXPERT_RUN, RUNTIME, SAMPLES, assert_valid, need, run
from tracefmt.layout import EventType, Role, TaskFlag, TaskSwitch

pytestmark = pytest.mark.runtime

UNIT = 0.020  # UNIT_MS of the program
# tasks created per case: tree nodes but the root (15 - 1), long_child 2, fine 3000, producer 12, group 3, deps 4,
# untied 2
N_TASKS = 14 + 2 + 3000 + 12 + 3 + 4 + 2
SUFFIX = re.compile(r" @[^/]*")


@pytest.fixture(scope="module", params=["clang", "gcc"])
def traced(request, runtime_built, tmp_path_factory):
    cc = request.param
    need(cc)
    d = tmp_path_factory.mktemp(f"tasks_{cc}")
    run([cc, "-fopenmp", "-g", "-O1", f"-I{RUNTIME / 'include'}", str(SAMPLES / "omp_tasks.c"), "-o", "tasks"], cwd=d)
    p = run([str(EXPERT_RUN), "-o", "tasks.elg", "./tasks"], cwd=d, env={"OMP_WAIT_POLICY": "passive"})
    assert p.stdout.strip() == str(N_TASKS + 1)  # + the tree's root node, run by the single
    trace = tracefmt.open(str(d / "tasks.elg"))
    return cc, trace


def all_events(trace):
    """[(loc, type, a, c, d, e, flags, time)] of every location, in location order."""
    out = []
    for loc in trace.location_ids.tolist():
        ev = trace.events(loc)
        keep = np.isin(ev.type, [int(t) for t in (EventType.OMP_TASK_CREATE, EventType.OMP_TASK_BEGIN,
                                                  EventType.OMP_TASK_END, EventType.OMP_TASK_DEPENDENCE)])
        for i in np.flatnonzero(keep):
            out.append((loc, int(ev.type[i]), int(ev.a[i]), int(ev.c[i]), int(ev.d[i]), int(ev.e[i]),
                        int(ev.flags[i]), float(ev.time[i])))
    return out


def test_the_trace_is_consistent(traced):
    """validator clean: every created task completes exactly once after its creation, parents are the tasks
    running where they were created, fragments are framed by their region and nest, dependences hold"""
    cc, trace = traced
    assert_valid(trace)


def test_what_the_source_creates_is_recorded(traced):
    cc, trace = traced
    ev = all_events(trace)
    creates = [e for e in ev if e[1] == EventType.OMP_TASK_CREATE]
    assert len(creates) == N_TASKS, cc
    assert len({e[4] for e in creates}) == N_TASKS  # distinct ids
    starts = [e for e in ev if e[1] == EventType.OMP_TASK_BEGIN and e[3] == TaskSwitch.START]
    completes = [e for e in ev if e[1] == EventType.OMP_TASK_END and e[3] == TaskSwitch.COMPLETE]
    assert len(starts) == len(completes) == N_TASKS
    # parents: tasks created inside tasks are the tree's inner nodes' children (12) and the group's nested one
    assert sum(1 for e in creates if e[5] != 0) == 12 + 1
    ids = {e[4] for e in creates}
    assert all(e[5] in ids for e in creates if e[5])
    flags = Counter(e[6] for e in creates)
    assert flags[int(TaskFlag.UNTIED)] == 1 and flags[int(TaskFlag.UNDEFERRED)] == 1, flags
    # the if(0) task runs at once on its creating thread, inside the creating construct
    undeferred = next(e for e in creates if e[6] == TaskFlag.UNDEFERRED)
    first = next(e for e in starts if e[4] == undeferred[4])
    assert first[0] == undeferred[0] and first[7] >= undeferred[7]
    # depend clauses: 1, 2 and 1 items; a -> b -> c reported while the predecessor runs
    assert sorted(e[3] for e in creates if e[3]) == [1, 1, 2]
    deps = [(e[4], e[5]) for e in ev if e[1] == EventType.OMP_TASK_DEPENDENCE]
    assert len(deps) == 2 and deps[0][1] == deps[1][0], deps
    # every task runs the region of its construct: a !$omp task @omp_tasks.c:LINE region
    regions = trace.defs.regions
    for e in creates:
        assert regions[e[2]].role == Role.OMP_TASK and re.fullmatch(r"!\$omp task @omp_tasks\.c:\d+",
                                                                    regions[e[2]].name), regions[e[2]].name


def test_taskwait_and_taskgroup_regions(traced):
    cc, trace = traced
    names = Counter()
    for loc in trace.location_ids.tolist():
        ev = trace.events(loc)
        for i in np.flatnonzero(ev.type == EventType.ENTER):
            r = trace.defs.regions[int(ev.a[i])]
            if r.role in (Role.OMP_TASKWAIT, Role.OMP_TASKGROUP):
                names[(SUFFIX.sub("", r.name), r.role)] += 1
    assert names[("!$omp taskgroup", Role.OMP_TASKGROUP)] == 1
    assert names[("!$omp taskgroup wait", Role.OMP_TASKWAIT)] == 1
    assert names[("!$omp taskwait", Role.OMP_TASKWAIT)] == 2  # long_child, fine


def by_case(cube, metric):
    """{case: {call path below the case's region, without @file:line: value}}"""
    out = {}
    for path, v in cube.per_callpath(metric).items():
        parts = SUFFIX.sub("", path).split("/")
        if len(parts) > 2:
            rest = "/".join(parts[2:])
            out.setdefault(parts[1], {})[rest] = out.get(parts[1], {}).get(rest, 0.0) + v
    return out


def test_task_time_is_on_the_task_s_call_path(traced):
    cc, trace = traced
    cube = analyzer.analyze(trace)
    assert not [p for p in cube.callpaths if p.count("!$omp task @") > 1]  # tasks never nest in the tree
    run_time = by_case(cube, "omp_task_execution")
    # tree: 8 leaves of 1 unit; producer: 12 tasks of 1 unit; long_child 1 + 6; group 1 + 2 + 3 units
    for case, units in (("tree", 8), ("producer", 12), ("long_child", 7), ("group", 6)):
        got = run_time.get(case, {}).get("!$omp parallel/!$omp task", 0.0)
        assert units * UNIT * 0.95 <= got <= units * UNIT * 1.2 + 0.01, (cc, case, run_time.get(case))
    created = by_case(cube, "omp_task_creation")
    assert created["fine"]["!$omp parallel/!$omp single/!$omp single sblock"] == 3000, created["fine"]
    # the time threads ran tasks in barriers is not in the barriers: a thread's barrier time and its task time
    # in that case are disjoint, so together they fit in the case's wall time on every thread
    ctx = cube.context
    excl = ctx.excl_time
    names = [SUFFIX.sub("", p) for p in cube.callpaths]
    for case in ("tree", "producer"):
        bar = [i for i, p in enumerate(names) if p.split("/")[1:2] == [case] and p.endswith("!$omp ibarrier")]
        task = [i for i, p in enumerate(names) if p.split("/")[1:2] == [case] and p.endswith("!$omp task")]
        region = next(i for i, p in enumerate(names) if p.split("/")[1:] == [case])
        span = ctx.incl_time[region].max()
        per_thread = excl[bar].sum(axis=0) + excl[task].sum(axis=0)
        assert (per_thread <= span * 1.001 + 1e-6).all(), (cc, case, per_thread, span)


def test_a_taskwait_waits_for_its_long_child(traced):
    """long_child: the single's thread waits in taskwait for the 6-unit child (or runs a child itself there):
    the taskwait spans the long child, its exclusive time is that minus the tasks the thread ran in it"""
    cc, trace = traced
    cube = analyzer.analyze(trace)
    ctx = cube.context
    names = [SUFFIX.sub("", p) for p in cube.callpaths]
    tw = next(i for i, p in enumerate(names)
              if p.split("/")[1:2] == ["long_child"] and p.endswith("!$omp taskwait"))
    loc = int(np.argmax(ctx.incl_time[tw]))
    assert 6 * UNIT * 0.95 <= ctx.incl_time[tw, loc] <= 6 * UNIT * 1.2 + 0.01, (cc, ctx.incl_time[tw])
    fr = ctx.table("omp_task_fragments")
    inside = fr["host_cnode"] == tw
    ran = float((fr["exit"][inside] - fr["enter"][inside]).sum())
    assert ctx.excl_time[tw, loc] == pytest.approx(ctx.incl_time[tw, loc] - ran, abs=1e-9)
