"""expert-instrument and expert-cc on free-form Fortran.

Expected descriptor lines are read off the sample sources by hand (samples/pomp/tricky.f90, waits.f90:
the lines of each opening directive and of its end directive, or of the loop's END DO / the atomic's
statement where the end directive is left out); the designed waits of waits.f90 are counted from its
sleeps (see its header).
"""
from __future__ import annotations

import re
import sys

import pytest

from pomp_harness import EXPERT_CC, EXPERT_INSTRUMENT, RUNTIME, SAMPLES, need, run

sys.path.insert(0, str(RUNTIME / "opari"))
from expert_opari.descriptors import SLOTS  # noqa: E402
from expert_opari.directives import InstrumentError  # noqa: E402
from expert_opari.fortran import instrument_fortran  # noqa: E402

ROW = re.compile(r'\{"([^"]*)", "([^"]*)", (\d+), "[^"]*", (\d+), (\d+), (\d+), (\d+), \{0, 0, 0, 0\}, 0\},')


def rows(table: str):
    return [(m[1], m[2], int(m[3]), int(m[4]), int(m[5]), int(m[6]), int(m[7])) for m in ROW.finditer(table)]


def calls(text: str) -> list[str]:
    """The POMP calls of an instrumented text, handles made relative (1 = first descriptor)."""
    out = []
    for m in re.finditer(r"call pomp_(\w+)(?:\((\d+)\))?", text):
        out.append(m[1] if m[2] is None else f"{m[1]}:{int(m[2]) % SLOTS}")
    return out


def code(text: str) -> list[str]:
    """The lines of an instrumented text without line markers and indentation, handles made relative."""
    return [re.sub(r"call pomp_(\w+)\((\d+)\)", lambda m: f"call pomp_{m[1]}({int(m[2]) % SLOTS})", ln.strip())
            for ln in text.splitlines() if ln.strip() and not ln.startswith("# ")]


def instrument(src: str, disabled=()):
    return instrument_fortran(src, "t.f90", frozenset(disabled))


# ---------------------------------------------------------------- the sample source
def test_tricky_descriptors():
    _, table = instrument_fortran((SAMPLES / "tricky.f90").read_text(), "tricky.f90")
    assert rows(table) == [
        ("parallel", "", 0, 14, 15, 36, 36), ("do", "", 0, 16, 17, 21, 21), ("critical", "tally", 0, 22, 22, 24, 24),
        ("atomic", "", 0, 25, 25, 26, 26), ("single", "", 0, 27, 27, 30, 30), ("master", "", 0, 31, 31, 33, 33),
        ("barrier", "", 0, 34, 34, 34, 34), ("flush", "", 0, 35, 35, 35, 35),
        # parallel do without its end directive: the loop's END DO is the end
        ("parallel", "", 0, 37, 37, 40, 40), ("do", "", 0, 37, 37, 40, 40),
        ("parallel", "", 0, 41, 41, 46, 46), ("sections", "", 2, 41, 41, 46, 46), ("atomic", "", 0, 44, 44, 45, 45),
        ("parallel", "", 0, 48, 48, 52, 52), ("workshare", "", 0, 49, 49, 51, 51),
        ("region", "Summation", 0, 53, 53, 55, 55),
    ]


def test_strings_and_comments_that_mention_omp_stay_as_they_are():
    src = (SAMPLES / "tricky.f90").read_text()
    out, _ = instrument_fortran(src, "tricky.f90")
    for line in ('  msg = "!$omp parallel in a string ! and a bang"', "       '!$omp end single'",
                 "  do i = 1, 30        ! a comment with !$omp do in it"):
        assert line in src.splitlines() and line in out.splitlines()
    assert out.count("!$omp end single") == 2  # the literal and the rewritten end directive


# ---------------------------------------------------------------- transformations (Tables 1 and 2)
def test_do_gets_nowait_and_an_instrumented_barrier():
    out, _ = instrument("!$omp do\ndo i = 1, n\n  x(i) = i\nend do\n!$omp end do\n")
    assert code(out) == ["call pomp_do_enter(%d)" % 1, "!$omp do", "do i = 1, n", "x(i) = i",
                         "end do", "!$omp end do nowait", "call pomp_barrier_enter(1)",
                         "!$omp barrier", "call pomp_barrier_exit(1)",
                         "call pomp_do_exit(1)"]


