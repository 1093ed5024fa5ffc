"""OpenMP / POMP directives, shared by the C and the Fortran instrumenter.

Directive names and clauses (``parse_directive``), which directives have no structured block, the
clause names ``--disable`` accepts, and the rules of the POMP/OPARI paper (seed 001) for splitting a
combined construct into its parallel and work-sharing parts (Table 1) and distributing its clauses
between them (Table 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

POMP_VERSION = 200110


class InstrumentError(Exception):
    """A source the instrumenter cannot handle; str() is ``file:line: message``."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message



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
# clauses that belong to the work-sharing part when a combined construct is split
LOOP_CLAUSES = {"schedule", "ordered", "lastprivate", "collapse", "linear", "order", "nowait", "safelen",
                 "simdlen", "aligned", "nontemporal"}
SECTIONS_CLAUSES = {"lastprivate", "nowait"}
# the Fortran instrumenter's loop clauses (``parallel do``): without the simd ones
FORTRAN_LOOP_CLAUSES = {"schedule", "ordered", "lastprivate", "collapse", "linear", "order", "nowait"}
# construct names that --disable accepts
CONSTRUCTS = ("parallel", "for", "sections", "single", "master", "critical", "atomic", "barrier", "flush",
              "task", "taskwait", "taskgroup", "locks", "region")



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


def split_items(text: str, path: str, line: int) -> list[tuple[str, str | None]]:
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


def parse_directive(text: str, line: int, path: str) -> Directive | None:
    """The OpenMP/POMP directive of a preprocessor line (``#pragma omp ...``, continuations joined) at
    ``line``, or None for any other directive."""
    m = _PRAGMA.match(text)
    if not m:
        return None
    sentinel, rest = m.group(1), m.group(2).strip()
    items = split_items(rest, path, line)
    words, name_arg, k = [], None, 0
    if items and items[0][0] == "inst":  # inst init|finalize|on|off|begin(name)|end(name)
        if len(items) < 2:
            raise InstrumentError(path, line, f"'#pragma {sentinel} inst' needs init, finalize, on, off, "
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
        raise InstrumentError(path, line, f"unknown {sentinel} directive: {rest!r}")
    clauses = [Clause(w, a) for w, a in items[k:]]
    return Directive(sentinel, " ".join(words), name_arg, clauses)


def is_standalone(d: Directive) -> bool:
    if d.sentinel == "pomp" or d.name in _STANDALONE or d.name.startswith(("declare", "inst")):
        return True
    if d.name == "ordered" and (d.has("depend") or d.has("doacross")):
        return True
    return False


def directive_text(d: Directive, clauses: list[Clause] | None = None) -> str:
    """The directive after its sentinel: name, name argument, clauses (``d``'s own unless given)."""
    head = d.name
    if d.name_arg is not None:
        head += f"({d.name_arg})"
    return " ".join([head] + [c.text() for c in (d.clauses if clauses is None else clauses)])


def check_disabled(disabled) -> None:
    """ValueError unless every name in ``disabled`` is one of CONSTRUCTS."""
    bad = set(disabled) - set(CONSTRUCTS)
    if bad:
        raise ValueError(f"unknown construct(s) to disable: {', '.join(sorted(bad))} "
                         f"(known: {', '.join(CONSTRUCTS)})")


def split_clauses(clauses: list[Clause], keep: set[str]) -> tuple[list[Clause], list[Clause]]:
    """(clauses of the parallel part, of the work-sharing part) of a combined construct (Table 2).

    ``keep`` names the clauses of the work-sharing part (LOOP_CLAUSES, SECTIONS_CLAUSES, ...); the
    others stay on the parallel.  A variable both firstprivate and lastprivate goes with the work
    sharing, and under ``default(none)`` the lastprivate variables are named ``shared`` on the parallel.
    """
    inner_c = [c for c in clauses if c.name in keep]
    outer_c = [c for c in clauses if c.name not in keep]
    last_vars = {v.strip() for c in inner_c if c.name == "lastprivate" for v in (c.arg or "").split(":")[-1].split(",")}
    for c in list(outer_c):
        if c.name == "firstprivate":
            vs = [v.strip() for v in (c.arg or "").split(",")]
            both = [v for v in vs if v in last_vars]
            if both:
                outer_c.remove(c)
                rest = [v for v in vs if v not in last_vars]
                if rest:
                    outer_c.append(Clause("firstprivate", ", ".join(rest)))
                inner_c.append(Clause("firstprivate", ", ".join(both)))
    if any(c.name == "default" and (c.arg or "").strip() == "none" for c in outer_c) and last_vars:
        outer_c.append(Clause("shared", ", ".join(sorted(last_vars))))
    return outer_c, inner_c
