"""OPARI-style POMP instrumentation of Fortran sources: free form (.f90/.F90 and the later suffixes) and
fixed form (.f/.F/.for/.ftn).

The same transformation rules as for C (seed 001, Tables 1 and 2), in Fortran spelling:

* each construct gets a context descriptor and ``call pomp_<construct>_<event>(handle)`` statements;
* implicit barriers are made explicit: ``nowait`` goes on the ``!$omp end do|sections|single|workshare``
  directive and an instrumented ``!$omp barrier`` follows (a parallel region gets an explicit barrier
  before its end);
* ``!$omp parallel do|sections|workshare`` are split into a parallel region and the work-sharing
  construct, the clauses distributed between them;
* ``!$pomp inst init|finalize|on|off|begin(name)|end(name)`` become POMP calls, ``!$pomp noinstrument``
  / ``instrument`` switch the instrumentation off and on.

Fortran code cannot take the address of a C descriptor, so every construct gets an INTEGER handle
(``base + k``; ``base`` is derived from the file and its text) and the descriptors go into a C table
(returned next to the Fortran text; descriptors.py) that registers itself with the runtime
(runtime/src/pomp_fortran.c).  Directives and the clause splitting are shared with C (directives.py).
Line markers (``# N "file"``), which gfortran honours with and without preprocessing, keep compiler
messages on the original lines.

Source reading is line based and understands comments, character literals (also continued across
lines), ``&`` continuations of statements and directives, ``;`` statement separators and preprocessor
lines.  Fixed form is read by _read_fixed into the same statement/directive items (sentinels
``!$omp``/``c$omp``/``*$omp`` in columns 1-5, continuation in column 6, labels, text past column 72 a
comment); the rewriter is shared and writes fixed-form lines (calls from column 7, directives from
column 1 continued with ``!$omp&`` within 72 columns).  DO loops ending at a label close a
``!$omp do`` in both forms.  Known limits (see docs/instrument.md): the lock routines (left
uninstrumented).

Tasks: the creating thread's ``pomp_task_create`` returns the new task's id into an INTEGER(KIND=8)
that the task receives as firstprivate, as in C; Fortran allows no declaration among executable
statements, so the construct is wrapped in a BLOCK (Fortran 2008) that declares it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .descriptors import SLOTS, FortranDescriptor, c_escape, fortran_table, handle_base
from .directives import (FORTRAN_LOOP_CLAUSES, SECTIONS_CLAUSES, Clause, Directive, InstrumentError, directive_text,
                         parse_directive, split_clauses)

__all__ = ["FORTRAN_EXT", "FIXED_EXT", "is_fortran", "is_fixed_form", "instrument_fortran"]

FIXED_EXT = {".f", ".F", ".for", ".FOR", ".ftn", ".FTN", ".fpp", ".FPP"}
FORTRAN_EXT = {".f90", ".F90", ".f95", ".F95", ".f03", ".F03", ".f08", ".F08"} | FIXED_EXT
FIXED_WIDTH = 72  # fixed form: text beyond this column is a comment

_SENTINEL = re.compile(r"!\$(omp|pomp)(?=[\s&]|$)", re.I)
_DO_STMT = re.compile(r"^(?:[a-z_]\w*\s*:\s*)?do\b(?!\s*=)(?P<label>\s*\d+)?", re.I)
_END_DO = re.compile(r"^end\s*do\b", re.I)
# constructs with a block and an end directive, as the instrumentation names them
_BLOCK = {"parallel", "do", "do simd", "sections", "single", "workshare", "master", "critical", "atomic",
          "parallel do", "parallel do simd", "parallel sections", "parallel workshare", "task", "taskgroup"}
_OPTIONAL_END = {"do", "do simd", "parallel do", "parallel do simd", "atomic"}
# --disable names (shared with the C instrumenter) of each construct
_SWITCH = {"do": "for", "do simd": "for", "workshare": "for", "parallel do": "parallel",
           "parallel do simd": "parallel", "parallel sections": "parallel", "parallel workshare": "parallel"}


def is_fortran(path: str) -> bool:
    return any(path.endswith(ext) for ext in FORTRAN_EXT)


def is_fixed_form(path: str) -> bool:
    return any(path.endswith(ext) for ext in FIXED_EXT)


@dataclass
class _Dir:  # one OpenMP/POMP directive, continuation lines joined
    first: int  # 0-based physical lines
    last: int
    text: str  # after the sentinel, comments removed
    sentinel: str
    indent: str


@dataclass
class _Stmt:  # one Fortran statement (a ';' part of a line or several '&'-continued lines)
    first: int
    last: int
    text: str  # character literals blanked, comments removed


@dataclass
class _Open:  # a construct whose end has not been seen yet
    d: Directive
    dir: _Dir
    handles: dict  # role -> handle index
    on: bool
    loop_depth: int = -1  # do constructs: do-nesting depth outside the loop
    loop_end: _Stmt | None = None
    wants_stmt: bool = False  # atomic: waiting for its statement
    stmt: _Stmt | None = None
    section_open: bool = False
    sections: int = 0


# ----------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------
def _code_part(line: str, quote: str | None) -> tuple[str, str | None]:
    """(code with literals blanked and the comment cut off, the quote still open at the end or None)."""
    out = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if quote:
            if c == quote:
                if i + 1 < n and line[i + 1] == quote:  # '' inside '...'
                    i += 2
                    continue
                quote = None
                out.append(c)
            elif c == "&" and line[i + 1:].strip() == "":
                out.append("&")  # continued character context
            i += 1
            continue
        if c == "!":
            break
        if c in "'\"":
            quote = c
        out.append(c)
        i += 1
    return "".join(out), quote


def _read(lines: list[str], path: str) -> list:
    """The source as a list of _Dir and _Stmt items, in order."""
    items: list = []
    quote = None  # an open character context continued onto the next line
    stmt_parts, stmt_first = [], None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stmt_parts or quote:  # a continuation line of a statement
            if quote is None and (stripped == "" or stripped.startswith("!") and not _SENTINEL.match(stripped)):
                i += 1  # comment lines may come between continuation lines
                continue
            body = stripped[1:] if stripped.startswith("&") else (line if quote else stripped)
        else:
            if stripped.startswith("#"):  # preprocessor line (.F90)
                i += 1
                continue
            m = _SENTINEL.match(stripped)
            if m:
                i = _read_directive(lines, i, path, items)
                continue
            if stripped == "" or stripped.startswith("!"):
                i += 1
                continue
            body, stmt_first = line, i
        code, quote = _code_part(body, quote)
        code = code.rstrip()
        if code.endswith("&"):
            stmt_parts.append(code[:-1])
            i += 1
            continue
        if quote:
            raise InstrumentError(path, i + 1, "unterminated character literal")
        stmt_parts.append(code)
        text = "".join(stmt_parts)
        for part in _split_semicolons(text):
            items.append(_Stmt(stmt_first, i, part))
        stmt_parts = []
        i += 1
    if stmt_parts or quote:
        raise InstrumentError(path, len(lines), "the last statement is continued ('&') past the end of the file")
    return items


def _split_semicolons(text: str) -> list[str]:
    # literals are blanked by _code_part only in content, quotes stay: split outside them
    parts, cur, quote = [], [], None
    for c in text:
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == ";":
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def _read_directive(lines, i, path, items) -> int:
    first = i
    stripped = lines[i].lstrip()
    sentinel = _SENTINEL.match(stripped).group(1).lower()
    indent = lines[i][:len(lines[i]) - len(stripped)]
    parts = []
    while True:
        stripped = lines[i].lstrip()
        m = _SENTINEL.match(stripped)
        if not m or m.group(1).lower() != sentinel:
            raise InstrumentError(path, i + 1, f"expected a '!${sentinel}' continuation line of the directive "
                                               f"that starts on line {first + 1}")
        rest = stripped[m.end():]
        code, quote = _code_part(rest, None)
        code = code.strip()
        if code.startswith("&"):
            code = code[1:]
        if quote:
            raise InstrumentError(path, i + 1, "unterminated character literal in a directive")
        if code.endswith("&"):
            parts.append(code[:-1])
            i += 1
            if i >= len(lines):
                raise InstrumentError(path, first + 1, "directive continued ('&') past the end of the file")
            continue
        parts.append(code)
        break
    items.append(_Dir(first, i, " ".join(p.strip() for p in parts).strip(), sentinel, indent))
    return i + 1


# ----------------------------------------------------------------------------------------------
# Reading fixed form (.f/.F/.for/.ftn): the same items as _read, so that the rewriter is shared
# ----------------------------------------------------------------------------------------------
_FIXED_SENTINEL = re.compile(r"[c*!]\$(omp|pomp)", re.I)


def _fixed_kind(line: str, width: int):
    """('cpp'|'comment'|'dir'|'stmt', label, continued, text) of one fixed-form line (text: columns 7..width)."""
    if line.startswith("#"):
        return "cpp", "", False, ""
    m = _FIXED_SENTINEL.match(line)
    if m:
        if m.group(1).lower() == "omp":  # sentinel in columns 1-5, continuation mark in column 6
            return "dir", "omp", line[5:6] not in ("", " ", "0", "\t"), line[6:width]
        if line[6:7] in ("", " ", "\t"):
            return "dir", "pomp", False, line[6:width]
    if line[:1] in "cC*!dD" and line[:1] != "":
        return "comment", "", False, ""
    if "\t" in line[:6]:  # DEC tab form: [label]<TAB>[continuation digit]text
        head, _, rest = line.partition("\t")
        if head.strip() and not head.strip().isdigit():
            return "comment", "", False, ""
        if rest[:1] in "123456789" and rest[:1] != "":
            return "stmt", head.strip(), True, rest[1:width - 7]
        return "stmt", head.strip(), False, rest[:width - 6]
    body = line[:width]
    if body.strip() == "" or body.lstrip().startswith("!") and len(body) - len(body.lstrip()) != 5:
        return "comment", "", False, ""
    col6 = line[5:6]
    return "stmt", line[:5].strip(), col6 not in ("", " ", "0"), line[6:width]


def _top_level_comma(s: str) -> bool:
    depth = 0
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            return True
    return False


def _fixed_statement(code: str) -> str:
    """A fixed-form statement (blanks are insignificant there) in the spelling the rewriter matches."""
    s = re.sub(r"\s+", "", code).lower()
    m = re.match(r"(?:[a-z_]\w*:)?do(\d+),?(?=[a-z_]\w*=|while\(|$)", s)
    if m:
        return f"do {m.group(1)}"
    m = re.match(r"(?:[a-z_]\w*:)?do(?:while\(|$|([a-z_]\w*)=(.*)$)", s)
    if m and (m.group(2) is None or _top_level_comma(m.group(2))):
        return "do"
    if re.match(r"enddo(?:[a-z_]\w*)?$", s):
        return "end do"
    return s


def _read_fixed(lines: list[str], path: str, width: int = FIXED_WIDTH) -> list:
    """The fixed-form source as a list of _Dir and _Stmt items (the model of the free-form reader)."""
    kinds = [_fixed_kind(ln, width) for ln in lines]
    items: list = []
    i, n = 0, len(lines)

    def next_code(j):  # the next line after j that is not a comment or a preprocessor line
        j += 1
        while j < n and kinds[j][0] in ("comment", "cpp"):
            j += 1
        return j

    while i < n:
        kind, label, cont, text = kinds[i]
        if kind in ("comment", "cpp"):
            i += 1
            continue
        if kind == "dir":
            sentinel = label
            if cont:
                raise InstrumentError(path, i + 1, f"'!${sentinel}' continuation line without a directive before it")
            first, parts = i, []
            while True:
                code, quote = _code_part(kinds[i][3], None)
                if quote:
                    raise InstrumentError(path, i + 1, "unterminated character literal in a directive")
                parts.append(code.strip())
                j = next_code(i)
                if j < n and kinds[j][0] == "dir" and kinds[j][2] and sentinel == "omp" and kinds[j][1] == "omp":
                    i = j
                    continue
                break
            items.append(_Dir(first, i, " ".join(p for p in parts if p).strip(), sentinel, ""))
            i += 1
            continue
        if cont:
            raise InstrumentError(path, i + 1, "continuation line (column 6) without a statement before it")
        first, quote, parts = i, None, []
        while True:
            code, quote = _code_part(kinds[i][3], quote)
            parts.append(code)
            j = next_code(i)
            if j < n and kinds[j][0] == "stmt" and kinds[j][2]:
                i = j
                continue
            break
        if quote:
            raise InstrumentError(path, i + 1, "unterminated character literal")
        for part in _split_semicolons("".join(parts)):
            text = _fixed_statement(part)
            items.append(_Stmt(first, i, f"{label} {text}" if label.isdigit() and part is not None else text))
            label = ""  # the label belongs to the first statement of the line
        i += 1
    return items


# ----------------------------------------------------------------------------------------------
# Rewriting
# ----------------------------------------------------------------------------------------------
class _Fortran:
    def __init__(self, text: str, path: str, disabled, fixed: bool = False, width: int = FIXED_WIDTH):
        self.path, self.disabled = path, disabled
        self.fixed, self.width = fixed, width
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.lines = [ln.rstrip("\r") for ln in self.lines]
        self.before: dict[int, list[str]] = {}
        self.after: dict[int, list[str]] = {}
        self.replaced: dict[int, tuple[int, list[str]]] = {}  # first line -> (last line, new lines)
        self.descrs: list[FortranDescriptor] = []
        self.base = handle_base(path, text)
        self.stack: list[_Open] = []
        self.regions: dict[str, int] = {}  # open user regions by name
        self.do_depth = 0
        self.loops: list[int | None] = []  # open DO loops: their terminal label, None for END DO
        self.instrument = True

    def error(self, line0: int, msg: str):
        raise InstrumentError(self.path, line0 + 1, msg)

    # -- edits
    def call(self, event: str, handle: int | None, indent: str, *more: str) -> str:
        arg = f"({', '.join([str(self.base + handle), *more])})" if handle is not None else ""
        return self.stmt(f"call pomp_{event}{arg}", indent)

    def stmt(self, text: str, indent: str) -> str:
        return f"{'      ' if self.fixed else indent}{text}"

    def dlines(self, indent: str, sentinel: str, text: str) -> list[str]:
        if self.fixed:
            return _fixed_directive_lines(sentinel, text, self.width)
        return _directive_lines(indent, sentinel, text)

    def descr(self, name, dr: _Dir, sub_name="") -> int:
        if len(self.descrs) + 1 >= SLOTS:
            self.error(dr.first, f"more than {SLOTS - 1} instrumented constructs in one source")
        self.descrs.append(FortranDescriptor(name, sub_name, (dr.first + 1, dr.last + 1)))
        return len(self.descrs)

    def set_end(self, handles, first: int, last: int):
        for h in handles:
            self.descrs[h - 1].end = (first + 1, last + 1)

    def replace(self, dr: _Dir, text: str):
        self.replaced[dr.first] = (dr.last, self.dlines(dr.indent, dr.sentinel, text))

    # -- driver
    def run(self) -> tuple[str, str]:
        items = _read_fixed(self.lines, self.path, self.width) if self.fixed else _read(self.lines, self.path)
        for it in items:
            self.close_finished_loops(it)
            if isinstance(it, _Dir):
                self.directive(it)
            else:
                self.statement(it)
        self.close_finished_loops(None)
        if self.stack:
            top = self.stack[-1]
            self.error(top.dir.first, f"'!$omp {top.d.name}' has no matching '!$omp end {top.d.name}'")
        if self.regions:
            name, line = next(iter(self.regions.items()))
            self.error(self.descrs[line - 1].begin[0] - 1, f"'!$pomp inst begin({name})' has no matching end")
        return self.render(), self.table()

    def statement(self, st: _Stmt):
        top = self.stack[-1] if self.stack else None
        if top is not None and top.wants_stmt:  # the statement of an atomic
            top.wants_stmt, top.stmt = False, st
        self.open_first_section(st.first)
        lm = re.match(r"^(\d+)\s+", st.text)  # a statement label
        label = int(lm.group(1)) if lm else None
        text = st.text[lm.end():] if lm else st.text
        m = _DO_STMT.match(text)
        if m:
            self.loops.append(int(m.group("label")) if m.group("label") else None)
        elif _END_DO.match(text) and self.loops and self.loops[-1] in (None, label):
            self.loops.pop()
            self.loop_ended(st)
        if label is not None and not m:  # a labelled statement ends the DO loops that name its label
            while self.loops and self.loops[-1] == label:
                self.loops.pop()
                self.loop_ended(st)

    def loop_ended(self, st: _Stmt):
        self.do_depth = len(self.loops)
        for o in self.stack:
            if o.loop_depth == self.do_depth and o.loop_end is None:
                o.loop_end = st

    def close_finished_loops(self, it):
        """Close do constructs (without '!$omp end do') whose loop ended, and atomics after their statement."""
        while self.stack:
            top = self.stack[-1]
            is_end = isinstance(it, _Dir) and it.sentinel == "omp" and _end_name(it.text) == top.d.name
            if top.d.name == "atomic" and top.stmt is not None and it is not top.stmt:
                if is_end:
                    return
                self.stack.pop()
                self.close(top, top.stmt.first, top.stmt.last, None)
                continue
            if top.loop_end is not None and it is not top.loop_end:
                if is_end:
                    return
                self.stack.pop()
                self.close(top, top.loop_end.first, top.loop_end.last, None)
                continue
            return

    def directive(self, dr: _Dir):
        d = parse_directive(f"#pragma {dr.sentinel} {dr.text.lower()}", dr.first + 1, self.path)
        if dr.sentinel == "pomp" or d.name in ("noinstrument", "instrument") or d.name.startswith("inst "):
            return self.pomp(dr, d)
        name = d.name
        if self.stack and self.stack[-1].wants_stmt:
            self.error(dr.first, f"'!$omp atomic' on line {self.stack[-1].dir.first + 1} must be followed by a "
                                 "statement")
        if name != "section" and not name.startswith("end "):
            self.open_first_section(dr.first)
        if name.startswith("end "):
            what = name[4:]
            if what not in _BLOCK:
                return
            if not self.stack or self.stack[-1].d.name != what:
                opened = f"'!$omp {self.stack[-1].d.name}' on line {self.stack[-1].dir.first + 1}" \
                    if self.stack else "no open construct"
                self.error(dr.first, f"'!$omp {name}' does not match {opened}")
            top = self.stack.pop()
            return self.close(top, dr.first, dr.last, (dr, d))
        on = self.instrument and _SWITCH.get(name, name) not in self.disabled
        if name in ("barrier", "flush", "taskwait"):
            if on:
                h = self.descr(name, dr)
                self.set_end([h], dr.first, dr.last)
                self.before.setdefault(dr.first, []).append(self.call(f"{name}_enter", h, dr.indent))
                self.after.setdefault(dr.last, []).insert(0, self.call(f"{name}_exit", h, dr.indent))
            return
        if name == "section":
            top = self.stack[-1] if self.stack else None
            if top is None or top.d.name not in ("sections", "parallel sections"):
                self.error(dr.first, "'!$omp section' outside a sections construct")
            if top.on:
                h = top.handles["ws"]
                if top.section_open:
                    self.before.setdefault(dr.first, []).append(self.call("section_end", h, dr.indent))
                self.after.setdefault(dr.last, []).append(self.call("section_begin", h, dr.indent))
            top.section_open, top.sections = True, top.sections + 1
            return
        if name not in _BLOCK:
            return  # taskloop, ordered, simd, target, ...: left as they are
        o = _Open(d, dr, {}, on)
        if name in ("do", "do simd", "parallel do", "parallel do simd"):
            o.loop_depth = len(self.loops)
        if name == "atomic":
            o.wants_stmt = True
        self.stack.append(o)
        if on:
            self.open(o)

    def open_first_section(self, line0: int):
        """Code before the first '!$omp section' of a sections construct forms its first section."""
        top = self.stack[-1] if self.stack else None
        if top is None or top.d.name not in ("sections", "parallel sections") or top.sections:
            return
        top.section_open, top.sections = True, 1
        if top.on:
            self.before.setdefault(line0, []).insert(0, self.call("section_begin", top.handles["ws"], top.dir.indent))

    def open(self, o: _Open):
        d, dr, ind = o.d, o.dir, o.dir.indent
        name = d.name
        pre, post = self.before.setdefault(dr.first, []), self.after.setdefault(dr.last, [])
        if name == "task":
            h = o.handles["ws"] = self.descr("task", dr)
            tid = f"pomp_task_{h}"
            flags = (2 if d.has("untied") else 0) | (8 if d.has("mergeable") else 0)  # ELG_TASK_UNTIED, _MERGEABLE
            # (the CONTINUE: a directive followed by a BLOCK ends at its END BLOCK, OpenMP 5.1, so an enclosing
            # construct's block must not begin with ours)
            pre += [self.stmt("continue", ind), self.stmt("block", ind), self.stmt(f"integer(kind=8) :: {tid}", ind),
                    self.call("task_create", h, ind, str(flags), tid)]
            self.replace(dr, f"{dr.text} firstprivate({tid})")
            post.append(self.call("task_begin", h, ind, tid))
            return
        if name == "taskgroup":
            h = o.handles["ws"] = self.descr("taskgroup", dr)
            pre.append(self.call("taskgroup_enter", h, ind))
            return
        if name.startswith("parallel"):
            p = o.handles["par"] = self.descr("parallel", dr)
            pre.append(self.call("parallel_fork", p, ind))
            inner = name[len("parallel"):].strip()
            if inner:
                outer_c, inner_c = _split_clauses(d.clauses, inner)
                ws = "do" if inner.startswith("do") else inner
                w = o.handles["ws"] = self.descr(ws, dr)
                self.replace(dr, " ".join(["parallel"] + [c.text() for c in outer_c]))
                post.append(self.call("parallel_begin", p, ind))
                post.append(self.call(f"{ws}_enter", w, ind))
                post.extend(self.dlines(ind, "omp", " ".join([inner] + [c.text() for c in inner_c])))
            else:
                post.append(self.call("parallel_begin", p, ind))
            return
        ws = "do" if name.startswith("do") else name
        sub = (d.name_arg or "").strip() if name == "critical" else ""
        h = o.handles["ws"] = self.descr(ws, dr, sub)
        if name in ("master",):
            post.append(self.call("master_begin", h, ind))
            return
        pre.append(self.call(f"{ws}_enter", h, ind))
        if name in ("single", "critical"):
            post.append(self.call(f"{ws}_begin", h, ind))

    def close(self, o: _Open, first: int, last: int, end):
        """End of construct o, whose block ends on lines first..last; end = (its end directive, parsed) or None."""
        if o.d.name == "sections" or o.d.name == "parallel sections":
            if o.on and o.sections == 0:
                self.error(o.dir.first, "a sections construct without any section")
        if not o.on:
            return
        self.set_end(o.handles.values(), first, last)
        if o.d.name in ("sections", "parallel sections"):
            self.descrs[o.handles["ws"] - 1].num_sections = o.sections
        name, ind = o.d.name, o.dir.indent
        # the lines that replace the end directive (or follow the block when it has none)
        if end is not None:
            ed, edd = end
            ind = ed.indent
        if name in ("task", "taskgroup"):  # always closed by their end directive
            h, end_dir = o.handles["ws"], self.dlines(ind, "omp", directive_text(edd))
            if name == "task":
                out = [self.call("task_end", h, ind, f"pomp_task_{h}"), *end_dir, self.stmt("end block", ind)]
            else:  # the wait for the group's tasks: from the end of its body to the construct's end
                out = [self.call("taskgroup_wait_enter", h, ind), *end_dir, self.call("taskgroup_wait_exit", h, ind),
                       self.call("taskgroup_exit", h, ind)]
            self.replaced[ed.first] = (ed.last, out)
            return
        inner = name[len("parallel"):].strip() if name.startswith("parallel") else name
        out: list[str] = []
        if inner:
            ws = "do" if inner.startswith("do") else inner
            w = o.handles["ws"]
            if end is not None and not name.startswith("parallel"):
                clauses = edd.clauses
            else:
                clauses = []
            if ws == "sections" and o.section_open:
                out.append(self.call("section_end", w, ind))
            if ws in ("master",):
                out.append(self.call("master_end", w, ind))
                if end is not None:
                    out += self.dlines(ind, "omp", edd.name)
            elif ws == "critical":
                out.append(self.call("critical_end", w, ind))
                if end is not None:
                    out += self.dlines(ind, "omp", directive_text(edd))
                out.append(self.call("critical_exit", w, ind))
            elif ws == "atomic":
                if end is not None:
                    out += self.dlines(ind, "omp", directive_text(edd))
                out.append(self.call("atomic_exit", w, ind))
            else:  # do, sections, single, workshare: the implicit barrier made explicit
                if ws == "single":
                    out.append(self.call("single_end", w, ind))
                keeps_barrier = any(c.name in ("nowait", "copyprivate") for c in clauses)
                if not any(c.name == "nowait" for c in clauses) and not keeps_barrier:
                    clauses = clauses + [Clause("nowait", None)]
                if end is not None or clauses:
                    out += self.dlines(ind, "omp", " ".join([f"end {inner}"] + [c.text() for c in clauses]))
                if not keeps_barrier:
                    out += [self.call("barrier_enter", w, ind), *self.dlines(ind, "omp", "barrier"),
                            self.call("barrier_exit", w, ind)]
                out.append(self.call(f"{ws}_exit", w, ind))
        if name.startswith("parallel"):
            p = o.handles["par"]
            if not inner:
                out += [self.call("barrier_enter", p, ind), *self.dlines(ind, "omp", "barrier"), self.call("barrier_exit", p, ind)]
            out += [self.call("parallel_end", p, ind), *self.dlines(ind, "omp", "end parallel"),
                    self.call("parallel_join", p, ind)]
        if end is not None:
            self.replaced[end[0].first] = (end[0].last, out)
        else:
            self.after.setdefault(last, []).extend(out)

    def pomp(self, dr: _Dir, d: Directive):
        name = d.name
        if name == "noinstrument":
            self.instrument = False
            return
        if name == "instrument":
            self.instrument = True
            return
        if not name.startswith("inst "):
            self.error(dr.first, f"unknown directive '!${dr.sentinel} {dr.text}' (expected inst init|finalize|on|"
                                 "off|begin(name)|end(name), noinstrument or instrument)")
        what = name[5:]
        if what in ("init", "finalize", "on", "off"):
            self.replaced[dr.first] = (dr.last, [self.call(what, None, dr.indent)])
            return
        m = re.search(r"\(([^()]*)\)", dr.text)  # the region name as written (the parse is lower case)
        if what in ("begin", "end") and d.name_arg and m:
            region = m.group(1).strip()
            if what == "begin":
                if region in self.regions:
                    self.error(dr.first, f"user region {region!r} is already open")
                h = self.regions[region] = self.descr("region", dr, region)
            else:
                h = self.regions.pop(region, None)
                if h is None:
                    self.error(dr.first, f"'!${dr.sentinel} inst end({region})' without a matching begin")
                self.set_end([h], dr.first, dr.last)
            self.replaced[dr.first] = (dr.last, [self.call(what, h, dr.indent)])
            return
        self.error(dr.first, f"unknown directive '!${dr.sentinel} {dr.text}' (expected inst init|finalize|on|off|"
                             "begin(name)|end(name))")

    # -- output
    def render(self) -> str:
        out = []
        marker = f'"{c_escape(self.path)}"'
        out.append(f"# 1 {marker}")  # messages before the first construct name the original file too
        resync = False
        i = 0
        while i < len(self.lines):
            if self.before.get(i):
                out += self.before[i]
                resync = True
            last = i
            if i in self.replaced:
                last, new = self.replaced[i]
                out += new
                resync = True
            else:
                if resync:
                    out.append(f"# {i + 1} {marker}")
                    resync = False
                out.append(self.lines[i])
            if self.after.get(last):
                out += self.after[last]
                resync = True
            i = last + 1
        return "\n".join(out) + "\n"

    def table(self) -> str:
        return fortran_table(self.path, self.base, self.descrs)


def _end_name(text: str) -> str | None:
    m = re.match(r"end\s*(.*)$", text.strip(), re.I)
    if not m:
        return None
    words = []
    for w in re.findall(r"[a-z_]+|\(|\S", m.group(1).lower()):
        if w in ("parallel", "do", "simd", "sections", "single", "workshare", "master", "critical", "atomic", "task",
                 "taskgroup"):
            words.append(w)
        else:
            break
    return " ".join(words)


def _split_clauses(clauses: list[Clause], inner: str) -> tuple[list[Clause], list[Clause]]:
    """(clauses of the parallel part, of the work-sharing part) of a combined construct (Table 2)."""
    loop = FORTRAN_LOOP_CLAUSES
    keep = {"do": loop, "do simd": loop, "sections": SECTIONS_CLAUSES}.get(inner, set())
    return split_clauses(clauses, keep)


def _directive_lines(indent: str, sentinel: str, text: str, width: int = 100) -> list[str]:
    """A directive, continued with '&' where it would grow past ``width`` characters."""
    words, lines, cur = text.split(" "), [], ""
    for w in words:
        if cur and len(cur) + len(w) + 1 > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    out = [f"{indent}!${sentinel} {lines[0]}"]
    out += [f"{indent}!${sentinel}& {ln}" for ln in lines[1:]]
    return [ln + " &" for ln in out[:-1]] + out[-1:]


def _fixed_directive_lines(sentinel: str, text: str, width: int = FIXED_WIDTH) -> list[str]:
    """A fixed-form directive: sentinel in column 1, continued with '!$omp&' (column 6) so that no line
    passes column ``width``; lines are broken at blanks or after commas where possible."""
    room, lines, rest = width - 6, [], text.strip()
    while True:
        cap = room if not lines else room - 1
        if len(rest) <= cap:
            lines.append(rest)
            break
        cut = max(rest.rfind(" ", 0, cap + 1), rest.rfind(",", 0, cap) + 1, rest.rfind("(", 0, cap) + 1)
        if cut <= 0:  # one word longer than a line: split it (a limit, see docs/instrument.md)
            cut = cap
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return [f"!${sentinel} {lines[0]}"] + [f"!${sentinel}& {ln}" for ln in lines[1:]]


def instrument_fortran(text: str, path: str, disabled=frozenset(), fixed: bool | None = None,
                       width: int = FIXED_WIDTH) -> tuple[str, str]:
    """(instrumented Fortran text, C descriptor table) of a Fortran source; fixed form when ``fixed``
    (default: from the suffix of ``path``), with statements ending at column ``width``."""
    if fixed is None:
        fixed = is_fixed_form(path)
    return _Fortran(text, path, frozenset(disabled), fixed, width).run()
