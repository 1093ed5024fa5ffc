"""What a replay hands to the patterns: :class:`AnalysisContext`.

The replay engine (``analyzer.replay``) builds one context per trace; each
pattern's ``compute`` step reads it and returns severities.  Everything in it
is plain numpy so patterns can stay vectorised.

While the analysis computes a pattern (inside :meth:`AnalysisContext.computing`),
``ctx.table(name)`` and ``ctx.tables`` give only the tables that pattern
declares in ``requires``; reading another one is a
:class:`~patterns.api.PatternError` naming the pattern and the missing entry.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .api import PatternError
from .tables import Table


@dataclass
class CallTree:
    """One call tree unified over all locations.

    Node ids are dense 0..N-1 in depth-first pre-order with children in
    order of first visit; ``parent[0] == -1`` and node 0 is the single root
    (a synthetic root is added when the trace has several roots).
    """

    parent: np.ndarray  # int32 [N], -1 for the root
    region: np.ndarray  # int32 [N], region id of the callee
    callsite: np.ndarray  # int32 [N], call-site id or -1

    def __len__(self) -> int:
        return int(self.parent.shape[0])

    def children(self, node: int) -> np.ndarray:
        return np.flatnonzero(self.parent == node)

    def path(self, node: int, region_names: list[str] | dict[int, str]) -> str:
        """``main/foo/MPI_Recv`` style path of a node."""
        parts = []
        while node >= 0:
            parts.append(region_names[int(self.region[node])])
            node = int(self.parent[node])
        return "/".join(reversed(parts))


@dataclass
class AnalysisContext:
    """Everything the patterns may read.

    Dense per-(cnode, location) arrays have shape ``[n_cnodes, n_locations]``.
    Region attribute arrays are indexed by region id.
    """

    trace: Any  # the tracefmt.Trace the context was built from (definitions, locations)
    calltree: CallTree
    n_locations: int
    location_process: np.ndarray  # int32 [L]: process (MPI rank) of each location
    location_thread: np.ndarray  # int32 [L]: thread number within its process
    region_name: list[str]  # by region id
    region_paradigm: np.ndarray  # uint8 by region id (tracefmt.layout.Paradigm)
    region_role: np.ndarray  # uint8 by region id (tracefmt.layout.Role)
    visits: np.ndarray  # int64 [C, L]: number of ENTERs
    excl_time: np.ndarray  # float64 [C, L]: exclusive time (wall clock inside, minus children)
    incl_time: np.ndarray  # float64 [C, L]: inclusive time
    tables: dict[str, Table] = field(default_factory=dict)  # "messages", "collectives", ...
    # results of patterns computed earlier in this run, by unique name, as
    # dense [C, L] arrays; patterns that build on others read them here
    results: dict[str, np.ndarray] = field(default_factory=dict)
    # what the replay had to skip or repair (unmatched messages, truncated
    # locations, incomplete collectives), one line each, for the report
    problems: list[str] = field(default_factory=list)
    # True when the trace had several roots and a synthetic root was added
    synthetic_root: bool = False
    # hardware-counter metrics (METRIC definitions + COUNTER events), by metric
    # name: exclusive counter increments per [C, L] (ACCUMULATED metrics: the
    # counter's increase inside a call path minus its children's); empty when
    # the trace has no counters
    counters: dict[str, np.ndarray] = field(default_factory=dict)
    # values derived from the context that several patterns share (the fork/join
    # shift, instance tables), computed once per context by helpers in patterns/
    # (through patterns.instances.cached);
    # a helper that reads a table must be used only by patterns requiring it
    derived: dict[str, Any] = field(default_factory=dict)
    # the pattern being computed (set by :meth:`computing`), None outside a compute step
    current_pattern: Any = None
    # the locations this context is responsible for (int64, sorted): a
    # context of one share of processes (analyzer.distributed) fills only these
    # columns of the dense arrays, and only they hold exact pattern values;
    # None = every location (a serial context)
    owned: np.ndarray | None = None
    # the global id of each location of this context, when it holds only some
    # (a share's context under --mpi / --memory: its own locations and those its
    # rows name, numbered in global order); None = location ids are global.
    # A pattern that looks a location up in the trace's definitions maps it here first
    global_location: np.ndarray | None = None

    @property
    def n_cnodes(self) -> int:
        return len(self.calltree)

    def cnode_paradigm(self) -> np.ndarray:
        return self.region_paradigm[self.calltree.region]

    def cnode_role(self) -> np.ndarray:
        return self.region_role[self.calltree.region]

    def table(self, name: str) -> Table:
        """The replay table ``name`` (see :data:`patterns.tables.TABLES`).

        During a pattern's ``compute`` (:meth:`computing`) only the tables it
        declares in ``requires`` are readable: any other name raises
        :class:`~patterns.api.PatternError`.
        """
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"replay table {name!r} was not built; available: {sorted(self.tables)}") from None

    @contextmanager
    def computing(self, pattern):
        """While in this block, ``pattern`` is :attr:`current_pattern` and ``tables`` holds only
        the tables it requires (a read of any other one raises PatternError)."""
        saved, saved_pattern = self.tables, self.current_pattern
        self.tables = DeclaredTables(saved, pattern)
        self.current_pattern = pattern
        try:
            yield self
        finally:
            self.tables, self.current_pattern = saved, saved_pattern


class DeclaredTables(Mapping):
    """The tables one pattern may read: a read-only view of ``tables`` limited to ``pattern.requires``.

    Looking up (``[]``, ``get``, ``in``) a table the pattern does not declare
    raises :class:`~patterns.api.PatternError`, whether or not the replay
    built it, so a missing ``requires`` entry shows in every run; iteration
    lists the declared tables that were built.
    """

    def __init__(self, tables: Mapping[str, Table], pattern):
        self._tables = tables
        self._pattern = pattern
        self._declared = tuple(getattr(pattern, "requires", ()))

    def _check(self, name) -> None:
        if name not in self._declared:
            p = self._pattern
            origin = getattr(p, "origin", "") or type(p).__module__
            raise PatternError(
                f"pattern {getattr(p, 'name', p)!r} (from {origin}) reads replay table {name!r} but does not "
                f"declare it: add {name!r} to its requires (now {self._declared!r}); the replay builds only "
                f"the tables the selected patterns require")

    def __getitem__(self, name) -> Table:
        self._check(name)
        return self._tables[name]

    def get(self, name, default=None):
        self._check(name)
        return self._tables.get(name, default)

    def __contains__(self, name) -> bool:
        self._check(name)
        return name in self._tables

    def __iter__(self) -> Iterator[str]:
        return (n for n in self._tables if n in self._declared)

    def __len__(self) -> int:
        return sum(1 for _ in self)