def test_user_nowait_keeps_the_barrier_out():
    out, _ = instrument("!$omp do\ndo i = 1, n\nend do\n!$omp end do nowait\n")
    assert calls(out) == ["do_enter:1", "do_exit:1"]
    assert "!$omp end do nowait" in code(out)


def test_do_without_end_directive_ends_at_its_loop_with_nested_and_named_loops():
    src = ("!$omp parallel\n"        # 1
           "!$omp do collapse(2)\n"  # 2
           "outer: do i = 1, n\n"    # 3
           "  do j = 1, m\n"         # 4
           "    x(i, j) = 0\n"       # 5
           "  enddo\n"               # 6
           "end do outer\n"          # 7
           "y = 1\n"                 # 8
           "!$omp end parallel\n")   # 9
    out, table = instrument(src)
    assert rows(table) == [("parallel", "", 0, 1, 1, 9, 9), ("do", "", 0, 2, 2, 7, 7)]
    lines = code(out)
    assert lines[lines.index("end do outer") + 1] == "!$omp end do nowait"
    assert lines.index("y = 1") > lines.index("call pomp_do_exit(%d)" % 2)
    assert calls(out) == ["parallel_fork:1", "parallel_begin:1", "do_enter:2", "barrier_enter:2", "barrier_exit:2",
                          "do_exit:2", "barrier_enter:1", "barrier_exit:1", "parallel_end:1", "parallel_join:1"]


def test_parallel_do_is_split_with_its_clauses_distributed():
    out, table = instrument("!$omp parallel do default(none) shared(a) private(t) firstprivate(k) &\n"
                            "!$omp& lastprivate(k) schedule(dynamic, 2) reduction(+:s)\n"
                            "do k = 1, 8\n  a(k) = k\nend do\n!$omp end parallel do\n")
    lines = code(out)
    assert "!$omp parallel default(none) shared(a) private(t) reduction(+:s) shared(k)" in lines
    assert "!$omp do lastprivate(k) schedule(dynamic, 2) firstprivate(k)" in lines
    assert lines[-8:] == ["!$omp end do nowait", "call pomp_barrier_enter(2)", "!$omp barrier",
                          "call pomp_barrier_exit(2)", "call pomp_do_exit(2)", "call pomp_parallel_end(1)",
                          "!$omp end parallel", "call pomp_parallel_join(1)"]
    assert "!$omp end parallel do" not in out
    assert rows(table) == [("parallel", "", 0, 1, 2, 6, 6), ("do", "", 0, 1, 2, 6, 6)]


def test_sections_count_the_code_before_the_first_section_directive():
    src = "!$omp sections\na = 1\n!$omp section\nb = 1\n!$omp section\nc = 1\n!$omp end sections\n"
    out, table = instrument(src)
    assert rows(table) == [("sections", "", 3, 1, 1, 7, 7)]
    assert calls(out) == ["sections_enter:1"] + ["section_begin:1", "section_end:1"] * 3 + \
        ["barrier_enter:1", "barrier_exit:1", "sections_exit:1"]
    out2, table2 = instrument("!$omp sections\n!$omp section\nb = 1\n!$omp end sections\n")
    assert rows(table2) == [("sections", "", 1, 1, 1, 4, 4)]


def test_single_with_copyprivate_keeps_its_barrier():
    out, _ = instrument("!$omp single\nx = 1\n!$omp end single copyprivate(x)\n")
    assert "!$omp end single copyprivate(x)" in code(out)
    assert calls(out) == ["single_enter:1", "single_begin:1", "single_end:1", "single_exit:1"]


