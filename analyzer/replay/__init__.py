"""The replay engine: from a trace to the pattern context.

:func:`replay` walks every location once (:mod:`.engine`, with the numba
kernels of :mod:`.kernels`), builds the call tree (:mod:`.calltree`), matches
compound events into the tables of :mod:`patterns.tables` (:mod:`.extract`,
:mod:`.matching`) and returns a :class:`patterns.context.AnalysisContext`.
:mod:`.distributed` does the same over MPI ranks.
"""

from .engine import ALL_TABLES, ReplayError, merge_trees, partition, replay, walk_order

__all__ = ["ALL_TABLES", "ReplayError", "merge_trees", "partition", "replay", "walk_order"]
