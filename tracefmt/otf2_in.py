"""Reader for OTF2 traces (Score-P and anything written the Score-P way), through the ``otf2`` package.

``read(path)`` takes the anchor file (``traces.otf2``) or the directory that
holds it and returns a :class:`tracefmt.foreign.TraceAssembly`:

* ranks from the MPI ``COMM_LOCATIONS`` group (a location's index there is its
  rank in MPI_COMM_WORLD); threads numbered within their location group;
* regions keep OTF2's paradigm, and their role comes from OTF2's region role
  refined by the naming conventions (Score-P marks ``MPI_Wait`` as FUNCTION,
  our analysis needs it as point-to-point);
* communicator-local ranks of sends, receives and collective roots become
  global ranks; ``MPI_COMM_SELF`` becomes one communicator per process;
* ``MpiCollectiveBegin``/``End`` + ``Leave`` become one MPI_COLLEXIT at the
  leave time; leaving an OpenMP barrier becomes OMP_COLLEXIT;
* ``ThreadFork``/``ThreadJoin`` become OMP_FORK/OMP_JOIN with team ids numbered
  per process; the thread number inside a team comes from the
  ``ThreadTeamBegin`` team's member order; lock acquisition orders are kept;
* non-blocking point-to-point (``MpiIsend``, ``MpiIrecvRequest``, ``MpiIrecv``,
  ``MpiIsendComplete``, ``MpiRequestCancelled``) maps onto our request events.

Timestamps stay integer ticks of the OTF2 timer, counted from the archive's
global offset.  RMA, I/O, task, CUDA and similar records are skipped and
listed in ``problems``.
"""

from __future__ import annotations

import os
from collections import defaultdict

from .errors import TraceFormatError
from .foreign import EventRows, ForeignLocation, ForeignRegion, Row, TraceAssembly
from .layout import ANY, NO_ID, EventType, LockKind, Paradigm, RecvFlag, Role
from . import conventions

OTF2_UNDEFINED_UINT32 = 0xFFFFFFFF


class Otf2FormatError(TraceFormatError):
    def __init__(self, message: str):
        super().__init__(message)

    def _compose(self) -> str:
        return self.reason


def require_otf2():
    try:
        import otf2  # noqa: F401
    except ImportError:
        raise Otf2FormatError(
            "reading OTF2 needs the 'otf2' Python package: pip install otf2 "
            "(wheels exist for CPython 3.9-3.11 on Linux x86-64; elsewhere it builds from source)"
        ) from None
    return otf2


def find_anchor(path: str) -> str:
    """The ``.otf2`` anchor file of an archive given as the file itself or its directory."""
    if os.path.isdir(path):
        cands = sorted(n for n in os.listdir(path) if n.endswith(".otf2") and os.path.isfile(os.path.join(path, n)))
        if not cands:
            raise Otf2FormatError(f"{path}: no OTF2 anchor file (*.otf2) in this directory")
        if "traces.otf2" in cands:
            return os.path.join(path, "traces.otf2")
        return os.path.join(path, cands[0])
    return path


def _enum_name(value) -> str:
    """'MPI' for Paradigm.MPI: the binding's enums have no .name, only a str() of 'Class.MEMBER'."""
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value).rsplit(".", 1)[-1]


def _paradigm(otf2_paradigm) -> Paradigm:
    name = _enum_name(otf2_paradigm)
    return {
        "MPI": Paradigm.MPI,
        "OPENMP": Paradigm.OPENMP,
        "COMPILER": Paradigm.COMPILER,
        "USER": Paradigm.USER,
        "MEASUREMENT_SYSTEM": Paradigm.MEASUREMENT,
    }.get(name, Paradigm.USER)


