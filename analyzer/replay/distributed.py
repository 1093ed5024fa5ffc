"""Distributed replay over MPI ranks (mpi4py): ``mpiexec -n K expert-analyze --mpi trace.elg``.

Each rank opens the trace (only its header, definitions and footer index are
read up front), takes a contiguous share of whole processes balanced by the
event counts in the index (:func:`analyzer.replay.partition`), decodes and
walks only those locations, and reduces them to what the patterns need: its
piece of the call tree, per-(call path, location) visits and times, and the
rows of the compound-event tables (send-side and receive-side message rows,
collective members, team/barrier members, lock acquisitions).  One
gather (``exchange.gather_bytes``: in pieces of at most 1 GiB, so shares over MPI's 2 GiB
message limit pass) brings the pieces to rank 0, which merges them exactly as the
serial replay does (same call-tree ids, same row order), computes the
patterns and writes the cube.  Results are therefore identical to a serial
run; the event data -- the part that grows with the trace -- never leaves
the rank that read it.

This follows Scalasca's parallel replay in spirit (one analysis process per
share of the application's processes, exchanging only compound-event data)
but differs in one place, documented in docs/performance.md: the pattern
step runs on rank 0 over the gathered rows instead of in each rank during
a communication replay.
"""

from __future__ import annotations

import pickle

from .engine import FRAGMENT_KINDS, Share, assemble, check_tables, partition, region_arrays, walk_share
from .exchange import gather_bytes, portable_error, raise_portable

__all__ = ["replay_mpi", "world"]


def world():
    """``MPI.COMM_WORLD``, or a clear error when mpi4py is missing."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # the optional extra is not installed
        raise RuntimeError("--mpi needs the optional mpi4py package: pip install 'expert-analyze[mpi]' "
                           f"({exc})") from None
    return MPI.COMM_WORLD


def replay_mpi(trace, comm, tables=None, progress=None, salvage: bool = False):
    """The distributed replay; returns the :class:`AnalysisContext` on rank 0 and None elsewhere.

    Every rank must call it (it is collective).  A failure on any rank is
    raised on rank 0 with that rank's message; other ranks return None.
    ``tables``, ``salvage``: as for :func:`analyzer.replay.replay` (rank 0 builds only those tables).
    """
    want = check_tables(tables)
    names, _, role = region_arrays(trace.defs)
    shares = partition(trace, comm.size)
    try:
        # only the fragments of the wanted tables travel to rank 0 (as in the serial replay)
        mine = walk_share(trace, shares[comm.rank], role, names, progress,
                          timeline=bool(want & {"time_segments", "sync_points"}), salvage=salvage,
                          keep={k for t in want for k in FRAGMENT_KINDS[t]})
        if mine.error is not None:
            mine.error = portable_error(mine.error)
    except Exception as exc:  # anything else must still reach the gather, or rank 0 waits forever
        mine = Share(tree=None, error=portable_error(exc))
    # pickle once here so a failure to serialise is reported like any other; sent in pieces (exchange.py)
    pieces = gather_bytes(comm, pickle.dumps(mine, protocol=pickle.HIGHEST_PROTOCOL), root=0)
    if comm.rank != 0:
        return None
    got = [pickle.loads(p) for p in pieces]
    for r, s in enumerate(got):
        if s.error is not None:
            raise_portable(s.error, r)
    return assemble(trace, got, want)
