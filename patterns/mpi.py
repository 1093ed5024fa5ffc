"""MPI properties: time categories, wait states (SCOUT 1.4 formulas) and the syncs/comms/bytes counts.

Wait states follow ``pattern-semantics.md`` §2.2: every waiting time is
clamped to the time spent in the operation (a clock-condition violation
never yields more waiting than the call lasted), Waitall/Waitsome count only
their largest Late Sender wait, Late Receiver is charged to the sender,
zero-byte transfers are excluded where SCOUT excludes them, and wrong-order
Late Senders come from a ring of the last 100 instances per receiver.
Collective wait states only look at complete instances on communicators of
at least two ranks.

Every wait state sums (a selection of) one instance table of
:mod:`patterns.instances`, where the formulas live.  The syncs/comms/bytes
counts are defined in :mod:`patterns.mpi_counts` and listed in
:data:`PATTERNS` here, after the time tree.
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import Paradigm, Role

from .api import Pattern
from .instances import (late_receiver_instances, late_sender_instances, mpi_barrier_completion_instances,
                        mpi_barrier_wait_instances, mpi_early_reduce_instances, mpi_early_scan_instances,
                        mpi_late_broadcast_instances, mpi_nxn_completion_instances, mpi_operations,
                        mpi_wait_nxn_instances, wait_severity)
from .mpi_counts import COUNT_PATTERNS
from .mpi_io import IO_COUNT_PATTERNS, IO_TIME_PATTERNS
from .mpi_rma import RMA_COMM_PATTERNS, RMA_COUNT_PATTERNS, RMA_SYNC_PATTERNS, RMA_TIME_PATTERNS


# --------------------------------------------------------------------------
# region classification
# --------------------------------------------------------------------------
def _time_where(ctx, cnode_mask: np.ndarray) -> np.ndarray:
    """Execution time (``ctx.results["execution"]``) at the call paths of ``cnode_mask``."""
    t = np.zeros_like(ctx.excl_time)
    t[cnode_mask] = ctx.results["execution"][cnode_mask]
    return t


def _mpi_mask(ctx):
    return ctx.cnode_paradigm() == Paradigm.MPI


def _role_mask(ctx, *roles):
    return _mpi_mask(ctx) & np.isin(ctx.cnode_role(), [int(r) for r in roles])


_COLL_ROLES = (Role.MPI_COLL_ONE2ALL, Role.MPI_COLL_ALL2ONE, Role.MPI_COLL_ALL2ALL, Role.MPI_COLL_OTHER)
_RMA_SYNC = ("win_fence", "win_start", "win_complete", "win_post", "win_wait", "win_test", "win_lock",
             "win_unlock", "win_lock_all", "win_unlock_all", "win_flush", "win_flush_all", "win_flush_local",
             "win_flush_local_all", "win_sync")


def _rma_mask(ctx, sync: bool):
    ops = mpi_operations(ctx)
    reg = ctx.calltree.region
    names = np.array([ops[r] for r in reg], dtype=object)
    rma = _role_mask(ctx, Role.MPI_RMA)
    is_sync = np.isin(names, _RMA_SYNC)
    is_comm = ~np.array([n.startswith("win_") for n in names], bool) if len(names) else np.zeros(0, bool)
    return rma & (is_sync if sync else is_comm)


# --------------------------------------------------------------------------
# time categories
# --------------------------------------------------------------------------
class Mpi(Pattern):
    name = "mpi"
    scope = "location"
    parent = "execution"
    paradigm = "mpi"  # inherited by the whole MPI subtree
    display_name = "MPI"
    unit = "sec"
    description = (
        "Time spent in MPI calls (their exclusive time: anything they call, such as a tool hook, is separate)."
    )
    diagnosis = (
        "Expand the metric tree to see which class of MPI operation takes the time; time outside the child classes "
        "(communicator management, for example) implies implicit synchronisation: reduce how often such calls are "
        "made."
    )
    requires = ()
    depends = ("execution",)

    def compute(self, ctx):
        return _time_where(ctx, _mpi_mask(ctx))


class MpiCommunication(Pattern):
    name = "mpi_communication"
    scope = "location"
    parent = "mpi"
    display_name = "Communication"
    unit = "sec"
    description = (
        "Time spent in MPI communication calls: point-to-point, collective and one-sided transfers."
    )
    diagnosis = (
        "Expand further to separate point-to-point from collective communication, and compare the time with the "
        "number of messages and bytes transferred."
    )
    requires = ()
    depends = ("execution",)

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_POINT2POINT, *_COLL_ROLES) | _rma_mask(ctx, sync=False))


class MpiPoint2point(Pattern):
    name = "mpi_point2point"
    scope = "location"
    parent = "mpi_communication"
    display_name = "Point-to-point"
    unit = "sec"
    description = (
        "Time spent in MPI point-to-point calls: sends, receives, waits, tests and probes (the time of the calls, "
        "not the message transfer time)."
    )
    diagnosis = (
        "Check the Late Sender and Late Receiver children; consider non-blocking communication overlapped with "
        "computation, or persistent requests for repeated transfers."
    )
    requires = ()
    depends = ("execution",)

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_POINT2POINT))


class MpiCollective(Pattern):
    name = "mpi_collective"
    scope = "location"
    parent = "mpi_communication"
    display_name = "Collective"
    unit = "sec"
    description = (
        "Time spent in MPI collective communication calls (broadcast, reduce, gather, all-to-all, scan)."
    )
    diagnosis = (
        "Most of it is usually waiting for the last participant: see the wait-state children. Combine several small "
        "collectives into one where possible."
    )
    requires = ()
    depends = ("execution",)

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, *_COLL_ROLES))


class MpiSynchronization(Pattern):
    name = "mpi_synchronization"
    scope = "location"
    parent = "mpi"
    display_name = "Synchronization"
    unit = "sec"
    description = (
        "Time spent in explicit MPI synchronisation: barriers and one-sided synchronisation calls."
    )
    diagnosis = (
        "Remove barriers that are not needed for correctness; large values often mean load imbalance in the code "
        "before the synchronisation."
    )
    requires = ()
    depends = ("execution",)

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_COLL_BARRIER) | _rma_mask(ctx, sync=True))


class MpiSyncCollective(Pattern):
    name = "mpi_sync_collective"
    scope = "location"
    parent = "mpi_synchronization"
    display_name = "Barrier"
    unit = "sec"
    description = (
        "Time spent in MPI barriers (MPI_Barrier and its non-blocking variants)."
    )
    diagnosis = (
        "Compare with the visits of the barrier call paths; split into Wait at Barrier (imbalance before the "
        "barrier) and Barrier Completion (the barrier's own cost)."
    )
    requires = ()
    depends = ("execution",)

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_COLL_BARRIER))


class MpiIo(Pattern):
    name = "mpi_io"
    scope = "location"
    parent = "mpi"
    display_name = "File I/O"
    unit = "sec"
    description = (
        "Time spent in MPI file I/O calls (MPI_File_*)."
    )
    diagnosis = (
        "Use collective file operations when many processes access one file, a parallel file system, and suitable "
        "MPI_Info hints."
    )
    requires = ()
    depends = ("execution",)

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_FILE_IO))


class MpiInitExit(Pattern):
    name = "mpi_init_exit"
    scope = "location"
    parent = "mpi"
    display_name = "Init/Exit"
    unit = "sec"
    description = (
        "Time spent in MPI_Init, MPI_Init_thread and MPI_Finalize."
    )
    diagnosis = (
        "A one-off cost that grows with the number of processes; time in MPI_Finalize often means some processes "
        "finished their work much earlier than others."
    )
    requires = ()
    depends = ("execution",)

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_INIT_FINALIZE))


# --------------------------------------------------------------------------
# point-to-point wait states
# --------------------------------------------------------------------------
class MpiLateSender(Pattern):
    name = "mpi_latesender"
    scope = "location"
    parent = "mpi_point2point"
    display_name = "Late Sender"
    unit = "sec"
    description = (
        "Time a receiving call (MPI_Recv, MPI_Wait, ...) waits because it was entered before the matching send call: "
        "min(enter of the send, exit of the receive) - enter of the receive. For MPI_Waitall and MPI_Waitsome only "
        "the largest such wait among their messages counts."
    )
    diagnosis = (
        "Post receives as non-blocking calls early and complete them late, send earlier on the sending side, or "
        "balance the work before the send."
    )
    requires = ("messages",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(late_sender_instances(ctx))


class MpiLateSenderWo(Pattern):
    name = "mpi_latesender_wo"
    scope = "location"
    parent = "mpi_latesender"
    display_name = "Messages in Wrong Order"
    unit = "sec"
    description = (
        "Late Sender waiting time of receives that waited for a message although a message sent earlier was still to "
        "be received later: the receiver asks for messages in a different order than they are sent (checked against "
        "its last 100 Late Sender instances)."
    )
    diagnosis = (
        "Receive in the order messages are sent, or use MPI_ANY_SOURCE / MPI_ANY_TAG to process messages as they "
        "arrive."
    )
    requires = ("messages",)
    depends = ()

    def compute(self, ctx):
        ls = late_sender_instances(ctx)
        return wait_severity(ls, ls["wrong_order"])


class MpiLswoDifferent(Pattern):
    name = "mpi_lswo_different"
    scope = "location"
    parent = "mpi_latesender_wo"
    display_name = "From different sources"
    unit = "sec"
    description = (
        "Wrong-order Late Sender time where the earlier-sent message came from a different source rank."
    )
    diagnosis = (
        "Change the order of receives from different sources to the usual arrival order, or use MPI_ANY_SOURCE."
    )
    requires = ("messages",)
    depends = ()

    def compute(self, ctx):
        ls = late_sender_instances(ctx)
        return wait_severity(ls, ls["wrong_order"] & ~ls["same_source"])


class MpiLswoSame(Pattern):
    name = "mpi_lswo_same"
    scope = "location"
    parent = "mpi_latesender_wo"
    display_name = "From same source"
    unit = "sec"
    description = (
        "Wrong-order Late Sender time where the earlier-sent message came from the same source rank."
    )
    diagnosis = (
        "Receive messages from one source in the order they are sent (or with MPI_ANY_TAG)."
    )
    requires = ("messages",)
    depends = ()

    def compute(self, ctx):
        ls = late_sender_instances(ctx)
        return wait_severity(ls, ls["wrong_order"] & ls["same_source"])


class MpiLateReceiver(Pattern):
    name = "mpi_latereceiver"
    scope = "location"
    parent = "mpi_point2point"
    display_name = "Late Receiver"
    unit = "sec"
    description = (
        "Time a blocking send (MPI_Send, MPI_Ssend, or MPI_Wait on a send request) waits because the receiver posted "
        "its receive later: enter of the receive's posting call - enter of the send's completing call, if the two "
        "overlap. Charged to the sender."
    )
    diagnosis = (
        "The MPI library is sending synchronously (large messages or no buffer space): try non-blocking sends, "
        "larger eager limits, or post the receive earlier."
    )
    requires = ("messages",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(late_receiver_instances(ctx))


# --------------------------------------------------------------------------
# collective wait states
# --------------------------------------------------------------------------
class MpiBarrierWait(Pattern):
    name = "mpi_barrier_wait"
    scope = "location"
    parent = "mpi_sync_collective"
    display_name = "Wait at Barrier"
    unit = "sec"
    description = (
        "Time spent in an MPI barrier before the last process reached it: min(latest enter, own exit) - own enter."
    )
    diagnosis = (
        "Load imbalance before the barrier: move work from the last-arriving processes to the early ones."
    )
    requires = ("collectives",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(mpi_barrier_wait_instances(ctx))


class MpiBarrierCompletion(Pattern):
    name = "mpi_barrier_completion"
    scope = "location"
    parent = "mpi_sync_collective"
    display_name = "Barrier Completion"
    unit = "sec"
    description = (
        "Time spent in an MPI barrier after the first process left it: own exit - max(earliest exit, latest enter)."
    )
    diagnosis = (
        "Processes should leave a barrier together; large values point to a slow barrier implementation or "
        "interference from other jobs or threads on the same cores."
    )
    requires = ("collectives",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(mpi_barrier_completion_instances(ctx))


class MpiWaitNxn(Pattern):
    name = "mpi_wait_nxn"
    scope = "location"
    parent = "mpi_collective"
    display_name = "Wait at N x N"
    unit = "sec"
    description = (
        "Time spent in an n-to-n collective (Allreduce, Allgather, Alltoall, Reduce_scatter) before the last sending "
        "process entered it; Alltoallv/Alltoallw and processes that receive nothing are excluded."
    )
    diagnosis = (
        "Load imbalance before the collective: balance the work of the processes that enter it late."
    )
    requires = ("collectives",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(mpi_wait_nxn_instances(ctx))


class MpiNxnCompletion(Pattern):
    name = "mpi_nxn_completion"
    scope = "location"
    parent = "mpi_collective"
    display_name = "N x N Completion"
    unit = "sec"
    description = (
        "Time spent in an n-to-n collective after the first participant left it: own exit - max(earliest exit, "
        "latest enter), for processes that both send and receive."
    )
    diagnosis = (
        "Participants should finish together; large values point to the collective's implementation or noise."
    )
    requires = ("collectives",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(mpi_nxn_completion_instances(ctx))


class MpiEarlyReduce(Pattern):
    name = "mpi_earlyreduce"
    scope = "location"
    parent = "mpi_collective"
    display_name = "Early Reduce"
    unit = "sec"
    description = (
        "Time the root of an n-to-1 collective (Reduce, Gather, Gatherv) waits because it entered before any process "
        "that sends data: min(earliest enter of a non-root sender, own exit) - own enter."
    )
    diagnosis = (
        "The root is ready too early: give it more work before the operation, or use a non-blocking variant."
    )
    requires = ("collectives",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(mpi_early_reduce_instances(ctx))


class MpiEarlyScan(Pattern):
    name = "mpi_earlyscan"
    scope = "location"
    parent = "mpi_collective"
    display_name = "Early Scan"
    unit = "sec"
    description = (
        "Time a process waits in MPI_Scan or MPI_Exscan for lower ranks: min(latest enter of ranks 0..own rank, own "
        "exit) - own enter; calls transferring no data are skipped."
    )
    diagnosis = (
        "Higher ranks arrive early: balance the work before the scan among the ranks."
    )
    requires = ("collectives",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(mpi_early_scan_instances(ctx))


class MpiLateBroadcast(Pattern):
    name = "mpi_latebroadcast"
    scope = "location"
    parent = "mpi_collective"
    display_name = "Late Broadcast"
    unit = "sec"
    description = (
        "Time a non-root process waits in a 1-to-n collective (Bcast, Scatter, Scatterv) because the root entered "
        "later: min(enter of the root, own exit) - own enter, for processes that receive data."
    )
    diagnosis = (
        "The root arrives late: reduce or balance the root's work before the operation."
    )
    requires = ("collectives",)
    depends = ()

    def compute(self, ctx):
        return wait_severity(mpi_late_broadcast_instances(ctx))


PATTERNS = [Mpi, MpiCommunication, MpiPoint2point, MpiLateSender, MpiLateSenderWo, MpiLswoDifferent, MpiLswoSame,
            MpiLateReceiver, MpiCollective, MpiEarlyReduce, MpiEarlyScan, MpiLateBroadcast, MpiWaitNxn,
            MpiNxnCompletion, *RMA_COMM_PATTERNS, MpiSynchronization, MpiSyncCollective, MpiBarrierWait,
            MpiBarrierCompletion, *RMA_SYNC_PATTERNS, MpiIo, *IO_TIME_PATTERNS, MpiInitExit,
            *RMA_TIME_PATTERNS] + COUNT_PATTERNS + RMA_COUNT_PATTERNS[:-2] + IO_COUNT_PATTERNS + RMA_COUNT_PATTERNS[-2:]
