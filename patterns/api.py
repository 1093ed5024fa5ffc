"""The pattern (performance property) plugin API.

A pattern is a class with metadata and a ``compute`` step::

    from patterns.api import Pattern, Severity

    class MyWait(Pattern):
        name = "my_wait"                  # unique name, lower case, CUBE uniq_name
        parent = "mpi_point2point"        # unique name of the parent property, or None
        display_name = "My Wait"
        unit = "sec"                      # "sec", "occ" or "bytes"
        description = "One paragraph: what the property measures."
        diagnosis = "One paragraph: what to look at, what to change."
        requires = ("messages",)          # replay tables it reads (only these are built)
        depends = ()                      # patterns whose ctx.results it reads

        def compute(self, ctx):
            t = ctx.table("messages")
            ...
            return Severity(cnode, location, value)

Built-in patterns use this same API.  Third-party packages expose theirs
through the entry-point group :data:`ENTRY_POINT_GROUP`; see
``docs/writing-patterns.md``.  Values must be exclusive along the call tree
(charged to exactly one call path) and inclusive along the metric tree (a
child's value is part of its parent's in every (call path, location) cell;
the analysis checks this, :func:`check_subsets`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .tables import TABLE_NAMES

ENTRY_POINT_GROUP = "expert.patterns"
UNITS = ("sec", "occ", "bytes")
#: values of ``Pattern.paradigm``: None (every program; "generic", as earlier versions wrote it), MPI, OpenMP,
#: POSIX threads
PARADIGMS = (None, "generic", "mpi", "openmp", "pthread")
#: values of ``Pattern.scope``: what part of the run a pattern's value in one location's column needs
#: (docs/writing-patterns.md, "Scope"); "global", the default, is always correct
SCOPES = ("location", "row", "global")


class PatternError(Exception):
    """A pattern is malformed (bad metadata) or its compute step failed."""


@dataclass
class Severity:
    """Sparse severity contributions: value[i] is added at (cnode[i], location[i])."""

    cnode: np.ndarray
    location: np.ndarray
    value: np.ndarray

    @classmethod
    def empty(cls) -> "Severity":
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))

    @classmethod
    def from_dense(cls, dense: np.ndarray) -> "Severity":
        c, loc = np.nonzero(dense)
        return cls(c, loc, dense[c, loc])

    def to_dense(self, n_cnodes: int, n_locations: int) -> np.ndarray:
        """Sum the contributions into a [n_cnodes, n_locations] float64 array."""
        out = np.zeros(n_cnodes * n_locations, np.float64)
        if len(self.value):
            flat = np.asarray(self.cnode, np.int64) * n_locations + np.asarray(self.location, np.int64)
            out += np.bincount(flat, weights=np.asarray(self.value, np.float64), minlength=out.size)
        return out.reshape(n_cnodes, n_locations)


class Pattern:
    """Base class of every performance property; subclasses set the metadata.

    See ``docs/writing-patterns.md`` ("Metadata") for what each attribute means
    and how the analysis uses it.
    """

    name: ClassVar[str] = ""
    parent: ClassVar[str | None] = None
    display_name: ClassVar[str] = ""
    unit: ClassVar[str] = "sec"
    description: ClassVar[str] = ""
    diagnosis: ClassVar[str] = ""
    #: names of the replay tables (:data:`patterns.tables.TABLES`) that ``compute``
    #: reads, directly or through helpers; the replay builds only the tables some
    #: selected pattern requires, and ``ctx.table`` refuses any other one during
    #: this pattern's ``compute``
    requires: ClassVar[tuple[str, ...]] = ()
    #: unique names of patterns whose results (``ctx.results``) this one reads:
    #: computed first, and selected along with this pattern
    depends: ClassVar[tuple[str, ...]] = ()
    #: unique names of patterns whose results this one reads *if they are
    #: computed in the same run* (check ``name in ctx.results``): computed first
    #: when selected, but never selected because of this pattern
    optional_depends: ClassVar[tuple[str, ...]] = ()
    #: the programming model the property belongs to: ``"mpi"``, ``"openmp"``, ``"pthread"`` or None (any
    #: program; ``"generic"`` means the same).  None inherits the parent's.  In a trace without a call of that paradigm
    #: the property is zero by construction, and the text report hides it unless ``--all``
    paradigm: ClassVar[str | None] = None
    #: what the analysis per share of processes (``--mpi``, ``--memory``) must hand ``compute``
    #: for the value to be exact (docs/writing-patterns.md, "Scope"):
    #: ``"location"``: a location's column depends only on the rows of the tables that touch that
    #: location (plus the halo rows a share receives: the other side of its messages, the extreme
    #: members of its collective instances, every one-sided event) and on its own columns of the
    #: dense arrays: computed on every share for the locations it owns;
    #: ``"row"``: needs whole call-path rows of the results in ``depends`` over all locations and no
    #: table (``requires == ()``): computed on rank 0 from the gathered results;
    #: ``"global"`` (the default, safe for any pattern): computed on rank 0 over tables gathered there
    scope: ClassVar[str] = "global"

    def compute(self, ctx) -> Severity | np.ndarray:  # pragma: no cover - abstract
        """Return a Severity or a dense [n_cnodes, n_locations] array."""
        raise NotImplementedError(f"pattern {self.name!r} has no compute step")

    def unmeasured(self, ctx) -> str | None:
        """Why this trace cannot measure the property (a few words, e.g. a counter it needs was
        not recorded), or None when it can.  An unmeasured property, and every property under it,
        is left out of the results: reports say "n/a", never 0 (docs/writing-patterns.md)."""
        return None


def validate_pattern(p: Pattern, origin: str = "") -> None:
    """Raise PatternError naming what is wrong with a pattern's metadata."""
    where = f" (from {origin})" if origin else ""
    name = getattr(p, "name", "")
    if not isinstance(name, str) or not name or name != name.lower() or not name.replace("_", "").isalnum():
        raise PatternError(f"pattern {p!r}{where}: name must be a non-empty lower-case identifier, got {name!r}")
    for attr in ("display_name", "description", "diagnosis"):
        v = getattr(p, attr, "")
        if not isinstance(v, str) or not v.strip():
            raise PatternError(f"pattern {name!r}{where}: {attr} must be a non-empty string")
    if p.unit not in UNITS:
        raise PatternError(f"pattern {name!r}{where}: unit must be one of {UNITS}, got {p.unit!r}")
    if p.parent is not None and not isinstance(p.parent, str):
        raise PatternError(f"pattern {name!r}{where}: parent must be a unique name or None")
    if getattr(p, "paradigm", None) not in PARADIGMS:
        raise PatternError(f"pattern {name!r}{where}: paradigm must be one of {PARADIGMS}, got {p.paradigm!r}")
    if not callable(getattr(p, "compute", None)):
        raise PatternError(f"pattern {name!r}{where}: compute is not callable")
    if isinstance(p, Pattern) and type(p).compute is Pattern.compute and "compute" not in vars(p):
        raise PatternError(f"pattern {name!r}{where}: no compute step (define compute(self, ctx))")
    for attr in ("requires", "depends", "optional_depends"):
        v = getattr(p, attr, ())
        if isinstance(v, str) or not isinstance(v, (tuple, list)) or not all(isinstance(x, str) for x in v):
            raise PatternError(f"pattern {name!r}{where}: {attr} must be a tuple of names, got {v!r}")
    scope = getattr(p, "scope", "global")
    if scope not in SCOPES:
        raise PatternError(f"pattern {name!r}{where}: scope must be one of {SCOPES}, got {scope!r}")
    if scope == "row" and tuple(p.requires):
        raise PatternError(f"pattern {name!r}{where}: scope 'row' is computed from the results of its depends "
                           f"alone, so requires must be empty (now {tuple(p.requires)!r}); use scope 'global' "
                           f"for a pattern that reads replay tables")
    for table in p.requires:
        if table not in TABLE_NAMES:
            hint = difflib.get_close_matches(table, TABLE_NAMES, n=1)
            extra = f"did you mean {hint[0]!r}? " if hint else ""
            raise PatternError(f"pattern {name!r}{where}: requires names an unknown replay table {table!r}; "
                               f"{extra}(tables: {', '.join(TABLE_NAMES)})")