def test_critical_master_atomic_flush_barrier():
    src = ("!$omp critical(upd)\nx = 1\n!$omp end critical(upd)\n!$omp master\ny = 1\n!$omp end master\n"
           "!$omp atomic update\nz = z + &\n  1\n!$omp flush(z)\n!$omp barrier\n")
    out, table = instrument(src)
    assert rows(table) == [("critical", "upd", 0, 1, 1, 3, 3), ("master", "", 0, 4, 4, 6, 6),
                           ("atomic", "", 0, 7, 7, 8, 9), ("flush", "", 0, 10, 10, 10, 10),
                           ("barrier", "", 0, 11, 11, 11, 11)]
    assert calls(out) == ["critical_enter:1", "critical_begin:1", "critical_end:1", "critical_exit:1",
                          "master_begin:2", "master_end:2", "atomic_enter:3", "atomic_exit:3",
                          "flush_enter:4", "flush_exit:4", "barrier_enter:5", "barrier_exit:5"]
    lines = code(out)
    # the atomic statement follows its directive directly, the exit comes after its continuation line
    assert lines[lines.index("!$omp atomic update") + 1:lines.index("!$omp atomic update") + 4] == \
        ["z = z + &", "1", "call pomp_atomic_exit(3)"]


def test_directives_are_case_insensitive_and_continued():
    out, table = instrument("!$OMP Parallel &\n!$Omp&   Num_Threads(2) &   ! two\n!$omp   if(.true.)\n"
                            "x = 1\n!$OMP END PARALLEL\n")
    assert rows(table) == [("parallel", "", 0, 1, 3, 5, 5)]
    assert calls(out)[:2] == ["parallel_fork:1", "parallel_begin:1"]


def test_pomp_directives():
    out, table = instrument("!$pomp inst init\n!$pomp inst begin(Phase_One)\nx = 1\n!$pomp inst end(Phase_One)\n"
                            "!$pomp inst off\n!$pomp inst on\n!$pomp noinstrument\n!$omp barrier\n"
                            "!$pomp instrument\n!$pomp inst finalize\n")
    assert rows(table) == [("region", "Phase_One", 0, 2, 2, 4, 4)]
    assert calls(out) == ["init", "begin:1", "end:1", "off", "on", "finalize"]
    assert "!$omp barrier" in code(out)


def test_disabled_constructs_are_left_alone():
    src = "!$omp parallel do\ndo i = 1, n\nend do\n!$omp critical\nx = 1\n!$omp end critical\n"
    out, table = instrument(src, disabled=("parallel",))
    assert rows(table) == [("critical", "", 0, 4, 4, 6, 6)]
    assert "!$omp parallel do" in code(out)


def test_line_markers_resynchronise_after_inserted_lines():
    out, _ = instrument("x = 1\n!$omp barrier\ny = 2\n")
    lines = out.splitlines()
    assert lines[lines.index("y = 2") - 1] == '# 3 "t.f90"'
    assert lines[:2] == ['# 1 "t.f90"', "x = 1"]  # messages before the first construct name the original too


def test_preprocessor_lines_and_semicolons():
    out, table = instrument("#ifdef X\n!$omp parallel\n#endif\na = 1; b = 2\n!$omp end parallel\n")
    assert rows(table) == [("parallel", "", 0, 2, 2, 5, 5)]
    assert "#ifdef X" in out and "a = 1; b = 2" in out


@pytest.mark.parametrize("src, line, message", [
    ("!$omp parallel\n!$omp end do\n", 2, "'!$omp end do' does not match '!$omp parallel' on line 1"),
    ("x = 1\n!$omp parallel\nx = 2\n", 2, "'!$omp parallel' has no matching '!$omp end parallel'"),
    ("x = 'abc\n", 1, "unterminated character literal"),
    ("!$omp do\ndo 10 i = 1, n\n20 continue\n", 1, "'!$omp do' has no matching"),
    ("!$omp section\n", 1, "'!$omp section' outside a sections construct"),
    ("!$pomp inst bogus\n", 1, "unknown directive"),
    ("!$pomp inst end(r)\n", 1, "without a matching begin"),
    ("!$omp parallel &\nx = 1\n", 2, "expected a '!$omp' continuation line"),
    ("x = 1 + &\n", 1, "continued ('&') past the end of the file"),
])
def test_bad_input_gives_file_line_and_reason(src, line, message):
    with pytest.raises(InstrumentError) as err:
        instrument(src)
    assert err.value.path == "t.f90" and err.value.line == line, str(err.value)
    assert message in err.value.message


