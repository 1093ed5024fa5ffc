"""Export a native trace as an OTF2 archive the way Score-P writes one (for Vampir, Scalasca 2, otf2-print).

Conventions followed (those Scalasca's OTF2 reader and Vampir rely on; docs/interop.md):

* a system-tree machine > node (domains MACHINE, SHARED_MEMORY); per process a
  PROCESS location group with id = rank, ``MPI Rank r``; CPU-thread locations
  with Score-P's id ``(thread << 32) | rank`` (Scalasca reads the thread number
  from the upper half), ``Master thread`` / ``OMP thread k``; paradigm
  definitions for MPI and OpenMP;
* regions keep paradigm and role; MPI regions get source file ``MPI``;
  OpenMP construct regions are named ``!$omp <construct> @file:line``
  (``!$omp ibarrier`` becomes ``!$omp implicit barrier``);
  ``MPI_Init`` and ``MPI_Finalize`` are always defined for MPI traces;
* an MPI ``COMM_LOCATIONS`` group (master threads in rank order), one
  ``COMM_GROUP`` per communicator group (ranks), ``MPI_COMM_WORLD``, one
  ``MPI_COMM_SELF`` on a ``COMM_SELF`` group, the other communicators with
  their parent; an OpenMP ``COMM_LOCATIONS`` group and one thread-team
  communicator per process;
* a collective is Enter, MpiCollectiveBegin, MpiCollectiveEnd (operation,
  communicator, comm-local root, bytes), Leave, for visits that end in an
  MPI_COLLEXIT (the issuing call of a non-blocking collective is a plain
  Enter/Leave); a parallel region is ThreadFork (master), ThreadTeamBegin,
  Enter ... Leave, ThreadTeamEnd, ThreadJoin (master); locks keep their
  acquisition order (from 1);
* partner and root ranks are written communicator-local.

Timestamps are nanoseconds of the global clock (clock offsets applied).
COUNTER records are not exported (listed in the returned problems).
"""

from __future__ import annotations

import os
import shutil

from .foreign import omp_construct_label
from .layout import EXIT_TYPES, NO_ID, EventType, Paradigm, RmaAtomic, RmaFlag, RmaSync, RmaSyncFlag, Role
from .otf2_in import Otf2FormatError, require_otf2

OTF2_UNDEFINED_UINT32 = 0xFFFFFFFF


def _enum(cls, name: str, default: str):
    return getattr(cls, name, getattr(cls, default))


_PARADIGMS = {
    Paradigm.MPI: "MPI",
    Paradigm.OPENMP: "OPENMP",
    Paradigm.COMPILER: "COMPILER",
    Paradigm.USER: "USER",
    Paradigm.MEASUREMENT: "MEASUREMENT_SYSTEM",
    Paradigm.UNKNOWN: "UNKNOWN",
}
_ROLES = {
    Role.FUNCTION: "FUNCTION",
    Role.USER_REGION: "CODE",
    Role.LOOP: "LOOP",
    Role.MPI_POINT2POINT: "POINT2POINT",
    Role.MPI_COLL_BARRIER: "BARRIER",
    Role.MPI_COLL_ONE2ALL: "COLL_ONE2ALL",
    Role.MPI_COLL_ALL2ONE: "COLL_ALL2ONE",
    Role.MPI_COLL_ALL2ALL: "COLL_ALL2ALL",
    Role.MPI_COLL_OTHER: "COLL_OTHER",
    Role.MPI_INIT_FINALIZE: "FUNCTION",
    Role.MPI_FILE_IO: "FILE_IO",
    Role.MPI_RMA: "RMA",
    Role.MPI_OTHER: "FUNCTION",
    Role.OMP_PARALLEL: "PARALLEL",
    Role.OMP_LOOP: "LOOP",
    Role.OMP_SECTIONS: "SECTIONS",
    Role.OMP_SECTION: "SECTION",
    Role.OMP_SINGLE: "SINGLE",
    Role.OMP_SINGLE_BODY: "SINGLE_SBLOCK",
    Role.OMP_MASTER: "MASTER",
    Role.OMP_WORKSHARE: "WORKSHARE",
    Role.OMP_CRITICAL: "CRITICAL",
    Role.OMP_CRITICAL_BODY: "CRITICAL_SBLOCK",
    Role.OMP_ATOMIC: "ATOMIC",
    Role.OMP_BARRIER: "BARRIER",
    Role.OMP_IMPLICIT_BARRIER: "IMPLICIT_BARRIER",
    Role.OMP_FLUSH: "FLUSH",
    Role.OMP_ORDERED: "ORDERED",
    Role.OMP_ORDERED_BODY: "ORDERED_SBLOCK",
    Role.OMP_LOCK_API: "FUNCTION",
    Role.OMP_TASK: "TASK",
    Role.OMP_TASKWAIT: "TASK_WAIT",
    Role.MEASUREMENT_FLUSH: "ARTIFICIAL",
    Role.MEASUREMENT_PAUSE: "ARTIFICIAL",
}
_COLL_ROLES = (Role.MPI_COLL_BARRIER, Role.MPI_COLL_ONE2ALL, Role.MPI_COLL_ALL2ONE, Role.MPI_COLL_ALL2ALL,
               Role.MPI_COLL_OTHER)