_OMP_ROLES = {
    "PARALLEL": Role.OMP_PARALLEL,
    "LOOP": Role.OMP_LOOP,
    "SECTIONS": Role.OMP_SECTIONS,
    "SECTION": Role.OMP_SECTION,
    "WORKSHARE": Role.OMP_WORKSHARE,
    "SINGLE": Role.OMP_SINGLE,
    "SINGLE_SBLOCK": Role.OMP_SINGLE_BODY,
    "MASTER": Role.OMP_MASTER,
    "CRITICAL": Role.OMP_CRITICAL,
    "CRITICAL_SBLOCK": Role.OMP_CRITICAL_BODY,
    "ATOMIC": Role.OMP_ATOMIC,
    "BARRIER": Role.OMP_BARRIER,
    "IMPLICIT_BARRIER": Role.OMP_IMPLICIT_BARRIER,
    "FLUSH": Role.OMP_FLUSH,
    "ORDERED": Role.OMP_ORDERED,
    "ORDERED_SBLOCK": Role.OMP_ORDERED_BODY,
    "TASK": Role.OMP_TASK,
    "TASK_UNTIED": Role.OMP_TASK,
    "TASK_WAIT": Role.OMP_TASKWAIT,
}
_MPI_COLL_ROLES = {
    "BARRIER": Role.MPI_COLL_BARRIER,
    "COLL_ONE2ALL": Role.MPI_COLL_ONE2ALL,
    "COLL_ALL2ONE": Role.MPI_COLL_ALL2ONE,
    "COLL_ALL2ALL": Role.MPI_COLL_ALL2ALL,
    "COLL_OTHER": Role.MPI_COLL_OTHER,
}


def classify_region(name: str, otf2_paradigm, otf2_role) -> tuple[Paradigm, Role]:
    """Our (paradigm, role) of an OTF2 region."""
    par = _paradigm(otf2_paradigm)
    role = _enum_name(otf2_role)
    if par == Paradigm.MPI or name[:4].upper() == "MPI_":
        by_name = conventions.classify(name)[1] if name[:4].upper() == "MPI_" else Role.MPI_OTHER
        if by_name == Role.MPI_OTHER and role in _MPI_COLL_ROLES:
            by_name = _MPI_COLL_ROLES[role]
        return Paradigm.MPI, by_name
    if par == Paradigm.OPENMP:
        if role in _OMP_ROLES:
            return par, _OMP_ROLES[role]
        p, r = conventions.classify(name)
        return Paradigm.OPENMP, r if p == Paradigm.OPENMP else Role.FUNCTION
    if par == Paradigm.MEASUREMENT:
        if "FLUSH" in name.upper():
            return par, Role.MEASUREMENT_FLUSH
        if "MEASUREMENT OFF" in name.upper() or name == "PAUSING":
            return par, Role.MEASUREMENT_PAUSE
        p, r = conventions.classify(name)
        return par, r if p == Paradigm.MEASUREMENT else Role.FUNCTION
    if name == "MEASUREMENT OFF":
        return Paradigm.MEASUREMENT, Role.MEASUREMENT_PAUSE
    if role == "LOOP":
        return par, Role.LOOP
    return par, Role.FUNCTION


_BARRIER_ROLES = (Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER)


def read(path: str | os.PathLike) -> TraceAssembly:
    """An OTF2 archive as a TraceAssembly."""
    otf2 = require_otf2()
    anchor = find_anchor(os.fspath(path))
    if not os.path.isfile(anchor):
        raise Otf2FormatError(f"{anchor}: no such OTF2 anchor file")
    try:
        reader = otf2.reader.open(anchor)
    except Exception as exc:  # the C library reports damage through generic errors
        raise Otf2FormatError(f"{anchor}: not a readable OTF2 archive: {exc}") from None
    with reader as tr:
        try:
            return _Import(anchor, tr).run()
        except TraceFormatError:
            raise
        except Exception as exc:
            raise Otf2FormatError(f"{anchor}: cannot read the OTF2 events: {type(exc).__name__}: {exc}") from None


