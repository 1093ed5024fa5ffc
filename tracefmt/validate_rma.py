"""Checks of MPI one-sided communication events (format 2.3, docs/format.md §6.3), for :mod:`tracefmt.validate`.

Per event: the window is defined (and its communicator), targets and group members are ranks of the window's
communicator, the event lies inside an MPI call (the one that made it), the RmaSync kind is known.  Per
location and window: CREATE before anything else and nothing after FREE, START..COMPLETE and POST..WAIT/TEST
alternate, LOCK..UNLOCK of one target alternate (LOCK_ALL..UNLOCK_ALL likewise).  Across processes: every
process of a window's communicator makes the same sequence of collective synchronisations (CREATE, FENCE,
FREE) on it, and for every origin and target the STARTs of the origin naming the target are as many as the
POSTs of the target naming the origin (MPI pairs them in order).
"""

from __future__ import annotations

from collections import defaultdict

from .layout import NO_ID, RMA_COLLECTIVE_SYNCS, RMA_GROUP_SYNCS, EventType, Paradigm, RmaSync

TYPES = frozenset(int(t) for t in (EventType.MPI_RMA_PUT, EventType.MPI_RMA_GET, EventType.MPI_RMA_ATOMIC,
                                   EventType.MPI_RMA_SYNC))
_KINDS = frozenset(int(k) for k in RmaSync)
_COLLECTIVE = frozenset(int(k) for k in RMA_COLLECTIVE_SYNCS)
_GROUP = frozenset(int(k) for k in RMA_GROUP_SYNCS)