def test_command_line_writes_the_table_beside_the_output(tmp_path):
    src = tmp_path / "app.f90"
    src.write_text("program p\n!$omp parallel\n!$omp end parallel\nend program\n")
    run([EXPERT_INSTRUMENT, src], cwd=tmp_path)
    assert (tmp_path / "app.pomp.f90").exists() and "POMP_Fortran_register" in (tmp_path / "app.pomp_tab.c").read_text()
    bad = tmp_path / "bad.f90"
    bad.write_text("!$omp parallel\n")
    p = run([EXPERT_INSTRUMENT, bad], cwd=tmp_path, check=False)
    assert p.returncode == 1 and p.stderr.startswith(f"expert-instrument: {bad}:1: ") and "Traceback" not in p.stderr
    p = run([EXPERT_INSTRUMENT, src, "-o", "-"], cwd=tmp_path, check=False)
    assert p.returncode == 2 and "needs an output file" in p.stderr


# ---------------------------------------------------------------- compiled, run, traced, analysed
OMP_ENV = {"OMP_WAIT_POLICY": "passive", "OMP_NUM_THREADS": "3"}


@pytest.mark.runtime
def test_instrumented_tricky_computes_the_same_and_shows_its_constructs(runtime_built, tmp_path):
    need("gfortran")
    import tracefmt
    from tracefmt.layout import NO_ID, Paradigm
    from tracefmt.validate import validate

    run(["gfortran", "-fopenmp", "-O1", SAMPLES / "tricky.f90", "-o", "plain"], cwd=tmp_path)
    run([EXPERT_CC, "gfortran", "-fopenmp", "-O1", "-Wall", SAMPLES / "tricky.f90", "-o", "pomp"], cwd=tmp_path)
    plain = run(["./plain"], cwd=tmp_path, env=OMP_ENV).stdout
    pomp = run(["./pomp"], cwd=tmp_path, env=OMP_ENV).stdout
    # total = 465 + sum of squares 1..8 (204); count 3, hits 6, nsec 100 + 1 + 10; i after the loop 9; sum(w) 8
    assert plain == pomp == "it's a single !$omp end single\n   669     3     6   111     9    8.00\n"
    trace = tracefmt.open(str(tmp_path / "pomp.elg"))
    assert [str(p) for p in validate(trace)] == [] and trace.header.finished
    assert [lk.name for lk in trace.defs.locks.values()] == ["critical tally"]  # no libgfortran I/O mutex
    got = {r.name: (r.begin_line, r.end_line) for r in trace.defs.regions.values()
           if r.paradigm in (Paradigm.OPENMP, Paradigm.USER)}
    f = "tricky.f90"
    assert got == {
        f"!$omp parallel @{f}:14": (14, 36), f"!$omp do @{f}:16": (16, 21), f"!$omp ibarrier @{f}:16": (16, 21),
        f"!$omp critical(tally) @{f}:22": (22, 24), f"!$omp critical sblock @{f}:22": (22, 24),
        f"!$omp atomic @{f}:25": (25, 26), f"!$omp single @{f}:27": (27, 30),
        f"!$omp single sblock @{f}:27": (27, 30), f"!$omp ibarrier @{f}:27": (27, 30),
        f"!$omp master @{f}:31": (31, 33), f"!$omp barrier @{f}:34": (34, 34), f"!$omp flush @{f}:35": (35, 35),
        f"!$omp ibarrier @{f}:14": (14, 36),
        f"!$omp parallel @{f}:37": (37, 40), f"!$omp do @{f}:37": (37, 40), f"!$omp ibarrier @{f}:37": (37, 40),
        f"!$omp parallel @{f}:41": (41, 46), f"!$omp sections @{f}:41": (41, 46),
        f"!$omp section @{f}:41": (41, 46), f"!$omp atomic @{f}:44": (44, 45), f"!$omp ibarrier @{f}:41": (41, 46),
        f"!$omp parallel @{f}:48": (48, 52), f"!$omp workshare @{f}:49": (49, 51),
        f"!$omp ibarrier @{f}:49": (49, 51), f"!$omp ibarrier @{f}:48": (48, 52),
        "Summation": (53, 55),
        "pomp": (NO_ID, NO_ID),  # the program root region, named after the executable; no source line
    }


