"""MPI one-sided communication (RMA): time categories, the wait states of Scalasca 2.6's ``MPI_RMA.pattern`` and
the one-sided synchronisation, communication and byte counts (format 2.3 traces; definitions with formulas in
docs/analysis.md, "MPI one-sided communication").

Time categories come from the call paths' MPI function names, as Scalasca's predicates do: window management
(``mpi_mgmt_win``: create, allocate, free, attach, ...), active target synchronisation (fence, post, start,
complete, wait, test), passive target synchronisation (lock, unlock, their ``_all`` forms, flushes, sync) and
one-sided communication (put, get and the accumulating calls).  The wait states and counts come from the
``mpi_rma_ops`` table (one row per MPI_RMA_* event with the times of the call it lies in); a trace with
one-sided calls but no such events (format 2.2 and older, foreign traces) did not measure them: "n/a".

The matching of epochs and the formulas are in :mod:`patterns.rma_epochs`.
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import Paradigm, Role

from .api import Pattern
from .instances import mpi_operations
from .rma_epochs import ACTIVE_KINDS, ATOMIC, GET, PASSIVE_KINDS, PUT, SYNC, rma_events, rma_instances
_ACTIVE_OPS = frozenset(("win_fence", "win_post", "win_start", "win_complete", "win_wait", "win_test"))
_PASSIVE_OPS = frozenset(("win_lock", "win_unlock", "win_lock_all", "win_unlock_all", "win_flush", "win_flush_all",
                          "win_flush_local", "win_flush_local_all", "win_sync"))


# --------------------------------------------------------------------------
# call classes (time categories)
# --------------------------------------------------------------------------
def _rma_cnodes(ctx, which: str) -> np.ndarray:
    """Boolean per call path: an MPI one-sided call of class ``which`` (mgmt, active, passive, comm)."""
    ops = mpi_operations(ctx)
    if which == "comm":  # every RMA call that is no window call: put, get, accumulate, ...
        pick = {i for i, op in enumerate(ops) if op and not op.startswith("win_")}
    elif which == "mgmt":
        pick = {i for i, op in enumerate(ops) if op.startswith("win_") and op not in _ACTIVE_OPS | _PASSIVE_OPS}
    else:
        names = _ACTIVE_OPS if which == "active" else _PASSIVE_OPS
        pick = {i for i, op in enumerate(ops) if op in names}
    region_ok = np.zeros(len(ops), bool)
    region_ok[list(pick)] = True
    rma = (ctx.cnode_paradigm() == Paradigm.MPI) & (ctx.cnode_role() == int(Role.MPI_RMA))
    return rma & region_ok[ctx.calltree.region]


def _time(ctx, mask) -> np.ndarray:
    t = np.zeros_like(ctx.excl_time)
    t[mask] = ctx.results["execution"][mask]
    return t


# --------------------------------------------------------------------------
# patterns
# --------------------------------------------------------------------------
def _unrecorded(ctx) -> str | None:
    """Why one-sided events were not measured: the trace made one-sided calls but holds no MPI_RMA_* event."""
    if len(ctx.table("mpi_rma_ops")):
        return None
    rma = (ctx.cnode_paradigm() == Paradigm.MPI) & (ctx.cnode_role() == int(Role.MPI_RMA))
    if (rma & (ctx.visits.sum(axis=1) > 0)).any():
        return "the trace has MPI one-sided calls but no MPI_RMA_* records of their windows and epochs (format 2.3)"
    return None


class _RmaTime(Pattern):
    scope = "location"
    unit = "sec"
    requires = ()
    depends = ("execution",)
    calls = ""

    def compute(self, ctx):
        return _time(ctx, _rma_cnodes(ctx, self.calls))


class MpiMgmtWin(_RmaTime):
    name = "mpi_mgmt_win"
    parent = "mpi"
    display_name = "Window management"
    description = "Time spent in MPI one-sided window management calls (MPI_Win_create, _allocate, _free, ...)."
    diagnosis = "Create windows once and reuse them; see the waits at window creation and release below."
    calls = "mgmt"


class MpiRmaSynchronization(_RmaTime):
    name = "mpi_rma_synchronization"
    parent = "mpi_synchronization"
    display_name = "One-sided"
    description = "Time spent in MPI one-sided synchronisation calls (active and passive target)."
    diagnosis = "Expand to separate active target (fence, post/start/complete/wait) from passive target (locks)."
    calls = "active|passive"

    def compute(self, ctx):
        return _time(ctx, _rma_cnodes(ctx, "active") | _rma_cnodes(ctx, "passive"))


class MpiRmaSyncActive(_RmaTime):
    name = "mpi_rma_sync_active"
    parent = "mpi_rma_synchronization"
    display_name = "Active target"
    description = ("Time spent in MPI one-sided active target synchronisation: MPI_Win_fence, _post, _start, "
                   "_complete, _wait, _test.")
    diagnosis = "See the late post, early wait and wait at fence children for the waiting in it."
    calls = "active"


class MpiRmaSyncPassive(_RmaTime):
    name = "mpi_rma_sync_passive"
    parent = "mpi_rma_synchronization"
    display_name = "Passive target"
    description = ("Time spent in MPI one-sided passive target synchronisation: MPI_Win_lock, _unlock, their _all "
                   "forms, the flushes and MPI_Win_sync.")
    diagnosis = "See the lock contention child: processes competing for a window's lock wait here."
    calls = "passive"


class MpiRmaCommunication(_RmaTime):
    name = "mpi_rma_communication"
    parent = "mpi_communication"
    display_name = "One-sided"
    description = ("Time spent in MPI one-sided communication calls: MPI_Put, MPI_Get, MPI_Accumulate, "
                   "MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap and their request forms.")
    diagnosis = "Compare with the one-sided communication counts and bytes; see the late post child."
    calls = "comm"


class _RmaWait(Pattern):
    """One metric of :func:`rma_instances`."""

    # epochs pair origins with targets of any process: exact on a share only because every share holds all
    # mpi_rma_ops rows (in the serial order); the epoch matching then runs whole on each share
    scope = "location"
    unit = "sec"
    requires = ("mpi_rma_ops",)
    depends = ()
    key = ""

    def unmeasured(self, ctx):
        return _unrecorded(ctx)

    def compute(self, ctx):
        return rma_instances(ctx)[self.key]


class MpiRmaWaitAtCreate(_RmaWait):
    name = "mpi_rma_wait_at_create"
    parent = "mpi_mgmt_win"
    display_name = "Wait at Window Create"
    description = "Time spent in MPI_Win_create (and _allocate) waiting for the last process to enter the call."
    diagnosis = "Balance the work before the window's creation, or create the window earlier."
    key = "wait_at_create"


class MpiRmaWaitAtFree(_RmaWait):
    name = "mpi_rma_wait_at_free"
    parent = "mpi_mgmt_win"
    display_name = "Wait at Window Free"
    description = "Time spent in MPI_Win_free waiting for the last process to enter the call."
    diagnosis = "Balance the work before the window is freed."
    key = "wait_at_free"


class MpiRmaSyncLatePost(_RmaWait):
    name = "mpi_rma_sync_late_post"
    parent = "mpi_rma_sync_active"
    display_name = "Late Post"
    description = ("Time spent in MPI_Win_start or MPI_Win_complete waiting for the exposure epoch of the last "
                   "target (its MPI_Win_post) to begin.")
    diagnosis = "The targets post late: post the exposure epoch earlier, or balance the work before it."
    key = "sync_late_post"


class MpiRmaEarlyWait(_RmaWait):
    name = "mpi_rma_early_wait"
    parent = "mpi_rma_sync_active"
    display_name = "Early Wait"
    description = "Time spent in MPI_Win_wait waiting for the last origin to enter MPI_Win_complete."
    diagnosis = "The target waits early: do other work before MPI_Win_wait, or balance the origins' work."
    key = "early_wait"


class MpiRmaLateComplete(_RmaWait):
    name = "mpi_rma_late_complete"
    parent = "mpi_rma_early_wait"
    display_name = "Late Complete"
    description = ("The part of the early wait between the last one-sided transfer to the target and the last "
                   "MPI_Win_complete: the origins closed their access epochs late, not because of transfers.")
    diagnosis = "Complete the access epoch right after the last transfer."
    key = "late_complete"


class MpiRmaWaitAtFence(_RmaWait):
    name = "mpi_rma_wait_at_fence"
    parent = "mpi_rma_sync_active"
    display_name = "Wait at Fence"
    description = "Time spent in MPI_Win_fence waiting for the last process of the window to enter the fence."
    diagnosis = "Balance the work between fences, or use general active target synchronisation with fewer peers."
    key = "wait_at_fence"


class MpiRmaEarlyFence(_RmaWait):
    name = "mpi_rma_early_fence"
    parent = "mpi_rma_wait_at_fence"
    display_name = "Early Fence"
    description = ("The part of the wait at fence until the last one-sided transfer to this process finished: "
                   "waiting for pending RMA operations.")
    diagnosis = "Issue the transfers earlier in the epoch."
    key = "early_fence"


class MpiRmaSyncLockCompetition(_RmaWait):
    name = "mpi_rma_sync_lock_competition"
    parent = "mpi_rma_sync_passive"
    display_name = "Lock Contention"
    description = ("Time spent in MPI_Win_lock or MPI_Win_unlock waiting for another process to release a "
                   "conflicting lock on the same window and target.")
    diagnosis = "Use shared locks where the accesses allow it, hold exclusive locks shorter, or spread the targets."
    key = "sync_lock"


class MpiRmaCommLatePost(_RmaWait):
    name = "mpi_rma_comm_late_post"
    parent = "mpi_rma_communication"
    display_name = "Late Post"
    description = "Time spent in one-sided transfer calls waiting for the target's exposure epoch to begin."
    diagnosis = "The targets post late: post earlier, or balance the work before MPI_Win_post."
    key = "comm_late_post"


class MpiRmaCommLockCompetition(_RmaWait):
    name = "mpi_rma_comm_lock_competition"
    parent = "mpi_rma_communication"
    display_name = "Lock Contention"
    description = ("Time spent in one-sided transfer calls of a lock epoch waiting for another process to release "
                   "a conflicting lock on the same window and target.")
    diagnosis = "Use shared locks where the accesses allow it, or hold exclusive locks shorter."
    key = "comm_lock"


class MpiRmaPairsyncCount(_RmaWait):
    name = "mpi_rma_pairsync_count"
    parent = None
    paradigm = "mpi"
    unit = "occ"
    display_name = "MPI pair-wise one-sided synchronizations"
    description = ("Number of remote processes a one-sided synchronisation may have to wait for at the end of an "
                   "epoch: every process of the window at a fence, the group at MPI_Win_complete and MPI_Win_wait.")
    diagnosis = "Many pair-wise synchronisations mean tight coupling: check whether the algorithm needs it."
    key = "pairsync"


class MpiRmaPairsyncUnneededCount(_RmaWait):
    name = "mpi_rma_pairsync_unneeded_count"
    parent = "mpi_rma_pairsync_count"
    unit = "occ"
    display_name = "Unneeded"
    description = ("Pair-wise one-sided synchronisations with a process that took no part in a transfer with this "
                   "one in the epoch: not needed for consistency.")
    diagnosis = ("Use general active target synchronisation instead of fences, or groups that name only the "
                 "processes that communicate.")
    key = "pairsync_unneeded"


# ---- counts and bytes of the MPI_RMA_* events
class _RmaCount(Pattern):
    scope = "location"  # own rows only (every share holds all mpi_rma_ops rows anyway)
    requires = ("mpi_rma_ops",)
    depends = ()
    unit = "occ"
    ops: tuple = ()
    kinds: tuple = ()  # RmaSync kinds (for SYNC)
    weigh = ""  # "sent" / "recvd" / "sent+recvd": bytes

    def unmeasured(self, ctx):
        return _unrecorded(ctx)

    def compute(self, ctx):
        return rma_events(ctx, self.ops, self.kinds, self.weigh)


class SyncsRma(_RmaCount):
    name = "syncs_rma"
    parent = "syncs"
    display_name = "One-sided"
    description = "Number of MPI one-sided synchronisation operations (active and passive target)."
    diagnosis = "Fewer, larger epochs synchronise less."
    ops = (SYNC,)
    kinds = ACTIVE_KINDS + PASSIVE_KINDS


class SyncsRmaActive(_RmaCount):
    name = "syncs_rma_active"
    parent = "syncs_rma"
    display_name = "Active target"
    description = "Number of MPI one-sided active target synchronisations (fence, post, start, complete, wait, test)."
    diagnosis = "Fewer, larger epochs synchronise less."
    ops = (SYNC,)
    kinds = ACTIVE_KINDS


class SyncsRmaPassive(_RmaCount):
    name = "syncs_rma_passive"
    parent = "syncs_rma"
    display_name = "Passive target"
    description = "Number of MPI one-sided passive target synchronisations (lock, unlock, flush, sync)."
    diagnosis = "Hold a lock for several transfers instead of one lock per transfer."
    ops = (SYNC,)
    kinds = PASSIVE_KINDS


class CommsRma(_RmaCount):
    name = "comms_rma"
    parent = "comms"
    display_name = "One-sided"
    description = "Number of MPI one-sided communication operations (puts, gets, atomics)."
    diagnosis = "Many small transfers are better aggregated into fewer."
    ops = (PUT, GET, ATOMIC)


class CommsRmaPuts(_RmaCount):
    name = "comms_rma_puts"
    parent = "comms_rma"
    display_name = "Puts"
    description = "Number of MPI one-sided put operations (MPI_Put, MPI_Rput)."
    diagnosis = "Many small transfers are better aggregated into fewer."
    ops = (PUT,)


class CommsRmaGets(_RmaCount):
    name = "comms_rma_gets"
    parent = "comms_rma"
    display_name = "Gets"
    description = "Number of MPI one-sided get operations (MPI_Get, MPI_Rget)."
    diagnosis = "Many small transfers are better aggregated into fewer."
    ops = (GET,)


class CommsRmaAtomics(_RmaCount):
    name = "comms_rma_atomics"
    parent = "comms_rma"
    display_name = "Atomics"
    description = ("Number of MPI one-sided accumulating operations (MPI_Accumulate, MPI_Get_accumulate, "
                   "MPI_Fetch_and_op, MPI_Compare_and_swap and their request forms).")
    diagnosis = "Many small transfers are better aggregated into fewer."
    ops = (ATOMIC,)


class BytesRma(_RmaCount):
    name = "bytes_rma"
    parent = "bytes"
    unit = "bytes"
    display_name = "One-sided"
    description = "Bytes moved by MPI one-sided communication operations (sent and received)."
    diagnosis = "Compare the volume with the one-sided communication time."
    ops = (PUT, GET, ATOMIC)
    weigh = "sent+recvd"


class BytesPut(_RmaCount):
    name = "bytes_put"
    parent = "bytes_rma"
    unit = "bytes"
    display_name = "Sent"
    description = "Bytes sent by MPI one-sided operations (puts, and the data accumulating operations send)."
    diagnosis = "Compare the volume with the one-sided communication time."
    ops = (PUT, ATOMIC)
    weigh = "sent"


class BytesGet(_RmaCount):
    name = "bytes_get"
    parent = "bytes_rma"
    unit = "bytes"
    display_name = "Received"
    description = "Bytes received by MPI one-sided operations (gets, and the results accumulating operations return)."
    diagnosis = "Compare the volume with the one-sided communication time."
    ops = (GET, ATOMIC)
    weigh = "recvd"


RMA_TIME_PATTERNS = [MpiMgmtWin, MpiRmaWaitAtCreate, MpiRmaWaitAtFree]
RMA_SYNC_PATTERNS = [MpiRmaSynchronization, MpiRmaSyncActive, MpiRmaSyncLatePost, MpiRmaEarlyWait, MpiRmaLateComplete,
                     MpiRmaWaitAtFence, MpiRmaEarlyFence, MpiRmaSyncPassive, MpiRmaSyncLockCompetition]
RMA_COMM_PATTERNS = [MpiRmaCommunication, MpiRmaCommLatePost, MpiRmaCommLockCompetition]
RMA_COUNT_PATTERNS = [SyncsRma, SyncsRmaActive, SyncsRmaPassive, CommsRma, CommsRmaPuts, CommsRmaGets,
                      CommsRmaAtomics, BytesRma, BytesPut, BytesGet, MpiRmaPairsyncCount, MpiRmaPairsyncUnneededCount]

