"""Finding, validating and ordering the patterns of one analysis.

Built-in patterns come from :data:`BUILTIN_MODULES`; third-party ones from
the entry-point group :data:`patterns.api.ENTRY_POINT_GROUP`.  Both go
through the same collection and validation, so a plugin can do anything a
built-in can.

What an entry point (or a built-in module) may name:

* a :class:`~patterns.api.Pattern` subclass (instantiated without arguments),
* a Pattern instance,
* a module: its ``PATTERNS`` sequence if it has one, otherwise every Pattern
  subclass with a non-empty ``name`` defined in that module,
* any other iterable of the above.

Every loaded instance gets an ``origin`` attribute (a human-readable string
such as ``"plugin expert-patterns-example 0.1.0, entry point
mpi_short_messages_wait = expert_patterns_example:ShortMessagesWait"``) that
error messages and ``expert-analyze --list-patterns`` style listings use.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import types
from collections.abc import Iterable
from typing import NamedTuple

from .api import ENTRY_POINT_GROUP, Pattern, PatternError, validate_pattern

__all__ = [
    "BUILTIN_MODULES",
    "load_patterns",
    "all_patterns",
    "available_patterns",
    "patterns_from_file",
    "hierarchy",
    "format_hierarchy",
    "HierarchyEntry",
]

#: modules holding the built-in patterns, in the order their trees are reported
BUILTIN_MODULES = ("patterns.generic", "patterns.mpi", "patterns.omp", "patterns.tasks", "patterns.threads",
                   "patterns.reasons", "patterns.critical_path",
                   "patterns.delay", "patterns.pop")


# --------------------------------------------------------------------------
# Collection
# --------------------------------------------------------------------------
def _instances_from(obj, origin: str) -> list[Pattern]:
    """Pattern instances named by ``obj`` (see the module docstring)."""
    if isinstance(obj, Pattern):
        return [obj]
    if inspect.isclass(obj):
        if not issubclass(obj, Pattern):
            raise PatternError(f"{origin}: {obj.__module__}.{obj.__qualname__} is not a subclass of patterns.api.Pattern")
        try:
            return [obj()]
        except Exception as exc:  # a plugin's constructor is foreign code
            raise PatternError(f"{origin}: creating {obj.__qualname__}() failed: {type(exc).__name__}: {exc}") from exc
    if isinstance(obj, types.ModuleType):
        listed = getattr(obj, "PATTERNS", None)
        if listed is not None:
            return _instances_from(listed, origin)
        found = [
            v for v in vars(obj).values()
            if inspect.isclass(v) and issubclass(v, Pattern) and v.__module__ == obj.__name__ and v.name
        ]
        if not found:
            raise PatternError(f"{origin}: module {obj.__name__} defines no Pattern subclass and no PATTERNS list")
        return _instances_from(found, origin)
    if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        out: list[Pattern] = []
        for item in obj:
            out.extend(_instances_from(item, origin))
        return out
    raise PatternError(
        f"{origin}: expected a Pattern subclass, a Pattern instance, a module or an iterable of them, "
        f"got {type(obj).__name__} {obj!r}"
    )


def _builtin_patterns() -> list[Pattern]:
    out: list[Pattern] = []
    for modname in BUILTIN_MODULES:
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            # a built-in module that does not exist (yet) is skipped; a module
            # that exists but fails to import its own dependencies is a bug
            if exc.name == modname:
                continue
            raise
        origin = f"built-in {modname}"
        for p in _instances_from(module, origin):
            p.origin = origin
            out.append(p)
    return out


def _entry_points() -> list:
    """The installed entry points of our group (the seam tests replace)."""
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _entry_point_origin(ep) -> str:
    dist = getattr(ep, "dist", None)
    if dist is not None:
        try:
            who = f"{dist.metadata['Name']} {dist.version}"
        except Exception:  # broken metadata must not hide the real error
            who = "an unnamed distribution"
    else:
        who = "an unknown distribution"
    return f"plugin {who}, entry point {ep.name} = {ep.value}"


def _plugin_patterns() -> list[Pattern]:
    out: list[Pattern] = []
    for ep in _entry_points():
        origin = _entry_point_origin(ep)
        try:
            obj = ep.load()
        except Exception as exc:
            raise PatternError(f"{origin}: loading failed: {type(exc).__name__}: {exc}") from exc
        for p in _instances_from(obj, origin):
            p.origin = origin
            out.append(p)
    return out


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------
def _origin(p: Pattern) -> str:
    return getattr(p, "origin", "") or type(p).__module__


def _validate_all(found: list[Pattern]) -> dict[str, Pattern]:
    """Per-pattern metadata checks, then duplicates, parents and cycles."""
    by_name: dict[str, Pattern] = {}
    for p in found:
        validate_pattern(p, _origin(p))  # metadata, incl. requires / depends / optional_depends as names
        other = by_name.get(p.name)
        if other is not None:
            if type(other) is type(p) and _origin(other) == _origin(p):
                continue  # the same class listed twice by one source
            raise PatternError(
                f"pattern {p.name!r} is defined twice: by {_origin(other)} and by {_origin(p)}"
            )
        by_name[p.name] = p

    for p in by_name.values():
        if p.parent is not None and p.parent not in by_name:
            hint = difflib.get_close_matches(p.parent, list(by_name), n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise PatternError(f"pattern {p.name!r} (from {_origin(p)}): unknown parent {p.parent!r}{extra}")
        if p.name in _order_deps(p):
            raise PatternError(f"pattern {p.name!r} (from {_origin(p)}): depends on itself")

    # the metric tree must be a forest
    for p in by_name.values():
        chain = [p.name]
        node = p
        while node.parent is not None:
            if node.parent in chain:
                loop = " -> ".join(chain[chain.index(node.parent):] + [node.parent])
                raise PatternError(f"pattern {p.name!r} (from {_origin(p)}): cycle in the metric hierarchy: {loop}")
            chain.append(node.parent)
            node = by_name[node.parent]

    # `depends` must be acyclic among the loaded patterns
    _topological(by_name, list(by_name), use_parents=False)
    return by_name


# --------------------------------------------------------------------------
# Ordering
# --------------------------------------------------------------------------
def _order_deps(p: Pattern) -> tuple[str, ...]:
    """Patterns that must be computed before ``p`` when they are loaded.

    ``depends`` entries are also pulled in when ``p`` is selected by name;
    ``optional_depends`` entries (a pattern that uses another's result only
    if it happens to be computed, like ``time`` with ``omp_idle_threads``)
    only order.
    """
    return tuple(p.depends) + tuple(p.optional_depends)


def _children(by_name: dict[str, Pattern], order: list[str]) -> dict[str | None, list[str]]:
    kids: dict[str | None, list[str]] = {None: []}
    for name in order:
        kids.setdefault(name, [])
    for name in order:
        parent = by_name[name].parent
        kids.setdefault(parent if parent in by_name else None, []).append(name)
    return kids


def _preorder(by_name: dict[str, Pattern], order: list[str]) -> list[tuple[int, str]]:
    kids = _children(by_name, [n for n in order if n in by_name])
    out: list[tuple[int, str]] = []
    stack = [(0, n) for n in reversed(kids[None])]
    while stack:
        depth, name = stack.pop()
        out.append((depth, name))
        stack.extend((depth + 1, c) for c in reversed(kids[name]))
    return out


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    todo, seen = [start], {start}
    while todo:
        n = todo.pop()
        if n == goal:
            return True
        for m in edges.get(n, ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return False


def _topological(by_name: dict[str, Pattern], names: list[str], use_parents: bool = True) -> list[str]:
    """``names`` ordered so every dependency (`depends`, `optional_depends`)
    comes first, and every parent too unless that contradicts a dependency
    (``time`` uses its own child ``omp_idle_threads``, so the child is
    computed first).
    Ties keep the metric tree's pre-order."""
    selected = set(names)
    rank = {n: i for i, (_, n) in enumerate(_preorder(by_name, names))}
    after: dict[str, set[str]] = {n: set() for n in names}  # edge a -> b: a before b
    for n in names:
        for d in _order_deps(by_name[n]):
            if d in selected:  # a dependency on a pattern not loaded is skipped
                after[d].add(n)
    if use_parents:
        for n in sorted(names, key=rank.__getitem__):
            parent = by_name[n].parent
            if parent in selected and not _reaches(after, n, parent):
                after[parent].add(n)
    indeg = {n: 0 for n in names}
    for a in after.values():
        for b in a:
            indeg[b] += 1
    ready = sorted((n for n in names if indeg[n] == 0), key=rank.__getitem__)
    out: list[str] = []
    while ready:
        n = ready.pop(0)
        out.append(n)
        for b in after[n]:
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
        ready.sort(key=rank.__getitem__)
    if len(out) != len(names):
        stuck = sorted(set(names) - set(out), key=rank.__getitem__)
        desc = ", ".join(f"{n!r} (from {_origin(by_name[n])}) depends on {list(_order_deps(by_name[n]))}" for n in stuck)
        raise PatternError(f"cycle in pattern dependencies: {desc}")
    return out


