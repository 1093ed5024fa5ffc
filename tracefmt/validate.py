"""Semantic checks of a trace: what a correct measurement always produces.

``validate(trace)`` returns every :class:`Problem` found (an empty list for a
clean trace).  Checks:

* the definitions' plausibility (:mod:`tracefmt.plausible`: tick rates, clock
  offsets and drift, dense location ids, process ids that can be MPI ranks);
* per location: known event types, non-decreasing time, ENTER/EXIT nesting
  (every exit names the innermost open region, nothing is left open),
  defined regions, communicators, locks and metrics;
* point-to-point: every receive has its send and every send its receive,
  matched in order per (communicator, sender, receiver, tag) as MPI's
  non-overtaking rule demands; the clock condition (no receive completes
  before its send started); non-blocking requests posted, completed once;
* MPI collectives: per communicator, every member completes every instance,
  with the same operation and root, and no non-member takes part;
* OpenMP: forks joined, team members with distinct thread numbers within the
  team size, every member passing the same number of team barriers;
* locks: released only by the holder, acquisition orders 1..n per
  (process, lock), each acquisition after the previous release;
* OpenMP tasks and threads (format 2.1): :mod:`tracefmt.validate_tasks`;
* MPI one-sided communication (format 2.3): :mod:`tracefmt.validate_rma`.

The nesting check of long event streams is a numba kernel
(:mod:`tracefmt.kernels`); the remaining checks run in Python over the
events that are not plain ENTER/EXIT (MPI, OpenMP, lock and counter events).
Defects fall back to the full Python walk, which words every problem.
Locations are decoded one at a time into one reused set of columns, and what
the checks across locations need is kept as packed rows
(:mod:`tracefmt.validate_across`), so memory is the largest location plus
those rows, not the trace.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import chain

import numpy as np

from .layout import ANY, NO_ID, EventType, Role
from .plausible import definition_warnings
from .validate_across import WALK_CHUNK, AcrossLocations, Rows
from .reader import Events
from .validate_tasks import TYPES as _TASK_THREAD_TYPES
from .validate_tasks import TaskChecks
from .validate_rma import TYPES as _RMA_TYPES
from .validate_rma import RmaChecks

_KNOWN_TYPES = frozenset(int(t) for t in EventType)
#: locations with at least this many events get the jitted nesting check, and
#: the Python loop then visits only the events that are not plain ENTER/EXIT
FAST_PATH_EVENTS = 1 << 15
_EXIT_CODES = np.array([int(t) for t in (EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT)], np.uint8)
_COLLECTIVE_ROLES = frozenset(
    {
        Role.MPI_COLL_BARRIER,
        Role.MPI_COLL_ONE2ALL,
        Role.MPI_COLL_ALL2ONE,
        Role.MPI_COLL_ALL2ALL,
        Role.MPI_COLL_OTHER,
    }
)


@dataclass(frozen=True)
class Problem:
    """One violation; location/index/time are None for file-level problems."""

    message: str
    location: int | None = None
    index: int | None = None  # event index within the location
    time: float | None = None  # global seconds

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        where = f"location {self.location}"
        if self.index is not None:
            where += f", event {self.index}"
        if self.time is not None:
            where += f" at {self.time:.9f} s"
        return f"{where}: {self.message}"


def validate(trace, max_problems: int | None = None, fast_path_events: int | None = None) -> list[Problem]:
    """Every problem of `trace` (a :class:`tracefmt.Trace`), file-level ones first.

    `fast_path_events` overrides :data:`FAST_PATH_EVENTS` (0: always use the
    jitted nesting check; a huge number: never); the result is the same.
    """
    v = _Validator(trace, max_problems)
    if fast_path_events is not None:
        v.fast_path_events = fast_path_events
    return v.run()


class _Enough(Exception):
    pass


def _event_tuples(ev, index):
    """(index, type, a, b, c, d, e, time) of every event, or of the events at `index`, made a chunk at a time."""
    n = len(ev) if index is None else len(index)

    def chunk(s):
        sel = slice(s, s + WALK_CHUNK) if index is None else index[s : s + WALK_CHUNK]
        pos = range(s, min(n, s + WALK_CHUNK)) if index is None else sel.tolist()
        return zip(pos, ev.type[sel].tolist(), ev.a[sel].tolist(), ev.b[sel].tolist(), ev.c[sel].tolist(),
                   ev.d[sel].tolist(), ev.e[sel].tolist(), ev.time[sel].tolist())

    return chain.from_iterable(map(chunk, range(0, n, WALK_CHUNK)))


class _Validator(AcrossLocations):
    def __init__(self, trace, max_problems):
        self.trace = trace
        self.defs = trace.defs
        self.max = max_problems
        self.problems: list[Problem] = []
        # cross-location state: packed rows in the order the walk meets them (locations in id order)
        self.message_keys: dict[tuple[int, int, int, int], int] = {}  # (comm, src, dst, tag) -> key number
        self.sends = Rows(key=np.uint32, loc=np.uint32, idx=np.int64, t=np.float64)
        self.recvs = Rows(key=np.uint32, loc=np.uint32, idx=np.int64, t=np.float64)
        self.colls = Rows(comm=np.uint32, rank=np.uint32, region=np.uint32, root=np.uint32, loc=np.uint32,
                           idx=np.int64, t=np.float64)
        self.team_members = Rows(process=np.uint32, team=np.uint32, loc=np.uint32, num=np.uint64, idx=np.int64,
                                  t=np.float64)
        self.forks = Rows(process=np.uint32, team=np.uint32, size=np.uint32)  # team sizes; the last fork counts
        self.forked: dict[int, np.ndarray] = {}  # process -> sorted teams forked on the locations already walked
        self.team_barriers = Rows(team=np.uint32, loc=np.uint32, count=np.int64)  # OMP_COLLEXITs per location
        self.acquisitions = Rows(process=np.uint32, lock=np.uint32, order=np.uint64, loc=np.uint32, idx=np.int64,
                                  acq_t=np.float64, rel_t=np.float64)
        self.fast_path_events = FAST_PATH_EVENTS
        self.held: dict[str, dict[int, list[Problem]]] = {"teams": {}, "locks": {}}  # kind -> process -> problems
        self.holding: str | None = None
        self.process_of_problem = None
        self.tasks = TaskChecks(self.defs, self.add)  # tasks and threads (2.1)
        self.rma = RmaChecks(self.defs, self.add)  # MPI one-sided communication (2.3)
        self.region_ids = np.array(sorted(self.defs.regions), dtype=np.int64)
        self.parallel_ids = np.array(
            sorted(r.id for r in self.defs.regions.values() if r.role == Role.OMP_PARALLEL), dtype=np.int64
        )

    def add(self, msg, loc=None, idx=None, t=None):
        problem = Problem(msg, loc, idx, None if t is None else float(t))
        if self.holding is not None:  # a process-local check run early: its problems wait for their turn
            kept = self.held[self.holding].setdefault(self.process_of_problem, [])
            if self.max is None or len(kept) < self.max:
                kept.append(problem)
            return
        self.problems.append(problem)
        if self.max is not None and len(self.problems) >= self.max:
            raise _Enough

    def about(self, process) -> None:
        """The process whose problems the check words next (for the problems held back)."""
        self.process_of_problem = process

    def check_processes_done(self) -> None:
        """The team and lock checks (each within one process) over the processes whose locations are all walked.

        Their rows are then released, so they need memory for these processes only; their problems are
        held and reported after the messages' and collectives', in process order, as if checked at the end.
        """
        self.holding = "teams"
        self.check_teams()
        self.holding = "locks"
        self.check_locks()
        self.holding = None
        self.forked.clear()

    def _release_held(self) -> None:
        for kind in ("teams", "locks"):
            for process in sorted(self.held[kind]):
                for problem in self.held[kind].pop(process):
                    self.problems.append(problem)
                    if self.max is not None and len(self.problems) >= self.max:
                        raise _Enough

    def master_of(self, rank: int) -> int | None:
        """The location of thread 0 of a process (or its first location), None if it has none."""
        locs = sorted((L.thread, L.id) for L in self.defs.locations.values() if L.process == rank)
        return locs[0][1] if locs else None

    def region_name(self, rid) -> str:
        r = self.defs.regions.get(rid)
        return repr(r.name) if r else f"<undefined region {rid}>"

    def run(self) -> list[Problem]:
        try:
            for p in self.trace.problems:
                self.add(p)
            for p in definition_warnings(self.defs):
                self.add(p)
            locations = self.trace.location_ids.tolist()
            buffer = None  # one set of columns reused for every location: memory of the largest one
            if hasattr(self.trace, "decode_into") and locations:
                buffer = self.trace.new_column_buffer(max(self.trace.n_events(loc) for loc in locations))
            left = Counter(self.defs.locations[loc].process for loc in locations)  # locations still to walk
            open_processes = set()  # processes with locations walked and locations left
            for loc in locations:
                self.check_location(loc, buffer)
                process = self.defs.locations[loc].process
                left[process] -= 1
                (open_processes.add if left[process] else open_processes.discard)(process)
                if not open_processes:
                    self.check_processes_done()
            del buffer
            self.check_messages()
            self.check_collectives()
            self.check_processes_done()
            self._release_held()
            self.tasks.finish()
            self.rma.finish()
        except _Enough:
            pass
        return self.problems

    # ------------------------------------------------------------------ per location
    def check_location(self, loc: int, buffer=None) -> None:
        if buffer is None:
            ev = self.trace.events(loc)
        else:
            self.trace.check_location(loc)
            ev = Events(loc, **self.trace.decode_into(loc, buffer))
        if len(ev) == 0:
            return
        back = np.flatnonzero(ev.ticks[1:] < ev.ticks[:-1]) + 1
        for i in back.tolist():
            self.add("time goes backwards (earlier than the event before)", loc, i, ev.time[i])
        index = None
        if len(ev) >= self.fast_path_events:
            index = self._events_beyond_nesting(ev)
        self._walk(loc, ev, index)

    def _events_beyond_nesting(self, ev):
        """Indices of the events the Python walk must see, or None if it must see all.

        When the jitted check finds the nesting intact and every ENTER/EXIT
        names a defined region, plain ENTER/EXIT events (of regions other
        than parallel regions, which carry team bookkeeping) need no more
        checks.  On any defect the full walk runs and words the problem.
        """
        from .kernels import first_nesting_error

        if first_nesting_error(ev.type, ev.a, np.uint8(EventType.ENTER), _EXIT_CODES) != -1:
            return None
        plain = (ev.type == EventType.ENTER) | (ev.type == EventType.EXIT)
        if not np.isin(ev.a[plain], self.region_ids).all():
            return None
        plain &= ~np.isin(ev.a, self.parallel_ids)
        return np.flatnonzero(~plain)

    def _walk(self, loc: int, ev, index) -> None:
        """The per-event checks over all events, or over `index` with nesting already verified."""
        d = self.defs
        process = d.locations[loc].process
        nesting = index is None
        stack: list[tuple[int, int]] = []  # (region, event index)
        teams: list[int] = []  # teams of the parallel regions this location is in
        forks: list[tuple[int, int]] = []  # (team, idx) forked here and not joined
        requests: dict[int, tuple[str, int]] = {}  # live request id -> (kind, idx)
        held: dict[int, tuple[int, int, float]] = {}  # lock -> (order, idx, time)
        forked_here: set[int] = set()  # teams forked on this location
        barriers: Counter = Counter()  # team -> OMP_COLLEXITs on this location
        for i, typ, a, b, c, dd, e, t in _event_tuples(ev, index):
            if typ not in _KNOWN_TYPES:
                self.add(f"unknown event type {typ}", loc, i, t)
                continue
            if typ == EventType.ENTER:
                r = d.regions.get(a)
                if r is None:
                    self.add(f"ENTER of undefined region {a}", loc, i, t)
                elif r.role == Role.OMP_PARALLEL:
                    if c == NO_ID:
                        self.add(f"ENTER of parallel region {r.name!r} without a team id", loc, i, t)
                    else:
                        teams.append(c)
                        self.team_members.add(process, c, loc, dd, i, t)
                if nesting:
                    stack.append((a, i))
            elif typ in (EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT):
                kind = EventType(typ).name
                if typ == EventType.MPI_COLLEXIT:
                    self.collexit(loc, i, t, process, a, b, c)
                elif typ == EventType.OMP_COLLEXIT:
                    barriers[b] += 1
                    if b not in teams:
                        self.add(f"OMP_COLLEXIT for team {b}, but the location is not in that team", loc, i, t)
                if not nesting:  # verified by the kernel: only the team bookkeeping is left
                    r = d.regions.get(a)
                    if r is not None and r.role == Role.OMP_PARALLEL and teams:
                        teams.pop()
                elif not stack:
                    self.add(f"{kind} of region {self.region_name(a)} but no region is open", loc, i, t)
                elif stack[-1][0] != a:
                    top, at = stack[-1]
                    self.add(
                        f"{kind} names region {self.region_name(a)} but the innermost open region is "
                        f"{self.region_name(top)} (entered at event {at})",
                        loc, i, t,
                    )
                    # resynchronise: if the named region is open further down, close up to it
                    depth = [s[0] for s in stack]
                    if a in depth:
                        k = len(depth) - 1 - depth[::-1].index(a)
                        del stack[k:]
                else:
                    stack.pop()
                    r = d.regions.get(a)
                    if r is not None and r.role == Role.OMP_PARALLEL and teams:
                        teams.pop()
            elif typ in (EventType.MPI_SEND, EventType.MPI_RECV):
                comm = d.comms.get(b)
                if comm is None:
                    self.add(f"{EventType(typ).name} on undefined communicator {b}", loc, i, t)
                    continue
                if a not in comm.ranks:
                    role = "destination" if typ == EventType.MPI_SEND else "source"
                    self.add(f"{role} rank {a} is not in communicator {comm.name!r}", loc, i, t)
                if typ == EventType.MPI_SEND:
                    self.sends.add(self.message_key(b, process, a, c), loc, i, t)
                    if e:
                        if e in requests:
                            self.add(f"request {e} reused while still live (from event {requests[e][1]})", loc, i, t)
                        requests[e] = ("send", i)
                else:
                    self.recvs.add(self.message_key(b, a, process, c), loc, i, t)
                    if e:
                        if requests.get(e, ("",))[0] != "recv":
                            self.add(f"receive completes request {e}, which was never posted", loc, i, t)
                        else:
                            del requests[e]
            elif typ == EventType.MPI_RECV_REQUEST:
                if b not in d.comms:
                    self.add(f"receive request on undefined communicator {b}", loc, i, t)
                if e in requests:
                    self.add(f"request {e} reused while still live (from event {requests[e][1]})", loc, i, t)
                requests[e] = ("recv", i)
            elif typ == EventType.MPI_SEND_COMPLETE:
                if requests.get(e, ("",))[0] != "send":
                    self.add(f"send completion of request {e}, which is no live send request", loc, i, t)
                else:
                    del requests[e]
            elif typ == EventType.MPI_REQUEST_CANCELLED:
                if e not in requests:
                    self.add(f"cancellation of request {e}, which is not live", loc, i, t)
                else:
                    del requests[e]
            elif typ == EventType.OMP_FORK:
                if any(team == a for team, _ in forks):
                    self.add(f"team {a} forked again before it was joined", loc, i, t)
                if a in forked_here or self.forked_before(process, a):
                    self.add(f"team id {a} used by an earlier fork of this process", loc, i, t)
                forked_here.add(a)
                self.forks.add(process, a, c)
                forks.append((a, i))
            elif typ == EventType.OMP_JOIN:
                if not forks or forks[-1][0] != a:
                    self.add(f"join of team {a}, which is not the innermost team forked here", loc, i, t)
                    forks = [f for f in forks if f[0] != a]
                else:
                    forks.pop()
            elif typ == EventType.OMP_ACQUIRE_LOCK:
                if a not in d.locks:
                    self.add(f"acquisition of undefined lock {a}", loc, i, t)
                if a in held:
                    self.add(f"lock {a} acquired again while held since event {held[a][1]}", loc, i, t)
                held[a] = (dd, i, t)
            elif typ == EventType.OMP_RELEASE_LOCK:
                h = held.pop(a, None)
                if h is None:
                    self.add(f"release of lock {a}, which this location does not hold", loc, i, t)
                else:
                    if h[0] != dd:
                        self.add(f"release of lock {a} with order {dd}, acquired with order {h[0]}", loc, i, t)
                    self.acquisitions.add(process, a, h[0], loc, h[1], h[2], t)
            elif typ in _TASK_THREAD_TYPES:
                self.tasks.event(loc, process, ev, i, typ, a, c, dd, e, t, len(stack) if nesting else None)
            elif typ in _RMA_TYPES:
                self.rma.event(loc, process, i, typ, a, b, c, t, (stack[-1][0] if stack else NO_ID) if nesting else None)
            elif typ == EventType.COUNTER:
                if a not in d.metrics:
                    self.add(f"value of undefined metric {a}", loc, i, t)
        end = len(ev) - 1
        t_end = ev.time[end]
        for rid, at in reversed(stack):
            self.add(f"region {self.region_name(rid)} entered at event {at} is never left", loc, end, t_end)
        for team, at in forks:
            self.add(f"team {team} forked at event {at} is never joined", loc, end, t_end)
        for req, (kind, at) in requests.items():
            self.add(f"{kind} request {req} posted at event {at} is never completed", loc, end, t_end)
        for lock, (order, at, t0) in held.items():
            self.add(f"lock {lock} acquired at event {at} is never released", loc, end, t_end)
            self.acquisitions.add(process, lock, order, loc, at, t0, float("inf"))
        self.tasks.end_location(loc, end, t_end)
        for team, n in barriers.items():
            self.team_barriers.add(team, loc, n)
        if forked_here:
            before = self.forked.get(process, np.zeros(0, np.uint32))
            self.forked[process] = np.union1d(before, np.fromiter(forked_here, np.uint32, len(forked_here)))

    def message_key(self, comm, src, dst, tag) -> int:
        key = (comm, src, dst, tag)
        k = self.message_keys.get(key)
        if k is None:
            k = self.message_keys[key] = len(self.message_keys)
        return k

    def forked_before(self, process, team) -> bool:
        """Whether a location walked before this one forked `team` in `process`."""
        teams = self.forked.get(process)
        if teams is None:
            return False
        j = int(np.searchsorted(teams, team))
        return j < len(teams) and int(teams[j]) == team

    def collexit(self, loc, i, t, process, region, comm_id, root):
        d = self.defs
        comm = d.comms.get(comm_id)
        if comm is None:
            self.add(f"collective on undefined communicator {comm_id}", loc, i, t)
            return
        if process not in comm.ranks:
            self.add(f"rank {process} takes part in a collective on {comm.name!r}, which it is not in", loc, i, t)
            return
        if root != NO_ID and root not in comm.ranks:
            self.add(f"collective root {root} is not in communicator {comm.name!r}", loc, i, t)
        r = d.regions.get(region)
        if r is not None and r.role not in _COLLECTIVE_ROLES:
            self.add(f"MPI_COLLEXIT of {r.name!r}, which is no MPI collective", loc, i, t)
        self.colls.add(comm_id, process, region, root, loc, i, t)


__all__ = ["Problem", "validate", "ANY"]
