"""expert-instrument: OPARI-style source-to-source OpenMP instrumentation for C and C++.

Rewrites OpenMP directives into calls of the POMP interface (``runtime/include/pomp.h``) after the
transformation rules of the POMP/OPARI paper (seed 001, Tables 1 and 2):

* every construct gets a context descriptor (construct name, sub-name, number of sections, file,
  begin and end lines) and its enter/exit/begin/end calls;
* implicit barriers are made explicit: ``nowait`` is added and an instrumented ``#pragma omp barrier``
  follows (at the end of a parallel region an explicit barrier is inserted before the implicit one);
* combined constructs (``parallel for``, ``parallel sections``, ``parallel master``) are split, with the
  clauses distributed to the parallel and the work-sharing part;
* ``#pragma pomp inst init|finalize|on|off|begin(name)|end(name)`` become POMP calls,
  ``#pragma pomp noinstrument`` / ``instrument`` switch the instrumentation off and on (the paper's
  ``#pragma omp inst ...`` spelling is accepted too), and the OpenMP lock routines become POMP calls.

The output starts with ``#include <pomp.h>`` (which defines ``_POMP``) and the descriptors, and uses
``#line`` directives so that compiler messages and debug information point at the original source.

The parser is a "fuzzy" one, like OPARI's: a C/C++ tokenizer (comments, strings, raw strings, character
literals, line continuations and preprocessor lines are understood) and a statement-level scanner
that finds each construct's structured block.  Within ``#if``/``#else`` chains, only the first branch
is used to find block boundaries.  Only the standard library is used, so the tool runs with any
``python3``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field

__all__ = ["InstrumentError", "instrument_source", "instrument_file", "main"]

POMP_VERSION = 200110


class InstrumentError(Exception):
    """A source the instrumenter cannot handle; str() is ``file:line: message``."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------
@dataclass
class Token:
    kind: str  # "id", "num", "str", "punct", "pp" (a whole preprocessor directive)
    text: str  # for "pp": the logical directive (continuations joined, comments blanked)
    start: int  # offsets into the source text
    end: int
    line: int  # first and last physical line (1-based)
    end_line: int


_ID_START = re.compile(r"[A-Za-z_$]")
_ID_CHARS = re.compile(r"[A-Za-z0-9_$]*")
_RAW_PREFIX = re.compile(r"(?:u8|u|U|L)?R$")
_STR_PREFIX = re.compile(r"(?:u8|u|U|L)$")