def _closure(by_name: dict[str, Pattern], names: Iterable[str]) -> list[str]:
    """The named patterns plus their ancestors and (transitively) what they depend on."""
    todo = list(names)
    out: set[str] = set()
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.add(n)
        p = by_name[n]
        if p.parent is not None:
            todo.append(p.parent)
        todo.extend(d for d in p.depends if d in by_name)
    return [n for n in by_name if n in out]


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------
def patterns_from_file(path) -> list[Pattern]:
    """The patterns one Python file defines (its ``PATTERNS`` list, or every Pattern subclass in it).

    For trying a pattern without packaging it (``expert-analyze --plugin FILE.py``);
    the file is imported as a module of its own, its patterns get the origin
    ``file PATH``.
    """
    path = os.fspath(path)
    origin = f"file {path}"
    if not os.path.isfile(path):
        raise PatternError(f"{origin}: no such file")
    name = "expert_plugin_file_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError("not a Python source file")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as exc:  # the file is foreign code
        raise PatternError(f"{origin}: loading failed: {type(exc).__name__}: {exc}") from exc
    found = _instances_from(module, origin)
    for p in found:
        p.origin = origin
    return found


def _discover(plugins: bool, files: Iterable = ()) -> dict[str, Pattern]:
    found = _builtin_patterns()
    if plugins:
        found += _plugin_patterns()
    for path in files:
        found += patterns_from_file(path)
    return _validate_all(found)


