"""expert-instrument as a source-to-source tool (pure Python, no compiler needed).

Expected descriptors are read off the sample sources by hand (line numbers of each directive and of
the last line of its structured block), and the transformations follow the seed's Tables 1 and 2.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from pomp_harness import EXPERT_INSTRUMENT, RUNTIME, SAMPLES

sys.path.insert(0, str(RUNTIME / "opari"))
from expert_opari.c_lexer import Lexer  # noqa: E402
from expert_opari.c_rewriter import instrument_source  # noqa: E402
from expert_opari.directives import InstrumentError  # noqa: E402

DESCR = re.compile(r'static POMP_DESCRIPTOR struct ompregdescr (pomp_rd_\d+) = \{"([^"]*)", "([^"]*)", (\d+), '
                   r'"[^"]*", (\d+), (\d+), (\d+), (\d+), \{0, 0, 0, 0\}, 0\};')


def descriptors(out: str):
    """(name, sub_name, num_sections, begin_line1, begin_lineN, end_line1, end_lineN) per descriptor."""
    return [(m[2], m[3], int(m[4]), int(m[5]), int(m[6]), int(m[7]), int(m[8])) for m in DESCR.finditer(out)]


def body(out: str) -> str:
    """The instrumented text after the prologue (include + descriptors + #line 1)."""
    return out.split("\n", out.count("\n", 0, out.index("#line 1 ")) + 1)[-1]


def squash(s: str) -> str:
    return "".join(s.split())


# ---------------------------------------------------------------- the sample sources
def test_tricky_c_descriptors():
    out = instrument_source((SAMPLES / "tricky.c").read_text(), "tricky.c")
    assert descriptors(out) == [
        ("parallel", "", 0, 24, 25, 31, 31),  # directive continued onto line 25, body = the for construct
        ("for", "", 0, 26, 26, 31, 31),
        ("parallel", "", 0, 38, 38, 55, 55),
        ("critical", "", 0, 41, 41, 42, 42),
        ("atomic", "", 0, 43, 43, 44, 44),
        ("single", "", 0, 45, 45, 46, 46),
        ("master", "", 0, 47, 47, 48, 48),
        ("barrier", "", 0, 49, 49, 49, 49),
        ("for", "", 0, 50, 50, 54, 54),
        ("critical", "named_one", 0, 52, 52, 53, 53),
        ("parallel", "", 0, 64, 64, 75, 75),  # parallel sections, split
        ("sections", "", 3, 64, 64, 75, 75),  # the first section has no directive of its own
        ("parallel", "", 0, 83, 83, 84, 84),  # inside #if 0: instrumented, never compiled
        ("parallel", "", 0, 91, 91, 98, 98),
        ("region", "summation", 0, 105, 105, 107, 107),
    ]  # nothing from the strings and comments, nothing for the noinstrument'ed parallel for at 109


def test_tricky_cpp_descriptors():
    out = instrument_source((SAMPLES / "tricky.cpp").read_text(), "tricky.cpp")
    assert descriptors(out) == [
        ("parallel", "", 0, 19, 19, 20, 20),
        ("for", "", 0, 19, 19, 20, 20),
        ("critical", "counter", 0, 27, 27, 28, 28),
        ("parallel", "", 0, 38, 38, 50, 50),
        ("for", "", 0, 47, 47, 49, 49),
    ]


GENERATED = re.compile(r"^(\{ )?POMP_\w+\((&pomp_rd_\d+)?\);( \})?$")


@pytest.mark.parametrize("name", ["tricky.c", "tricky.cpp", "waits.c"])
def test_line_directives_keep_every_original_line_at_its_number(name):
    """Simulate the compiler's presumed line numbers: every original line's text is found at its own number."""
    src = (SAMPLES / name).read_text()
    out = instrument_source(src, name)
    original = src.split("\n")
    pragma_lines = set()
    for t in Lexer(src, name).tokens():
        if t.kind == "pp" and t.text.replace(" ", "").startswith(("#pragmaomp", "#pragmapomp")):
            pragma_lines.update(range(t.line, t.end_line + 1))
    seen: dict[int, str] = {}
    presumed = None
    for line in out.split("\n"):
        m = re.match(r'#line (\d+) "([^"]*)"$', line)
        if m:
            assert m[2] == name
            presumed = int(m[1])
            continue
        if presumed is None:
            continue  # the prologue
        stripped = line.strip()
        # generated lines: POMP calls, and directives that are not the original line at this number
        original_here = original[presumed - 1] if 0 < presumed <= len(original) else ""
        generated = GENERATED.match(stripped) or (stripped.startswith("#pragma")
                                                  and squash(line) != squash(original_here))
        if not generated:
            text = re.sub(r"POMP_(Init|Destroy|Set|Unset|Test)_(lock|nest_lock)",
                          lambda k: f"omp_{k[1].lower()}_{k[2]}", line)
            seen[presumed] = seen.get(presumed, "") + text
        presumed += 1
    for number, text in enumerate(original, start=1):
        if number in pragma_lines:
            continue
        assert squash(seen.get(number, "")) == squash(text), f"{name}:{number}"


# ---------------------------------------------------------------- transformations (Tables 1 and 2)
def test_parallel_region_gets_fork_join_and_an_explicit_end_barrier():
    out = body(instrument_source("void f(void) {\n#pragma omp parallel\n  work();\n}\n", "p.c"))
    calls = re.findall(r"POMP_\w+|#pragma omp \w+", out)
    assert calls == ["POMP_Parallel_fork", "#pragma omp parallel", "POMP_Parallel_begin", "POMP_Barrier_enter",
                     "#pragma omp barrier", "POMP_Barrier_exit", "POMP_Parallel_end", "POMP_Parallel_join"]


def test_worksharing_loop_gets_nowait_and_an_instrumented_barrier():
    out = body(instrument_source("void f(int *a) {\n#pragma omp for schedule(static)\nfor (int i=0;i<9;i++) a[i]=i;\n}\n",
                                    "f.c"))
    assert "#pragma omp for schedule(static) nowait" in out
    assert re.findall(r"POMP_\w+|#pragma omp \w+", out) == [
        "POMP_For_enter", "#pragma omp for", "POMP_Barrier_enter", "#pragma omp barrier", "POMP_Barrier_exit",
        "POMP_For_exit"]


def test_nowait_loop_gets_no_barrier():
    out = body(instrument_source("void f(int *a) {\n#pragma omp for nowait\nfor (int i=0;i<9;i++) a[i]=i;\n}\n",
                                    "f.c"))
    assert "barrier" not in out.lower()
    assert "POMP_For_enter" in out and "POMP_For_exit" in out


def test_single_with_copyprivate_keeps_its_implicit_barrier():
    out = body(instrument_source("void f(int x) {\n#pragma omp single copyprivate(x)\nx = 1;\n}\n", "s.c"))
    assert "nowait" not in out and "barrier" not in out.lower()
    assert re.findall(r"POMP_\w+", out) == ["POMP_Single_enter", "POMP_Single_begin", "POMP_Single_end",
                                            "POMP_Single_exit"]


def test_combined_parallel_for_splits_the_clauses():
    src = ("void f(double *a, int n) {\n  double s = 0; int x = 0;\n"
           "#pragma omp parallel for default(none) shared(a, n) reduction(+:s) schedule(dynamic, 4) \\\n"
           "        firstprivate(x) lastprivate(x) num_threads(4) collapse(1)\n"
           "  for (int i = 0; i < n; i++) { x = i; s += a[i]; }\n}\n")
    out = body(instrument_source(src, "c.c"))
    par = re.search(r"#pragma omp parallel (.*)", out)[1]
    loop = re.search(r"#pragma omp for (.*)", out)[1]
    assert par == "default(none) shared(a, n) reduction(+:s) num_threads(4) shared(x)"
    assert loop == "schedule(dynamic, 4) lastprivate(x) collapse(1) firstprivate(x) nowait"
    # Table 2: fork, parallel, begin, for enter, for, barrier of the for, for exit, end, join
    assert re.findall(r"POMP_\w+|#pragma omp \w+", out) == [
        "POMP_Parallel_fork", "#pragma omp parallel", "POMP_Parallel_begin", "POMP_For_enter", "#pragma omp for",
        "POMP_Barrier_enter", "#pragma omp barrier", "POMP_Barrier_exit", "POMP_For_exit", "POMP_Parallel_end",
        "POMP_Parallel_join"]
    assert descriptors(instrument_source(src, "c.c"))[0][3:5] == (3, 4)


def test_sections_each_section_wrapped():
    src = ("void f(void) {\n#pragma omp sections\n{\n a();\n b();\n#pragma omp section\n c();\n}\n}\n")
    out = body(instrument_source(src, "s.c"))
    assert out.count("POMP_Section_begin") == 2 and out.count("POMP_Section_end") == 2
    assert descriptors(instrument_source(src, "s.c")) == [("sections", "", 2, 2, 2, 8, 8)]
    assert "#pragma omp sections nowait" in out


def test_critical_and_atomic_and_lock_routines():
    src = ('void f(omp_lock_t *l, struct s *o) {\n#pragma omp critical(name)\n{ g(); }\n'
           '#pragma omp atomic update\nx += 1;\nomp_set_lock(l); omp_unset_lock (l);\n'
           'o->omp_set_lock(l); const char *t = "omp_set_lock(l)";\n}\n')
    out = body(instrument_source(src, "k.c"))
    assert re.findall(r"POMP_\w+", out) == [
        "POMP_Critical_enter", "POMP_Critical_begin", "POMP_Critical_end", "POMP_Critical_exit",
        "POMP_Atomic_enter", "POMP_Atomic_exit", "POMP_Set_lock", "POMP_Unset_lock"]
    assert 'o->omp_set_lock(l); const char *t = "omp_set_lock(l)";' in out  # members and strings untouched


def test_user_region_and_control_directives():
    src = ("int main(void) {\n#pragma pomp inst init\n#pragma omp inst begin(phase_1)\nwork();\n"
           "#pragma pomp inst end(phase_1)\n#pragma pomp inst off\n#pragma pomp inst on\n"
           "#pragma pomp inst finalize\n}\n")
    out = instrument_source(src, "u.c")
    assert descriptors(out) == [("region", "phase_1", 0, 3, 3, 5, 5)]
    assert re.findall(r"POMP_\w+", body(out)) == ["POMP_Init", "POMP_Begin", "POMP_End", "POMP_Off", "POMP_On",
                                                  "POMP_Finalize"]
    assert "#define _POMP" in (RUNTIME / "include" / "pomp.h").read_text()
    assert out.startswith("#include <pomp.h>\n")


def test_noinstrument_switches_off_until_instrument():
    src = ("void f(omp_lock_t *l) {\n#pragma pomp noinstrument\n#pragma omp parallel\n{ omp_set_lock(l); }\n"
           "#pragma pomp instrument\n#pragma omp barrier\n}\n")
    out = instrument_source(src, "n.c")
    assert [d[0] for d in descriptors(out)] == ["barrier"]
    assert "omp_set_lock(l)" in out and "#pragma omp parallel" in out and "noinstrument" not in out


def test_disable_leaves_constructs_alone():
    src = "void f(void) {\n#pragma omp parallel\n{\n#pragma omp critical\n g();\n}\n}\n"
    out = instrument_source(src, "d.c", disabled=["critical"])
    assert [d[0] for d in descriptors(out)] == ["parallel"]
    with pytest.raises(ValueError, match="unknown construct"):
        instrument_source(src, "d.c", disabled=["loops"])


def test_statement_forms_as_structured_blocks():
    """if/else, do-while, switch, labels and nested directives as single-statement bodies."""
    src = ("void f(int c) {\n"
           "#pragma omp parallel\n"          # 2
           "  if (c) g(); else if (c > 1) h(); else { k(); }\n"  # 3
           "#pragma omp parallel\n"          # 4
           "  do { g(); } while (c--);\n"    # 5
           "#pragma omp parallel\n"          # 6
           "  switch (c) { case 1: g(); break; default: h(); }\n"  # 7
           "#pragma omp parallel\n"          # 8
           "#pragma omp single\n"            # 9
           "#pragma omp critical\n"          # 10
           "  done: g();\n"                  # 11
           "}\n")
    assert descriptors(instrument_source(src, "s.c")) == [
        ("parallel", "", 0, 2, 2, 3, 3), ("parallel", "", 0, 4, 4, 5, 5), ("parallel", "", 0, 6, 6, 7, 7),
        ("parallel", "", 0, 8, 8, 11, 11), ("single", "", 0, 9, 9, 11, 11), ("critical", "", 0, 10, 10, 11, 11)]


def test_conditional_branches_with_unbalanced_braces():
    """Only the first branch of an #if chain is used to find block boundaries."""
    src = ("void f(int n) {\n#pragma omp parallel\n{\n#ifdef FAST\n  for (int i = 0; i < n; i++) {\n#else\n"
           "  for (int i = n; i > 0; i--) {\n#endif\n    g(i);\n  }\n}\n}\n")
    assert descriptors(instrument_source(src, "b.c")) == [("parallel", "", 0, 2, 2, 11, 11)]


# ---------------------------------------------------------------- bad input: clear errors with file and line
@pytest.mark.parametrize("src, line, message", [
    ("int x;\n/* never closed\n", 2, "unterminated /* comment"),
    ('int x;\nconst char *s = "abc;\n', 2, "unterminated string literal"),
    ("void f(void) {\n#pragma omp parallel\n{ g();\n", 3, "no matching '}'"),
    ("void f(void) {\n#pragma omp sections\n g();\n}\n", 3, "sections construct needs a '{ ... }' block"),
    ("void f(void) {\n#pragma pomp inst end(a)\n}\n", 2, "without a matching begin(a)"),
    ("void f(void) {\n#pragma pomp inst begin(a)\n}\n", 2, "has no matching end(a)"),
    ("void f(void) {\n#pragma pomp inst begin\n}\n", 2, "needs a region name"),
    ("void f(void) {\n#pragma omp section\n g();\n}\n", 2, "outside a sections construct"),
    ("void f(void) {\n#pragma omp parallel num_threads(2\n g();\n}\n", 2, "unbalanced parentheses"),
])
def test_errors_name_file_and_line(src, line, message):
    with pytest.raises(InstrumentError) as exc:
        instrument_source(src, "bad.c")
    assert str(exc.value).startswith(f"bad.c:{line}: ")
    assert message in str(exc.value)


def test_cli_writes_output_and_reports_errors(tmp_path):
    src = tmp_path / "app.c"
    src.write_text("int main(void) {\n#pragma omp parallel\n{ }\nreturn 0;\n}\n")
    p = subprocess.run([str(EXPERT_INSTRUMENT), str(src)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "app.pomp.c").read_text().count("POMP_Parallel_fork") == 1
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) {\n#pragma omp parallel\n")
    p = subprocess.run([str(EXPERT_INSTRUMENT), "-o", "-", str(bad)], capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.startswith(f"expert-instrument: {bad}:2: ")
    assert "Traceback" not in p.stderr
    p = subprocess.run([str(EXPERT_INSTRUMENT), str(tmp_path / "missing.c")], capture_output=True, text=True)
    assert p.returncode == 1 and "cannot read" in p.stderr and "Traceback" not in p.stderr
