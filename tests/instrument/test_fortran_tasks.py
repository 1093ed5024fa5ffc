"""OpenMP tasks in Fortran through POMP (free and fixed form): `!$omp task`, `taskwait` and `taskgroup` become the
calls that C's task constructs become (tests/instrument/test_pomp_tasks.py), and samples/pomp/tasks.f90 and
tasks.f, built with expert-cc gfortran and run on libgomp, record every task's creation, start and completion,
its parent, the taskwait and the taskgroup wait, with the task time of each case on its task constructs."""
from __future__ import annotations

import re
import sys
from collections import Counter

import pytest

from pomp_harness import EXPERT_CC, RUNTIME, SAMPLES, need, run

sys.path.insert(0, str(RUNTIME / "opari"))
from expert_opari.descriptors import SLOTS  # noqa: E402
from expert_opari.fortran import instrument_fortran  # noqa: E402
from test_fortran import rows  # noqa: E402

UNIT = 0.020  # the samples' sleep unit
SUFFIX = re.compile(r" @[^/]*")

FREE = """subroutine f(a)
  implicit none
  integer :: a(2)
  !$omp task untied mergeable depend(out: a(1)) &
  !$omp& shared(a)
  a(1) = 1
  !$omp end task
  !$omp taskwait
  !$OMP TASKGROUP
  !$omp task default(none) shared(a)
  a(2) = 2
  !$omp end task
  !$omp end taskgroup
end subroutine f
"""

FIXED = """      subroutine f(a)
      implicit none
      integer a(2)
c$omp task untied mergeable
c$omp& shared(a)
      a(1) = 1
c$omp end task
*$omp taskwait
!$omp taskgroup
!$omp task default(none) shared(a)
      a(2) = 2
!$omp end task
!$omp end taskgroup
      end
"""

EXPECT = [
    # the task's id lives in a BLOCK around the construct (no declarations among executable statements)
    "continue", "block", "integer(kind=8) :: pomp_task_1", "call pomp_task_create(1, 10, pomp_task_1)",
    "!$omp task untied mergeable (DEPEND)shared(a) firstprivate(pomp_task_1)",
    "call pomp_task_begin(1, pomp_task_1)", "a(1) = 1", "call pomp_task_end(1, pomp_task_1)", "!$omp end task",
    "end block",
    "call pomp_taskwait_enter(2)", "(TASKWAIT)", "call pomp_taskwait_exit(2)",
    "call pomp_taskgroup_enter(3)", "(TASKGROUP)",
    "continue", "block", "integer(kind=8) :: pomp_task_4", "call pomp_task_create(4, 0, pomp_task_4)",
    "!$omp task default(none) shared(a) firstprivate(pomp_task_4)", "call pomp_task_begin(4, pomp_task_4)",
    "a(2) = 2", "call pomp_task_end(4, pomp_task_4)", "!$omp end task", "end block",
    # the group's wait: from the end of its body to the construct's end
    "call pomp_taskgroup_wait_enter(3)", "!$omp end taskgroup", "call pomp_taskgroup_wait_exit(3)",
    "call pomp_taskgroup_exit(3)",
]


def body(text: str) -> list[str]:
    """The executable part of an instrumented subroutine: lines without markers and indentation, handles made
    relative, directives joined over their continuation lines."""
    out = []
    for ln in text.splitlines():
        s = ln.strip()
        if not s or s.startswith("# "):
            continue
        s = re.sub(r"(call pomp_\w+\()(\d+)", lambda m: f"{m[1]}{int(m[2]) % SLOTS}", s)
        if re.match(r"!\$omp&", s):
            out[-1] = out[-1].rstrip(" &") + " " + s[6:].strip()
            continue
        out.append(s)
    start = next(i for i, s in enumerate(out) if s in ("continue", "call pomp_task_create(1, 10, pomp_task_1)"))
    return out[start:-1]


def normalise(lines, form):
    """The free and the fixed snippet differ in the depend clause and in their taskwait and taskgroup spellings."""
    out = []
    for s in lines:
        s = s.replace("depend(out: a(1)) ", "(DEPEND)") if form == "free" else \
            s.replace("mergeable shared", "mergeable (DEPEND)shared")
        s = {"!$omp taskwait": "(TASKWAIT)", "*$omp taskwait": "(TASKWAIT)", "!$OMP TASKGROUP": "(TASKGROUP)",
             "!$omp taskgroup": "(TASKGROUP)"}.get(s, s)
        out.append(s)
    return out


