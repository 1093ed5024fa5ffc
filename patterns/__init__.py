"""Performance properties (patterns) and the plugin API: everything a plugin author imports.

``patterns.api`` defines what a pattern is (:class:`Pattern`, :class:`Severity`,
the :func:`pattern` decorator, :class:`PatternError`, the subset rule);
``patterns.context`` what its ``compute`` step reads (:class:`AnalysisContext`,
:class:`CallTree`); ``patterns.tables`` the compound-event tables a pattern may
``require`` (:class:`Table` and the column schemas); ``patterns.registry`` finds
the built-in and plugin patterns.  ``patterns.generic``, ``patterns.mpi``,
``patterns.omp`` and ``patterns.reasons`` hold the built-ins; the registry
imports them only when patterns are loaded.  Nothing here imports
``analyzer``: the replay fills this contract in.
"""

from .api import (ENTRY_POINT_GROUP, SCOPES, SUBSET_ATOL, SUBSET_RTOL, UNITS, Pattern, PatternError, Severity,
                  check_subset_rule, pattern, validate_pattern)
from .context import AnalysisContext, CallTree
from .registry import HierarchyEntry, all_patterns, format_hierarchy, hierarchy, load_patterns
from .tables import (COLLECTIVES, LOCKS, MESSAGES, OMP_BARRIERS, OMP_TEAM_MEMBERS, OMP_TEAMS, TABLE_NAMES, TABLES,
                     Table)

__all__ = [
    "ENTRY_POINT_GROUP",
    "UNITS",
    "SCOPES",
    "Pattern",
    "PatternError",
    "Severity",
    "pattern",
    "validate_pattern",
    "check_subset_rule",
    "SUBSET_ATOL",
    "SUBSET_RTOL",
    "AnalysisContext",
    "CallTree",
    "Table",
    "TABLES",
    "TABLE_NAMES",
    "MESSAGES",
    "COLLECTIVES",
    "OMP_TEAMS",
    "OMP_TEAM_MEMBERS",
    "OMP_BARRIERS",
    "LOCKS",
    "load_patterns",
    "all_patterns",
    "hierarchy",
    "format_hierarchy",
    "HierarchyEntry",
]

# the instance tables of the base wait states (see patterns.instances and docs/writing-patterns.md)
from .instances import (  # noqa: E402
    cached, late_receiver_instances, late_sender_instances, mpi_barrier_completion_instances,
    mpi_barrier_wait_instances, mpi_early_reduce_instances, mpi_early_scan_instances, mpi_late_broadcast_instances,
    mpi_nxn_completion_instances, mpi_operations, mpi_wait_nxn_instances, omp_barrier_wait_instances,
    omp_fork_join_instances, omp_lock_contention_instances, wait_severity,
)

__all__ += [
    "cached", "wait_severity", "mpi_operations", "late_sender_instances", "late_receiver_instances",
    "mpi_barrier_wait_instances", "mpi_barrier_completion_instances", "mpi_wait_nxn_instances",
    "mpi_nxn_completion_instances", "mpi_late_broadcast_instances", "mpi_early_reduce_instances",
    "mpi_early_scan_instances", "omp_barrier_wait_instances", "omp_lock_contention_instances",
    "omp_fork_join_instances",
]
