"""MPI properties: time categories, wait states (SCOUT 1.4 formulas) and the syncs/comms/bytes counts.

Wait states follow ``pattern-semantics.md`` §2.2: every waiting time is
clamped to the time spent in the operation (a clock-condition violation
never yields more waiting than the call lasted), Waitall/Waitsome count only
their largest Late Sender wait, Late Receiver is charged to the sender,
zero-byte transfers are excluded where SCOUT excludes them, and wrong-order
Late Senders come from a ring of the last 100 instances per receiver.
Collective wait states only look at complete instances on communicators of
at least two ranks.
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import Paradigm, Role

from .kernels.wrongorder import RING_SIZE, wrong_order

from .api import Pattern, Severity
from .generic import _cache


# --------------------------------------------------------------------------
# region classification
# --------------------------------------------------------------------------
def _op_names(ctx) -> list[str]:
    """Lower-case MPI operation name by region id ("send" for MPI_Send), "" for non-MPI regions."""
    cache = _cache(ctx)
    if "mpi_ops" not in cache:
        cache["mpi_ops"] = [
            n[4:].lower() if int(p) == Paradigm.MPI and n[:4].upper() == "MPI_" else ""
            for n, p in zip(ctx.region_name, ctx.region_paradigm)
        ]
    return cache["mpi_ops"]


def _regions_where(ctx, pred) -> np.ndarray:
    return np.array([i for i, op in enumerate(_op_names(ctx)) if op and pred(op)], np.int64)


def _is(ctx, regions: np.ndarray, pred) -> np.ndarray:
    return np.isin(regions, _regions_where(ctx, pred))


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
    ops = _op_names(ctx)
    reg = ctx.calltree.region
    names = np.array([ops[r] for r in reg], dtype=object)
    rma = _role_mask(ctx, Role.MPI_RMA)
    is_sync = np.isin(names, _RMA_SYNC)
    is_comm = ~np.array([n.startswith("win_") for n in names], bool) if len(names) else np.zeros(0, bool)
    return rma & (is_sync if sync else is_comm)


def _sev(cnode, loc, value) -> Severity:
    return Severity(np.asarray(cnode, np.int64), np.asarray(loc, np.int64), np.asarray(value, np.float64))


class _Sec(Pattern):
    unit = "sec"


class _TimeCategory(_Sec):
    """MPI time categories: the execution time of the call paths they select."""

    depends = ("execution",)


class _Occ(Pattern):
    unit = "occ"


class _Bytes(Pattern):
    unit = "bytes"


# --------------------------------------------------------------------------
# time categories
# --------------------------------------------------------------------------
class Mpi(_TimeCategory):
    name = "mpi"
    parent = "execution"
    display_name = "MPI"
    description = "Time spent in MPI calls (their exclusive time: anything they call, such as a tool hook, is separate)."
    diagnosis = ("Expand the metric tree to see which class of MPI operation takes the time; time outside the child "
                 "classes (communicator management, for example) implies implicit synchronisation: reduce how often "
                 "such calls are made.")

    def compute(self, ctx):
        return _time_where(ctx, _mpi_mask(ctx))


class MpiCommunication(_TimeCategory):
    name = "mpi_communication"
    parent = "mpi"
    display_name = "Communication"
    description = "Time spent in MPI communication calls: point-to-point, collective and one-sided transfers."
    diagnosis = ("Expand further to separate point-to-point from collective communication, and compare the time "
                 "with the number of messages and bytes transferred.")

    def compute(self, ctx):
        m = _role_mask(ctx, Role.MPI_POINT2POINT, *_COLL_ROLES) | _rma_mask(ctx, sync=False)
        return _time_where(ctx, m)


class MpiPoint2point(_TimeCategory):
    name = "mpi_point2point"
    parent = "mpi_communication"
    display_name = "Point-to-point"
    description = ("Time spent in MPI point-to-point calls: sends, receives, waits, tests and probes (the time of the "
                   "calls, not the message transfer time).")
    diagnosis = ("Check the Late Sender and Late Receiver children; consider non-blocking communication overlapped "
                 "with computation, or persistent requests for repeated transfers.")

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_POINT2POINT))


class MpiCollective(_TimeCategory):
    name = "mpi_collective"
    parent = "mpi_communication"
    display_name = "Collective"
    description = "Time spent in MPI collective communication calls (broadcast, reduce, gather, all-to-all, scan)."
    diagnosis = ("Most of it is usually waiting for the last participant: see the wait-state children. Combine "
                 "several small collectives into one where possible.")

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, *_COLL_ROLES))


class MpiSynchronization(_TimeCategory):
    name = "mpi_synchronization"
    parent = "mpi"
    display_name = "Synchronization"
    description = "Time spent in explicit MPI synchronisation: barriers and one-sided synchronisation calls."
    diagnosis = ("Remove barriers that are not needed for correctness; large values often mean load imbalance in "
                 "the code before the synchronisation.")

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_COLL_BARRIER) | _rma_mask(ctx, sync=True))


class MpiSyncCollective(_TimeCategory):
    name = "mpi_sync_collective"
    parent = "mpi_synchronization"
    display_name = "Barrier"
    description = "Time spent in MPI barriers (MPI_Barrier and its non-blocking variants)."
    diagnosis = ("Compare with the visits of the barrier call paths; split into Wait at Barrier (imbalance before "
                 "the barrier) and Barrier Completion (the barrier's own cost).")

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_COLL_BARRIER))


class MpiIo(_TimeCategory):
    name = "mpi_io"
    parent = "mpi"
    display_name = "File I/O"
    description = "Time spent in MPI file I/O calls (MPI_File_*)."
    diagnosis = ("Use collective file operations when many processes access one file, a parallel file system, and "
                 "suitable MPI_Info hints.")

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_FILE_IO))


class MpiInitExit(_TimeCategory):
    name = "mpi_init_exit"
    parent = "mpi"
    display_name = "Init/Exit"
    description = "Time spent in MPI_Init, MPI_Init_thread and MPI_Finalize."
    diagnosis = ("A one-off cost that grows with the number of processes; time in MPI_Finalize often means some "
                 "processes finished their work much earlier than others.")

    def compute(self, ctx):
        return _time_where(ctx, _role_mask(ctx, Role.MPI_INIT_FINALIZE))


# --------------------------------------------------------------------------
# point-to-point wait states
# --------------------------------------------------------------------------
def late_sender_instances(ctx) -> dict[str, np.ndarray]:
    """One row per Late Sender instance (SCOUT: clamped, Test* skipped, Waitall/Waitsome max only)."""
    cache = _cache(ctx)
    if "late_sender" in cache:
        return cache["late_sender"]
    M = ctx.table("messages")
    n = len(M)
    test = _is(ctx, M["recv_region"], lambda op: op.startswith("test"))
    multi = _is(ctx, M["recv_region"], lambda op: op in ("waitall", "waitsome"))
    idle = np.minimum(M["send_enter"], M["recv_exit"]) - M["recv_enter"]
    cand = ~test & (idle > 0)
    single_rows = np.flatnonzero(cand & ~multi)
    # position of the step on its location: receive r -> 3 r (+1 for its ring check);
    # a Waitall's instance is reported at the call's exit, after all its receives
    seq = M["recv_seq"]
    call_last = {}
    if n:
        calls, inv = np.unique(M["recv_call"], return_inverse=True)
        last = np.full(len(calls), -1, np.int64)
        np.maximum.at(last, inv, seq)
        call_last = last[inv]
    mrows = np.flatnonzero(cand & multi)
    if len(mrows):
        o = mrows[np.lexsort((-idle[mrows], M["recv_call"][mrows]))]
        first = np.ones(len(o), bool)
        first[1:] = M["recv_call"][o][1:] != M["recv_call"][o][:-1]
        multi_rows = o[first]
    else:
        multi_rows = np.zeros(0, np.int64)
    rows = np.concatenate([single_rows, multi_rows])
    pos = np.concatenate([3 * seq[single_rows], 3 * np.asarray(call_last)[multi_rows] + 2]) if n else np.zeros(0)
    inst = {
        "row": rows,
        "loc": M["recv_loc"][rows],
        "cnode": M["recv_cnode"][rows],
        "idle": idle[rows],
        "bytes": M["bytes"][rows],
        "send_time": M["send_time"][rows],
        "source": M["send_rank"][rows],
        "pos": pos.astype(np.int64),
    }
    # wrong order: replay the ring per receiving location
    n_i = len(rows)
    step_loc = np.concatenate([inst["loc"], M["recv_loc"]]).astype(np.int64)
    step_pos = np.concatenate([inst["pos"], 3 * seq + 1]).astype(np.int64)
    kind = np.concatenate([np.zeros(n_i, np.int8), np.ones(n, np.int8)])
    st = np.concatenate([inst["send_time"], M["send_time"]]).astype(np.float64)
    src = np.concatenate([inst["source"], M["send_rank"]]).astype(np.int64)
    iid = np.concatenate([np.arange(n_i), np.full(n, -1)]).astype(np.int64)
    o = np.lexsort((step_pos, step_loc))
    wo, same = wrong_order(step_loc[o], kind[o], st[o], src[o], iid[o], RING_SIZE)
    inst["wo"] = np.zeros(n_i, bool)
    inst["same"] = np.zeros(n_i, bool)
    inst["wo"][: len(wo)] = wo
    inst["same"][: len(same)] = same
    cache["late_sender"] = inst
    return inst


def late_receiver_instances(ctx) -> dict[str, np.ndarray]:
    """Late Receiver: the send completes in a blocking MPI_Send/MPI_Ssend or a single MPI_Wait."""
    cache = _cache(ctx)
    if "late_receiver" in cache:
        return cache["late_receiver"]
    M = ctx.table("messages")
    ok = _is(ctx, M["sendc_region"], lambda op: op in ("send", "ssend", "wait"))
    overlap = M["sendc_exit"] >= M["recvp_enter"]
    idle = M["recvp_enter"] - M["sendc_enter"]
    rows = np.flatnonzero(ok & overlap & (idle > 0))
    inst = {"loc": M["send_loc"][rows], "cnode": M["sendc_cnode"][rows], "idle": idle[rows],
            "bytes": M["bytes"][rows]}
    cache["late_receiver"] = inst
    return inst


class MpiLateSender(_Sec):
    name = "mpi_latesender"
    parent = "mpi_point2point"
    display_name = "Late Sender"
    requires = ("messages",)
    description = ("Time a receiving call (MPI_Recv, MPI_Wait, ...) waits because it was entered before the "
                   "matching send call: min(enter of the send, exit of the receive) - enter of the receive. For "
                   "MPI_Waitall and MPI_Waitsome only the largest such wait among their messages counts.")
    diagnosis = ("Post receives as non-blocking calls early and complete them late, send earlier on the sending "
                 "side, or balance the work before the send.")

    def compute(self, ctx):
        i = late_sender_instances(ctx)
        return _sev(i["cnode"], i["loc"], i["idle"])


class MpiLateSenderWo(_Sec):
    name = "mpi_latesender_wo"
    parent = "mpi_latesender"
    display_name = "Messages in Wrong Order"
    requires = ("messages",)
    description = ("Late Sender waiting time of receives that waited for a message although a message sent earlier "
                   "was still to be received later: the receiver asks for messages in a different order than they "
                   "are sent (checked against its last 100 Late Sender instances).")
    diagnosis = ("Receive in the order messages are sent, or use MPI_ANY_SOURCE / MPI_ANY_TAG to process messages as "
                 "they arrive.")

    def compute(self, ctx):
        i = late_sender_instances(ctx)
        m = i["wo"]
        return _sev(i["cnode"][m], i["loc"][m], i["idle"][m])


class MpiLswoDifferent(_Sec):
    name = "mpi_lswo_different"
    parent = "mpi_latesender_wo"
    display_name = "From different sources"
    requires = ("messages",)
    description = "Wrong-order Late Sender time where the earlier-sent message came from a different source rank."
    diagnosis = "Change the order of receives from different sources to the usual arrival order, or use MPI_ANY_SOURCE."

    def compute(self, ctx):
        i = late_sender_instances(ctx)
        m = i["wo"] & ~i["same"]
        return _sev(i["cnode"][m], i["loc"][m], i["idle"][m])


class MpiLswoSame(_Sec):
    name = "mpi_lswo_same"
    parent = "mpi_latesender_wo"
    display_name = "From same source"
    requires = ("messages",)
    description = "Wrong-order Late Sender time where the earlier-sent message came from the same source rank."
    diagnosis = "Receive messages from one source in the order they are sent (or with MPI_ANY_TAG)."

    def compute(self, ctx):
        i = late_sender_instances(ctx)
        m = i["wo"] & i["same"]
        return _sev(i["cnode"][m], i["loc"][m], i["idle"][m])


class MpiLateReceiver(_Sec):
    name = "mpi_latereceiver"
    parent = "mpi_point2point"
    display_name = "Late Receiver"
    requires = ("messages",)
    description = ("Time a blocking send (MPI_Send, MPI_Ssend, or MPI_Wait on a send request) waits because the "
                   "receiver posted its receive later: enter of the receive's posting call - enter of the send's "
                   "completing call, if the two overlap. Charged to the sender.")
    diagnosis = ("The MPI library is sending synchronously (large messages or no buffer space): try non-blocking "
                 "sends, larger eager limits, or post the receive earlier.")

    def compute(self, ctx):
        i = late_receiver_instances(ctx)
        return _sev(i["cnode"], i["loc"], i["idle"])


# --------------------------------------------------------------------------
# collective wait states
# --------------------------------------------------------------------------
def _coll_rows(ctx, roles, pred=None) -> tuple[dict, np.ndarray]:
    """Rows of complete instances with >= 2 members whose region has one of ``roles``; dense instance index."""
    T = ctx.table("collectives")
    role = ctx.region_role[np.maximum(T["region"], 0)] if len(T) else np.zeros(0, np.uint8)
    ok = np.isin(role, [int(r) for r in roles]) & (T["n_members"] >= 2) & (T["region"] >= 0)
    if "complete" in T:
        ok &= T["complete"]
    if pred is not None:
        ok &= ~_is(ctx, T["region"], pred)
    rows = {k: v[ok] for k, v in T.items()}
    _, inst = np.unique(rows["instance"], return_inverse=True)
    return rows, inst.astype(np.int64)


def _group(op, values, inst, init):
    n = int(inst.max()) + 1 if len(inst) else 0
    out = np.full(n, init, np.float64)
    op.at(out, inst, values)
    return out


class MpiBarrierWait(_Sec):
    name = "mpi_barrier_wait"
    parent = "mpi_sync_collective"
    display_name = "Wait at Barrier"
    requires = ("collectives",)
    description = ("Time spent in an MPI barrier before the last process reached it: min(latest enter, own exit) - "
                   "own enter.")
    diagnosis = "Load imbalance before the barrier: move work from the last-arriving processes to the early ones."

    def compute(self, ctx):
        r, inst = _coll_rows(ctx, (Role.MPI_COLL_BARRIER,))
        max_e = _group(np.maximum, r["enter"], inst, -np.inf)[inst]
        idle = np.minimum(max_e, r["exit"]) - r["enter"]
        m = idle > 0
        return _sev(r["cnode"][m], r["loc"][m], idle[m])


class MpiBarrierCompletion(_Sec):
    name = "mpi_barrier_completion"
    parent = "mpi_sync_collective"
    display_name = "Barrier Completion"
    requires = ("collectives",)
    description = ("Time spent in an MPI barrier after the first process left it: own exit - max(earliest exit, "
                   "latest enter).")
    diagnosis = ("Processes should leave a barrier together; large values point to a slow barrier implementation "
                 "or interference from other jobs or threads on the same cores.")

    def compute(self, ctx):
        r, inst = _coll_rows(ctx, (Role.MPI_COLL_BARRIER,))
        max_e = _group(np.maximum, r["enter"], inst, -np.inf)[inst]
        min_x = _group(np.minimum, r["exit"], inst, np.inf)[inst]
        idle = r["exit"] - np.maximum(min_x, max_e)
        m = idle > 0
        return _sev(r["cnode"][m], r["loc"][m], idle[m])


def _nxn_rows(ctx):
    r, inst = _coll_rows(ctx, (Role.MPI_COLL_ALL2ALL,), pred=lambda op: op in ("alltoallv", "alltoallw"))
    sent, recvd = r["sent"] > 0, r["recvd"] > 0
    max_e = _group(np.maximum, np.where(sent, r["enter"], -np.inf), inst, -np.inf)[inst]
    min_x = _group(np.minimum, np.where(sent & recvd, r["exit"], np.inf), inst, np.inf)[inst]
    return r, sent, recvd, max_e, min_x


class MpiWaitNxn(_Sec):
    name = "mpi_wait_nxn"
    parent = "mpi_collective"
    display_name = "Wait at N x N"
    requires = ("collectives",)
    description = ("Time spent in an n-to-n collective (Allreduce, Allgather, Alltoall, Reduce_scatter) before the "
                   "last sending process entered it; Alltoallv/Alltoallw and processes that receive nothing are "
                   "excluded.")
    diagnosis = "Load imbalance before the collective: balance the work of the processes that enter it late."

    def compute(self, ctx):
        r, sent, recvd, max_e, _ = _nxn_rows(ctx)
        idle = np.where(recvd, np.minimum(max_e, r["exit"]) - r["enter"], 0.0)
        m = idle > 0
        return _sev(r["cnode"][m], r["loc"][m], idle[m])


class MpiNxnCompletion(_Sec):
    name = "mpi_nxn_completion"
    parent = "mpi_collective"
    display_name = "N x N Completion"
    requires = ("collectives",)
    description = ("Time spent in an n-to-n collective after the first participant left it: own exit - "
                   "max(earliest exit, latest enter), for processes that both send and receive.")
    diagnosis = "Participants should finish together; large values point to the collective's implementation or noise."

    def compute(self, ctx):
        r, sent, recvd, max_e, min_x = _nxn_rows(ctx)
        idle = np.where(sent & recvd, r["exit"] - np.maximum(min_x, max_e), 0.0)
        m = idle > 0
        return _sev(r["cnode"][m], r["loc"][m], idle[m])


class MpiEarlyReduce(_Sec):
    name = "mpi_earlyreduce"
    parent = "mpi_collective"
    display_name = "Early Reduce"
    requires = ("collectives",)
    description = ("Time the root of an n-to-1 collective (Reduce, Gather, Gatherv) waits because it entered before "
                   "any process that sends data: min(earliest enter of a non-root sender, own exit) - own enter.")
    diagnosis = "The root is ready too early: give it more work before the operation, or use a non-blocking variant."

    def compute(self, ctx):
        r, inst = _coll_rows(ctx, (Role.MPI_COLL_ALL2ONE,))
        is_root = r["rank"] == r["root"]
        snd = ~is_root & (r["sent"] > 0)
        min_e = _group(np.minimum, np.where(snd, r["enter"], np.inf), inst, np.inf)[inst]
        idle = np.where(is_root & (r["recvd"] > 0), np.minimum(min_e, r["exit"]) - r["enter"], 0.0)
        m = idle > 0
        return _sev(r["cnode"][m], r["loc"][m], idle[m])


class MpiEarlyScan(_Sec):
    name = "mpi_earlyscan"
    parent = "mpi_collective"
    display_name = "Early Scan"
    requires = ("collectives",)
    description = ("Time a process waits in MPI_Scan or MPI_Exscan for lower ranks: min(latest enter of ranks "
                   "0..own rank, own exit) - own enter; calls transferring no data are skipped.")
    diagnosis = "Higher ranks arrive early: balance the work before the scan among the ranks."

    def compute(self, ctx):
        r, inst = _coll_rows(ctx, (Role.MPI_COLL_OTHER,))
        act = np.flatnonzero((r["sent"] > 0) | (r["recvd"] > 0))
        comms = ctx.trace.defs.comms if ctx.trace is not None else {}
        # comm-local rank of every row: position of its global rank in the communicator's group
        local = np.empty(len(act), np.int64)
        for k, row in enumerate(act):
            ranks = comms[int(r["comm"][row])].ranks if int(r["comm"][row]) in comms else ()
            rk = int(r["rank"][row])
            local[k] = ranks.index(rk) if rk in ranks else rk
        o = act[np.lexsort((local, inst[act]))]
        pmax = np.empty(len(o))
        cur, run = -1, -np.inf
        for k, row in enumerate(o):
            if inst[row] != cur:
                cur, run = inst[row], -np.inf
            run = max(run, r["enter"][row])
            pmax[k] = run
        idle = np.minimum(pmax, r["exit"][o]) - r["enter"][o]
        m = idle > 0
        return _sev(r["cnode"][o][m], r["loc"][o][m], idle[m])


class MpiLateBroadcast(_Sec):
    name = "mpi_latebroadcast"
    parent = "mpi_collective"
    display_name = "Late Broadcast"
    requires = ("collectives",)
    description = ("Time a non-root process waits in a 1-to-n collective (Bcast, Scatter, Scatterv) because the root "
                   "entered later: min(enter of the root, own exit) - own enter, for processes that receive data.")
    diagnosis = "The root arrives late: reduce or balance the root's work before the operation."

    def compute(self, ctx):
        r, inst = _coll_rows(ctx, (Role.MPI_COLL_ONE2ALL,))
        is_root = r["rank"] == r["root"]
        root_e = _group(np.maximum, np.where(is_root, r["enter"], -np.inf), inst, -np.inf)[inst]
        idle = np.where(~is_root & (r["recvd"] > 0) & np.isfinite(root_e),
                        np.minimum(root_e, r["exit"]) - r["enter"], 0.0)
        m = idle > 0
        return _sev(r["cnode"][m], r["loc"][m], idle[m])


# --------------------------------------------------------------------------
# counts: syncs, comms, bytes and instance counts
# --------------------------------------------------------------------------
def _p2p(ctx, side: str, zero: bool, weight_bytes=False) -> Severity:
    M = ctx.table("messages")
    m = (M["bytes"] == 0) if zero else (M["bytes"] > 0)
    if weight_bytes:
        m = np.ones(len(M), bool)
    if side == "send":
        c, loc = M["send_cnode"], M["send_loc"]
    else:
        c, loc = M["recv_cnode"], M["recv_loc"]
    val = M["bytes"][m].astype(np.float64) if weight_bytes else np.ones(int(m.sum()))
    return _sev(c[m], loc[m], val)


def _coll_count(ctx, kind: str) -> Severity:
    T = ctx.table("collectives")
    s, r = T["sent"] > 0, T["recvd"] > 0
    m = {"sync": ~s & ~r, "cxch": s & r, "csrc": s & ~r, "cdst": ~s & r}[kind]
    return _sev(T["cnode"][m], T["loc"][m], np.ones(int(m.sum())))


def _coll_bytes(ctx, col: str) -> Severity:
    T = ctx.table("collectives")
    return _sev(T["cnode"], T["loc"], T[col].astype(np.float64))


def _sum(ctx, *sevs) -> np.ndarray:
    return sum(s.to_dense(ctx.n_cnodes, ctx.n_locations) for s in sevs)


def _instances(inst, zero: bool, extra=None) -> Severity:
    m = (inst["bytes"] == 0) if zero else (inst["bytes"] > 0)
    if extra is not None:
        m &= inst[extra]
    return _sev(inst["cnode"][m], inst["loc"][m], np.ones(int(m.sum())))


def _count_pattern(name, parent, display, description, diagnosis, fn, requires, unit="occ"):
    base = {"occ": _Occ, "bytes": _Bytes}[unit]
    return type(
        "".join(w.capitalize() for w in name.split("_")),
        (base,),
        {"name": name, "parent": parent, "display_name": display, "description": description,
         "diagnosis": diagnosis, "requires": requires, "compute": lambda self, ctx: fn(ctx), "__module__": __name__},
    )


_SYNC_HINT = ("Zero-byte messages only synchronise; many of them may be replaced by fewer collective operations or "
              "removed when the ordering they enforce is not needed.")
_COMM_HINT = "Compare with the time spent in communication: many small messages are better aggregated into fewer."
_BYTES_HINT = "Compare the volume with the communication time to judge the achieved bandwidth."

_M, _C = ("messages",), ("collectives",)
_COUNTS = [
    ("syncs", None, "Synchronizations",
     "Number of synchronisation operations: zero-byte point-to-point messages (each end) and collectives that "
     "transfer no data.", _SYNC_HINT,
     lambda c: _sum(c, _p2p(c, "send", True), _p2p(c, "recv", True), _coll_count(c, "sync")), _M + _C),
    ("syncs_p2p", "syncs", "Point-to-point", "Number of zero-byte point-to-point sends and receives.", _SYNC_HINT,
     lambda c: _sum(c, _p2p(c, "send", True), _p2p(c, "recv", True)), _M),
    ("syncs_send", "syncs_p2p", "Sends", "Number of zero-byte sends, at the sending call.", _SYNC_HINT,
     lambda c: _p2p(c, "send", True), _M),
    ("mpi_slr_count", "syncs_send", "Late Receivers", "Number of Late Receiver instances on zero-byte messages "
     "(at the sender).", _SYNC_HINT, lambda c: _instances(late_receiver_instances(c), True), _M),
    ("syncs_recv", "syncs_p2p", "Receives", "Number of zero-byte receives (size from the matching send), at the "
     "receiving call.", _SYNC_HINT, lambda c: _p2p(c, "recv", True), _M),
    ("mpi_sls_count", "syncs_recv", "Late Senders", "Number of Late Sender instances on zero-byte messages.",
     _SYNC_HINT, lambda c: _instances(late_sender_instances(c), True), _M),
    ("mpi_slswo_count", "mpi_sls_count", "Messages in wrong order", "Number of wrong-order Late Sender instances "
     "on zero-byte messages.", _SYNC_HINT, lambda c: _instances(late_sender_instances(c), True, "wo"), _M),
    ("syncs_coll", "syncs", "Collective", "Number of collective operations that transfer no data (barriers).",
     _SYNC_HINT, lambda c: _coll_count(c, "sync"), _C),
    ("comms", None, "Communications", "Number of communication operations: point-to-point messages with data "
     "(each end) and collectives that transfer data.", _COMM_HINT,
     lambda c: _sum(c, _p2p(c, "send", False), _p2p(c, "recv", False), _coll_count(c, "cxch"),
                    _coll_count(c, "csrc"), _coll_count(c, "cdst")), _M + _C),
    ("comms_p2p", "comms", "Point-to-point", "Number of point-to-point sends and receives that carry data.",
     _COMM_HINT, lambda c: _sum(c, _p2p(c, "send", False), _p2p(c, "recv", False)), _M),
    ("comms_send", "comms_p2p", "Sends", "Number of sends carrying data, at the sending call.", _COMM_HINT,
     lambda c: _p2p(c, "send", False), _M),
    ("mpi_clr_count", "comms_send", "Late Receivers", "Number of Late Receiver instances on messages with data "
     "(at the sender).", _COMM_HINT, lambda c: _instances(late_receiver_instances(c), False), _M),
    ("comms_recv", "comms_p2p", "Receives", "Number of receives of messages carrying data, at the receiving call.",
     _COMM_HINT, lambda c: _p2p(c, "recv", False), _M),
    ("mpi_cls_count", "comms_recv", "Late Senders", "Number of Late Sender instances on messages with data.",
     _COMM_HINT, lambda c: _instances(late_sender_instances(c), False), _M),
    ("mpi_clswo_count", "mpi_cls_count", "Messages in wrong order", "Number of wrong-order Late Sender instances "
     "on messages with data.", _COMM_HINT, lambda c: _instances(late_sender_instances(c), False, "wo"), _M),
    ("comms_coll", "comms", "Collective", "Number of collective operations that transfer data.", _COMM_HINT,
     lambda c: _sum(c, _coll_count(c, "cxch"), _coll_count(c, "csrc"), _coll_count(c, "cdst")), _C),
    ("comms_cxch", "comms_coll", "Exchange", "Number of collectives in which the location both sends and receives "
     "data.", _COMM_HINT, lambda c: _coll_count(c, "cxch"), _C),
    ("comms_csrc", "comms_coll", "As source", "Number of collectives in which the location only sends data.",
     _COMM_HINT, lambda c: _coll_count(c, "csrc"), _C),
    ("comms_cdst", "comms_coll", "As destination", "Number of collectives in which the location only receives "
     "data.", _COMM_HINT, lambda c: _coll_count(c, "cdst"), _C),
]
_BYTES = [
    ("bytes", None, "Bytes transferred", "Bytes sent and received in point-to-point messages and collectives.",
     _BYTES_HINT, lambda c: _sum(c, _p2p(c, "send", False, True), _p2p(c, "recv", False, True),
                                 _coll_bytes(c, "sent"), _coll_bytes(c, "recvd")), _M + _C),
    ("bytes_p2p", "bytes", "Point-to-point", "Bytes sent and received in point-to-point messages.", _BYTES_HINT,
     lambda c: _sum(c, _p2p(c, "send", False, True), _p2p(c, "recv", False, True)), _M),
    ("bytes_sent", "bytes_p2p", "Sent", "Bytes sent in point-to-point messages, at the sending call.", _BYTES_HINT,
     lambda c: _p2p(c, "send", False, True), _M),
    ("bytes_rcvd", "bytes_p2p", "Received", "Bytes received in point-to-point messages (as sent), at the receiving "
     "call.", _BYTES_HINT, lambda c: _p2p(c, "recv", False, True), _M),
    ("bytes_coll", "bytes", "Collective", "Bytes sent and received in collective operations.", _BYTES_HINT,
     lambda c: _sum(c, _coll_bytes(c, "sent"), _coll_bytes(c, "recvd")), _C),
    ("bytes_cout", "bytes_coll", "Outgoing", "Bytes each location sent in collective operations.", _BYTES_HINT,
     lambda c: _coll_bytes(c, "sent"), _C),
    ("bytes_cin", "bytes_coll", "Incoming", "Bytes each location received in collective operations.", _BYTES_HINT,
     lambda c: _coll_bytes(c, "recvd"), _C),
]

COUNT_PATTERNS = [_count_pattern(*spec) for spec in _COUNTS] + [_count_pattern(*spec, unit="bytes") for spec in _BYTES]
for _cls in COUNT_PATTERNS:
    globals()[_cls.__name__] = _cls

PATTERNS = [Mpi, MpiCommunication, MpiPoint2point, MpiLateSender, MpiLateSenderWo, MpiLswoDifferent, MpiLswoSame,
            MpiLateReceiver, MpiCollective, MpiEarlyReduce, MpiEarlyScan, MpiLateBroadcast, MpiWaitNxn,
            MpiNxnCompletion, MpiSynchronization, MpiSyncCollective, MpiBarrierWait, MpiBarrierCompletion, MpiIo,
            MpiInitExit] + COUNT_PATTERNS
