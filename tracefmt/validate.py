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
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from .layout import ANY, NO_ID, EventType, Role
from .plausible import definition_warnings
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


class _Validator:
    def __init__(self, trace, max_problems):
        self.trace = trace
        self.defs = trace.defs
        self.max = max_problems
        self.problems: list[Problem] = []
        # cross-location state
        self.sends = defaultdict(list)  # (comm, src, dst, tag) -> [(loc, idx, time)]
        self.recvs = defaultdict(list)
        self.colls = defaultdict(lambda: defaultdict(list))  # comm -> rank -> [(region, root, loc, idx, time)]
        self.team_members = defaultdict(list)  # (process, team) -> [(loc, thread_num, idx, time)]
        self.team_size = {}  # (process, team) -> size from the fork
        self.team_barriers = defaultdict(lambda: defaultdict(int))  # (process, team) -> loc -> count
        self.acquisitions = defaultdict(list)  # (process, lock) -> [(order, loc, acq_idx, acq_t, rel_t)]
        self.fast_path_events = FAST_PATH_EVENTS
        self.tasks = TaskChecks(self.defs, self.add)  # tasks and threads (2.1)
        self.rma = RmaChecks(self.defs, self.add)  # MPI one-sided communication (2.3)
        self.region_ids = np.array(sorted(self.defs.regions), dtype=np.int64)
        self.parallel_ids = np.array(
            sorted(r.id for r in self.defs.regions.values() if r.role == Role.OMP_PARALLEL), dtype=np.int64
        )

    def add(self, msg, loc=None, idx=None, t=None):
        self.problems.append(Problem(msg, loc, idx, None if t is None else float(t)))
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
            for loc in self.trace.location_ids.tolist():
                self.check_location(loc)
            self.check_messages()
            self.check_collectives()
            self.check_teams()
            self.check_locks()
            self.tasks.finish()
            self.rma.finish()
        except _Enough:
            pass
        return self.problems

    # ------------------------------------------------------------------ per location
    def check_location(self, loc: int) -> None:
        ev = self.trace.events(loc)
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
        sub = ev if index is None else ev[index]
        positions = range(len(ev)) if index is None else index.tolist()
        cols = zip(
            positions, sub.type.tolist(), sub.a.tolist(), sub.b.tolist(), sub.c.tolist(), sub.d.tolist(),
            sub.e.tolist(), sub.time.tolist(),
        )
        for i, typ, a, b, c, dd, e, t in cols:
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
                        self.team_members[(process, c)].append((loc, dd, i, t))
                if nesting:
                    stack.append((a, i))
            elif typ in (EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT):
                kind = EventType(typ).name
                if typ == EventType.MPI_COLLEXIT:
                    self.collexit(loc, i, t, process, a, b, c)
                elif typ == EventType.OMP_COLLEXIT:
                    self.team_barriers[(process, b)][loc] += 1
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
                    self.sends[(b, process, a, c)].append((loc, i, t))
                    if e:
                        if e in requests:
                            self.add(f"request {e} reused while still live (from event {requests[e][1]})", loc, i, t)
                        requests[e] = ("send", i)
                else:
                    self.recvs[(b, a, process, c)].append((loc, i, t))
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
                if (process, a) in self.team_size:
                    self.add(f"team id {a} used by an earlier fork of this process", loc, i, t)
                self.team_size[(process, a)] = c
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
                    self.acquisitions[(process, a)].append((h[0], loc, h[1], h[2], t))
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
            self.acquisitions[(process, lock)].append((order, loc, at, t0, float("inf")))
        self.tasks.end_location(loc, end, t_end)

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
        self.colls[comm_id][process].append((region, root, loc, i, t))

    # ------------------------------------------------------------------ across locations
    def check_messages(self) -> None:
        for key in sorted(set(self.sends) | set(self.recvs)):
            comm, src, dst, tag = key
            sends, recvs = self.sends.get(key, []), self.recvs.get(key, [])
            for (sl, si, st), (rl, ri, rt) in zip(sends, recvs):
                if rt < st:
                    self.add(
                        f"clock condition violated: receive from rank {src} (tag {tag}) completes "
                        f"{st - rt:.9f} s before its send started (location {sl}, event {si} at {st:.9f} s)",
                        rl, ri, rt,
                    )
            for sl, si, st in sends[len(recvs):]:
                self.add(f"send to rank {dst} (tag {tag}, comm {comm}) has no matching receive", sl, si, st)
            for rl, ri, rt in recvs[len(sends):]:
                self.add(f"receive from rank {src} (tag {tag}, comm {comm}) has no matching send", rl, ri, rt)

    def check_collectives(self) -> None:
        for comm_id, by_rank in sorted(self.colls.items()):
            comm = self.defs.comms[comm_id]
            n = max(len(v) for v in by_rank.values())
            for rank in comm.ranks:
                mine = by_rank.get(rank, ())
                have = len(mine)
                if have < n:
                    # point at the rank's last completed collective on this comm, if any
                    loc, i, t = (mine[-1][2], mine[-1][3], mine[-1][4]) if mine else (self.master_of(rank), None, None)
                    self.add(
                        f"rank {rank} completes {have} collectives on {comm.name!r}, other members {n}: "
                        f"instances {have}..{n - 1} are incomplete",
                        loc, i, t,
                    )
            for k in range(n):
                inst = [(rank, v[k]) for rank, v in sorted(by_rank.items()) if k < len(v)]
                (r0, (reg0, root0, *_)) = inst[0]
                for rank, (reg, root, loc, i, t) in inst[1:]:
                    if reg != reg0:
                        self.add(
                            f"collective instance {k} on {comm.name!r} is {self.region_name(reg)} here "
                            f"but {self.region_name(reg0)} on rank {r0}",
                            loc, i, t,
                        )
                    elif root != root0:
                        self.add(
                            f"collective instance {k} on {comm.name!r} has root {root} here but {root0} on rank {r0}",
                            loc, i, t,
                        )

    def check_teams(self) -> None:
        for key, members in sorted(self.team_members.items()):
            process, team = key
            size = self.team_size.get(key)
            if size is None:
                loc, _, i, t = members[0]
                self.add(f"parallel region of team {team}, which no thread of process {process} forked", loc, i, t)
                continue
            nums = [m[1] for m in members]
            for loc, num, i, t in members:
                if num >= size:
                    self.add(f"thread number {num} in team {team} of size {size}", loc, i, t)
            if len(set(nums)) != len(nums):
                loc, _, i, t = members[-1]
                self.add(f"team {team} of process {process} has repeated thread numbers {sorted(nums)}", loc, i, t)
            counts = self.team_barriers.get(key, {})
            per_member = {m[0]: counts.get(m[0], 0) for m in members}
            if len(set(per_member.values())) > 1:
                detail = ", ".join(f"location {loc}: {c}" for loc, c in sorted(per_member.items()))
                fewest = min(per_member, key=lambda loc: (per_member[loc], loc))
                self.add(
                    f"members of team {team} of process {process} pass different numbers of barriers ({detail})",
                    fewest,
                )

    def check_locks(self) -> None:
        for (process, lock), acq in sorted(self.acquisitions.items()):
            acq.sort(key=lambda x: x[0])
            orders = [a[0] for a in acq]
            if orders != list(range(1, len(acq) + 1)):
                order, loc, i, t, _ = acq[0]
                self.add(
                    f"acquisition orders of lock {lock} in process {process} are {orders[:10]}"
                    f"{'...' if len(orders) > 10 else ''}, not 1..{len(acq)}",
                    loc, i, t,
                )
                continue
            for prev, cur in zip(acq, acq[1:]):
                if cur[3] < prev[4]:
                    self.add(
                        f"lock {lock} acquired (order {cur[0]}) before its previous holder, location {prev[1]}, "
                        f"released it at {prev[4]:.9f} s",
                        cur[1], cur[2], cur[3],
                    )


__all__ = ["Problem", "validate", "ANY"]
