"""Export a native trace as an OTF2 archive the way Score-P writes one (for Vampir, Scalasca 2, otf2-print).

Conventions followed (those Scalasca's OTF2 reader and Vampir rely on):

* one system-tree machine > node > ``MPI Rank r`` location group per process,
  ``Master thread`` / ``OMP thread k`` CPU-thread locations;
* regions keep paradigm and role; MPI regions get source file ``MPI``;
  OpenMP construct regions are named ``!$omp <construct> @file:line``;
  ``MPI_Init`` and ``MPI_Finalize`` are always defined for MPI traces;
* an MPI ``COMM_LOCATIONS`` group (master threads in rank order), one
  ``COMM_GROUP`` per communicator group (ranks), ``MPI_COMM_WORLD`` and the
  other communicators; an OpenMP ``COMM_LOCATIONS`` group and one thread-team
  communicator per process;
* a collective is Enter, MpiCollectiveBegin, MpiCollectiveEnd (operation,
  communicator, comm-local root, bytes), Leave; a parallel region is
  ThreadFork (master), ThreadTeamBegin, Enter ... Leave, ThreadTeamEnd,
  ThreadJoin (master); locks keep their acquisition order (from 1);
* partner and root ranks are written communicator-local.

Timestamps are nanoseconds of the global clock (clock offsets applied).
COUNTER records are not exported (listed in the returned problems).
"""

from __future__ import annotations

import os
import shutil

from .foreign import omp_construct_label
from .layout import EXIT_TYPES, NO_ID, EventType, Paradigm, Role
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
    """Score-P style name: OpenMP constructs as '!$omp <construct> @file:line'."""
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


def write_otf2(trace, outdir: str | os.PathLike, force: bool = False) -> list[str]:
    """Write ``outdir/traces.otf2`` (+ ``traces.def``, ``traces/``); returns notes on what was left out."""
    otf2 = require_otf2()
    from otf2.enums import CollectiveOp, GroupFlag, GroupType, LocationGroupType, LocationType
    from otf2.enums import Paradigm as OP
    from otf2.enums import RegionRole

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
    nodes = {}
    for nid, n in sorted(defs.nodes.items()):
        nodes[nid] = D.system_tree_node(n.name, class_name="node", parent=machine)
    groups = {}
    for rank in ranks:
        p = defs.processes.get(rank)
        parent = nodes.get(p.node, machine) if p is not None else machine
        groups[rank] = D.location_group(f"MPI Rank {rank}" if has_mpi else (p.name if p else f"Process {rank}"),
                                        location_group_type=LocationGroupType.PROCESS, system_tree_parent=parent)
    o_loc = {}
    for L in locs:
        name = "Master thread" if L.thread == 0 else f"OMP thread {L.thread}"
        o_loc[L.id] = D.location(name, type=LocationType.CPU_THREAD, group=groups[L.process])

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
    masters = {L.process: o_loc[L.id] for L in locs if L.thread == 0}
    o_comm = {}
    comm_ranks = {}
    if has_mpi:
        D.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=OP.MPI, group_flags=GroupFlag.NONE,
                members=[masters[r] for r in ranks if r in masters])
        rank_index = {r: i for i, r in enumerate(ranks)}
        o_group = {}
        for gid, members in sorted(defs.groups.items()):
            o_group[gid] = D.group("", group_type=GroupType.COMM_GROUP, paradigm=OP.MPI,
                                   group_flags=GroupFlag.NONE, members=[rank_index.get(m, m) for m in members])
        for cid, c in sorted(defs.comms.items()):
            o_comm[cid] = D.comm(c.name or f"comm {cid}", o_group[c.group], None)
            comm_ranks[cid] = {g: i for i, g in enumerate(defs.groups.get(c.group, ()))}
        for cid, c in defs.comms.items():
            if c.parent != NO_ID and c.parent in o_comm:
                pass  # the python binding fixes a comm's parent at creation; parents are informational only
    omp_threads = any(L.thread > 0 for L in locs) or any(r.paradigm == Paradigm.OPENMP for r in defs.regions.values())
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
            op_of[rid] = getattr(CollectiveOp, name, None) or getattr(CollectiveOp, _COLL_DEFAULT_OP[r.role])

    def local(cid: int, rank: int) -> int:
        if rank == NO_ID:
            return OTF2_UNDEFINED_UINT32
        return comm_ranks.get(cid, {}).get(rank, rank)

    # OTF2 timestamps are unsigned, but clock correction can put a rank's first
    # events before time 0 (a rank whose clock runs behind rank 0's); shift
    # every timestamp by the same amount.  Readers see the trace starting at 0;
    # durations, and so every analysis result, are unchanged.
    shift_ns = max(0, -min((_first_ns(trace, L.id) for L in locs), default=0))
    counters = 0
    for L in locs:
        ev = trace.events(L.id)
        if len(ev) == 0:
            continue
        wr = w.event_writer_from_location(o_loc[L.id])
        ts = [int(x) + shift_ns for x in (ev.time * 1e9).round().astype("int64")]
        typ, A, B, C, Dd, Ee = ev.type, ev.a, ev.b, ev.c, ev.d, ev.e
        stack: list[int] = []
        rank = L.process
        for i in range(len(ev)):
            t = int(typ[i])
            now = ts[i]
            if t == EventType.ENTER:
                rid = int(A[i])
                if role_of.get(rid) == Role.OMP_PARALLEL and rank in teams:
                    wr.thread_team_begin(now, teams[rank])
                wr.enter(now, o_reg[rid])
                stack.append(rid)
                if role_of.get(rid) in _COLL_ROLES:
                    wr.mpi_collective_begin(now)
            elif t in EXIT_TYPES:
                rid = int(A[i])
                if stack:
                    stack.pop()
                if t == EventType.MPI_COLLEXIT:
                    cid = int(B[i])
                    op = op_of.get(rid) or CollectiveOp.BARRIER
                    wr.mpi_collective_end(now, op, o_comm[cid], local(cid, int(C[i])), int(Dd[i]), int(Ee[i]))
                elif role_of.get(rid) in _COLL_ROLES:
                    # a collective region left by a plain EXIT: close the begun collective without data
                    wr.mpi_collective_end(now, op_of[rid], next(iter(o_comm.values())), OTF2_UNDEFINED_UINT32,
                                          0, 0)
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
    if counters:
        notes.append(f"{counters} COUNTER record(s) were not exported (OTF2 metrics are not written yet)")
    w.close()
    return notes
