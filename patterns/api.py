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
        requires = ("messages",)          # replay tables it reads

        def compute(self, ctx):
            t = ctx.table("messages")
            ...
            return Severity(cnode, location, value)

Built-in patterns use this same API.  Third-party packages expose theirs
through the entry-point group :data:`ENTRY_POINT_GROUP`; see
``docs/writing-patterns.md``.  Values must be exclusive along the call tree
(charged to exactly one call path) and inclusive along the metric tree (a
child's value is part of its parent's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

ENTRY_POINT_GROUP = "expert.patterns"
UNITS = ("sec", "occ", "bytes")


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
    """Base class of every performance property; subclasses set the metadata."""

    name: ClassVar[str] = ""
    parent: ClassVar[str | None] = None
    display_name: ClassVar[str] = ""
    unit: ClassVar[str] = "sec"
    description: ClassVar[str] = ""
    diagnosis: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    #: unique names of patterns whose results (ctx.results) this one reads
    depends: ClassVar[tuple[str, ...]] = ()
    #: patterns that are pure containers in the hierarchy (their value is
    #: computed from region classification) set this to False to be
    #: hidden in reports when zero; informational only
    paradigm: ClassVar[str] = "generic"  # "generic", "mpi", "openmp"

    def compute(self, ctx) -> Severity | np.ndarray:  # pragma: no cover - abstract
        """Return a Severity or a dense [n_cnodes, n_locations] array."""
        raise NotImplementedError(f"pattern {self.name!r} has no compute step")


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
    if not callable(getattr(p, "compute", None)):
        raise PatternError(f"pattern {name!r}{where}: compute is not callable")


def pattern(*, name: str, display_name: str, description: str, diagnosis: str,
            parent: str | None = None, unit: str = "sec", requires: tuple[str, ...] = (),
            depends: tuple[str, ...] = ()):
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
                "compute": lambda self, ctx: fn(ctx),
                "__doc__": fn.__doc__,
                "__module__": fn.__module__,
            },
        )
        return cls

    return wrap
