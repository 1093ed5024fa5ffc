"""The C/C++ rewriter: OpenMP directives into POMP calls, after the POMP/OPARI paper's Tables 1 and 2.

* every construct gets a context descriptor (descriptors.py) and its enter/exit/begin/end calls;
* implicit barriers are made explicit: ``nowait`` is added and an instrumented ``#pragma omp barrier``
  follows (at the end of a parallel region an explicit barrier is inserted before the implicit one);
* combined constructs (``parallel for``, ``parallel sections``, ``parallel master``) are split, with the
  clauses distributed to the parallel and the work-sharing part (directives.split_clauses);
* ``#pragma pomp inst init|finalize|on|off|begin(name)|end(name)`` become POMP calls,
  ``#pragma pomp noinstrument`` / ``instrument`` switch the instrumentation off and on (the paper's
  ``#pragma omp inst ...`` spelling is accepted too), and the OpenMP lock routines become POMP calls.

The rewriter collects edits (text inserted before or after a token, or replacing it) and renders them
with ``#line`` directives, so that compiler messages and debug information point at the original source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .c_lexer import Lexer, Scanner, Token
from .descriptors import Descriptor, c_descriptors, c_string
from .directives import (LOOP_CLAUSES, SECTIONS_CLAUSES, Clause, Directive, InstrumentError, check_disabled,
                         directive_text, is_standalone, parse_directive, split_clauses)

LOCK_ROUTINES = {
    f"omp_{op}_{kind}": f"POMP_{op.capitalize()}_{kind}"
    for op in ("init", "destroy", "set", "unset", "test")
    for kind in ("lock", "nest_lock")
}

CLOSE, OPEN, REPLACE = 0, 1, 2


@dataclass
class _Edit:
    pos: int
    rank: int  # CLOSE before OPEN before REPLACE at the same offset
    owner: int  # the construct that made the edit, numbered in source order
    seq: int  # order of creation
    lines: list[str]
    end: int  # > pos for a replacement

    def key(self):
        # at one offset: closes of inner (later) constructs first, opens of outer constructs first
        return (self.pos, self.rank, -self.owner if self.rank == CLOSE else self.owner, self.seq)


@dataclass
class _Instrumenter:
    text: str
    path: str  # as it goes into descriptors and #line directives
    disabled: frozenset = frozenset()
    edits: list = field(default_factory=list)
    descriptors: list = field(default_factory=list)
    seq: int = 0
    owner: int = 0

    # -- edit helpers
    def _edit(self, pos, rank, lines, end=None):
        self.seq += 1
        self.edits.append(_Edit(pos, rank, self.owner, self.seq, list(lines), pos if end is None else end))

    def open_before(self, tok: Token, *lines):
        self._edit(tok.start, OPEN, lines)

    def close_after(self, tok: Token, *lines):
        self._edit(tok.end, CLOSE, lines)

    def replace(self, tok: Token, *lines):
        self._edit(tok.start, REPLACE, lines, tok.end)

    def descriptor(self, name, first: Token, last: Token, sub_name="", num_sections=0) -> str:
        var = f"pomp_rd_{len(self.descriptors) + 1}"
        pragma = first
        self.descriptors.append(Descriptor(var, name, sub_name, num_sections, pragma.line, pragma.end_line,
                                            last.end_line, last.end_line))
        return var

    # -- the pass over the tokens
    def run(self) -> str:
        lexer = Lexer(self.text, self.path)
        toks = lexer.tokens()
        dirs = {i: parse_directive(t.text, t.line, self.path) for i, t in enumerate(toks) if t.kind == "pp"}
        sc = Scanner(toks, lexer, dirs)
        self.toks, self.sc = toks, sc
        enabled = True
        open_regions: dict[str, list[tuple[int, Token]]] = {}
        handled_sections: set[int] = set()
        for i, t in enumerate(toks):
            if t.kind == "id" and t.text in LOCK_ROUTINES and enabled and "locks" not in self.disabled:
                k = i + 1
                if k < len(toks) and toks[k].text == "(" and not (i > 0 and toks[i - 1].text in (".", ">", ":")):
                    self.replace(t, LOCK_ROUTINES[t.text])
                continue
            d = dirs.get(i)
            if d is None:
                continue
            if d.name in ("noinstrument", "instrument"):
                enabled = d.name == "instrument"
                self.replace(t, "")
                continue
            if d.name.startswith("inst"):
                self.user_directive(i, d, open_regions, enabled)
                continue
            if d.sentinel != "omp" or not enabled:
                continue
            if d.name == "section":
                if i not in handled_sections:
                    raise InstrumentError(self.path, t.line, "'#pragma omp section' outside a sections construct")
                continue
            self.construct(i, d, handled_sections)
        for name, stack in open_regions.items():
            if stack:
                raise InstrumentError(self.path, stack[-1][1].line,
                                      f"'#pragma pomp inst begin({name})' has no matching end({name})")
        return self.render()

    def user_directive(self, i, d, open_regions, enabled):
        t = self.toks[i]
        words = d.name.split()
        what = words[1] if len(words) > 1 else ""
        if what in ("init", "finalize", "on", "off"):
            call = {"init": "POMP_Init", "finalize": "POMP_Finalize", "on": "POMP_On", "off": "POMP_Off"}[what]
            self.replace(t, f"{call}();" if enabled else "")
            return
        if what in ("begin", "end"):
            name = (d.name_arg or "").strip()
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:\-]*", name):
                raise InstrumentError(self.path, t.line, f"'#pragma {d.sentinel} inst {what}' needs a region name, "
                                      f"as in '#pragma pomp inst {what}(solver)'")
            if what == "begin":
                open_regions.setdefault(name, []).append((i, t))
                self.replace(t, "")  # filled in at the matching end, when the line range is known
                return
            stack = open_regions.get(name)
            if not stack:
                raise InstrumentError(self.path, t.line, f"'#pragma {d.sentinel} inst end({name})' without a "
                                      f"matching begin({name})")
            bi, bt = stack.pop()
            if not enabled or "region" in self.disabled:
                self.replace(t, "")
                return
            var = self.descriptor("region", bt, t, sub_name=name)
            # replace the placeholder edit of the begin directive
            for e in self.edits:
                if e.pos == bt.start and e.rank == REPLACE:
                    e.lines = [f"POMP_Begin(&{var});"]
            self.replace(t, f"POMP_End(&{var});")
            return
        raise InstrumentError(self.path, t.line, f"unknown directive '#pragma {d.sentinel} {d.name}' "
                              "(expected inst init|finalize|on|off|begin(name)|end(name))")

    # -- OpenMP constructs
    def construct(self, i, d: Directive, handled_sections):
        t = self.toks[i]
        self.owner += 1
        name = d.name
        on = lambda c: c not in self.disabled  # noqa: E731
        if name in ("barrier",) and on("barrier"):
            var = self.descriptor("barrier", t, t)
            self.open_before(t, f"{{ POMP_Barrier_enter(&{var});")
            self.close_after(t, f"POMP_Barrier_exit(&{var}); }}")
            return
        if name == "taskwait" and on("taskwait"):
            var = self.descriptor("taskwait", t, t)
            self.open_before(t, f"{{ POMP_Taskwait_enter(&{var});")
            self.close_after(t, f"POMP_Taskwait_exit(&{var}); }}")
            return
        if name == "flush" and on("flush"):
            var = self.descriptor("flush", t, t)
            self.open_before(t, f"{{ POMP_Flush_enter(&{var});")
            self.close_after(t, f"POMP_Flush_exit(&{var}); }}")
            return
        if is_standalone(d):
            return
        first, last = self.sc.statement(i + 1)
        s_first, s_last = self.toks[first], self.toks[last]
        if name in ("parallel for", "parallel for simd", "parallel sections", "parallel master") and not on("parallel"):
            return
        if name == "parallel" and on("parallel"):
            var = self.descriptor("parallel", t, s_last)
            self.open_before(t, f"{{ POMP_Parallel_fork(&{var});")
            self.open_before(s_first, f"{{ POMP_Parallel_begin(&{var});")
            self.close_after(s_last, f"POMP_Barrier_enter(&{var});", "#pragma omp barrier",
                             f"POMP_Barrier_exit(&{var});", f"POMP_Parallel_end(&{var}); }}")
            self.close_after(s_last, f"POMP_Parallel_join(&{var}); }}")
        elif name in ("for", "for simd") and on("for"):
            var = self.descriptor("for", t, s_last)
            self.open_before(t, f"{{ POMP_For_enter(&{var});")
            if not d.has("nowait"):
                self.replace(t, f"#pragma omp {directive_text(d, d.clauses + [Clause('nowait', None)])}")
                self.close_after(s_last, *self.barrier_lines(var))
            self.close_after(s_last, f"POMP_For_exit(&{var}); }}")
        elif name in ("parallel for", "parallel for simd", "parallel sections", "parallel master"):
            self.combined(i, d, s_first, s_last, handled_sections, first, last)
        elif name == "sections" and on("sections"):
            var = self.sections_block(i, first, last, handled_sections, d)
            self.open_before(t, f"{{ POMP_Sections_enter(&{var});")
            if not d.has("nowait"):
                self.replace(t, f"#pragma omp {directive_text(d, d.clauses + [Clause('nowait', None)])}")
                self.close_after(s_last, *self.barrier_lines(var))
            self.close_after(s_last, f"POMP_Sections_exit(&{var}); }}")
        elif name == "sections":
            self.mark_sections(first, last, handled_sections)
        elif name == "single" and on("single"):
            var = self.descriptor("single", t, s_last)
            self.open_before(t, f"{{ POMP_Single_enter(&{var});")
            self.open_before(s_first, f"{{ POMP_Single_begin(&{var});")
            self.close_after(s_last, f"POMP_Single_end(&{var}); }}")
            # copyprivate forbids nowait: the implicit barrier stays (its wait counts as single time)
            if not d.has("nowait") and not d.has("copyprivate"):
                self.replace(t, f"#pragma omp {directive_text(d, d.clauses + [Clause('nowait', None)])}")
                self.close_after(s_last, *self.barrier_lines(var))
            self.close_after(s_last, f"POMP_Single_exit(&{var}); }}")
        elif name in ("master", "masked") and on("master"):
            var = self.descriptor(name, t, s_last)
            self.open_before(s_first, f"{{ POMP_Master_begin(&{var});")
            self.close_after(s_last, f"POMP_Master_end(&{var}); }}")
        elif name == "critical" and on("critical"):
            var = self.descriptor("critical", t, s_last, sub_name=(d.name_arg or "").strip())
            self.open_before(t, f"{{ POMP_Critical_enter(&{var});")
            self.open_before(s_first, f"{{ POMP_Critical_begin(&{var});")
            self.close_after(s_last, f"POMP_Critical_end(&{var}); }}")
            self.close_after(s_last, f"POMP_Critical_exit(&{var}); }}")
        elif name == "task" and on("task"):
            self.task(t, d, s_first, s_last)
        elif name == "taskgroup" and on("taskgroup"):
            # the wait for the group's tasks happens at the construct's end, inside the OpenMP runtime: it
            # is the stretch from the end of the body to the statement after the construct
            var = self.descriptor("taskgroup", t, s_last)
            self.open_before(t, f"{{ POMP_Taskgroup_enter(&{var});")
            self.open_before(s_first, "{")
            self.close_after(s_last, f"POMP_Taskgroup_wait_enter(&{var}); }}")
            self.close_after(s_last, f"POMP_Taskgroup_wait_exit(&{var}); POMP_Taskgroup_exit(&{var}); }}")
        elif name == "atomic" and on("atomic"):
            var = self.descriptor("atomic", t, s_last)
            self.open_before(t, f"{{ POMP_Atomic_enter(&{var});")
            self.close_after(s_last, f"POMP_Atomic_exit(&{var}); }}")

    def task(self, t: Token, d: Directive, s_first: Token, s_last: Token):
        """A task: created by POMP_Task_create on the encountering thread, which hands the new task's id to
        the task through a firstprivate variable; its body runs between POMP_Task_begin and _end."""
        var = self.descriptor("task", t, s_last)
        tid = f"pomp_task_{var[len('pomp_rd_'):]}"
        flags = (2 if d.has("untied") else 0) | (8 if d.has("mergeable") else 0)  # ELG_TASK_UNTIED, _MERGEABLE
        self.open_before(t, f"{{ unsigned long long {tid} = POMP_Task_create(&{var}, {flags});")
        self.replace(t, f"#pragma omp {directive_text(d, d.clauses + [Clause('firstprivate', tid)])}")
        self.open_before(s_first, f"{{ POMP_Task_begin(&{var}, {tid});")
        self.close_after(s_last, f"POMP_Task_end(&{var}, {tid}); }}")
        self.close_after(s_last, "}")

    def barrier_lines(self, var):
        return [f"POMP_Barrier_enter(&{var});", "#pragma omp barrier", f"POMP_Barrier_exit(&{var});"]

    def mark_sections(self, first, last, handled_sections) -> list[tuple[int, int]]:
        """The sections of a sections block: (first, last) token ranges; marks their directives handled."""
        toks, sc = self.toks, self.sc
        if toks[first].text != "{":
            raise InstrumentError(self.path, toks[first].line, "a sections construct needs a '{ ... }' block")
        parts = []
        j = sc.sig(first + 1)
        pending_start = j  # statements before the first '#pragma omp section' form the first section
        while j < last:
            d = sc.dirs.get(j) if toks[j].kind == "pp" else None
            if d is not None and d.sentinel == "omp" and d.name == "section":
                if pending_start < j:
                    parts.append((pending_start, self.last_before(j)))
                handled_sections.add(j)
                s, e = sc.statement(j + 1)
                parts.append((s, e))
                j = sc.sig(e + 1)
                pending_start = j
                continue
            _, e = sc.statement(j)
            j = sc.sig(e + 1)
        if pending_start < last:
            parts.append((pending_start, self.last_before(last)))
        return parts

    def last_before(self, j) -> int:
        k = j - 1
        while k >= 0 and self.toks[k].kind == "pp" and not self.sc.is_omp(k):
            k -= 1
        return k

    def sections_block(self, i, first, last, handled_sections, d) -> str:
        parts = self.mark_sections(first, last, handled_sections)
        t = self.toks[i]
        var = self.descriptor("sections", t, self.toks[last], num_sections=len(parts))
        for s, e in parts:
            self.open_before(self.toks[s], f"{{ POMP_Section_begin(&{var});")
            self.close_after(self.toks[e], f"POMP_Section_end(&{var}); }}")
        return var

    def combined(self, i, d: Directive, s_first, s_last, handled_sections, first, last):
        """parallel for / parallel sections / parallel master: split after Table 2."""
        t = self.toks[i]
        inner = d.name[len("parallel "):]
        keep = {"for": LOOP_CLAUSES, "for simd": LOOP_CLAUSES, "sections": SECTIONS_CLAUSES}.get(inner, set())
        outer_clauses, inner_clauses = split_clauses(d.clauses, keep)
        if inner == "master":
            inner_clauses = []
        pvar = self.descriptor("parallel", t, s_last)
        inner_name = "for" if inner.startswith("for") else inner
        if inner_name == "sections":
            wvar = self.sections_block(i, first, last, handled_sections, d)
        else:
            wvar = self.descriptor(inner_name, t, s_last)
        nowait = any(c.name == "nowait" for c in inner_clauses)
        if inner != "master" and not nowait:
            inner_clauses.append(Clause("nowait", None))
        lines = [f"{{ POMP_Parallel_fork(&{pvar});",
                 "#pragma omp " + " ".join(["parallel"] + [c.text() for c in outer_clauses]),
                 f"{{ POMP_Parallel_begin(&{pvar});"]
        if inner == "master":
            lines += ["#pragma omp master", f"{{ POMP_Master_begin(&{wvar});"]
            self.replace(t, *lines)
            self.close_after(s_last, f"POMP_Master_end(&{wvar}); }}", *self.barrier_lines(pvar))
        else:
            enter = "POMP_For_enter" if inner_name == "for" else "POMP_Sections_enter"
            exit_ = "POMP_For_exit" if inner_name == "for" else "POMP_Sections_exit"
            lines += [f"{{ {enter}(&{wvar});", "#pragma omp " + " ".join([inner] + [c.text() for c in inner_clauses])]
            self.replace(t, *lines)
            close = [] if nowait else self.barrier_lines(wvar)
            self.close_after(s_last, *close, f"{exit_}(&{wvar}); }}")
        self.close_after(s_last, f"POMP_Parallel_end(&{pvar}); }}", f"POMP_Parallel_join(&{pvar}); }}")

    # -- output
    def render(self) -> str:
        s = self.text
        lexer_lines = [0] + [m.end() for m in re.finditer("\n", s)]

        def line_col(pos):
            lo, hi = 0, len(lexer_lines) - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if lexer_lines[mid] <= pos:
                    lo = mid
                else:
                    hi = mid - 1
            return lo + 1, pos - lexer_lines[lo]

        fname = c_string(self.path)
        out = ["#include <pomp.h>\n"] + c_descriptors(self.descriptors, self.path)
        out.append(f"#line 1 {fname}\n")
        edits = sorted(self.edits, key=_Edit.key)
        pos = 0
        k = 0
        while k < len(edits):
            at = edits[k].pos
            group = []
            while k < len(edits) and edits[k].pos == at:
                group.append(edits[k])
                k += 1
            out.append(s[pos:at])
            end = max(e.end for e in group)
            lines = [ln for e in group for ln in e.lines]
            if len(group) == 1 and group[0].rank == REPLACE and len(lines) == 1 and "\n" not in s[at:end] \
                    and not lines[0].startswith("#"):
                out.append(lines[0])  # an in-line replacement (lock routine names, inst calls)
                pos = end
                continue
            # own lines, then resynchronise the line numbering with the original
            text_so_far = out[-1] if out else ""
            if not text_so_far.endswith("\n") and not (at == 0 or s[at - 1] == "\n"):
                out.append("\n")
            out.append("\n".join(lines) + "\n")
            line, col = line_col(end)
            out.append(f"#line {line} {fname}\n" + " " * col)
            pos = end
        out.append(s[pos:])
        return "".join(out)


def instrument_source(text: str, path: str = "<source>", disabled=()) -> str:
    """Instrumented text of a C/C++ source.  ``path`` goes into descriptors and #line directives."""
    check_disabled(disabled)
    return _Instrumenter(text, path, frozenset(disabled)).run()