@pytest.mark.parametrize("form", ["free", "fixed"])
def test_task_constructs_become_pomp_calls(form):
    src, path = (FREE, "t.f90") if form == "free" else (FIXED, "t.f")
    out, table = instrument_fortran(src, path)
    assert normalise(body(out), form) == EXPECT
    # descriptors: the lines of each directive (continuations included) and of its end directive
    first = 4
    assert rows(table) == [("task", "", 0, first, first + 1, first + 3, first + 3),
                           ("taskwait", "", 0, first + 4, first + 4, first + 4, first + 4),
                           ("taskgroup", "", 0, first + 5, first + 5, first + 9, first + 9),
                           ("task", "", 0, first + 6, first + 6, first + 8, first + 8)]
    if form == "fixed":  # calls and declarations from column 7, nothing past column 72
        for ln in out.splitlines():
            if not ln.startswith(("#", "c", "*", "!")):
                assert ln.startswith("      ") and len(ln) <= 72, ln
    left = instrument_fortran(src, path, frozenset({"task", "taskwait", "taskgroup"}))[0]
    assert "pomp" not in left.replace("# ", "").lower().replace('"t.f', "")
    assert rows(instrument_fortran(src, path, frozenset({"task"}))[1])[0][0] == "taskwait"


def test_a_construct_whose_block_begins_with_a_task_keeps_its_end_directive():
    """OpenMP 5.1: a directive followed by a BLOCK construct ends at its END BLOCK, so the instrumented task's
    BLOCK must not be the first statement of an enclosing block (here a master left uninstrumented)."""
    src = "!$omp master\n!$omp task\nx = 1\n!$omp end task\n!$omp end master\n"
    lines = [s.strip() for s in instrument_fortran(src, "t.f90", frozenset({"master"}))[0].splitlines()
             if not s.startswith("# ")]
    assert lines[:3] == ["!$omp master", "continue", "block"]


def test_an_unended_task_is_an_error():
    from expert_opari.directives import InstrumentError

    with pytest.raises(InstrumentError, match=r"t.f90:1: '!\$omp task' has no matching '!\$omp end task'"):
        instrument_fortran("!$omp task\nx = 1\n", "t.f90")
    with pytest.raises(InstrumentError, match=r"t.f90:3: '!\$omp end taskgroup' does not match '!\$omp task'"):
        instrument_fortran("!$omp taskgroup\n!$omp task\n!$omp end taskgroup\n", "t.f90")


@pytest.mark.runtime
@pytest.mark.parametrize("form", ["free", "fixed"])
def test_instrumented_snippet_compiles_under_implicit_none(form, runtime_built, tmp_path):
    need("gfortran")
    name = "t.f90" if form == "free" else "t.f"
    (tmp_path / name).write_text(FREE if form == "free" else FIXED)
    run([EXPERT_CC, "gfortran", "-fopenmp", "-Wall", "-Werror", "-c", name, "-o", "t.o"], cwd=tmp_path)


# ---------------------------------------------------------------- the samples, traced
# task constructs, tasks created, task bodies run, created inside a task, untied, units of task work per case
SAMPLE = {
    "tasks.f90": dict(constructs=2 + 2 + 3 + 1, created=8 + 2 + 3 + 6, ran=9 + 2 + 3 + 6, nested=6 + 1,
                      work={"tree": 5, "long_child": 7, "group": 6, "producer": 6}),
    "tasks.f": dict(constructs=2 + 3 + 1, created=2 + 3 + 6, ran=2 + 3 + 6, nested=1,
                    work={"long_child": 7, "group": 6, "producer": 6}),
}


@pytest.fixture(scope="module", params=sorted(SAMPLE))
def traced(request, runtime_built, tmp_path_factory):
    need("gfortran")
    import tracefmt

    src = SAMPLES / request.param
    d = tmp_path_factory.mktemp("ftasks")
    run(["gfortran", "-fopenmp", "-O1", src, "-o", "plain"], cwd=d)
    run([EXPERT_CC, "gfortran", "-fopenmp", "-O1", "-g", src, "-o", "tasks"], cwd=d)
    expect = SAMPLE[request.param]
    assert run(["./plain"], cwd=d).stdout == f"{expect['ran']}\n"
    p = run(["./tasks"], cwd=d, env={"OMP_WAIT_POLICY": "passive", "EXPERT_TRACE_FILE": "tasks.elg"})
    assert p.stdout == f"{expect['ran']}\n"
    return request.param, tracefmt.open(str(d / "tasks.elg"))