_COLL_DEFAULT_OP = {
    Role.MPI_COLL_BARRIER: "BARRIER",
    Role.MPI_COLL_ONE2ALL: "BCAST",
    Role.MPI_COLL_ALL2ONE: "REDUCE",
    Role.MPI_COLL_ALL2ALL: "ALLREDUCE",
    Role.MPI_COLL_OTHER: "SCAN",
}


def _region_name(r, files) -> str:
    """Score-P style name: OpenMP constructs as '!$omp <construct> @file:line'.

    Our runtime's '!$omp ibarrier @f:l' (EPIK's word) becomes Score-P's
    '!$omp implicit barrier @f:l'; Scalasca classifies OpenMP regions by these names.
    """
    if r.name.startswith("!$omp ibarrier"):
        return "!$omp implicit barrier" + r.name[len("!$omp ibarrier"):]
    if r.paradigm != Paradigm.OPENMP or r.name.startswith("!$omp"):
        return r.name
    word = omp_construct_label(r.role)
    if word is None:
        return r.name
    f = files.get(r.file, "") if r.file != NO_ID else ""
    where = f" @{os.path.basename(f)}:{r.begin_line}" if f and r.begin_line != NO_ID else ""
    return f"!$omp {word}{where}"


def _first_ns(trace, location: int) -> int:
    """The location's first event time in integer nanoseconds (0 without events)."""
    span = trace.time_range(location) if hasattr(trace, "time_range") else None
    if span is None:
        ev = trace.events(location)
        if len(ev) == 0:
            return 0
        span = (float(ev.time.min()), 0.0)
    return int(round(span[0] * 1e9))


def _is_self(comm, members: tuple) -> bool:
    """A process's own MPI_COMM_SELF (our traces define one per process)."""
    return len(members) == 1 and comm.name == "MPI_COMM_SELF"


def _collective_visits(typ) -> set[int]:
    """Indices of the MPI_COLLEXITs and of the ENTERs they close.

    Only those visits become MpiCollectiveBegin ... MpiCollectiveEnd.  A collective
    region left by a plain EXIT (the issuing call of a non-blocking collective,
    whose completion the runtime records later, inside the MPI_Wait*) is a plain
    Enter/Leave: a collective record without communicator and root there made
    Scalasca replay a rootless MPI_Bcast and abort (``MPI_ERR_ROOT``).
    """
    out: set[int] = set()
    stack: list[int] = []
    for i in range(len(typ)):
        t = int(typ[i])
        if t == EventType.ENTER:
            stack.append(i)
        elif t in EXIT_TYPES and stack:
            j = stack.pop()
            if t == EventType.MPI_COLLEXIT:
                out.update((i, j))
    return out


_RMA_COLLECTIVE = (RmaSync.CREATE, RmaSync.FREE, RmaSync.FENCE)
_RMA_TYPES = (EventType.MPI_RMA_PUT, EventType.MPI_RMA_GET, EventType.MPI_RMA_ATOMIC, EventType.MPI_RMA_SYNC)


def _rma_groups(trace, locs) -> set[int]:
    """The group ids the post/start/complete/wait/test records name."""
    out: set[int] = set()
    for L in locs:
        ev = trace.events(L.id)
        sel = (ev.type == EventType.MPI_RMA_SYNC) & (ev.c >= RmaSync.POST) & (ev.c <= RmaSync.TEST)
        out.update(int(x) for x in ev.b[sel])
    return out


