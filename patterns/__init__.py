"""Performance properties (patterns) and the plugin API.

``patterns.api`` defines what a pattern is; ``patterns.registry`` finds the
built-in and plugin patterns; ``patterns.generic``, ``patterns.mpi`` and
``patterns.omp`` hold the built-ins.  The registry imports the built-in
modules only when patterns are loaded.
"""

from .api import ENTRY_POINT_GROUP, UNITS, Pattern, PatternError, Severity, pattern, validate_pattern
from .registry import HierarchyEntry, all_patterns, format_hierarchy, hierarchy, load_patterns

__all__ = [
    "ENTRY_POINT_GROUP",
    "UNITS",
    "Pattern",
    "PatternError",
    "Severity",
    "pattern",
    "validate_pattern",
    "load_patterns",
    "all_patterns",
    "hierarchy",
    "format_hierarchy",
    "HierarchyEntry",
]
