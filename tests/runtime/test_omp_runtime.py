"""Which OpenMP runtime ran the program: expert-run's one line and the trace's openmp_runtime attribute.

expert-run runs a GCC (libgomp) program on LLVM libomp so that OMPT sees its constructs; its timings
can then differ from the program's own libgomp runs, so expert-run says on which runtime the program
runs (one line, rank 0 of a launch), and the runtime records the one whose OpenMP API the program
called, the version that runtime gave OMPT, and how the constructs were recorded (runtime/src/ompt.c;
docs/runtime.md, "Which OpenMP runtime ran").
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, ROOT, SAMPLES, assert_valid, need, run

pytestmark = pytest.mark.runtime

EXPERT_CC = ROOT / "runtime" / "bin" / "expert-cc"
SOURCE = """#include <stdio.h>
int main(void)
{
    int n = 0;
#pragma omp parallel
    {
#pragma omp critical
        n++;
    }
    printf("%d\\n", n > 0);
    return 0;
}
"""
LINE = "expert-run: OpenMP runtime: "
OMPT = "constructs recorded through OMPT"
POMP = "constructs recorded by POMP instrumentation (expert-cc)"
UNRECORDED = "constructs not recorded (no OMPT, no POMP instrumentation)"
IN_PLACE = ", in place of the program's GCC libgomp"


@pytest.fixture(scope="module")
def progs(runtime_built, tmp_path_factory):
    need("gcc")
    need("clang")
    d = tmp_path_factory.mktemp("ompruntime")
    (d / "p.c").write_text(SOURCE)
    run(["clang", "-fopenmp", "-g", "p.c", "-o", "clang_omp"], cwd=d)
    run(["gcc", "-fopenmp", "-g", "p.c", "-o", "gcc_omp"], cwd=d)
    run(["gcc", "-g", "p.c", "-o", "serial"], cwd=d)  # the pragmas ignored: no OpenMP runtime at all
    run([str(EXPERT_CC), "gcc", "-fopenmp", "-g", "p.c", "-o", "gcc_pomp"], cwd=d)
    return d


def linked(prog, lib: str) -> str:
    """the file the dynamic linker gives `prog` for the library whose name starts with `lib` (ldd)"""
    for line in run(["ldd", str(prog)], cwd=prog.parent).stdout.splitlines():
        parts = line.split()
        if parts and parts[0].startswith(lib) and len(parts) > 2:
            return parts[2]
    raise AssertionError(f"{prog} does not link {lib}")


def traced(progs, tmp_path, prog, *options, env=None):
    """expert-run's OpenMP runtime lines and the trace's openmp_runtime attribute (None if absent)"""
    p = run([str(EXPERT_RUN), *options, "-o", "t.elg", str(progs / prog)], cwd=tmp_path,
            env={"OMP_NUM_THREADS": "2", **(env or {})})
    assert p.stdout == "1\n"
    trace = tracefmt.open(str(tmp_path / "t.elg"))
    assert_valid(trace)
    return [ln for ln in p.stderr.splitlines() if ln.startswith(LINE)], trace.defs.attributes.get("openmp_runtime")


def test_clang_program_on_its_own_libomp(progs, tmp_path):
    libomp = linked(progs / "clang_omp", "libomp")
    lines, attr = traced(progs, tmp_path, "clang_omp")
    assert lines == [f"{LINE}LLVM libomp ({libomp}), the program's own"]
    # the version is what libomp told ompt_start_tool ("LLVM OMP version: ...", the OpenMP API as yyyymm)
    m = re.fullmatch(r"LLVM libomp \((.+?), (.+), OpenMP API (\d{6})\); (.+)", attr)
    assert m, attr
    assert os.path.realpath(m[1]) == os.path.realpath(libomp) and m[2] and m[4] == OMPT


def test_gcc_program_on_libomp_says_so(progs, tmp_path):
    lines, attr = traced(progs, tmp_path, "gcc_omp")
    assert len(lines) == 1, lines
    m = re.fullmatch(re.escape(LINE) + r"LLVM libomp \((/\S+)\) in place of the program's GCC libgomp, for OMPT; "
                     r"timings may differ from libgomp runs \(docs/runtime.md\)", lines[0])
    assert m, lines[0]
    assert attr.startswith(f"LLVM libomp ({m[1]}, ") and attr.endswith(f"){IN_PLACE}; {OMPT}"), attr


def test_gcc_program_on_its_own_libgomp(progs, tmp_path):
    libgomp = linked(progs / "gcc_omp", "libgomp")
    lines, attr = traced(progs, tmp_path, "gcc_omp", "--omp-runtime=native")
    assert lines == [f"{LINE}GCC libgomp ({libgomp}), the program's own (--omp-runtime=native): it has no OMPT, "
                     "so OpenMP constructs are recorded only in an expert-cc build"]
    # libgomp never asks for an OMPT tool: no version
    assert attr == f"GCC libgomp ({libgomp}); {UNRECORDED}"


def test_expert_cc_build_on_libgomp_and_on_libomp(progs, tmp_path):
    libgomp = linked(progs / "gcc_pomp", "libgomp")
    lines, attr = traced(progs, tmp_path, "gcc_pomp", "--omp-runtime=native")
    assert lines == [f"{LINE}GCC libgomp ({libgomp}), the program's own (--omp-runtime=native)"]
    assert attr == f"GCC libgomp ({libgomp}); {POMP}"
    # started without expert-run (the usual way for an expert-cc build): the same
    p = run(["./gcc_pomp"], cwd=progs, env={"OMP_NUM_THREADS": "2"})
    assert LINE not in p.stderr
    assert tracefmt.open(str(progs / "gcc_pomp.elg")).defs.attributes["openmp_runtime"] == attr
    lines, attr = traced(progs, tmp_path, "gcc_pomp")
    assert len(lines) == 1 and "in place of the program's GCC libgomp" in lines[0], lines
    assert "--omp-runtime=native" in lines[0], lines
    assert attr.startswith("LLVM libomp (") and attr.endswith(f"{IN_PLACE}; {POMP}"), attr


def test_program_without_openmp_has_neither(progs, tmp_path):
    lines, attr = traced(progs, tmp_path, "serial")
    assert lines == [] and attr is None


def test_expert_trace_info_shows_it(progs, tmp_path):
    _, attr = traced(progs, tmp_path, "gcc_omp")
    p = subprocess.run([sys.executable, "-m", "tracefmt.cli", "info", "t.elg"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60, check=True)
    assert f"attribute   openmp_runtime = {attr}" in p.stdout.splitlines()


def test_one_line_for_an_mpi_launch(runtime_built, tmp_path):
    need("mpicc.openmpi")
    need("mpirun.openmpi")
    run(["mpicc.openmpi", "-fopenmp", "-g", str(SAMPLES / "hybrid.c"), "-o", "hybrid"], cwd=tmp_path)
    p = subprocess.run(["mpirun.openmpi", "-np", "2", str(EXPERT_RUN), "-o", "h.elg", "./hybrid"], cwd=tmp_path,
                       env=dict(os.environ, **MPI_ENV), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith(LINE)]
    assert len(lines) == 1 and "in place of the program's GCC libgomp" in lines[0], p.stderr  # rank 0 only
    attr = tracefmt.open(str(tmp_path / "h.elg")).defs.attributes["openmp_runtime"]
    assert attr.endswith(f"{IN_PLACE}; {OMPT}"), attr
    # an expert-cc build links the MPI flavour's runtime library (libexpert-ompi.so): still an expert-cc build
    run([str(EXPERT_CC), "mpicc.openmpi", "-fopenmp", "-g", str(SAMPLES / "hybrid.c"), "-o", "hybrid_pomp"],
        cwd=tmp_path)
    p = subprocess.run(["mpirun.openmpi", "-np", "2", str(EXPERT_RUN), "--omp-runtime=native", "-o", "n.elg",
                        "./hybrid_pomp"], cwd=tmp_path, env=dict(os.environ, **MPI_ENV), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    libgomp = linked(tmp_path / "hybrid_pomp", "libgomp")
    assert [ln for ln in p.stderr.splitlines() if ln.startswith(LINE)] == \
        [f"{LINE}GCC libgomp ({libgomp}), the program's own (--omp-runtime=native)"], p.stderr
    assert tracefmt.open(str(tmp_path / "n.elg")).defs.attributes["openmp_runtime"] == f"GCC libgomp ({libgomp}); {POMP}"

