"""What a replay hands to the patterns: :class:`AnalysisContext`.

The replay engine (``analyzer/replay.py``) builds one context per trace; each
pattern's ``compute`` step reads it and returns severities.  Everything in it
is plain numpy so patterns can stay vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

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

    @property
    def n_cnodes(self) -> int:
        return len(self.calltree)

    def cnode_paradigm(self) -> np.ndarray:
        return self.region_paradigm[self.calltree.region]

    def cnode_role(self) -> np.ndarray:
        return self.region_role[self.calltree.region]

    def table(self, name: str) -> Table:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"replay table {name!r} was not built; available: {sorted(self.tables)}") from None