class _Lexer:
    def __init__(self, text: str, path: str):
        self.s, self.path = text, path
        self.n = len(text)
        # line starts, to turn offsets into line numbers
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(self, pos: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def error(self, pos: int, msg: str):
        raise InstrumentError(self.path, self.line_of(pos), msg)

    def skip_block_comment(self, i: int) -> int:
        j = self.s.find("*/", i + 2)
        if j < 0:
            self.error(i, "unterminated /* comment")
        return j + 2

    def skip_line_comment(self, i: int) -> int:
        """Up to (not including) the newline that ends a // comment (a backslash continues it)."""
        s = self.s
        while True:
            j = s.find("\n", i)
            if j < 0:
                return self.n
            k = j - 1
            if k >= 0 and s[k] == "\r":
                k -= 1
            if k >= 0 and s[k] == "\\":
                i = j + 1
                continue
            return j

    def skip_quoted(self, i: int, quote: str) -> int:
        s = self.s
        j = i + 1
        while j < self.n:
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == quote:
                return j + 1
            if c == "\n":
                break
            j += 1
        self.error(i, "unterminated string literal" if quote == '"' else "unterminated character literal")

    def skip_raw_string(self, i: int) -> int:
        """i at the opening quote of R"delim( ... )delim"."""
        s = self.s
        paren = s.find("(", i + 1)
        if paren < 0 or paren - i - 1 > 16:
            self.error(i, "malformed raw string literal")
        delim = s[i + 1:paren]
        close = s.find(")" + delim + '"', paren + 1)
        if close < 0:
            self.error(i, "unterminated raw string literal")
        return close + len(delim) + 2

    def directive(self, i: int) -> tuple[int, str]:
        """A preprocessor directive from its '#': (end offset before the newline, logical text)."""
        s = self.s
        out = []
        j = i
        while j < self.n:
            c = s[j]
            if c == "\\" and s.startswith("\n", j + 1):
                j += 2
                out.append(" ")
                continue
            if c == "\\" and s.startswith("\r\n", j + 1):
                j += 3
                out.append(" ")
                continue
            if c == "\n":
                break
            if c == "/" and s.startswith("/*", j):
                j = self.skip_block_comment(j)
                out.append(" ")
                continue
            if c == "/" and s.startswith("//", j):
                j = self.skip_line_comment(j)
                continue
            if c in "\"'":
                k = self.skip_quoted(j, c)
                out.append(s[j:k])
                j = k
                continue
            out.append(c)
            j += 1
        end = j
        if end > i and s[end - 1] == "\r":
            end -= 1
        return end, "".join(out).strip()

    def tokens(self) -> list[Token]:
        s, n = self.s, self.n
        toks: list[Token] = []
        i = 0
        at_line_start = True
        while i < n:
            c = s[i]
            if c == "\n":
                at_line_start = True
                i += 1
                continue
            if c in " \t\r\f\v":
                i += 1
                continue
            if c == "\\" and s.startswith("\n", i + 1):  # a stray continuation between tokens
                i += 2
                continue
            if c == "/" and s.startswith("/*", i):
                i = self.skip_block_comment(i)
                continue
            if c == "/" and s.startswith("//", i):
                i = self.skip_line_comment(i)
                continue
            if c == "#" and at_line_start:
                end, text = self.directive(i)
                toks.append(Token("pp", text, i, end, self.line_of(i), self.line_of(max(i, end - 1))))
                i = end
                continue
            at_line_start = False
            start = i
            if _ID_START.match(c):
                m = _ID_CHARS.match(s, i + 1)
                j = m.end()
                word = s[i:j]
                if j < n and s[j] == '"' and _RAW_PREFIX.match(word):
                    j = self.skip_raw_string(j)
                    toks.append(Token("str", s[start:j], start, j, self.line_of(start), self.line_of(j - 1)))
                elif j < n and s[j] in "\"'" and _STR_PREFIX.match(word):
                    j = self.skip_quoted(j, s[j])
                    toks.append(Token("str", s[start:j], start, j, self.line_of(start), self.line_of(j - 1)))
                else:
                    toks.append(Token("id", word, start, j, self.line_of(start), self.line_of(start)))
                i = j
                continue
            if c.isdigit() or (c == "." and i + 1 < n and s[i + 1].isdigit()):
                j = i + 1
                while j < n:
                    d = s[j]
                    if d in "eEpP" and j + 1 < n and s[j + 1] in "+-":
                        j += 2
                    elif d.isalnum() or d in "._":
                        j += 1
                    elif d == "'" and j + 1 < n and s[j + 1].isalnum():  # C++14 digit separator
                        j += 2
                    else:
                        break
                toks.append(Token("num", s[i:j], i, j, self.line_of(i), self.line_of(i)))
                i = j
                continue
            if c in "\"'":
                j = self.skip_quoted(i, c)
                toks.append(Token("str", s[i:j], i, j, self.line_of(i), self.line_of(j - 1)))
                i = j
                continue
            toks.append(Token("punct", c, i, i + 1, self.line_of(i), self.line_of(i)))
            i += 1
        return toks


# ----------------------------------------------------------------------------------------------
# Directives
# ----------------------------------------------------------------------------------------------
_PRAGMA = re.compile(r"#\s*pragma\s+(omp|pomp)\b\s*(.*)$", re.S)

# words that may form an OpenMP directive name (the rest are clauses)
_DIRECTIVE_WORDS = {
    "parallel", "for", "do", "sections", "section", "single", "master", "masked", "critical", "atomic",
    "barrier", "flush", "ordered", "task", "taskloop", "taskwait", "taskyield", "taskgroup", "simd",
    "target", "teams", "distribute", "loop", "workshare", "declare", "threadprivate", "cancel",
    "cancellation", "point", "scan", "depobj", "requires", "scope", "tile", "unroll", "error", "nothing",
    "allocate", "data", "enter", "exit", "update", "reduction", "mapper", "variant", "metadirective",
    "interop", "dispatch", "assume", "assumes", "begin", "end", "inst", "noinstrument", "instrument",
}
# words that end a directive name
_LAST_WORDS = {"atomic", "critical", "barrier", "flush", "single", "master", "masked", "section", "sections",
               "taskwait", "taskyield", "workshare", "threadprivate"}
# directives with no structured block
_STANDALONE = {
    "barrier", "flush", "taskwait", "taskyield", "threadprivate", "cancel", "cancellation point", "scan",
    "depobj", "requires", "error", "nothing", "target update", "target enter data", "target exit data",
    "section", "noinstrument", "instrument", "inst",
}
_LOCK_ROUTINES = {
    f"omp_{op}_{kind}": f"POMP_{op.capitalize()}_{kind}"
    for op in ("init", "destroy", "set", "unset", "test")
    for kind in ("lock", "nest_lock")
}
# clauses that belong to the work-sharing part when a combined construct is split
_LOOP_CLAUSES = {"schedule", "ordered", "lastprivate", "collapse", "linear", "order", "nowait", "safelen",
                 "simdlen", "aligned", "nontemporal"}
_SECTIONS_CLAUSES = {"lastprivate", "nowait"}
# construct names that --disable accepts
CONSTRUCTS = ("parallel", "for", "sections", "single", "master", "critical", "atomic", "barrier", "flush",
              "locks", "region")


@dataclass
class Clause:
    name: str
    arg: str | None  # text inside the parentheses

    def text(self) -> str:
        return self.name if self.arg is None else f"{self.name}({self.arg})"


@dataclass
class Directive:
    sentinel: str  # "omp" or "pomp"
    name: str  # "parallel for", "critical", "inst", ...
    name_arg: str | None  # critical(name), flush(list), inst begin(name)
    clauses: list[Clause]

    def has(self, clause: str) -> bool:
        return any(c.name == clause for c in self.clauses)


def _split_items(text: str, path: str, line: int) -> list[tuple[str, str | None]]:
    """'a b(x, (y)) c' -> [('a', None), ('b', 'x, (y)'), ('c', None)]; commas between items are allowed."""
    items = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace() or c == ",":
            i += 1
            continue
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[i:])
        if not m:
            raise InstrumentError(path, line, f"cannot parse OpenMP directive near {text[i:i + 20]!r}")
        word = m.group(0)
        i += len(word)
        while i < n and text[i] in " \t":
            i += 1
        arg = None
        if i < n and text[i] == "(":
            depth, j = 0, i
            while j < n:
                if text[j] == "(":
                    depth += 1
                elif text[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if depth:
                raise InstrumentError(path, line, f"unbalanced parentheses in directive clause {word!r}")
            arg = text[i + 1:j].strip()
            i = j + 1
        items.append((word, arg))
    return items


def parse_directive(tok: Token, path: str) -> Directive | None:
    """The OpenMP/POMP directive of a preprocessor token, or None for any other directive."""
    m = _PRAGMA.match(tok.text)
    if not m:
        return None
    sentinel, rest = m.group(1), m.group(2).strip()
    items = _split_items(rest, path, tok.line)
    words, name_arg, k = [], None, 0
    if items and items[0][0] == "inst":  # inst init|finalize|on|off|begin(name)|end(name)
        if len(items) < 2:
            raise InstrumentError(path, tok.line, f"'#pragma {sentinel} inst' needs init, finalize, on, off, "
                                  "begin(name) or end(name)")
        return Directive(sentinel, f"inst {items[1][0]}", items[1][1], [Clause(w, a) for w, a in items[2:]])
    while k < len(items):
        word, arg = items[k]
        if word not in _DIRECTIVE_WORDS:
            break
        # a parenthesised argument ends the name: critical(name), flush(list), begin(name)
        if arg is not None and not (word in ("critical", "flush", "begin", "end") or word == "ordered"):
            break
        if word == "for" and words[-1:] == ["cancel"]:  # "cancel for": the construct type is a clause
            break
        words.append(word)
        k += 1
        if arg is not None:
            name_arg = arg
            break
        if word in _LAST_WORDS:  # "atomic update": the rest are clauses
            break
    if not words:
        raise InstrumentError(path, tok.line, f"unknown {sentinel} directive: {rest!r}")
    clauses = [Clause(w, a) for w, a in items[k:]]
    return Directive(sentinel, " ".join(words), name_arg, clauses)


def _is_standalone(d: Directive) -> bool:
    if d.sentinel == "pomp" or d.name in _STANDALONE or d.name.startswith(("declare", "inst")):
        return True
    if d.name == "ordered" and (d.has("depend") or d.has("doacross")):
        return True
    return False


# ----------------------------------------------------------------------------------------------
# Statement scanner
# ----------------------------------------------------------------------------------------------
class _Scanner:
    """Finds statement extents in the token list (indices of first and last token)."""

    def __init__(self, toks: list[Token], lexer: _Lexer, directives: dict[int, Directive | None]):
        self.toks, self.lexer, self.dirs = toks, lexer, directives
        self.n = len(toks)
        self.else_skip = self._conditional_skips()

    def _conditional_skips(self) -> dict[int, int]:
        """For each #elif/#else token: the index of its chain's #endif (only first branches are scanned)."""
        skips, stack = {}, []
        for i, t in enumerate(self.toks):
            if t.kind != "pp":
                continue
            word = re.match(r"#\s*(\w*)", t.text).group(1)
            if word in ("if", "ifdef", "ifndef"):
                stack.append([])
            elif word in ("elif", "else", "elifdef", "elifndef") and stack:
                stack[-1].append(i)
            elif word == "endif" and stack:
                for j in stack.pop():
                    skips[j] = i
        return skips

    def error(self, i: int, msg: str):
        tok = self.toks[min(i, self.n - 1)] if self.n else None
        raise InstrumentError(self.lexer.path, tok.line if tok else 1, msg)

    def is_omp(self, i: int) -> bool:
        return self.toks[i].kind == "pp" and self.dirs.get(i) is not None

    def sig(self, i: int) -> int:
        """The next index >= i that is not a plain preprocessor line (OpenMP pragmas are significant)."""
        while i < self.n and self.toks[i].kind == "pp" and not self.is_omp(i):
            i = self.else_skip.get(i, i) + 1
        return i

    def expect(self, i: int, text: str, what: str) -> int:
        i = self.sig(i)
        if i >= self.n or self.toks[i].text != text:
            self.error(i, f"expected '{text}' {what}")
        return i

    def matching(self, i: int, open_: str, close: str) -> int:
        """Index of the token closing the bracket at i."""
        depth = 0
        j = i
        while j < self.n:
            t = self.toks[j]
            if t.kind == "pp":
                j = self.else_skip.get(j, j) + 1
                continue
            if t.kind == "punct":
                if t.text == open_:
                    depth += 1
                elif t.text == close:
                    depth -= 1
                    if depth == 0:
                        return j
            j += 1
        self.error(i, f"unbalanced '{open_}': no matching '{close}' before the end of the file")

    def statement(self, i: int) -> tuple[int, int]:
        """(first, last) token index of the statement starting at or after i."""
        i = self.sig(i)
        if i >= self.n:
            self.error(self.n - 1, "expected a statement before the end of the file")
        return i, self.statement_end(i)

    def statement_end(self, i: int) -> int:
        t = self.toks[i]
        if t.kind == "pp":  # an OpenMP directive
            d = self.dirs[i]
            if _is_standalone(d):
                return i
            return self.statement(i + 1)[1]
        if t.text == "{":
            return self.matching(i, "{", "}")
        if t.text in ("}", ")", "]"):
            self.error(i, f"expected a statement, found '{t.text}'")
        if t.kind == "id":
            w = t.text
            if w in ("for", "while", "switch"):
                p = self.expect(i + 1, "(", f"after '{w}'")
                return self.statement(self.matching(p, "(", ")") + 1)[1]
            if w == "if":
                j = self.sig(i + 1)
                if j < self.n and self.toks[j].text == "constexpr":
                    j += 1
                p = self.expect(j, "(", "after 'if'")
                end = self.statement(self.matching(p, "(", ")") + 1)[1]
                k = self.sig(end + 1)
                if k < self.n and self.toks[k].text == "else":
                    end = self.statement(k + 1)[1]
                return end
            if w == "do":
                body_end = self.statement(i + 1)[1]
                k = self.expect(body_end + 1, "while", "after the body of 'do'")
                p = self.expect(k + 1, "(", "after 'while'")
                return self.expect(self.matching(p, "(", ")") + 1, ";", "after 'do ... while (...)'")
            if w == "try":
                b = self.expect(i + 1, "{", "after 'try'")
                end = self.matching(b, "{", "}")
                while True:
                    k = self.sig(end + 1)
                    if k >= self.n or self.toks[k].text != "catch":
                        return end
                    p = self.expect(k + 1, "(", "after 'catch'")
                    b = self.expect(self.matching(p, "(", ")") + 1, "{", "after 'catch (...)'")
                    end = self.matching(b, "{", "}")
            if w in ("case", "default"):
                j = i + 1
                while j < self.n and self.toks[j].text != ":":
                    j += 1
                return self.statement(j + 1)[1]
            k = self.sig(i + 1)
            if (k + 1 < self.n and self.toks[k].text == ":" and self.toks[k + 1].text != ":"
                    and w not in ("public", "private", "protected")):
                return self.statement(k + 1)[1]  # a label
        # an expression or declaration statement: up to ';' outside brackets
        depth = 0
        j = i
        while j < self.n:
            t = self.toks[j]
            if t.kind == "pp":
                j = self.else_skip.get(j, j) + 1
                continue
            if t.kind == "punct":
                if t.text in "([{":
                    depth += 1
                elif t.text in ")]}":
                    depth -= 1
                    if depth < 0:
                        self.error(j, f"unexpected '{t.text}' inside a statement")
                elif t.text == ";" and depth == 0:
                    return j
            j += 1
        self.error(i, "statement without ';' before the end of the file")


# ----------------------------------------------------------------------------------------------
# Edits and output
# ----------------------------------------------------------------------------------------------
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
class _Descriptor:
    var: str
    name: str
    sub_name: str
    num_sections: int
    begin_line1: int
    begin_lineN: int
    end_line1: int
    end_lineN: int


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


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
        self.descriptors.append(_Descriptor(var, name, sub_name, num_sections, pragma.line, pragma.end_line,
                                            last.end_line, last.end_line))
        return var

    # -- the pass over the tokens
    def run(self) -> str:
        lexer = _Lexer(self.text, self.path)
        toks = lexer.tokens()
        dirs = {i: parse_directive(t, self.path) for i, t in enumerate(toks) if t.kind == "pp"}
        sc = _Scanner(toks, lexer, dirs)
        self.toks, self.sc = toks, sc
        enabled = True
        open_regions: dict[str, list[tuple[int, Token]]] = {}
        handled_sections: set[int] = set()
        for i, t in enumerate(toks):
            if t.kind == "id" and t.text in _LOCK_ROUTINES and enabled and "locks" not in self.disabled:
                k = i + 1
                if k < len(toks) and toks[k].text == "(" and not (i > 0 and toks[i - 1].text in (".", ">", ":")):
                    self.replace(t, _LOCK_ROUTINES[t.text])
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
        if name == "flush" and on("flush"):
            var = self.descriptor("flush", t, t)
            self.open_before(t, f"{{ POMP_Flush_enter(&{var});")
            self.close_after(t, f"POMP_Flush_exit(&{var}); }}")
            return
        if _is_standalone(d):
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
                self.replace(t, f"#pragma omp {self.directive_text(d, d.clauses + [Clause('nowait', None)])}")
                self.close_after(s_last, *self.barrier_lines(var))
            self.close_after(s_last, f"POMP_For_exit(&{var}); }}")
        elif name in ("parallel for", "parallel for simd", "parallel sections", "parallel master"):
            self.combined(i, d, s_first, s_last, handled_sections, first, last)
        elif name == "sections" and on("sections"):
            var = self.sections_block(i, first, last, handled_sections, d)
            self.open_before(t, f"{{ POMP_Sections_enter(&{var});")
            if not d.has("nowait"):
                self.replace(t, f"#pragma omp {self.directive_text(d, d.clauses + [Clause('nowait', None)])}")
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
                self.replace(t, f"#pragma omp {self.directive_text(d, d.clauses + [Clause('nowait', None)])}")
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
        elif name == "atomic" and on("atomic"):
            var = self.descriptor("atomic", t, s_last)
            self.open_before(t, f"{{ POMP_Atomic_enter(&{var});")
            self.close_after(s_last, f"POMP_Atomic_exit(&{var}); }}")

    def barrier_lines(self, var):
        return [f"POMP_Barrier_enter(&{var});", "#pragma omp barrier", f"POMP_Barrier_exit(&{var});"]

    @staticmethod
    def directive_text(d: Directive, clauses: list[Clause], name: str | None = None) -> str:
        head = name or d.name
        if name is None and d.name_arg is not None:
            head += f"({d.name_arg})"
        return " ".join([head] + [c.text() for c in clauses])

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
        keep = {"for": _LOOP_CLAUSES, "for simd": _LOOP_CLAUSES, "sections": _SECTIONS_CLAUSES}.get(inner, set())
        inner_clauses = [c for c in d.clauses if c.name in keep]
        outer_clauses = [c for c in d.clauses if c.name not in keep]
        # a variable both firstprivate and lastprivate must be both on the work-sharing construct
        last_vars = {v.strip() for c in inner_clauses if c.name == "lastprivate"
                     for v in (c.arg or "").split(":")[-1].split(",")}
        moved = []
        for c in list(outer_clauses):
            if c.name == "firstprivate":
                vs = [v.strip() for v in (c.arg or "").split(",")]
                both = [v for v in vs if v in last_vars]
                if both:
                    rest = [v for v in vs if v not in last_vars]
                    outer_clauses.remove(c)
                    if rest:
                        outer_clauses.append(Clause("firstprivate", ", ".join(rest)))
                    inner_clauses.append(Clause("firstprivate", ", ".join(both)))
                    moved += both
        if any(c.name == "default" and (c.arg or "").strip() == "none" for c in outer_clauses) and last_vars:
            outer_clauses.append(Clause("shared", ", ".join(sorted(last_vars | set(moved)))))
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

        fname = _c_string(self.path)
        out = [f"#include <pomp.h>\n"]
        for dsc in self.descriptors:
            out.append(f"static POMP_DESCRIPTOR struct ompregdescr {dsc.var} = {{{_c_string(dsc.name)}, {_c_string(dsc.sub_name)}, "
                       f"{dsc.num_sections}, {fname}, {dsc.begin_line1}, {dsc.begin_lineN}, {dsc.end_line1}, "
                       f"{dsc.end_lineN}, {{0, 0, 0, 0}}, 0}};\n")
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
    bad = set(disabled) - set(CONSTRUCTS)
    if bad:
        raise ValueError(f"unknown construct(s) to disable: {', '.join(sorted(bad))} "
                         f"(known: {', '.join(CONSTRUCTS)})")
    return _Instrumenter(text, path, frozenset(disabled)).run()


def default_output(path: str) -> str:
    stem, ext = os.path.splitext(path)
    return f"{stem}.pomp{ext or '.c'}"


def instrument_file(src: str, out: str | None = None, disabled=(), line_path: str | None = None) -> str:
    """Instrument ``src`` into ``out`` (default ``<stem>.pomp<ext>``); returns the output path."""
    try:
        with open(src, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as exc:
        raise InstrumentError(src, 0, f"cannot read: {exc.strerror}") from None
    out = out or default_output(src)
    from fortran_instrument import instrument_fortran, is_fortran, table_path
    if is_fortran(src):  # free-form Fortran: the descriptors go into a C table beside the output
        bad = set(disabled) - set(CONSTRUCTS)
        if bad:
            raise ValueError(f"unknown construct(s) to disable: {', '.join(sorted(bad))} "
                             f"(known: {', '.join(CONSTRUCTS)})")
        result, table = instrument_fortran(text, line_path or src, frozenset(disabled))
        with open(table_path(out), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(table)
    else:
        result = instrument_source(text, line_path or src, disabled)
    with open(out, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(result)
    return out


def _fortran_ext():
    from fortran_instrument import FORTRAN_EXT
    return FORTRAN_EXT


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="expert-instrument",
        description="Rewrite the OpenMP directives of a C/C++ or free-form Fortran source into POMP calls "
                    "(OPARI-style); for Fortran (.f90/.F90/...) a C descriptor table <out stem>_tab.c is "
                    "written beside the output and must be compiled and linked too. "
                    "Compile the result with -I <runtime>/include and link it against the expert runtime, "
                    "or let expert-cc do all of this.")
    ap.add_argument("source", help="C, C++ or free-form Fortran source file")
    ap.add_argument("-o", "--output", help="output file (default: <stem>.pomp<ext> beside the source; - for stdout)")
    ap.add_argument("--disable", default="", metavar="LIST",
                    help=f"comma-separated constructs to leave uninstrumented: {', '.join(CONSTRUCTS)}")
    ap.add_argument("--line-path", help="file name written into #line directives and descriptors "
                                        "(default: the source path as given)")
    args = ap.parse_args(argv)
    disabled = [c.strip() for c in args.disable.split(",") if c.strip()]
    try:
        if args.output == "-" and args.source.endswith(tuple(_fortran_ext())):
            raise ValueError("a Fortran source needs an output file: its descriptor table is written beside it")
        if args.output == "-":
            with open(args.source, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            sys.stdout.write(instrument_source(text, args.line_path or args.source, disabled))
        else:
            instrument_file(args.source, args.output, disabled, args.line_path)
    except InstrumentError as exc:
        print(f"expert-instrument: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f"expert-instrument: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    # run as the importable module, so that fortran_instrument (which imports it) shares its classes
    import expert_instrument
    sys.exit(expert_instrument.main())
