"""TraceBuilder: write traces event by event in readable code (tests, examples).

Times are seconds on the location's process clock and become ticks at
1e9 ticks/s (rounded to the nearest tick).  Definitions (machine, node,
process, location, regions, communicators, locks, metrics) are made on
first use.  The builder keeps a region stack per location so that ``exit``
and the collective exits know what they close; it refuses calls that could
not come from a correct measurement (use :meth:`TraceBuilder.event` to write
anything at all, e.g. to test a validator).
"""

from __future__ import annotations

import io
import math
import struct

import numpy as np

from . import layout
from .conventions import classify
from .definitions import (
    Clock,
    Comm,
    Definitions,
    Location,
    Lock,
    Machine,
    Metric,
    Node,
    Offset,
    Process,
    Region,
    Window,
)
from .layout import (ANY, NO_ID, RMA_GROUP_SYNCS, EventType, LockKind, MetricDtype, MetricMode, Paradigm, Role,
                     RmaAtomic, RmaSync, TaskSwitch)
from .writer import TraceWriter

TICKS_PER_SECOND = 1e9


class BuilderError(ValueError):
    """A builder call that does not make sense (unknown location, unbalanced exit, ...)."""


def _id(value) -> int:
    return NO_ID if value is None else int(value)


class TraceBuilder:
    def __init__(self, creator: str = "tracefmt.TraceBuilder"):
        self.creator = creator
        self.defs = Definitions()
        self.defs.machines[0] = Machine(0, "machine 0")
        self._events: dict[int, list[tuple]] = {}
        self._stack: dict[int, list[int]] = {}  # location -> region ids entered, innermost last
        self._team_stack: dict[int, list[int]] = {}  # location -> teams of the parallel regions it is in
        self._forked: dict[int, list[int]] = {}  # process -> teams forked and not yet joined
        self._by_name: dict[tuple[str, str], int] = {}  # (kind, name) -> id
        self._world: int | None = None
        self._explicit_world = False  # the user made MPI_COMM_WORLD with b.comm: keep its ranks
        self._lock_count: dict[tuple[int, int], int] = {}  # (process, lock) -> acquisitions so far
        self._held: dict[tuple[int, int], int] = {}  # (location, lock) -> order of the held acquisition
        self._running: dict[int, list[tuple[int, int]]] = {}  # location -> (task, region) executing, innermost last
        self._task_region: dict[tuple[int, int], int] = {}  # (process, task) -> its region, from the creation

    # ------------------------------------------------------------------ definitions
    def location(self, rank: int = 0, thread: int = 0, node: int = 0, name: str | None = None) -> int:
        """Global id of thread `thread` of MPI rank `rank`; created (with its process) on first use."""
        key = ("location", f"{rank}/{thread}")
        if key in self._by_name:
            return self._by_name[key]
        if rank < 0 or thread < 0 or node < 0:
            raise BuilderError(f"rank, thread and node must be >= 0 (got {rank}, {thread}, {node})")
        d = self.defs
        if node not in d.nodes:
            d.nodes[node] = Node(node, 0, f"node {node}")
        if rank not in d.processes:
            d.processes[rank] = Process(rank, node, f"rank {rank}")
            d.clocks[rank] = Clock(rank, TICKS_PER_SECOND, 0)
        lid = len(d.locations)
        d.locations[lid] = Location(lid, rank, thread, name or f"rank {rank} thread {thread}")
        self._events[lid] = []
        self._stack[lid] = []
        self._team_stack[lid] = []
        self._by_name[key] = lid
        return lid

    def region(
        self,
        name: str,
        paradigm: Paradigm | None = None,
        role: Role | None = None,
        file: str | None = None,
        begin_line: int | None = None,
        end_line: int | None = None,
    ) -> int:
        """Id of the region `name`; made on first use, paradigm and role by naming convention unless given."""
        key = ("region", name)
        if key in self._by_name:
            r = self.defs.regions[self._by_name[key]]
            if (paradigm is not None and paradigm != r.paradigm) or (role is not None and role != r.role):
                raise BuilderError(f"region {name!r} already exists as ({r.paradigm.name}, {r.role.name})")
            return r.id
        conv_paradigm, conv_role = classify(name)
        fid = NO_ID
        if file is not None:
            fkey = ("file", file)
            if fkey not in self._by_name:
                self._by_name[fkey] = len(self.defs.files)
                self.defs.files[len(self.defs.files)] = file
            fid = self._by_name[fkey]
        rid = len(self.defs.regions)
        self.defs.regions[rid] = Region(
            rid,
            name,
            fid,
            _id(begin_line),
            _id(end_line),
            Paradigm(paradigm if paradigm is not None else conv_paradigm),
            Role(role if role is not None else conv_role),
        )
        self._by_name[key] = rid
        return rid

    def world(self) -> int:
        """Id of MPI_COMM_WORLD: every rank that has a location when the trace is built."""
        if self._world is None:
            for c in self.defs.comms.values():  # one made explicitly with b.comm(ranks, "MPI_COMM_WORLD")
                if c.name == "MPI_COMM_WORLD":
                    self._world = c.id
                    self._explicit_world = True
                    return c.id
            self._world = self._new_comm((), "MPI_COMM_WORLD", NO_ID)
        return self._world

    def comm(self, ranks, name: str | None = None, parent: int | None = None) -> int:
        """A communicator over these global ranks (in this order); returns its id."""
        ranks = tuple(int(r) for r in ranks)
        if len(set(ranks)) != len(ranks) or any(r < 0 for r in ranks):
            raise BuilderError(f"communicator ranks must be distinct and >= 0: {ranks}")
        return self._new_comm(ranks, name, _id(parent))

    def _new_comm(self, ranks, name, parent) -> int:
        cid = len(self.defs.comms)
        gid = len(self.defs.groups)
        self.defs.groups[gid] = ranks
        self.defs.comms[cid] = Comm(cid, gid, name or f"comm {cid}", parent, ranks)
        return cid

    def lock(self, name: str, kind: LockKind = LockKind.OMP_LOCK) -> int:
        """Id of the lock `name`; made on first use."""
        key = ("lock", name)
        if key not in self._by_name:
            lid = len(self.defs.locks)
            self.defs.locks[lid] = Lock(lid, LockKind(kind), name)
            self._by_name[key] = lid
        return self._by_name[key]

    def group(self, ranks) -> int:
        """Id of a GROUP definition over these global ranks (in this order); one per distinct list."""
        ranks = tuple(int(r) for r in ranks)
        if len(set(ranks)) != len(ranks) or any(r < 0 for r in ranks):
            raise BuilderError(f"group ranks must be distinct and >= 0: {ranks}")
        key = ("group", ranks)
        if key not in self._by_name:
            gid = len(self.defs.groups)
            self.defs.groups[gid] = ranks
            self._by_name[key] = gid
        return self._by_name[key]

    def window(self, comm=None, name: str = "") -> int:
        """A new MPI RMA window (2.3) over communicator ``comm`` (None: MPI_COMM_WORLD); returns its id."""
        wid = len(self.defs.windows)
        self.defs.windows[wid] = Window(wid, self._comm_id(comm), name)
        return wid

    def metric(
        self, name: str, unit: str = "", dtype: MetricDtype = MetricDtype.UINT64, mode=MetricMode.ACCUMULATED
    ) -> int:
        """Id of the metric (hardware counter) `name`; made on first use."""
        key = ("metric", name)
        if key not in self._by_name:
            mid = len(self.defs.metrics)
            self.defs.metrics[mid] = Metric(mid, name, unit, MetricDtype(dtype), MetricMode(mode))
            self._by_name[key] = mid
        return self._by_name[key]

    def clock_offset(self, rank: int, local_time: float, offset: float) -> None:
        """An offset measurement of `rank`'s clock: at `local_time`, global = local + `offset`."""
        self.defs.offsets.setdefault(rank, []).append(Offset(float(local_time), float(offset)))

    def attribute(self, key: str, value: str) -> None:
        self.defs.attributes[str(key)] = str(value)

    # ------------------------------------------------------------------ events
    def _loc(self, loc: int) -> int:
        if loc not in self._events:
            raise BuilderError(f"unknown location {loc}; create it with b.location(rank, thread)")
        return loc

    @staticmethod
    def _ticks(t: float) -> int:
        if not math.isfinite(t) or t < 0:
            raise BuilderError(f"time must be a finite number of seconds >= 0, got {t}")
        return int(round(t * TICKS_PER_SECOND))

    def _region_id(self, region) -> int:
        if isinstance(region, str):
            return self.region(region)
        if region not in self.defs.regions:
            raise BuilderError(f"unknown region id {region}")
        return int(region)

    def _comm_id(self, comm) -> int:
        if comm is None:
            return self.world()
        if comm not in self.defs.comms:
            raise BuilderError(f"unknown communicator {comm}")
        return int(comm)

    def _lock_id(self, lock) -> int:
        if isinstance(lock, str):
            return self.lock(lock)
        if lock not in self.defs.locks:
            raise BuilderError(f"unknown lock id {lock}")
        return int(lock)

    def event(self, loc: int, t: float, type: EventType, flags=0, a=0, b=0, c=0, d=0, e=0) -> None:
        """Append one raw event record, unchecked (for tests of readers and validators)."""
        self._events[self._loc(loc)].append((self._ticks(t), int(type), int(flags), 0, a, b, c, d, e))

    def enter(self, loc: int, t: float, region, team: int | None = None, thread_num: int | None = None,
              callsite: int | None = None) -> None:
        """Enter a region (name or id).  For a parallel region, `team` defaults to the team the
        process forked last and `thread_num` to the location's thread number."""
        rid = self._region_id(region)
        c, d = NO_ID, NO_ID
        if self.defs.regions[rid].role == Role.OMP_PARALLEL:
            process = self.defs.locations[self._loc(loc)].process
            if team is None:
                forked = self._forked.get(process)
                if not forked:
                    raise BuilderError(f"enter {self.defs.regions[rid].name!r} at {t}: no team forked; pass team=")
                team = forked[-1]
            c = int(team)
            d = self.defs.locations[loc].thread if thread_num is None else int(thread_num)
            self._team_stack[loc].append(c)
        elif team is not None or thread_num is not None:
            raise BuilderError(f"team= and thread_num= belong on a parallel region, not {region!r}")
        self.event(loc, t, EventType.ENTER, a=rid, b=_id(callsite), c=c, d=d)
        self._stack[loc].append(rid)

    def _close(self, loc: int, t: float, region, what: str) -> int:
        stack = self._stack[self._loc(loc)]
        if not stack:
            raise BuilderError(f"{what} on location {loc} at {t}: no region is open")
        top = stack[-1]
        if region is not None and self._region_id(region) != top:
            raise BuilderError(
                f"{what} of {region!r} on location {loc} at {t}, but the innermost open region is "
                f"{self.defs.regions[top].name!r}"
            )
        stack.pop()
        if self.defs.regions[top].role == Role.OMP_PARALLEL:
            self._team_stack[loc].pop()
        return top

    def exit(self, loc: int, t: float, region=None) -> None:
        """Leave the innermost open region (if `region` is given, it must be that one)."""
        rid = self._close(loc, t, region, "exit")
        self.event(loc, t, EventType.EXIT, a=rid)

    def send(self, loc, t, dest, tag=0, nbytes=0, comm=None, request=0, flags=0) -> None:
        """MPI_SEND to global rank `dest` (request id for a non-blocking send)."""
        self.event(loc, t, EventType.MPI_SEND, flags, dest, self._comm_id(comm), tag, nbytes, request)

    def recv(self, loc, t, source, tag=0, nbytes=0, comm=None, request=0, flags=0) -> None:
        """MPI_RECV from global rank `source` (completion of a receive; request id if non-blocking)."""
        self.event(loc, t, EventType.MPI_RECV, flags, source, self._comm_id(comm), tag, nbytes, request)

    def recv_request(self, loc, t, request, source=None, tag=None, comm=None) -> None:
        """A non-blocking receive was posted (source/tag None = MPI_ANY_SOURCE / MPI_ANY_TAG)."""
        src = ANY if source is None else int(source)
        tg = ANY if tag is None else int(tag)
        self.event(loc, t, EventType.MPI_RECV_REQUEST, 0, src, self._comm_id(comm), tg, 0, request)

    def send_complete(self, loc, t, request) -> None:
        self.event(loc, t, EventType.MPI_SEND_COMPLETE, e=request)

    def cancel(self, loc, t, request) -> None:
        self.event(loc, t, EventType.MPI_REQUEST_CANCELLED, e=request)

    def coll_exit(self, loc, t, region=None, comm=None, root=None, sent=0, recvd=0) -> None:
        """Leave the innermost region (an MPI collective) with its collective data."""
        rid = self._close(loc, t, region, "coll_exit")
        self.event(loc, t, EventType.MPI_COLLEXIT, 0, rid, self._comm_id(comm), _id(root), sent, recvd)

    def collective(self, loc, t_enter, t_exit, region, comm=None, root=None, sent=0, recvd=0) -> None:
        """ENTER + MPI_COLLEXIT of one collective call."""
        self.enter(loc, t_enter, region)
        self.coll_exit(loc, t_exit, region, comm=comm, root=root, sent=sent, recvd=recvd)

    def fork(self, loc, t, team: int, size: int) -> None:
        process = self.defs.locations[self._loc(loc)].process
        self._forked.setdefault(process, []).append(int(team))
        self.event(loc, t, EventType.OMP_FORK, a=team, c=size)

    def join(self, loc, t, team: int, size: int) -> None:
        process = self.defs.locations[self._loc(loc)].process
        forked = self._forked.get(process, [])
        if team in forked:
            forked.remove(team)
        self.event(loc, t, EventType.OMP_JOIN, a=team, c=size)

    def omp_coll_exit(self, loc, t, region=None, team=None) -> None:
        """Leave the innermost region (an OpenMP construct with implicit synchronisation).
        `team` defaults to the team of the innermost parallel region the location is in."""
        if team is None:
            teams = self._team_stack.get(self._loc(loc))
            if not teams:
                raise BuilderError(f"omp_coll_exit on location {loc} at {t}: not inside a parallel region")
            team = teams[-1]
        rid = self._close(loc, t, region, "omp_coll_exit")
        self.event(loc, t, EventType.OMP_COLLEXIT, a=rid, b=team)

    def barrier(self, loc, t_enter, t_exit, implicit: bool = False, team=None, region=None) -> None:
        """An OpenMP barrier: ENTER of ``!$omp barrier`` (or the implicit one) + OMP_COLLEXIT."""
        name = region or ("!$omp implicit barrier" if implicit else "!$omp barrier")
        self.enter(loc, t_enter, name)
        self.omp_coll_exit(loc, t_exit, name, team=team)

    def acquire(self, loc, t, lock, order: int | None = None) -> None:
        """OMP_ACQUIRE_LOCK; `order` counts acquisitions per (process, lock) from 1 unless given."""
        lk = self._lock_id(lock)
        key = (self.defs.locations[self._loc(loc)].process, lk)
        if order is None:
            order = self._lock_count.get(key, 0) + 1
        self._lock_count[key] = max(self._lock_count.get(key, 0), int(order))
        self._held[(loc, lk)] = int(order)
        self.event(loc, t, EventType.OMP_ACQUIRE_LOCK, a=lk, d=order)

    def release(self, loc, t, lock, order: int | None = None) -> None:
        """OMP_RELEASE_LOCK; `order` defaults to that of this location's acquisition of the lock."""
        lk = self._lock_id(lock)
        held = self._held.pop((self._loc(loc), lk), None)
        if order is None:
            if held is None:
                raise BuilderError(f"release of lock {lock!r} on location {loc} at {t}: not held there")
            order = held
        self.event(loc, t, EventType.OMP_RELEASE_LOCK, a=lk, d=order)

    # ---- OpenMP tasks (format 2.1) ----------------------------------------------------------
    def _process(self, loc: int) -> int:
        return self.defs.locations[self._loc(loc)].process

    def running_task(self, loc: int) -> int:
        """The task whose fragment is innermost on ``loc`` (0: none, i.e. an implicit task)."""
        run = self._running.get(self._loc(loc))
        return run[-1][0] if run else 0

    def task_create(self, loc, t, task: int, region="!$omp task", parent: int | None = None, flags=0,
                    dependences: int = 0) -> None:
        """OMP_TASK_CREATE of task ``task`` (id > 0, unique in the process) that will execute ``region``
        (role OMP_TASK).  ``parent`` defaults to the task executing on ``loc`` (0: an implicit task)."""
        if int(task) <= 0:
            raise BuilderError(f"task ids are > 0 (got {task})")
        rid = self._region_id(region)
        self._task_region[(self._process(loc), int(task))] = rid
        par = self.running_task(loc) if parent is None else int(parent)
        self.event(loc, t, EventType.OMP_TASK_CREATE, int(flags), a=rid, c=int(dependences), d=int(task), e=par)

    def task_begin(self, loc, t, task: int, region=None, resume: bool = False) -> None:
        """A fragment of ``task`` begins on ``loc``: ENTER(task region), OMP_TASK_BEGIN.  The region defaults
        to the one the task was created with."""
        if region is None:
            rid = self._task_region.get((self._process(loc), int(task)))
            if rid is None:
                raise BuilderError(f"task_begin of task {task} at {t}: not created in this process; pass region=")
        else:
            rid = self._region_id(region)
        self.enter(loc, t, rid)
        how = TaskSwitch.RESUME if resume else TaskSwitch.START
        self.event(loc, t, EventType.OMP_TASK_BEGIN, a=rid, c=int(how), d=int(task))
        self._running.setdefault(loc, []).append((int(task), rid))

    def task_end(self, loc, t, task: int | None = None, status: TaskSwitch = TaskSwitch.COMPLETE) -> None:
        """The innermost fragment on ``loc`` ends (COMPLETE, SUSPEND, ...): OMP_TASK_END, EXIT(task region)."""
        run = self._running.get(self._loc(loc))
        if not run:
            raise BuilderError(f"task_end on location {loc} at {t}: no task fragment is open")
        cur, rid = run[-1]
        if task is not None and int(task) != cur:
            raise BuilderError(f"task_end of task {task} on location {loc} at {t}: the innermost task is {cur}")
        run.pop()
        self.event(loc, t, EventType.OMP_TASK_END, a=rid, c=int(status), d=cur)
        self.exit(loc, t, rid)

    def task_run(self, loc, t_begin, t_end, task: int, region=None) -> None:
        """One whole fragment that starts and completes ``task``."""
        self.task_begin(loc, t_begin, task, region)
        self.task_end(loc, t_end, task)

    def task_dependence(self, loc, t, predecessor: int, successor: int) -> None:
        """OMP_TASK_DEPENDENCE: ``successor`` may not start before ``predecessor`` completed."""
        self.event(loc, t, EventType.OMP_TASK_DEPENDENCE, d=int(predecessor), e=int(successor))

    # ---- threads (format 2.1) -----------------------------------------------------------------
    def thread_create(self, loc, t, thread: int) -> None:
        """THREAD_CREATE of thread ``thread`` (id > 0, unique in the process), inside ``pthread_create``."""
        if int(thread) <= 0:
            raise BuilderError(f"thread ids are > 0 (got {thread})")
        self.event(loc, t, EventType.THREAD_CREATE, d=int(thread))

    def thread_begin(self, loc, t, thread: int) -> None:
        """THREAD_BEGIN: the first event of thread ``thread``'s lifetime on ``loc``."""
        self.event(loc, t, EventType.THREAD_BEGIN, d=int(thread))

    def thread_end(self, loc, t, thread: int) -> None:
        """THREAD_END: the last event of thread ``thread``'s lifetime on ``loc``."""
        self.event(loc, t, EventType.THREAD_END, d=int(thread))

    def thread_join(self, loc, t, thread: int) -> None:
        """THREAD_JOIN: ``loc`` has joined thread ``thread`` (inside ``pthread_join``)."""
        self.event(loc, t, EventType.THREAD_JOIN, d=int(thread))

    def file_io(self, loc, t, nbytes: int, flags) -> None:
        """MPI_FILE_IO (2.2): a file read or write of ``nbytes`` inside the MPI_File_* call open on ``loc``;
        ``flags``: :class:`~tracefmt.layout.FileIoFlag` (READ or WRITE, COLLECTIVE, NONBLOCKING)."""
        self.event(loc, t, EventType.MPI_FILE_IO, flags=int(flags), d=int(nbytes))

    def _window_id(self, window) -> int:
        if window not in self.defs.windows:
            raise BuilderError(f"unknown window {window}; create it with b.window(comm)")
        return int(window)

    def rma_put(self, loc, t, window, target: int, nbytes: int, flags=0) -> None:
        """MPI_RMA_PUT (2.3): ``nbytes`` put into ``target``'s part of ``window``, inside the MPI_Put open on ``loc``
        (flags: :class:`~tracefmt.layout.RmaFlag`)."""
        self.event(loc, t, EventType.MPI_RMA_PUT, flags=int(flags), a=self._window_id(window), b=int(target),
                   d=int(nbytes))

    def rma_get(self, loc, t, window, target: int, nbytes: int, flags=0) -> None:
        """MPI_RMA_GET (2.3): ``nbytes`` read from ``target``'s part of ``window``."""
        self.event(loc, t, EventType.MPI_RMA_GET, flags=int(flags), a=self._window_id(window), b=int(target),
                   d=int(nbytes))

    def rma_atomic(self, loc, t, window, target: int, op=RmaAtomic.ACCUMULATE, sent: int = 0, recvd: int = 0,
                   flags=0) -> None:
        """MPI_RMA_ATOMIC (2.3): an accumulating operation (:class:`~tracefmt.layout.RmaAtomic`) on ``target``."""
        self.event(loc, t, EventType.MPI_RMA_ATOMIC, flags=int(flags), a=self._window_id(window), b=int(target),
                   c=int(RmaAtomic(op)), d=int(sent), e=int(recvd))

    def rma_sync(self, loc, t, window, kind, target: int | None = None, group=None, flags=0) -> None:
        """MPI_RMA_SYNC (2.3) of ``kind`` (:class:`~tracefmt.layout.RmaSync`) inside the MPI_Win_* call open on
        ``loc``: ``group`` (a list of global ranks) for POST, START, COMPLETE, WAIT and TEST, ``target`` for
        LOCK, UNLOCK and FLUSH (None: MPI_Win_flush_all); flags: :class:`~tracefmt.layout.RmaSyncFlag`."""
        kind = RmaSync(kind)
        if kind in RMA_GROUP_SYNCS:
            if group is None:
                raise BuilderError(f"MPI_RMA_SYNC {kind.name} needs the group of ranks it names")
            b = self.group(group)
        elif kind in (RmaSync.LOCK, RmaSync.UNLOCK) and target is None:
            raise BuilderError(f"MPI_RMA_SYNC {kind.name} needs its target rank")
        else:
            b = _id(target)
        self.event(loc, t, EventType.MPI_RMA_SYNC, flags=int(flags), a=self._window_id(window), b=b, c=int(kind))

    def rma_call(self, loc, t_enter, t_exit, region, window, kind, target: int | None = None, group=None,
                 flags=0) -> None:
        """A whole window synchronisation call: ENTER(region), MPI_RMA_SYNC at ``t_exit``, EXIT."""
        self.enter(loc, t_enter, region)
        self.rma_sync(loc, t_exit, window, kind, target=target, group=group, flags=flags)
        self.exit(loc, t_exit, region)

    def counter(self, loc, t, metric, value) -> None:
        """A counter reading (metric name or id); doubles are stored as their IEEE bits."""
        mid = self.metric(metric) if isinstance(metric, str) else int(metric)
        if mid not in self.defs.metrics:
            raise BuilderError(f"unknown metric {metric}")
        if self.defs.metrics[mid].dtype == MetricDtype.DOUBLE:
            (bits,) = struct.unpack("<Q", struct.pack("<d", float(value)))
        else:
            bits = int(value)
        self.event(loc, t, EventType.COUNTER, a=mid, d=bits)

    # ------------------------------------------------------------------ output
    def definitions(self) -> Definitions:
        """The definitions as they will be written (world communicator filled in)."""
        if self._world is not None and not self._explicit_world:
            ranks = tuple(sorted(self.defs.processes))
            w = self.defs.comms[self._world]
            self.defs.groups[w.group] = ranks
            self.defs.comms[self._world] = Comm(w.id, w.group, w.name, w.parent, ranks)
        return self.defs

    def records(self, loc: int) -> np.ndarray:
        """The event records of one location as a structured array of ``layout.EVENT_DTYPE``."""
        rows = self._events[self._loc(loc)]
        try:
            return np.array(rows, dtype=layout.EVENT_DTYPE)
        except OverflowError as e:
            raise BuilderError(f"an event field of location {loc} is out of range: {e}") from None

    def write(self, path, **kw) -> None:
        with TraceWriter(path, creator=self.creator, **kw) as w:
            w.write_definitions(self.definitions())
            for loc in sorted(self._events):
                w.write_events(loc, self.records(loc))

    def to_bytes(self, **kw) -> bytes:
        buf = io.BytesIO()
        self.write(buf, **kw)
        return buf.getvalue()

    def build(self, **kw):
        """The trace as :func:`tracefmt.open` returns it, after a round trip through the file format."""
        from .reader import Trace

        return Trace(self.to_bytes(**kw))
