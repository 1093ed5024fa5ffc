"""The named, typed bundles the replay's kernels take and return.

Every bundle is a ``typing.NamedTuple`` of numpy arrays and integers, which
numba passes to and returns from nopython code like a plain tuple (no
Python objects reach a kernel, and ``cache=True`` still applies); fields
are read by name on both sides.  The comments give the dtype each kernel
is compiled for: other dtypes make numba compile another specialisation.
A location's events come as :class:`tracefmt.columns.EventColumns`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class TreeState(NamedTuple):
    """The call tree being grown (``calltree.CallTreeBuilder``): node 0 is a virtual super-root.

    Arrays may be longer than ``n_nodes`` (spare room); a kernel that needs
    more room returns new arrays.
    """

    parent: np.ndarray  # int32 parent node
    region: np.ndarray  # int32 region id
    first_child: np.ndarray  # int32, -1: none
    next_sibling: np.ndarray  # int32, -1: none
    first_visit: np.ndarray  # float64 earliest ENTER time over all locations
    n_nodes: int


class KnownTeams(NamedTuple):
    """The OpenMP teams forked so far in one process, sorted by team id (``engine`` keeps them)."""

    team_id: np.ndarray  # int64, ascending, distinct
    fork_node: np.ndarray  # int32 builder node of the call the team was forked from
    team_ref: np.ndarray  # int64 team reference, (location << 32) | k for its k-th fork there


class Calls(NamedTuple):
    """One location's call instances in ENTER order."""

    node: np.ndarray  # int32 builder node
    enter: np.ndarray  # float64
    exit: np.ndarray  # float64 (the location's last time for calls left open)
    parent: np.ndarray  # int32 index of the enclosing call, -1 at the top


class RowMatrices(NamedTuple):
    """One kind of table rows, ``[column, row]``: the column names are ``location.*_I`` / ``*_F``."""

    ints: np.ndarray  # int64
    floats: np.ndarray  # float64


class Rows(NamedTuple):
    """One location's rows of every kind; the field names are the fragment kinds of ``extract``."""

    sends: RowMatrices
    recvs: RowMatrices
    collectives: RowMatrices
    forks: RowMatrices
    joins: RowMatrices
    members: RowMatrices
    barriers: RowMatrices
    locks: RowMatrices
    tasks: RowMatrices  # OpenMP task execution fragments (format 2.1)
    task_creates: RowMatrices
    threads: RowMatrices  # THREAD_* events


class LocationResult(NamedTuple):
    """What ``location.replay_location`` returns.

    ``status`` is a :mod:`tracefmt.nesting` code.  ``info``: the event index
    of an error or DEFER, the number of regions left open for UNCLOSED.
    ``open_region``: the innermost open region at an EXIT_MISMATCH (-1
    otherwise).  With DEFER nothing but ``status`` and ``info`` is
    meaningful and the tree is unchanged.
    """

    status: int
    info: int
    open_region: int
    tree: TreeState
    calls: Calls
    rows: Rows


class CallSummary(NamedTuple):
    """Per builder node visited on one location, ascending by node (``summary.call_summary``)."""

    nodes: np.ndarray  # int64
    visits: np.ndarray  # int64
    incl: np.ndarray  # float64 inclusive time
    excl: np.ndarray  # float64 exclusive time