class RmaChecks:
    def __init__(self, defs, add):
        self.defs = defs
        self.add = add
        self.state = {}  # (loc, window) -> dict of open epochs
        self.created = defaultdict(set)  # process -> windows it created
        self.first_use = {}  # (process, window) -> (loc, idx, time) of the first event on it
        self.colls = defaultdict(lambda: defaultdict(list))  # window -> process -> [(kind, loc, idx, time)]
        self.starts = defaultdict(int)  # (window, origin, target) -> STARTs
        self.posts = defaultdict(int)  # (window, origin, target) -> POSTs

    def event(self, loc, process, i, typ, a, b, c, t, innermost) -> None:
        """One RMA event; ``innermost``: the region open at it (NO_ID: none; None: not known here)."""
        d = self.defs
        win = d.windows.get(a)
        name = EventType(typ).name
        if win is None:
            self.add(f"{name} on undefined window {a}", loc, i, t)
            return
        comm = d.comms.get(win.comm)
        if comm is None:
            self.add(f"window {a} refers to undefined communicator {win.comm}", loc, i, t)
            return
        if innermost == NO_ID:
            self.add(f"{name} outside every region (it belongs inside the MPI call that made it)", loc, i, t)
        elif innermost is not None:
            r = d.regions.get(innermost)
            if r is not None and r.paradigm != Paradigm.MPI:
                self.add(f"{name} inside {r.name!r}, which is no MPI call", loc, i, t)
        if process not in comm.ranks:
            self.add(f"{name} of rank {process} on window {a}, whose communicator {comm.name!r} it is not in",
                     loc, i, t)
        self.first_use.setdefault((process, a), (loc, i, t))
        st = self.state.setdefault((loc, a), {"freed": False, "access": None, "exposure": None, "locks": set(),
                                              "lock_all": False})
        if st["freed"]:
            self.add(f"{name} on window {a} after its MPI_Win_free", loc, i, t)
        if typ != EventType.MPI_RMA_SYNC:
            if b not in comm.ranks:
                self.add(f"{name} to target rank {b}, which is not in the window's communicator {comm.name!r}",
                         loc, i, t)
            return
        if c not in _KINDS:
            self.add(f"MPI_RMA_SYNC of unknown kind {c}", loc, i, t)
            return
        kind = RmaSync(c)
        members: tuple[int, ...] = ()
        if c in _GROUP:
            g = d.groups.get(b)
            if g is None:
                self.add(f"MPI_RMA_SYNC {kind.name} names undefined group {b}", loc, i, t)
            else:
                members = g
                outside = [r for r in g if r not in comm.ranks]
                if outside:
                    self.add(f"MPI_RMA_SYNC {kind.name} group {b} has ranks {outside[:5]} outside the window's "
                             f"communicator {comm.name!r}", loc, i, t)
        elif kind in (RmaSync.LOCK, RmaSync.UNLOCK) or (kind == RmaSync.FLUSH and b != NO_ID):
            if b not in comm.ranks:
                self.add(f"MPI_RMA_SYNC {kind.name} of target rank {b}, which is not in the window's communicator "
                         f"{comm.name!r}", loc, i, t)
        if c in _COLLECTIVE:
            self.colls[a][process].append((c, loc, i, t))
            if kind == RmaSync.CREATE:
                if a in self.created[process]:
                    self.add(f"window {a} created twice", loc, i, t)
                self.created[process].add(a)
            elif kind == RmaSync.FREE:
                st["freed"] = True
        elif kind == RmaSync.START:
            if st["access"] is not None:
                self.add(f"MPI_Win_start on window {a} while the access epoch begun at event {st['access']} is open",
                         loc, i, t)
            st["access"] = i
            for r in members:
                self.starts[(a, process, r)] += 1
        elif kind == RmaSync.COMPLETE:
            if st["access"] is None:
                self.add(f"MPI_Win_complete on window {a} without an access epoch (MPI_Win_start)", loc, i, t)
            st["access"] = None
        elif kind == RmaSync.POST:
            if st["exposure"] is not None:
                self.add(f"MPI_Win_post on window {a} while the exposure epoch posted at event {st['exposure']} is "
                         f"open", loc, i, t)
            st["exposure"] = i
            for r in members:
                self.posts[(a, r, process)] += 1
        elif kind in (RmaSync.WAIT, RmaSync.TEST):
            if st["exposure"] is None:
                self.add(f"{kind.name} on window {a} without an exposure epoch (MPI_Win_post)", loc, i, t)
            st["exposure"] = None
        elif kind == RmaSync.LOCK:
            if b in st["locks"] or st["lock_all"]:
                self.add(f"MPI_Win_lock of rank {b} on window {a}, which this location already holds", loc, i, t)
            st["locks"].add(b)
        elif kind == RmaSync.UNLOCK:
            if b not in st["locks"]:
                self.add(f"MPI_Win_unlock of rank {b} on window {a}, which this location does not hold", loc, i, t)
            st["locks"].discard(b)
        elif kind == RmaSync.LOCK_ALL:
            if st["lock_all"] or st["locks"]:
                self.add(f"MPI_Win_lock_all on window {a} while holding a lock on it", loc, i, t)
            st["lock_all"] = True
        elif kind == RmaSync.UNLOCK_ALL:
            if not st["lock_all"]:
                self.add(f"MPI_Win_unlock_all on window {a} without MPI_Win_lock_all", loc, i, t)
            st["lock_all"] = False

    def finish(self) -> None:
        d = self.defs
        for (process, a), (loc, i, t) in sorted(self.first_use.items()):
            if a not in self.created.get(process, ()):
                self.add(f"window {a} is used by rank {process} but never created there (no MPI_Win_create)",
                         loc, i, t)
        for (loc, a), st in sorted(self.state.items()):
            if st["access"] is not None:
                self.add(f"access epoch on window {a} begun at event {st['access']} is never completed", loc)
            if st["exposure"] is not None:
                self.add(f"exposure epoch on window {a} posted at event {st['exposure']} never ends "
                         f"(MPI_Win_wait / MPI_Win_test)", loc)
            if st["locks"] or st["lock_all"]:
                self.add(f"lock(s) on window {a} never released", loc)
        for a, per in sorted(self.colls.items()):
            win = d.windows[a]
            comm = d.comms.get(win.comm)
            ranks = comm.ranks if comm is not None else ()
            seqs = {r: [k for k, *_ in per.get(r, [])] for r in ranks}
            ref_rank = max(seqs, key=lambda r: (len(seqs[r]), -r), default=None)
            if ref_rank is None:
                continue
            ref = seqs[ref_rank]
            for r, seq in seqs.items():
                if seq != ref:
                    n = next((k for k in range(min(len(seq), len(ref))) if seq[k] != ref[k]), min(len(seq), len(ref)))
                    where = per[r][n][1:] if n < len(per.get(r, [])) else (per[ref_rank][n][1], None, None)
                    self.add(f"collective synchronisation {n + 1} on window {a}: rank {r} makes "
                             f"{RmaSync(seq[n]).name if n < len(seq) else 'none'}, rank {ref_rank} "
                             f"{RmaSync(ref[n]).name if n < len(ref) else 'none'}", *where)
        for key in sorted(set(self.starts) | set(self.posts)):
            if self.starts[key] != self.posts[key]:
                a, origin, target = key
                self.add(f"window {a}: rank {origin} starts {self.starts[key]} access epoch(s) to rank {target}, "
                         f"which posts {self.posts[key]} exposure epoch(s) to it")