def available_patterns(plugins: bool = True, files: Iterable = ()) -> list[Pattern]:
    """Every available pattern in discovery order (built-in modules, plugins, files), validated."""
    return list(_discover(plugins, files).values())


def load_patterns(names: Iterable[str] | str | None = None, plugins: bool = True,
                  files: Iterable = ()) -> list[Pattern]:
    """Validated pattern instances in computation order.

    ``names`` (unique names, or one comma-separated string) selects patterns;
    everything they need (parents and `depends`) comes along.  ``None``
    loads every built-in and, with ``plugins``, every installed plugin;
    ``files`` adds the patterns of Python files (:func:`patterns_from_file`).
    Raises :class:`PatternError` naming the pattern and where it came from.
    """
    by_name = _discover(plugins, files)
    if names is None:
        selected = list(by_name)
    else:
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        names = list(names)
        for n in names:
            if n not in by_name:
                hint = difflib.get_close_matches(n, list(by_name), n=3)
                extra = f"; did you mean {', '.join(map(repr, hint))}?" if hint else ""
                raise PatternError(f"unknown pattern {n!r}{extra} (known: {len(by_name)} patterns; `expert-analyze --list-patterns` or patterns.registry.all_patterns() lists them)")
        selected = _closure(by_name, names)
    return [by_name[n] for n in _topological(by_name, selected)]


def all_patterns(plugins: bool = True, files: Iterable = ()) -> list[Pattern]:
    """Every available pattern (built-ins, plugins and those of ``files``), in computation order."""
    return load_patterns(None, plugins=plugins, files=files)


class HierarchyEntry(NamedTuple):
    depth: int  # 0 for a root of the metric tree
    pattern: Pattern


def hierarchy(patterns: Iterable[Pattern] | None = None) -> list[HierarchyEntry]:
    """The metric tree in pre-order (children in load order), for reports.

    ``patterns`` defaults to every available pattern in discovery order
    (built-in modules, then plugins); a pattern whose parent is not among
    them is shown as a root.
    """
    pats = available_patterns() if patterns is None else list(patterns)
    by_name = {p.name: p for p in pats}
    return [HierarchyEntry(d, by_name[n]) for d, n in _preorder(by_name, list(by_name))]


def format_hierarchy(patterns: Iterable[Pattern] | None = None, origins: bool = True) -> str:
    """The metric tree as indented text: unique name, unit, display name, origin."""
    lines = []
    for depth, p in hierarchy(patterns):
        line = f"{'  ' * depth}{p.name} [{p.unit}]  {p.display_name}"
        if origins:
            line += f"  ({_origin(p)})"
        lines.append(line)
    return "\n".join(lines)
