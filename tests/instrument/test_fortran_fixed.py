"""expert-instrument and expert-cc on fixed-form Fortran (.f/.F/.for/.ftn).

Expected descriptor lines are read off samples/pomp/waits.f by hand (the lines of each opening directive,
continuation lines included, and of its end directive, or of the labelled CONTINUE that ends a loop
without '!$omp end do'); the designed waits are counted from its sleeps (see its header).
"""
from __future__ import annotations

import re
import sys

import pytest

from pomp_harness import EXPERT_CC, EXPERT_INSTRUMENT, RUNTIME, SAMPLES, need, run

sys.path.insert(0, str(RUNTIME / "opari"))
from expert_opari.directives import InstrumentError  # noqa: E402
from expert_opari.fortran import instrument_fortran  # noqa: E402
from test_fortran import code, rows  # noqa: E402


def instrument(src: str, disabled=(), width=72):
    return instrument_fortran(src, "t.f", frozenset(disabled), width=width)


def fixed(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def check_columns(out: str, width=72):
    """Every generated line (not a line marker, not a call) ends by column ``width``; calls start in column 7."""
    for ln in out.splitlines():
        if ln.startswith(("!$omp", "      call pomp_")):
            assert len(ln) <= width, ln
        if "call pomp_" in ln:
            assert ln.startswith("      call pomp_"), ln


# ---------------------------------------------------------------- the sample source
WAITS_ROWS = [
    ("parallel", "", 0, 18, 19, 42, 42), ("barrier", "", 0, 22, 22, 22, 22), ("do", "", 0, 23, 23, 26, 26),
    ("critical", "", 0, 27, 27, 30, 30), ("barrier", "", 0, 31, 31, 31, 31), ("single", "", 0, 32, 32, 34, 34),
    ("sections", "", 2, 35, 35, 40, 40),
]


def test_waits_descriptors_and_columns():
    out, table = instrument_fortran((SAMPLES / "waits.f").read_text(), "waits.f")
    assert rows(table) == WAITS_ROWS
    check_columns(out)
    assert out.splitlines()[0] == '# 1 "waits.f"'
    # the loop without '!$omp end do' ends at its labelled CONTINUE; text past column 72 is left alone
    c = code(out)
    k = c.index("10 continue")
    assert c[k + 1:k + 5] == ["!$omp end do nowait", "call pomp_barrier_enter(3)", "!$omp barrier",
                              "call pomp_barrier_exit(3)"]
    assert any(ln.endswith("WAITS016") for ln in out.splitlines())
    assert "!$omp barrier" in out.splitlines()[8]  # a comment line, not a sentinel


# ---------------------------------------------------------------- the rewriter on tricky input
def test_sentinels_in_all_spellings_with_continuations():
    out, table = instrument(fixed(
        "C$OMP PARALLEL",
        "C$OMP+   PRIVATE(I)",
        "      x = 1",
        "*$omp end parallel",
        "!$omp parallel do",
        "!$omp&schedule(static) reduction(+:s)",
        "      do 20 i = 1, n",
        "         s = s + i",
        "   20 continue"))
    assert [r[0] for r in rows(table)] == ["parallel", "parallel", "do"]
    assert rows(table)[0][3:] == (1, 2, 4, 4) and rows(table)[2][3:] == (5, 6, 9, 9)
    c = code(out)
    assert "!$omp parallel reduction(+:s)" in c and "!$omp do schedule(static)" in c
    assert c[-3:] == ["call pomp_parallel_end(2)", "!$omp end parallel", "call pomp_parallel_join(2)"]
    check_columns(out)


def test_comment_lines_starting_with_c_are_not_sentinels():
    src = fixed("c     !$omp parallel",
                "ccomp parallel",
                "c$om parallel",
                "C     call this a comment: c$omp barrier",
                "      x = 1  ! c$omp barrier",
                "d     print *, 'debug line'",
                "      end")
    out, table = instrument(src)
    assert rows(table) == []
    assert out.splitlines()[1:] == src.splitlines()


def test_text_beyond_column_72_is_a_comment():
    # 'do 10' is hidden past column 72 on the first line, so the loop is an END DO loop
    src = fixed("!$omp do",
                "      do i = 1, n".ljust(72) + "do 10 i = 1, n",
                "   10 x(i) = i",
                "      end do")
    out, table = instrument(src)
    assert rows(table)[0][3:] == (1, 1, 4, 4)
    # with a longer line length the same text is code: a labelled loop ending at label 10
    out, table = instrument_fortran(fixed("!$omp do", "      do 10 i = 1, n", "   10 x(i) = i".ljust(80) + "!",
                                          "      y = 1"), "t.f", width=132)
    assert rows(table)[0][3:] == (1, 1, 3, 3)


def test_long_generated_directives_are_continued_within_72_columns():
    var = [f"variable{k:02d}" for k in range(12)]
    names = ", ".join(var)
    conts = ["!$omp& " + ", ".join(var[k:k + 4]) + "," for k in range(2, 10, 4)] + ["!$omp& " + ", ".join(var[10:])]
    out, _ = instrument(fixed("!$omp parallel do lastprivate(k) private(" + ", ".join(var[:2]) + ",", *conts,
                              "!$omp& ) schedule(dynamic, 4)",
                              "      do k = 1, n",
                              "      end do"))
    check_columns(out)
    lines = [ln for ln in out.splitlines() if ln.lower().startswith("!$omp")]
    assert any(ln.startswith("!$omp& ") for ln in lines)
    joined = " ".join(ln[6:].strip() for ln in lines)
    assert re.sub(r"\s", "", names) in re.sub(r"\s", "", joined)


def test_labelled_loops_nested_shared_terminal_and_labelled_end_do():
    out, table = instrument(fixed(
        "!$omp parallel",
        "!$omp do",
        "      do 30 i = 1, n",
        "      do 30 j = 1, n",
        "         a(i, j) = 0",
        "   30 continue",
        "!$omp do",
        "      do 40, i = 1, n",
        "   40 end do",
        "!$omp do",
        "      DO10I=1,N",
        "      DO 50 J = 1, 2",
        "   50 B(J) = I",
        "   10 A(I) = I",
        "!$omp end parallel"))
    assert [(r[0], r[3], r[5]) for r in rows(table)] == [("parallel", 1, 15), ("do", 2, 6), ("do", 7, 9),
                                                        ("do", 10, 14)]


def test_statement_continuations_with_literals_and_tab_form():
    out, table = instrument(fixed(
        "!$omp parallel",
        "      print *, 'a literal with !$omp end parallel and do 10 i = 1,",
        "     &2 in it'",
        "\tx = 1",
        "!$omp single",
        "   7\ty = 2",
        "!$omp end single",
        "!$omp end parallel"))
    assert [(r[0], r[3], r[5]) for r in rows(table)] == [("parallel", 1, 8), ("single", 5, 7)]


def test_free_form_labelled_loops_end_at_their_label_too():
    out, table = instrument_fortran("!$omp do\ndo 10 i = 1, n\n10 continue\nx = 1\n", "t.f90")
    assert rows(table)[0][3:] == (1, 1, 3, 3)
    assert code(out)[3:5] == ["10 continue", "!$omp end do nowait"]


@pytest.mark.parametrize("src, line, message", [
    (fixed("c$omp parallel", "      x = 1"), 1, "'!$omp parallel' has no matching '!$omp end parallel'"),
    (fixed("!$omp do", "      do 10 i = 1, n", "   20 continue"), 1, "'!$omp do' has no matching"),
    (fixed("c$omp& private(x)"), 1, "continuation line without a directive"),
    (fixed("     &x = 1"), 1, "continuation line (column 6) without a statement"),
    (fixed("      x = 'abc"), 1, "unterminated character literal"),
    (fixed("!$omp section"), 1, "outside a sections construct"),
])
def test_bad_input_gives_file_line_and_reason(src, line, message):
    with pytest.raises(InstrumentError) as err:
        instrument(src)
    assert err.value.path == "t.f" and err.value.line == line, str(err.value)
    assert message in err.value.message


def test_command_line_on_fixed_form(tmp_path):
    src = tmp_path / "app.for"
    src.write_text(fixed("      program p", "c$omp parallel", "c$omp end parallel", "      end"))
    run([EXPERT_INSTRUMENT, src], cwd=tmp_path)
    out = (tmp_path / "app.pomp.for").read_text()
    assert "call pomp_parallel_fork(" in out and (tmp_path / "app.pomp_tab.c").exists()


# ---------------------------------------------------------------- compiled, run, traced, analysed
OMP_ENV = {"OMP_WAIT_POLICY": "passive", "OMP_NUM_THREADS": "3"}


@pytest.mark.runtime
def test_compiler_messages_point_at_the_original_file_and_lines(runtime_built, tmp_path):
    need("gfortran")
    for name in ("bad.f", "bad.F"):
        (tmp_path / name).write_text(fixed("      program b", "      integer i", "      i = = 1",
                                           "c$omp parallel", "      i = = 2", "c$omp end parallel", "      end"))
        p = run([EXPERT_CC, "gfortran", "-fopenmp", name, "-o", "b"], cwd=tmp_path, check=False)
        assert p.returncode != 0 and f"{name}:3:" in p.stderr and f"{name}:5:" in p.stderr, p.stderr
        assert "pomp" not in p.stderr, p.stderr
    (tmp_path / "bad2.f").write_text(fixed("c$omp parallel", "      x = 1"))
    p = run([EXPERT_CC, "gfortran", "-fopenmp", "-c", "bad2.f"], cwd=tmp_path, check=False)
    assert p.returncode == 1 and p.stderr.strip() == \
        "expert-cc: bad2.f:1: '!$omp parallel' has no matching '!$omp end parallel'", p.stderr


@pytest.mark.runtime
def test_preprocessed_fixed_form_and_separate_compilation(runtime_built, tmp_path):
    need("gfortran")
    import tracefmt
    (tmp_path / "part.F").write_text(fixed(
        "      subroutine work(n)", "      integer n", "#ifdef TWICE", "      n = n * 2", "#endif",
        "c$omp parallel num_threads(2)", "c$omp atomic", "      n = n + 1", "c$omp end parallel", "      end"))
    (tmp_path / "main.f").write_text(fixed("      program m", "      integer n", "      n = 1", "      call work(n)",
                                           "      print *, n", "      end"))
    run([EXPERT_CC, "gfortran", "-fopenmp", "-DTWICE", "-c", "part.F"], cwd=tmp_path)
    run([EXPERT_CC, "gfortran", "-fopenmp", "part.o", "main.f", "-o", "app"], cwd=tmp_path)
    assert run(["./app"], cwd=tmp_path).stdout.split() == ["4"]
    names = {r.name for r in tracefmt.open(str(tmp_path / "app.elg")).defs.regions.values()}
    assert {"!$omp parallel @part.F:6", "!$omp atomic @part.F:7"} <= names


UNIT = 0.010
DESIGNED = {"omp_ebarrier_wait": 6, "omp_ibarrier_wait": 6, "omp_lock_contention_critical": 3}  # per repetition


@pytest.fixture(scope="module")
def built(runtime_built, tmp_path_factory):
    need("gfortran")
    d = tmp_path_factory.mktemp("fixedwaits")
    run(["gfortran", "-fopenmp", "-O1", SAMPLES / "waits.f", "-o", "plain"], cwd=d)
    run([EXPERT_CC, "gfortran", "-fopenmp", "-O1", SAMPLES / "waits.f", "-o", "waits"], cwd=d)
    plain = run(["./plain"], cwd=d, env=OMP_ENV).stdout
    pomp = run(["./waits"], cwd=d, env=OMP_ENV).stdout
    return d, plain, pomp


@pytest.fixture(scope="module")
def waits(built):
    import analyzer
    return analyzer.analyze(str(built[0] / "waits.elg"))


@pytest.mark.runtime
def test_instrumented_and_plain_builds_compute_the_same(built):
    assert built[1] == built[2] == "6 2 22\n"  # 2 x 3 criticals, 2 singles, 2 x (1 + 10) sections


@pytest.mark.runtime
def test_trace_shows_each_construct_with_its_source_lines(built):
    import tracefmt
    from tracefmt.layout import Paradigm
    from tracefmt.validate import validate
    trace = tracefmt.open(str(built[0] / "waits.elg"))
    assert [str(p) for p in validate(trace)] == [] and trace.header.finished
    # the critical is the only lock: libgfortran's I/O mutexes (its print tail-calls pthread_mutex_unlock
    # with the program's return address) once left a release of a lock never acquired on location 0
    assert [lk.name for lk in trace.defs.locks.values()] == ["critical (unnamed)"]
    got = {r.name: (r.begin_line, r.end_line) for r in trace.defs.regions.values() if r.paradigm == Paradigm.OPENMP}
    f = "waits.f"
    assert got == {
        f"!$omp parallel @{f}:18": (18, 42), f"!$omp ibarrier @{f}:18": (18, 42),
        f"!$omp barrier @{f}:22": (22, 22), f"!$omp do @{f}:23": (23, 26), f"!$omp ibarrier @{f}:23": (23, 26),
        f"!$omp critical @{f}:27": (27, 30), f"!$omp critical sblock @{f}:27": (27, 30),
        f"!$omp barrier @{f}:31": (31, 31), f"!$omp single @{f}:32": (32, 34),
        f"!$omp single sblock @{f}:32": (32, 34), f"!$omp ibarrier @{f}:32": (32, 34),
        f"!$omp sections @{f}:35": (35, 40), f"!$omp section @{f}:35": (35, 40),
        f"!$omp ibarrier @{f}:35": (35, 40),
    }, got


@pytest.mark.runtime
@pytest.mark.parametrize("metric", sorted(DESIGNED))
def test_fixed_form_program_shows_the_designed_waits(waits, metric):
    assert waits.total(metric) == pytest.approx(DESIGNED[metric] * 2 * UNIT, rel=0.1, abs=0.03)


@pytest.mark.runtime
def test_waits_are_on_the_constructs_source_lines(waits):
    paths = {p for p, v in waits.per_callpath("omp_ibarrier_wait").items() if v > 0.5 * UNIT}
    assert "waits/!$omp parallel @waits.f:18/!$omp do @waits.f:23/!$omp ibarrier @waits.f:23" in paths, paths
    assert "waits/!$omp parallel @waits.f:18/!$omp ibarrier @waits.f:18" in paths, paths
    paths = {p for p, v in waits.per_callpath("omp_ebarrier_wait").items() if v > 0.5 * UNIT}
    assert any(p.endswith("!$omp barrier @waits.f:22") for p in paths), paths
    assert any(p.endswith("!$omp barrier @waits.f:31") for p in paths), paths


@pytest.mark.runtime
def test_mpi_wrapper_compiles_fixed_form_instrumented(runtime_built, tmp_path):
    """The issue's case: 'expert-cc mpif90 -c x.f' used to compile x.f uninstrumented without a word."""
    need("mpif90")
    need("nm")
    run([EXPERT_CC, "mpif90", "-fopenmp", "-c", SAMPLES / "waits.f", "-o", "waits.o"], cwd=tmp_path)
    symbols = run(["nm", "waits.o"], cwd=tmp_path).stdout
    assert "pomp_parallel_fork_" in symbols and "POMP_Fortran_register" in symbols, symbols