@pytest.mark.runtime
def test_separate_compile_and_link_and_preprocessed_source(runtime_built, tmp_path):
    """-c objects carry their descriptor table (merged with ld -r); .F90 goes through cpp with the markers."""
    need("gfortran")
    import tracefmt

    (tmp_path / "part.F90").write_text(
        "subroutine work(n)\n  integer :: n\n#ifdef TWICE\n  n = n * 2\n#endif\n"
        "  !$omp parallel num_threads(2)\n  !$omp atomic\n  n = n + 1\n  !$omp end parallel\nend subroutine\n")
    (tmp_path / "main.f90").write_text("program m\n  integer :: n\n  n = 1\n  call work(n)\n"
                                       "  !$omp parallel num_threads(2)\n  !$omp end parallel\n  print *, n\nend\n")
    run([EXPERT_CC, "gfortran", "-fopenmp", "-DTWICE", "-c", "part.F90"], cwd=tmp_path)
    run([EXPERT_CC, "gfortran", "-fopenmp", "-c", "main.f90"], cwd=tmp_path)
    run([EXPERT_CC, "gfortran", "-fopenmp", "part.o", "main.o", "-o", "app"], cwd=tmp_path)
    assert run(["./app"], cwd=tmp_path).stdout.split() == ["4"]  # 1 * 2 + one increment per thread
    trace = tracefmt.open(str(tmp_path / "app.elg"))
    names = {r.name for r in trace.defs.regions.values()}
    assert {"!$omp parallel @part.F90:6", "!$omp atomic @part.F90:7", "!$omp parallel @main.f90:5"} <= names


@pytest.mark.runtime
def test_compiler_errors_point_at_the_original_lines(runtime_built, tmp_path):
    need("gfortran")
    (tmp_path / "bad.f90").write_text("program b\n  integer :: i\n  !$omp parallel\n  !$omp barrier\n"
                                      "  i = = 1\n  !$omp end parallel\nend\n")
    p = run([EXPERT_CC, "gfortran", "-fopenmp", "bad.f90", "-o", "b"], cwd=tmp_path, check=False)
    assert p.returncode != 0 and "bad.f90:5:" in p.stderr, p.stderr


UNIT = 0.010
DESIGNED = {"omp_ebarrier_wait": 6, "omp_ibarrier_wait": 6, "omp_lock_contention_critical": 3}  # per repetition


@pytest.fixture(scope="module")
def waits(runtime_built, tmp_path_factory):
    need("gfortran")
    import analyzer
    d = tmp_path_factory.mktemp("fwaits")
    run([EXPERT_CC, "-fopenmp", "-O1", SAMPLES / "waits.f90", "-o", "waits"], cwd=d)
    assert run(["./waits"], cwd=d, env=OMP_ENV).stdout == "6\n"
    return analyzer.analyze(str(d / "waits.elg"))


@pytest.mark.runtime
@pytest.mark.parametrize("metric", sorted(DESIGNED))
def test_fortran_program_shows_the_designed_waits(waits, metric):
    # 2 repetitions; sleeps overshoot and a woken thread can start late on a loaded 2-core machine
    assert waits.total(metric) == pytest.approx(DESIGNED[metric] * 2 * UNIT, rel=0.1, abs=0.03)


@pytest.mark.runtime
def test_fortran_waits_are_on_the_constructs_source_lines(waits):
    # every path starts at the program root region, named after the executable
    paths = {p for p, v in waits.per_callpath("omp_ibarrier_wait").items() if v > 0.5 * UNIT}
    assert "waits/!$omp parallel @waits.f90:13/!$omp do @waits.f90:17/!$omp ibarrier @waits.f90:17" in paths, paths
    assert "waits/!$omp parallel @waits.f90:13/!$omp ibarrier @waits.f90:13" in paths, paths
    paths = {p for p, v in waits.per_callpath("omp_ebarrier_wait").items() if v > 0.5 * UNIT}
    assert any(p.endswith("!$omp barrier @waits.f90:16") for p in paths), paths
    assert any(p.endswith("!$omp barrier @waits.f90:25") for p in paths), paths
