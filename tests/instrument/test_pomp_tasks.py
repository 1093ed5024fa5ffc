"""OpenMP tasks through POMP: samples/runtime/omp_tasks.c (whose tasks tests/runtime/test_tasks.py checks on the
OMPT path) built with expert-cc and GCC, run on libgomp (no OMPT): every task's creation, start and completion,
its parent, the taskwaits and the taskgroup wait are recorded, and the analysis puts the task time on the task
constructs as on the OMPT path."""
from __future__ import annotations

import re
from collections import Counter

import pytest

import analyzer
import tracefmt
from pomp_harness import EXPERT_CC, RUNTIME, need, run
from tracefmt.layout import EventType, Role, TaskSwitch
from tracefmt.validate import validate

from expert_opari.c_rewriter import instrument_source  # noqa: E402  (pomp_harness puts it on the path)

SOURCE = RUNTIME.parent / "samples" / "runtime" / "omp_tasks.c"
UNIT = 0.020  # UNIT_MS of the program
# tasks per case (omp_tasks.c): tree 14, long_child 2, fine 3000, producer 12, group 3, deps 4, untied 2
N_TASKS = 14 + 2 + 3000 + 12 + 3 + 4 + 2
SUFFIX = re.compile(r" @[^/]*")


SNIPPET = """void f(int *a)
{
#pragma omp task untied mergeable depend(out : a[0])
    a[0] = 1;
#pragma omp taskwait
#pragma omp taskgroup
    {
#pragma omp task default(none) shared(a)
        a[1] = 2;
    }
}
"""


def calls(text):
    """The POMP calls and OpenMP pragmas of instrumented text, in order."""
    return re.findall(r"POMP_\w+\(&pomp_rd_\d+(?:, [\w]+)?\)|#pragma omp [^\n]*", text)


def test_task_constructs_become_pomp_calls():
    out = instrument_source(SNIPPET, "s.c")
    assert calls(out) == [
        "POMP_Task_create(&pomp_rd_1, 10)",  # ELG_TASK_UNTIED | ELG_TASK_MERGEABLE
        "#pragma omp task untied mergeable depend(out : a[0]) firstprivate(pomp_task_1)",
        "POMP_Task_begin(&pomp_rd_1, pomp_task_1)", "POMP_Task_end(&pomp_rd_1, pomp_task_1)",
        "POMP_Taskwait_enter(&pomp_rd_2)", "#pragma omp taskwait", "POMP_Taskwait_exit(&pomp_rd_2)",
        "POMP_Taskgroup_enter(&pomp_rd_3)", "#pragma omp taskgroup",
        "POMP_Task_create(&pomp_rd_4, 0)", "#pragma omp task default(none) shared(a) firstprivate(pomp_task_4)",
        "POMP_Task_begin(&pomp_rd_4, pomp_task_4)", "POMP_Task_end(&pomp_rd_4, pomp_task_4)",
        # the group's wait: from the end of its body to the statement after the construct
        "POMP_Taskgroup_wait_enter(&pomp_rd_3)", "POMP_Taskgroup_wait_exit(&pomp_rd_3)",
        "POMP_Taskgroup_exit(&pomp_rd_3)",
    ]
    assert "unsigned long long pomp_task_1 = POMP_Task_create" in out
    assert calls(instrument_source(SNIPPET, "s.c", disabled=("task", "taskwait", "taskgroup"))) == [
        "#pragma omp task untied mergeable depend(out : a[0])", "#pragma omp taskwait", "#pragma omp taskgroup",
        "#pragma omp task default(none) shared(a)"]


@pytest.fixture(scope="module")
def traced(runtime_built, tmp_path_factory):
    need("gcc")
    d = tmp_path_factory.mktemp("pomp_tasks")
    run([EXPERT_CC, "gcc", "-fopenmp", "-O1", "-g", f"-I{RUNTIME / 'include'}", SOURCE, "-o", "tasks"], cwd=d)
    p = run(["./tasks"], cwd=d, env={"OMP_WAIT_POLICY": "passive", "EXPERT_TRACE_FILE": "tasks.elg"})
    assert p.stdout.strip() == str(N_TASKS + 1)  # + the tree's root node, run by the single
    return tracefmt.open(str(d / "tasks.elg"))