@pytest.mark.runtime
def test_every_fortran_task_is_created_started_and_completed_once(traced):
    from tracefmt.layout import EventType, Role, TaskFlag, TaskSwitch
    from tracefmt.validate import validate

    name, trace = traced
    expect = SAMPLE[name]
    assert [str(p) for p in validate(trace)] == []
    creates, begins, ends, nested, flags = [], Counter(), Counter(), 0, Counter()
    for loc in trace.location_ids:
        ev = trace.events(int(loc))
        c = ev.type == EventType.OMP_TASK_CREATE
        creates += ev.d[c].tolist()
        nested += int((ev.e[c] != 0).sum())
        flags.update(ev.flags[c].tolist())
        begins.update(ev.c[ev.type == EventType.OMP_TASK_BEGIN].tolist())
        ends.update(ev.c[ev.type == EventType.OMP_TASK_END].tolist())
    n = expect["created"]
    assert len(creates) == len(set(creates)) == n
    assert begins == {int(TaskSwitch.START): n} and ends == {int(TaskSwitch.COMPLETE): n}
    assert nested == expect["nested"] and flags[int(TaskFlag.UNTIED)] == 1
    roles = Counter((SUFFIX.sub("", r.name), r.role) for r in trace.defs.regions.values()
                    if r.role in (Role.OMP_TASKWAIT, Role.OMP_TASKGROUP, Role.OMP_TASK))
    assert roles == {("!$omp taskwait", Role.OMP_TASKWAIT): 1, ("!$omp taskgroup wait", Role.OMP_TASKWAIT): 1,
                     ("!$omp taskgroup", Role.OMP_TASKGROUP): 1, ("!$omp task", Role.OMP_TASK): expect["constructs"]}
    # the regions carry the constructs' lines: the group's untied task and the one it creates (read off the
    # samples), and in tasks.f the long child, whose directive is continued (!$omp+)
    lines = {(r.name, r.begin_line, r.end_line) for r in trace.defs.regions.values() if r.role == Role.OMP_TASK}
    want = {(82, 87), (83, 85)} if name == "tasks.f90" else {(32, 37), (33, 35), (17, 20)}
    assert {(f"!$omp task @{name}:{b}", b, e) for b, e in want} <= lines, lines


@pytest.mark.runtime
def test_fortran_task_time_and_taskwait_per_case(traced):
    import analyzer

    name, trace = traced
    cube = analyzer.analyze(trace, plugins=False)
    per_case = {}
    for path, v in cube.per_callpath("omp_task_execution").items():
        parts = SUFFIX.sub("", path).split("/")
        if parts[2:] == ["!$omp parallel", "!$omp task"]:
            per_case[parts[1]] = per_case.get(parts[1], 0.0) + v
    for case, units in SAMPLE[name]["work"].items():
        assert units * UNIT * 0.95 <= per_case.get(case, 0.0) <= units * UNIT * 1.2 + 0.01, (case, per_case)
    # long_child: the single's thread waits in its taskwait for the 6-unit child unless it runs the child there
    ctx = cube.context
    names = [SUFFIX.sub("", p) for p in cube.callpaths]
    tw = next(i for i, p in enumerate(names) if p.split("/")[1:2] == ["long_child"] and p.endswith("!$omp taskwait"))
    loc = int(ctx.incl_time[tw].argmax())
    assert 6 * UNIT * 0.95 <= ctx.incl_time[tw, loc] <= 6 * UNIT * 1.2 + 0.01
    # producer: two threads idle while the six tasks come one unit apart, but for the five they run meanwhile
    idle = sum(v for m in ("omp_task_starvation", "omp_task_management")
               for p, v in cube.per_callpath(m).items() if SUFFIX.sub("", p).split("/")[1:2] == ["producer"])
    assert 7 * UNIT * 0.8 <= idle <= 7 * UNIT * 1.2, idle