def _rma_collective_visits(typ, c) -> set[int]:
    """Indices of the ENTERs of calls that hold a collective MPI_RMA_SYNC (create, free, fence): they get a
    RmaCollectiveBegin after the Enter, as Score-P writes them."""
    out: set[int] = set()
    stack: list[int] = []
    for i in range(len(typ)):
        t = int(typ[i])
        if t == EventType.ENTER:
            stack.append(i)
        elif t in EXIT_TYPES:
            if stack:
                stack.pop()
        elif t == EventType.MPI_RMA_SYNC and int(c[i]) in _RMA_COLLECTIVE and stack:
            out.add(stack[-1])
    return out


class _RmaWriter:
    """One-sided records (format 2.3) as Score-P writes them (``SCOREP_Mpi_Rma.c``): windows as RmaWin over
    their communicator, remote ranks as ranks of it, groups as MPI COMM_GROUP groups of ranks."""

    def __init__(self, defs, D, o_comm, comm_ranks, group_of):
        from otf2.enums import CollectiveOp, LockType, RmaAtomicType, RmaSyncLevel, RmaSyncType

        self.E = dict(CollectiveOp=CollectiveOp, LockType=LockType, RmaAtomicType=RmaAtomicType,
                      RmaSyncLevel=RmaSyncLevel, RmaSyncType=RmaSyncType)
        self.defs, self.comm_ranks, self.group_of = defs, comm_ranks, group_of
        self.win = {wid: D.rma_win(w.name, o_comm[w.comm])
                    for wid, w in sorted(defs.windows.items()) if w.comm in o_comm}
        self.matching = 0

    def remote(self, wid: int, rank: int) -> int:
        w = self.defs.windows.get(wid)
        if rank == NO_ID or w is None:
            return OTF2_UNDEFINED_UINT32
        return self.comm_ranks.get(w.comm, {}).get(rank, rank)

    def write(self, wr, now: int, t: int, flags: int, wid: int, b: int, c: int, d: int, e: int) -> bool:
        """Write one record; False where the window was not exported (no communicator)."""
        win = self.win.get(wid)
        if win is None:
            return False
        E = self.E
        if t == EventType.MPI_RMA_SYNC:
            level = E["RmaSyncLevel"]
            both = level(3)  # PROCESS | MEMORY (the package's enum has no name for it)
            op = E["CollectiveOp"]
            if c == RmaSync.CREATE:
                wr.rma_win_create(now, win)
                wr.rma_collective_end(now, op.CREATE_HANDLE, level.PROCESS, win, OTF2_UNDEFINED_UINT32, 0, 0)
            elif c == RmaSync.FREE:
                wr.rma_win_destroy(now, win)
                wr.rma_collective_end(now, op.DESTROY_HANDLE, level.PROCESS, win, OTF2_UNDEFINED_UINT32, 0, 0)
            elif c == RmaSync.FENCE:
                wr.rma_collective_end(now, op.BARRIER, both, win, OTF2_UNDEFINED_UINT32, 0, 0)
            elif RmaSync.POST <= c <= RmaSync.TEST:
                if b not in self.group_of:
                    return False
                wr.rma_group_sync(now, level.PROCESS if c in (RmaSync.POST, RmaSync.START) else both, win,
                                  self.group_of[b])
            elif c in (RmaSync.LOCK, RmaSync.LOCK_ALL):
                lt = E["LockType"].EXCLUSIVE if flags & RmaSyncFlag.EXCLUSIVE else E["LockType"].SHARED
                wr.rma_acquire_lock(now, win, self.remote(wid, b), 0, lt)
            elif c in (RmaSync.UNLOCK, RmaSync.UNLOCK_ALL):
                wr.rma_release_lock(now, win, self.remote(wid, b), 0)
            elif c in (RmaSync.FLUSH, RmaSync.SYNC):
                wr.rma_sync(now, win, self.remote(wid, b), E["RmaSyncType"].MEMORY)
            return True
        self.matching += 1
        remote = self.remote(wid, b)
        if t == EventType.MPI_RMA_PUT:
            wr.rma_put(now, win, remote, d, self.matching)
        elif t == EventType.MPI_RMA_GET:
            wr.rma_get(now, win, remote, d, self.matching)
        else:
            at = E["RmaAtomicType"]
            kind = {RmaAtomic.ACCUMULATE: at.ACCUMULATE, RmaAtomic.COMPARE_AND_SWAP: at.COMPARE_AND_SWAP}.get(
                c, at.FETCH_AND_ACCUMULATE)  # (Get_accumulate and Fetch_and_op: the region tells them apart)
            wr.rma_atomic(now, win, remote, kind, d, e, self.matching)
        if not flags & RmaFlag.NONBLOCKING:
            wr.rma_op_complete_blocking(now, win, self.matching)
        return True


