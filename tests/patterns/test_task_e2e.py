"""OpenMP task properties end to end on the OMPT path: samples/runtime/omp_tasks.c (3 threads, units of 20 ms of
sleep) built with clang, traced with expert-run on libomp, analysed.

The serial producer's starvation is designed: one thread creates 12 one-unit tasks one unit apart (single nowait),
the two others wait in the parallel region's barrier from the start and run the tasks as they come; until the 12th
task starts the team always has a task to come, so the two idle for 2 x 12 units but for the 11 tasks they run
meanwhile: 13 units of starvation and management together (the 12th task, created last, starts after the producer
is done).

The dependence chain (``deps``): a -> b -> c of one unit each and an independent task d, all created at once; two
threads run a and d, the third has nothing ready until a completes (1 unit), then two threads wait for c, ready when
b completes (2 units), and after c starts nothing is left.  So 3 units of starvation, and no management: a task is
ready when its predecessor completed, not at its creation (counting from the creation, 2 of the 3 units were
management)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import analyzer

ROOT = Path(__file__).resolve().parents[2]
UNIT = 0.020
SUFFIX = re.compile(r" @[^/]*")
pytestmark = pytest.mark.runtime


def by_case(cube, metric):
    """{case: value summed over the case's call paths}"""
    out = {}
    for path, v in cube.per_callpath(metric).items():
        parts = SUFFIX.sub("", path).split("/")
        if len(parts) > 1:
            out[parts[1]] = out.get(parts[1], 0.0) + v
    return out


@pytest.fixture(scope="module")
def cube(runtime_built, tmp_path_factory):
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (optional tool chain)")
    d = tmp_path_factory.mktemp("task_e2e")
    subprocess.run(["clang", "-fopenmp", "-g", "-O1", f"-I{ROOT / 'runtime' / 'include'}",
                    str(ROOT / "samples" / "runtime" / "omp_tasks.c"), "-o", "tasks"], cwd=d, check=True)
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    p = subprocess.run([str(ROOT / "runtime" / "bin" / "expert-run"), "-o", "tasks.elg", "./tasks"], cwd=d,
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return analyzer.analyze(str(d / "tasks.elg"), plugins=False)


def test_serial_producer_starves_its_team(cube):
    starved = by_case(cube, "omp_task_starvation")
    idle = starved.get("producer", 0.0) + by_case(cube, "omp_task_management").get("producer", 0.0)
    assert 13 * UNIT * 0.8 <= idle <= 13 * UNIT * 1.2, (idle, starved)
    assert starved["producer"] > 0.5 * idle  # the tasks are not there yet, mostly: starvation
    # tasks created all at once and enough of them for every thread: nobody starves
    assert starved.get("fine", 0.0) < 0.1 * starved["producer"], starved


def test_a_dependence_chain_starves_until_each_predecessor_completes(cube):
    starved = by_case(cube, "omp_task_starvation").get("deps", 0.0)
    managed = by_case(cube, "omp_task_management").get("deps", 0.0)
    assert 3 * UNIT * 0.8 <= starved <= 3 * UNIT * 1.2, (starved, managed)
    assert managed < 0.5 * UNIT, (starved, managed)  # dispatch only (counted from creation: 2 units)
    deps = cube.context.table("omp_tasks")
    held = deps["ready_time"] > deps["create_time"]
    assert held.sum() == 2  # b and c; a and d were ready at their creation