def pattern(*, name: str, display_name: str, description: str, diagnosis: str,
            parent: str | None = None, unit: str = "sec", requires: tuple[str, ...] = (),
            depends: tuple[str, ...] = (), optional_depends: tuple[str, ...] = (), paradigm: str | None = None,
            scope: str = "global"):
    """Decorator turning a function ``f(ctx) -> Severity | ndarray`` into a Pattern class."""

    def wrap(fn):
        cls = type(
            fn.__name__,
            (Pattern,),
            {
                "name": name,
                "parent": parent,
                "display_name": display_name,
                "unit": unit,
                "description": description,
                "diagnosis": diagnosis,
                "requires": tuple(requires),
                "depends": tuple(depends),
                "optional_depends": tuple(optional_depends),
                "paradigm": paradigm,
                "scope": scope,
                "compute": lambda self, ctx: fn(ctx),
                "__doc__": fn.__doc__,
                "__module__": fn.__module__,
            },
        )
        return cls

    return wrap


def compute_results(ctx, pats) -> None:
    """Compute each pattern of ``pats`` into ``ctx.results[name]`` (dense [C, L] float64), in order.

    While a pattern computes it reads only the tables it declares in ``requires``
    (``ctx.computing``); a failure, a location or call-path id out of range, a wrong shape or a
    non-finite value is a PatternError naming the pattern.  The subset rule is not checked here
    (:func:`check_subset_rule`): ``analyzer.analyze.compute_patterns`` runs both, the analysis per
    share only this (on every share) and the check over the gathered results.
    """
    C, L = ctx.n_cnodes, ctx.n_locations
    for p in pats:
        try:
            with ctx.computing(p):
                res = p.compute(ctx)
        except PatternError:
            raise
        except Exception as exc:
            origin = getattr(p, "origin", type(p).__module__)
            raise PatternError(f"pattern {p.name!r} (from {origin}) failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(res, Severity):
            if len(res.value) and (np.max(res.cnode, initial=0) >= C or np.max(res.location, initial=0) >= L
                                   or np.min(res.cnode, initial=0) < 0 or np.min(res.location, initial=0) < 0):
                raise PatternError(f"pattern {p.name!r} returned call-path or location ids out of range")
            dense = res.to_dense(C, L)
        else:
            dense = np.asarray(res, np.float64)
            if dense.shape != (C, L):
                raise PatternError(f"pattern {p.name!r} returned shape {dense.shape}, expected {(C, L)}")
        if not np.isfinite(dense).all():
            raise PatternError(f"pattern {p.name!r} produced non-finite values")
        ctx.results[p.name] = dense


#: tolerances of the subset rule: a child may exceed its parent by
#: ``SUBSET_ATOL + SUBSET_RTOL * max(|child|, |parent|)`` (rounding of sums and
#: differences of float64 times), nothing more
SUBSET_ATOL = 1e-9
SUBSET_RTOL = 1e-9


def check_subset_rule(ctx, pats) -> None:
    """Raise PatternError where a pattern's value exceeds its parent's.

    The metric tree is inclusive: a child is a part of its parent.  Checked
    for every pattern of ``pats`` whose parent is among them, with results in
    ``ctx.results``, and whose unit equals its parent's (a count below a time
    is not comparable), with the allowance of :data:`SUBSET_ATOL` /
    :data:`SUBSET_RTOL`:

    * times (``sec``) in every (call path, location) cell;
    * counts and bytes (``occ``, ``bytes``) per location, summed over the call
      paths: an instance count may sit at another call than its parent's count
      (the Late Receiver counts at the sender's completing call, ``MPI_Wait``,
      the sends they are part of at the ``MPI_Isend``).

    The message names the child, its parent, the call path (for times), the
    location and both values.
    """
    by_name = {p.name: p for p in pats}
    for p in pats:
        parent = by_name.get(p.parent) if p.parent is not None else None
        if parent is None or parent.unit != p.unit or p.name not in ctx.results or parent.name not in ctx.results:
            continue
        child_v = ctx.results[p.name]
        parent_v = ctx.results[parent.name]
        per_cell = p.unit == "sec"
        if not per_cell:
            child_v, parent_v = child_v.sum(axis=0)[None, :], parent_v.sum(axis=0)[None, :]
        excess = child_v - parent_v - (SUBSET_ATOL + SUBSET_RTOL * np.maximum(np.abs(child_v), np.abs(parent_v)))
        if not (excess > 0).any():
            continue
        c, loc = np.unravel_index(int(np.argmax(excess)), excess.shape)
        n_bad = int((excess > 0).sum())
        where = f"call path {ctx.calltree.path(int(c), ctx.region_name)!r}" if per_cell else "all call paths together"
        cells = "(call path, location) cell" if per_cell else "location (summed over call paths)"
        origin = getattr(p, "origin", "") or type(p).__module__
        raise PatternError(
            f"pattern {p.name!r} (from {origin}) exceeds its parent {parent.name!r} at {where}, "
            f"location rank {int(ctx.location_process[loc])} thread {int(ctx.location_thread[loc])}: "
            f"{float(child_v[c, loc])!r} > {float(parent_v[c, loc])!r} {p.unit} ({n_bad} {cells}(s) in all); the "
            f"metric tree is inclusive, so a pattern's value must be a part of its parent's in every {cells} "
            f"(docs/writing-patterns.md)")