def _scorep_location(D, lid: int, name: str, kind, group):
    """A location with Score-P's id ``(thread << 32) | rank``.

    Scalasca 2 takes a location's thread number from the upper 32 bits of its id
    (``pearl::Location::getThreadId``); the ``otf2`` package numbers definitions
    0, 1, 2 ... itself, so the location is registered under its id through the
    package's location registry (as ``gen_otf2_synth.py`` does).
    """
    from otf2.definitions import Location

    registry = getattr(D, "_locations", None)
    if registry is None or not hasattr(registry, "_register"):  # pragma: no cover - another otf2 release
        raise Otf2FormatError("this otf2 package cannot write locations with Score-P ids "
                              "(no definition registry); use otf2 3.x")
    loc = Location(registry, lid, name, kind, 0, group)
    registry._register(loc)
    return loc


def write_otf2(trace, outdir: str | os.PathLike, force: bool = False) -> list[str]:
    """Write ``outdir/traces.otf2`` (+ ``traces.def``, ``traces/``); returns notes on what was left out."""
    otf2 = require_otf2()
    from otf2.enums import CollectiveOp, GroupFlag, GroupType, LocationGroupType, LocationType
    from otf2.enums import Paradigm as OP
    from otf2.enums import ParadigmClass, RegionRole, SystemTreeDomain

    outdir = os.fspath(outdir)
    if os.path.exists(outdir):
        if not force and os.listdir(outdir):
            raise Otf2FormatError(f"{outdir}: exists and is not empty (use --force to replace it)")
        shutil.rmtree(outdir)
    defs = trace.defs
    notes: list[str] = []
    locs = sorted(defs.locations.values(), key=lambda L: (L.process, L.thread))
    ranks = sorted({L.process for L in locs})
    has_mpi = any(r.paradigm == Paradigm.MPI for r in defs.regions.values()) or bool(defs.comms)

    w = otf2.writer.Writer(outdir, timer_resolution=1_000_000_000)
    D = w.definitions
    machine_name = next(iter(defs.machines.values())).name if defs.machines else "machine"
    machine = D.system_tree_node(machine_name, class_name="machine")
    D.system_tree_node_domain(machine, SystemTreeDomain.MACHINE)
    nodes = {}
    for nid, n in sorted(defs.nodes.items()):
        nodes[nid] = D.system_tree_node(n.name, class_name="node", parent=machine)
        D.system_tree_node_domain(nodes[nid], SystemTreeDomain.SHARED_MEMORY)
    groups = {}  # created in rank order: the group of rank index i has id i, as Score-P's
    for i, rank in enumerate(ranks):
        p = defs.processes.get(rank)
        parent = nodes.get(p.node, machine) if p is not None else machine
        groups[rank] = D.location_group(f"MPI Rank {i}" if has_mpi else "Process",
                                        location_group_type=LocationGroupType.PROCESS, system_tree_parent=parent)
    o_loc = {}
    for rank_index, rank in enumerate(ranks):
        threads = [L for L in locs if L.process == rank]
        for k, L in enumerate(threads):
            name = "Master thread" if k == 0 else f"OMP thread {k}"
            o_loc[L.id] = _scorep_location(D, (k << 32) | rank_index, name, LocationType.CPU_THREAD,
                                           groups[rank])

    # regions
    o_reg = {}
    for rid, r in sorted(defs.regions.items()):
        par = _enum(OP, _PARADIGMS.get(r.paradigm, "UNKNOWN"), "UNKNOWN")
        role = _enum(RegionRole, _ROLES.get(r.role, "FUNCTION"), "FUNCTION")
        src = "MPI" if r.paradigm == Paradigm.MPI else (defs.files.get(r.file, "") if r.file != NO_ID else "")
        bl = 0 if r.begin_line == NO_ID else int(r.begin_line)
        el = 0 if r.end_line == NO_ID else int(r.end_line)
        o_reg[rid] = D.region(_region_name(r, defs.files), region_role=role, paradigm=par,
                              source_file=src or None, begin_line_number=bl, end_line_number=el)
    if has_mpi:
        present = {r.name for r in defs.regions.values()}
        if not present & {"MPI_Init", "MPI_Init_thread"}:
            D.region("MPI_Init", region_role=RegionRole.FUNCTION, paradigm=OP.MPI, source_file="MPI")
        if "MPI_Finalize" not in present:
            D.region("MPI_Finalize", region_role=RegionRole.FUNCTION, paradigm=OP.MPI, source_file="MPI")

    # groups and communicators
    masters = {}
    for L in locs:
        masters.setdefault(L.process, o_loc[L.id])
    o_comm = {}
    comm_ranks = {}
    if has_mpi:
        D.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=OP.MPI, group_flags=GroupFlag.NONE,
                members=[masters[r] for r in ranks if r in masters])
        rank_index = {r: i for i, r in enumerate(ranks)}
        o_group = {}
        self_comm = None
        for cid, c in sorted(defs.comms.items()):
            members = tuple(defs.groups.get(c.group, ()))
            comm_ranks[cid] = {g: i for i, g in enumerate(members)}
            if _is_self(c, members):
                # Score-P: one MPI_COMM_SELF on a COMM_SELF group without members
                if self_comm is None:
                    g = D.group("", group_type=GroupType.COMM_SELF, paradigm=OP.MPI, group_flags=GroupFlag.NONE,
                                members=[])
                    self_comm = D.comm("MPI_COMM_SELF", g, None)
                o_comm[cid] = self_comm
                continue
            if c.group not in o_group:
                o_group[c.group] = D.group("", group_type=GroupType.COMM_GROUP, paradigm=OP.MPI,
                                           group_flags=GroupFlag.NONE,
                                           members=[rank_index.get(m, m) for m in members])
            parent = o_comm.get(c.parent) if c.parent != NO_ID else None
            o_comm[cid] = D.comm(c.name or f"comm {cid}", o_group[c.group], parent)
    rma = None
    if has_mpi and getattr(defs, "windows", None):
        rma_groups = {}
        for gid in sorted(_rma_groups(trace, locs)):
            if gid not in o_group and gid in defs.groups:
                o_group[gid] = D.group("", group_type=GroupType.COMM_GROUP, paradigm=OP.MPI,
                                       group_flags=GroupFlag.NONE,
                                       members=[rank_index.get(m, m) for m in defs.groups[gid]])
            if gid in o_group:
                rma_groups[gid] = o_group[gid]
        rma = _RmaWriter(defs, D, o_comm, comm_ranks, rma_groups)
    omp_threads = any(L.thread > 0 for L in locs) or any(r.paradigm == Paradigm.OPENMP for r in defs.regions.values())
    if has_mpi:
        D.paradigm(OP.MPI, "MPI", ParadigmClass.PROCESS)
    if omp_threads:
        D.paradigm(OP.OPENMP, "OpenMP", ParadigmClass.THREAD_FORK_JOIN)
    teams = {}
    if omp_threads:
        D.group("OpenMP", group_type=GroupType.COMM_LOCATIONS, paradigm=OP.OPENMP, group_flags=GroupFlag.NONE,
                members=[o_loc[L.id] for L in locs])
        for rank in ranks:
            members = [o_loc[L.id] for L in locs if L.process == rank]
            g = D.group("", group_type=GroupType.COMM_GROUP, paradigm=OP.OPENMP, group_flags=GroupFlag.NONE,
                        members=members)
            teams[rank] = D.comm("", g, None)

    role_of = {rid: r.role for rid, r in defs.regions.items()}
    op_of = {}
    for rid, r in defs.regions.items():
        if r.role in _COLL_ROLES:
            name = r.name[4:].upper() if r.name[:4].upper() == "MPI_" else ""
            op = getattr(CollectiveOp, name, None)
            if op is None and name.startswith("I"):  # MPI_Igather completes a GATHER
                op = getattr(CollectiveOp, name[1:], None)
            op_of[rid] = op if op is not None else getattr(CollectiveOp, _COLL_DEFAULT_OP[r.role])

    def local(cid: int, rank: int) -> int:
        if rank == NO_ID:
            return OTF2_UNDEFINED_UINT32
        return comm_ranks.get(cid, {}).get(rank, rank)

    # OTF2 timestamps are unsigned, but clock correction can put a rank's first
    # events before time 0 (a rank whose clock runs behind rank 0's); shift
    # every timestamp by the same amount.  Readers see the trace starting at 0;
    # durations, and so every analysis result, are unchanged.
    shift_ns = max(0, -min((_first_ns(trace, L.id) for L in locs), default=0))
    counters = file_ios = rma_left = 0
    for L in locs:
        ev = trace.events(L.id)
        if len(ev) == 0:
            continue
        wr = w.event_writer_from_location(o_loc[L.id])
        ts = [int(x) + shift_ns for x in (ev.time * 1e9).round().astype("int64")]
        typ, A, B, C, Dd, Ee = ev.type, ev.a, ev.b, ev.c, ev.d, ev.e
        collective = _collective_visits(typ)
        rma_collective = _rma_collective_visits(typ, C) if rma is not None else set()
        rank = L.process
        for i in range(len(ev)):
            t = int(typ[i])
            now = ts[i]
            if t == EventType.ENTER:
                rid = int(A[i])
                if role_of.get(rid) == Role.OMP_PARALLEL and rank in teams:
                    wr.thread_team_begin(now, teams[rank])
                wr.enter(now, o_reg[rid])
                if i in collective:
                    wr.mpi_collective_begin(now)
                if i in rma_collective:
                    wr.rma_collective_begin(now)
            elif t in EXIT_TYPES:
                rid = int(A[i])
                if i in collective:
                    cid = int(B[i])
                    op = op_of.get(rid) or CollectiveOp.BARRIER
                    wr.mpi_collective_end(now, op, o_comm[cid], local(cid, int(C[i])), int(Dd[i]), int(Ee[i]))
                wr.leave(now, o_reg[rid])
                if role_of.get(rid) == Role.OMP_PARALLEL and rank in teams:
                    wr.thread_team_end(now, teams[rank])
            elif t == EventType.MPI_SEND:
                cid = int(B[i])
                args = (local(cid, int(A[i])), o_comm[cid], int(C[i]), int(Dd[i]))
                if int(Ee[i]):
                    wr.mpi_isend(now, *args, int(Ee[i]))
                else:
                    wr.mpi_send(now, *args)
            elif t == EventType.MPI_RECV:
                cid = int(B[i])
                args = (local(cid, int(A[i])), o_comm[cid], int(C[i]), int(Dd[i]))
                if int(Ee[i]):
                    wr.mpi_irecv(now, *args, int(Ee[i]))
                else:
                    wr.mpi_recv(now, *args)
            elif t == EventType.MPI_RECV_REQUEST:
                wr.mpi_irecv_request(now, int(Ee[i]))
            elif t == EventType.MPI_SEND_COMPLETE:
                wr.mpi_isend_complete(now, int(Ee[i]))
            elif t == EventType.MPI_REQUEST_CANCELLED:
                wr.mpi_request_cancelled(now, int(Ee[i]))
            elif t == EventType.OMP_FORK:
                wr.thread_fork(now, OP.OPENMP, int(C[i]))
            elif t == EventType.OMP_JOIN:
                wr.thread_join(now, OP.OPENMP)
            elif t == EventType.OMP_ACQUIRE_LOCK:
                wr.thread_acquire_lock(now, OP.OPENMP, int(A[i]), int(Dd[i]))
            elif t == EventType.OMP_RELEASE_LOCK:
                wr.thread_release_lock(now, OP.OPENMP, int(A[i]), int(Dd[i]))
            elif t == EventType.COUNTER:
                counters += 1
            elif t == EventType.MPI_FILE_IO:
                file_ios += 1
            elif t in _RMA_TYPES:
                if rma is None or not rma.write(wr, now, t, int(ev.flags[i]), int(A[i]), int(B[i]), int(C[i]),
                                                int(Dd[i]), int(Ee[i])):
                    rma_left += 1
    if counters:
        notes.append(f"{counters} COUNTER record(s) were not exported (OTF2 metrics are not written yet)")
    if rma_left:
        notes.append(f"{rma_left} MPI_RMA record(s) were not exported (window or group without an MPI "
                     f"communicator)")
    if file_ios:
        notes.append(f"{file_ios} MPI_FILE_IO record(s) were not exported (OTF2 I/O records are not written yet)")
    w.close()
    return notes