@pytest.mark.runtime
def test_every_task_is_created_started_and_completed_once(traced):
    assert [str(p) for p in validate(traced)] == []
    creates, begins, ends, parents = [], Counter(), Counter(), Counter()
    for loc in traced.location_ids:
        ev = traced.events(int(loc))
        c = ev.type == EventType.OMP_TASK_CREATE
        creates += ev.d[c].tolist()
        parents.update(ev.e[c] != 0)
        begins.update(ev.c[ev.type == EventType.OMP_TASK_BEGIN].tolist())
        ends.update(ev.c[ev.type == EventType.OMP_TASK_END].tolist())
    assert len(creates) == len(set(creates)) == N_TASKS
    # source instrumentation sees whole task bodies: one fragment per task
    assert begins == {int(TaskSwitch.START): N_TASKS} and ends == {int(TaskSwitch.COMPLETE): N_TASKS}
    # created inside another task: the tree's nodes below its first two (12) and the group's nested task
    assert parents[True] == 12 + 1
    roles = Counter((SUFFIX.sub("", r.name), r.role) for r in traced.defs.regions.values()
                    if r.role in (Role.OMP_TASKWAIT, Role.OMP_TASKGROUP, Role.OMP_TASK))
    assert roles[("!$omp taskwait", Role.OMP_TASKWAIT)] == 2  # long_child, fine
    assert roles[("!$omp taskgroup wait", Role.OMP_TASKWAIT)] == 1
    assert roles[("!$omp taskgroup", Role.OMP_TASKGROUP)] == 1
    assert roles[("!$omp task", Role.OMP_TASK)] == 2 + 2 + 1 + 1 + 3 + 4 + 2  # task constructs per case


def by_case(cube, metric):
    """{case: {call path below the case's region, without @file:line: value}}"""
    out = {}
    for path, v in cube.per_callpath(metric).items():
        parts = SUFFIX.sub("", path).split("/")
        if len(parts) > 2:
            rest = "/".join(parts[2:])
            out.setdefault(parts[1], {})[rest] = out.get(parts[1], {}).get(rest, 0.0) + v
    return out


@pytest.mark.runtime
def test_task_time_and_taskwaits_as_on_the_ompt_path(traced):
    cube = analyzer.analyze(traced, plugins=False)
    run_time = by_case(cube, "omp_task_execution")
    # tree: 8 leaves of 1 unit; producer: 12 tasks of 1 unit; long_child 1 + 6; group 1 + 2 + 3 units
    for case, units in (("tree", 8), ("producer", 12), ("long_child", 7), ("group", 6)):
        got = run_time.get(case, {}).get("!$omp parallel/!$omp task", 0.0)
        assert units * UNIT * 0.95 <= got <= units * UNIT * 1.2 + 0.01, (case, run_time.get(case))
    created = by_case(cube, "omp_task_creation")
    assert created["fine"]["!$omp parallel/!$omp single/!$omp single sblock"] == 3000, created["fine"]
    # long_child: the single's thread waits in its taskwait for the 6-unit child unless it runs the child
    # itself there; either way the taskwait's time and the tasks run in it make up the long child
    ctx = cube.context
    names = [SUFFIX.sub("", p) for p in cube.callpaths]
    tw = next(i for i, p in enumerate(names) if p.split("/")[1:2] == ["long_child"] and p.endswith("!$omp taskwait"))
    loc = int(ctx.incl_time[tw].argmax())
    assert 6 * UNIT * 0.95 <= ctx.incl_time[tw, loc] <= 6 * UNIT * 1.2 + 0.01
    assert cube.per_cnode("omp_taskwait")[tw] == pytest.approx(ctx.excl_time[tw].sum())