class _Import:
    def __init__(self, anchor: str, tr):
        self.anchor, self.tr, self.defs = anchor, tr, tr.definitions
        props = self.defs.clock_properties
        self.asm = TraceAssembly(source=anchor, creator="OTF2", ticks_per_second=float(tr.timer_resolution))
        self.origin = int(props.global_offset) if props is not None else 0
        self.skipped: dict[str, int] = defaultdict(int)

    # -- definitions ------------------------------------------------------------
    def _system(self) -> None:
        d, a = self.defs, self.asm
        mpi_locs = None
        for g in d.groups:
            gt = _enum_name(g.group_type)
            if gt == "COMM_LOCATIONS" and _paradigm(g.paradigm) == Paradigm.MPI:
                mpi_locs = list(g.members)
        # rank of each location group
        self.group_rank = {}
        if mpi_locs:
            for r, loc in enumerate(mpi_locs):
                self.group_rank.setdefault(loc.group, r)
        next_rank = max(self.group_rank.values(), default=-1) + 1
        for lg in d.location_groups:
            if lg not in self.group_rank:
                self.group_rank[lg] = next_rank
                next_rank += 1
        # threads: CPU locations of each group in id order
        by_group = defaultdict(list)
        for loc in d.locations:
            if _enum_name(loc.type) != "CPU_THREAD":
                self.skipped[f"{_enum_name(loc.type)} location"] += 1
                continue
            by_group[loc.group].append(loc)
        self.loc_rank_thread = {}
        for lg, locs in by_group.items():
            locs.sort(key=lambda x: x._ref)
            for t, loc in enumerate(locs):
                self.loc_rank_thread[loc] = (self.group_rank[lg], t)
        order = sorted(self.loc_rank_thread, key=lambda x: self.loc_rank_thread[x])
        self.our_loc = {loc: i for i, loc in enumerate(order)}
        for loc, i in self.our_loc.items():
            r, t = self.loc_rank_thread[loc]
            a.locations[i] = ForeignLocation(r, t, loc.name)
        for lg, r in self.group_rank.items():
            a.process_names[r] = lg.name
            node = lg.system_tree_parent
            a.node_of_process[r] = node.name if node is not None else "node"
            top = node
            while top is not None and top.parent is not None:
                top = top.parent
            if top is not None:
                a.machine_name = top.name
        self.rank_of_loc = {loc: rt[0] for loc, rt in self.loc_rank_thread.items()}

    def _regions(self) -> None:
        self.region_id = {}
        for i, r in enumerate(self.defs.regions):
            par, role = classify_region(r.name, r.paradigm, r.region_role)
            bl = r.begin_line_number if r.begin_line_number else NO_ID
            el = r.end_line_number if r.end_line_number else NO_ID
            self.asm.regions[i] = ForeignRegion(r.name, r.source_file or "", bl, el, int(par), int(role))
            self.region_id[r] = i

    def _comms(self) -> None:
        """MPI communicators with their ranks in comm order; OpenMP team members for thread numbers."""
        a = self.asm
        self.comm_ranks = {}  # otf2 comm -> tuple of global ranks, or "SELF"
        self.comm_id = {}
        self.team_members = {}  # otf2 comm -> list of locations
        gid_of = {}
        for c in self.defs.comms:
            g = c.group
            par = _paradigm(g.paradigm)
            gt = _enum_name(g.group_type)
            if par == Paradigm.OPENMP:
                self.team_members[c] = list(g.members)
                continue
            if par != Paradigm.MPI:
                continue
            if gt == "COMM_SELF":
                self.comm_ranks[c] = "SELF"
                continue
            ranks = tuple(self.rank_of_loc.get(m, -1) if not isinstance(m, int) else m for m in g.members)
            self.comm_ranks[c] = ranks
            if ranks not in gid_of:
                gid_of[ranks] = len(a.groups)
                a.groups[gid_of[ranks]] = ranks
            cid = len(a.comms)
            a.comms[cid] = (gid_of[ranks], c.name, NO_ID)
            self.comm_id[c] = cid
        for c, rk in list(self.comm_ranks.items()):
            if rk != "SELF":
                continue
            ids = {}
            for r in sorted(set(self.group_rank.values())):
                gid = len(a.groups)
                a.groups[gid] = (r,)
                cid = len(a.comms)
                a.comms[cid] = (gid, c.name or "MPI_COMM_SELF", NO_ID)
                ids[r] = cid
            self.comm_id[c] = ids
        self._parent_fix()

    def _parent_fix(self) -> None:
        a = self.asm
        for c, cid in self.comm_id.items():
            if isinstance(cid, int) and c.parent is not None and isinstance(self.comm_id.get(c.parent), int):
                g, n, _ = a.comms[cid]
                a.comms[cid] = (g, n, self.comm_id[c.parent])

    def _comm(self, c, rank: int) -> int:
        cid = self.comm_id.get(c)
        if cid is None:
            return NO_ID
        return cid[rank] if isinstance(cid, dict) else cid

    def _global_rank(self, c, local: int, rank: int, where: str) -> int:
        if local == OTF2_UNDEFINED_UINT32:
            return NO_ID
        ranks = self.comm_ranks.get(c)
        if ranks is None:
            self.asm.problems.append(f"{where}: communicator {getattr(c, 'name', c)!r} is not an MPI communicator")
            return local
        if ranks == "SELF":
            return rank
        if local >= len(ranks):
            raise Otf2FormatError(f"{self.anchor}: {where}: rank {local} outside communicator "
                                  f"{c.name!r} of size {len(ranks)}")
        return ranks[local]

    # -- events -------------------------------------------------------------
    @staticmethod
    def _request(otf2_id: int, spare: dict, loc) -> int:
        """Our request id: OTF2's own, except that 0 (our 'blocking') is replaced by an unused one."""
        if otf2_id:
            return int(otf2_id)
        spare[loc] += 1
        return (1 << 63) + spare[loc]

    def run(self) -> TraceAssembly:
        otf2 = require_otf2()
        ev = otf2.events
        self._system()
        self._regions()
        self._comms()
        a = self.asm
        rows: dict = {loc: [] for loc in self.our_loc}
        coll_pending: dict = {}
        team_num: dict = {}
        req_ids: dict = defaultdict(dict)  # location -> OTF2 request id -> ours
        next_req: dict = defaultdict(int)
        stacks: dict = defaultdict(list)
        region_id, regions = self.region_id, a.regions
        for loc, e in self.tr.events:
            out = rows.get(loc)
            if out is None:
                continue
            t = int(e.time)
            rank = self.rank_of_loc[loc]
            where = f"location {loc.name!r} (rank {rank}) at tick {t}"
            if isinstance(e, ev.Enter):
                rid = region_id[e.region]
                d = NO_ID
                if regions[rid].role == Role.OMP_PARALLEL:
                    d = team_num.get(loc, NO_ID)
                stacks[loc].append(rid)
                out.append(Row([t, EventType.ENTER, 0, rid, NO_ID, NO_ID, d, 0]))
            elif isinstance(e, ev.Leave):
                rid = region_id[e.region]
                if stacks[loc]:
                    stacks[loc].pop()
                if loc in coll_pending:
                    c, root, sent, recvd = coll_pending.pop(loc)
                    out.append(Row([t, EventType.MPI_COLLEXIT, 0, rid, self._comm(c, rank),
                                    self._global_rank(c, root, rank, where), sent, recvd]))
                elif regions[rid].role in _BARRIER_ROLES:
                    out.append(Row([t, EventType.OMP_COLLEXIT, 0, rid, NO_ID, 0, 0, 0]))
                else:
                    out.append(Row([t, EventType.EXIT, 0, rid, 0, 0, 0, 0]))
            elif isinstance(e, (ev.MpiSend, ev.MpiIsend)):
                req = 0
                if isinstance(e, ev.MpiIsend):
                    req = req_ids[loc][e.request_id] = self._request(e.request_id, next_req, loc)
                out.append(Row([t, EventType.MPI_SEND, 0, self._global_rank(e.communicator, e.receiver, rank, where),
                                self._comm(e.communicator, rank), e.msg_tag, e.msg_length, req]))
            elif isinstance(e, (ev.MpiRecv, ev.MpiIrecv)):
                req = 0
                if isinstance(e, ev.MpiIrecv):
                    req = req_ids[loc].pop(e.request_id, 0)
                    if not req:
                        a.problems.append(f"{where}: MpiIrecv of request {e.request_id} that was never posted")
                out.append(Row([t, EventType.MPI_RECV, 0, self._global_rank(e.communicator, e.sender, rank, where),
                                self._comm(e.communicator, rank), e.msg_tag, e.msg_length, req]))
            elif isinstance(e, ev.MpiIrecvRequest):
                req = req_ids[loc][e.request_id] = self._request(e.request_id, next_req, loc)
                out.append(Row([t, EventType.MPI_RECV_REQUEST, int(RecvFlag(0)), ANY, NO_ID, ANY, 0, req]))
            elif isinstance(e, ev.MpiIsendComplete):
                req = req_ids[loc].pop(e.request_id, 0)
                out.append(Row([t, EventType.MPI_SEND_COMPLETE, 0, 0, 0, 0, 0, req]))
            elif isinstance(e, ev.MpiRequestCancelled):
                req = req_ids[loc].pop(e.request_id, 0)
                out.append(Row([t, EventType.MPI_REQUEST_CANCELLED, 0, 0, 0, 0, 0, req]))
            elif isinstance(e, ev.MpiCollectiveEnd):
                coll_pending[loc] = (e.communicator, int(e.root), int(e.size_sent), int(e.size_received))
            elif isinstance(e, (ev.ThreadFork, ev.OmpFork)):
                out.append(Row([t, EventType.OMP_FORK, 0, NO_ID, 0, 0, 0, 0]))
            elif isinstance(e, (ev.ThreadJoin, ev.OmpJoin)):
                out.append(Row([t, EventType.OMP_JOIN, 0, NO_ID, 0, 0, 0, 0]))
            elif isinstance(e, ev.ThreadTeamBegin):
                members = self.team_members.get(e.thread_team, [])
                team_num[loc] = members.index(loc) if loc in members else self.loc_rank_thread[loc][1]
            elif isinstance(e, ev.ThreadTeamEnd):
                team_num.pop(loc, None)
            elif isinstance(e, (ev.ThreadAcquireLock, ev.ThreadReleaseLock, ev.OmpAcquireLock, ev.OmpReleaseLock)):
                lk = int(e.lock_id)  # Score-P lock ids are per process; ours too (orders count per process)
                if lk not in a.locks:
                    top = regions[stacks[loc][-1]] if stacks[loc] else None
                    if top is not None and top.role in (Role.OMP_CRITICAL, Role.OMP_CRITICAL_BODY):
                        a.locks[lk] = (int(LockKind.OMP_CRITICAL), top.name.split(" @")[0])
                    else:
                        a.locks[lk] = (int(LockKind.OMP_LOCK), f"lock {lk}")
                acq = isinstance(e, (ev.ThreadAcquireLock, ev.OmpAcquireLock))
                out.append(Row([t, EventType.OMP_ACQUIRE_LOCK if acq else EventType.OMP_RELEASE_LOCK, 0,
                                lk, 0, 0, int(e.acquisition_order), 0]))
            elif isinstance(e, (ev.ProgramBegin, ev.ProgramEnd, ev.MpiCollectiveBegin, ev.MpiRequestTest,
                                ev.ThreadBegin, ev.ThreadEnd, ev.ThreadCreate, ev.ThreadWait
                                if hasattr(ev, "ThreadWait") else ev.ThreadEnd)):
                pass  # nothing the analysis uses
            else:
                self.skipped[type(e).__name__] += 1
        for what, n in sorted(self.skipped.items()):
            a.notes.append(f"{self.anchor}: {n} {what} record(s) skipped (not analysed)")
        rank_thread = {loc: self.loc_rank_thread[loc] for loc in rows}
        rs = EventRows(rows, rank_thread, a)
        rs.resolve_teams()
        for key, arr in rs.arrays(self.origin, None).items():
            a.events[self.our_loc[key]] = arr
        a.attributes["otf2.timer_resolution"] = repr(self.tr.timer_resolution)
        a.attributes["otf2.global_offset"] = str(self.origin)
        return a


def open_otf2(path: str | os.PathLike):
    """An OTF2 archive as a :class:`tracefmt` Trace."""
    return read(path).to_trace()
