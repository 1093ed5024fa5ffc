"""Per-location table fragments: name the rows the fused kernel cut out.

``kernels.location.replay_location`` returns each kind of row as an int64
and a float64 matrix (``[column, row]``, a ``kernels.bundles.RowMatrices``);
:func:`fragments` turns them into dicts of named columns (views, no copy)
and adds the location's constant columns.  The fragments hold builder
call-tree ids; ``analyzer.replay.matching`` joins the fragments of all
locations into the tables of ``patterns/tables.py``.  Only these fragments survive a location, so memory
stays bounded by the largest location plus the rows.
"""

from __future__ import annotations

import numpy as np

from tracefmt.event_codes import MPI_FILE_IO, MPI_RMA_ATOMIC, MPI_RMA_GET, MPI_RMA_PUT, MPI_RMA_SYNC
from tracefmt.layout import NO_ID

from .kernels import location as K
from .kernels.enclosing import events_in_calls, type_mask

#: event types of the second passes (file I/O, one-sided), as ``events_in_calls`` takes them
FILE_IO_TYPES = type_mask(MPI_FILE_IO)
RMA_TYPES = type_mask(MPI_RMA_PUT, MPI_RMA_GET, MPI_RMA_ATOMIC, MPI_RMA_SYNC)

#: fragment kinds (the fields of ``kernels.bundles.Rows``), with their column names
KINDS = (
    ("sends", K.SEND_I, K.SEND_F),
    ("recvs", K.RECV_I, K.RECV_F),
    ("collectives", K.COLL_I, K.COLL_F),
    ("forks", K.FORK_I, K.FORK_F),
    ("joins", K.JOIN_I, K.JOIN_F),
    ("members", K.MEMBER_I, K.MEMBER_F),
    ("barriers", K.BARRIER_I, K.BARRIER_F),
    ("locks", K.LOCK_I, K.LOCK_F),
    ("tasks", K.TASK_I, K.TASK_F),
    ("task_creates", K.TCREATE_I, K.TCREATE_F),
    ("threads", K.THREAD_I, K.THREAD_F),
)

#: the column holding the location id in each fragment
LOC_COLUMN = {"sends": "send_loc", "recvs": "recv_loc", "collectives": "loc", "forks": "master_loc",
              "joins": "loc", "members": "loc", "barriers": "loc", "locks": "loc",
              "tasks": "loc", "task_creates": "loc", "threads": "loc"}


def fragments(loc: int, rank: int, rows) -> dict[str, dict[str, np.ndarray]]:
    """Named columns of one location's rows (``rows``: the kernel's ``kernels.bundles.Rows``)."""
    out = {}
    for kind, int_names, float_names in KINDS:
        ints, floats = getattr(rows, kind)
        n = ints.shape[1]
        cols = {name: ints[k] for k, name in enumerate(int_names)}
        cols.update({name: floats[k] for k, name in enumerate(float_names)})
        cols[LOC_COLUMN[kind]] = np.full(n, loc, np.int32)
        out[kind] = cols
    s, r, c = out["sends"], out["recvs"], out["collectives"]
    s["send_rank"] = np.full(len(s["send_loc"]), rank, np.int32)
    r["recv_rank"] = np.full(len(r["recv_loc"]), rank, np.int32)
    c["rank"] = np.full(len(c["loc"]), rank, np.int32)
    out["barriers"]["implicit"] = out["barriers"]["implicit"].astype(bool)
    return out


def file_io_fragment(loc: int, events, calls) -> dict[str, np.ndarray] | None:
    """The location's MPI file reads and writes (format 2.2) as ``mpi_file_ops`` rows with builder
    call-tree ids, or None when it has none (the common case: one vectorised test)."""
    if not (events.type == MPI_FILE_IO).any():
        return None
    ev, call = events_in_calls(events.type, FILE_IO_TYPES, calls.node.shape[0])
    node = np.where(call >= 0, calls.node[np.maximum(call, 0)], -1)
    return {"loc": np.full(len(call), loc, np.int32), "cnode": node.astype(np.int32),
            "flags": events.flags[ev].astype(np.int32), "bytes": events.d[ev].astype(np.int64),
            "time": events.time[ev].astype(np.float64)}


def rma_fragment(loc: int, rank: int, events, calls) -> dict[str, np.ndarray] | None:
    """The location's MPI one-sided events (format 2.3) as ``mpi_rma_ops`` rows with builder call-tree ids and
    the times of the call each lies in, or None when it has none (one vectorised test)."""
    et = events.type
    if not ((et >= MPI_RMA_PUT) & (et <= MPI_RMA_SYNC)).any():
        return None
    ev, call = events_in_calls(et, RMA_TYPES, calls.node.shape[0])
    inside = call >= 0
    at = np.maximum(call, 0)
    op = et[ev].astype(np.int32)
    d, e = events.d[ev].astype(np.int64), events.e[ev].astype(np.int64)
    get = op == MPI_RMA_GET
    peer = events.b[ev].astype(np.int64)
    return {
        "loc": np.full(len(ev), loc, np.int32),
        "rank": np.full(len(ev), rank, np.int32),
        "cnode": np.where(inside, calls.node[at], -1).astype(np.int32),
        "op": op,
        "kind": np.where((op == MPI_RMA_SYNC) | (op == MPI_RMA_ATOMIC), events.c[ev], 0).astype(np.int32),
        "flags": events.flags[ev].astype(np.int32),
        "window": events.a[ev].astype(np.int64),
        "peer": np.where(peer == NO_ID, -1, peer),
        "sent": np.where(get | (op == MPI_RMA_SYNC), 0, d),
        "recvd": np.where(get, d, np.where(op == MPI_RMA_ATOMIC, e, 0)),
        "enter": np.where(inside, calls.enter[at], events.time[ev]),
        "exit": np.where(inside, calls.exit[at], events.time[ev]),
        "time": events.time[ev].astype(np.float64),
    }
