"""The EPILOG fix-ups that need more than one location, on event columns.

After every file of a trace is decoded (:mod:`tracefmt.epilog_decode`),
``finish_assembly`` completes what EPILOG leaves implicit, as
``foreign.EventRows`` does on per-event rows for the slow reference reader:

* OpenMP teams: numbered per process from the master thread's FORKs; a
  parallel region entered at time t belongs to the latest FORK at or before
  t; the team size is the number of distinct threads that entered it;
* lock acquisition order, counted from 1 per lock over all threads by
  (time, location); a release gets the order of the acquisition it ends;
* received byte counts (EPILOG leaves them out) from the matching send, in
  MPI's non-overtaking order per (source, destination, communicator, tag);
* times in nanosecond ticks from the earliest first event of any location.

Numpy over whole columns and the small kernels of
:mod:`tracefmt.epilog_kernels`; nothing here runs per event in Python.
"""

from __future__ import annotations

import numpy as np

from . import epilog_kernels as K
from .epilog_decode import seconds
from .epilog_records import R
from .layout import NO_ID, EventType, Role


def _teams(imp, cols: dict[int, dict]) -> None:
    a = imp.asm
    parallel = np.array(sorted(rid for rid, r in a.regions.items() if r.role == Role.OMP_PARALLEL), np.int64)
    n = imp.record_counts
    if not len(parallel) and not (n[R.OMP_FORK] or n[R.OMP_JOIN]):
        return  # no team to number and no parallel region to enter
    by_rank: dict[int, list[int]] = {}
    for i, rank in enumerate(imp.loc_rank.tolist()):
        by_rank.setdefault(rank, []).append(i)  # in our order: by thread number
    for rank, locs in by_rank.items():
        master = cols[locs[0]]
        n_teams = K.number_forks(master["type"], master["a"])
        fork_times = seconds(master)[master["type"] == int(EventType.OMP_FORK)].copy()
        members = np.zeros(n_teams, np.int64)
        threads: dict[int, np.ndarray] = {}
        for i in locs:
            ev = cols[i]
            tid = a.locations[i].thread
            entered = threads.setdefault(tid, np.zeros(n_teams, np.bool_))
            if not len(parallel):
                continue  # without parallel regions a thread enters no team (OMP_COLLEXITs keep b NO_ID)
            early = K.thread_teams(ev["type"], seconds(ev), ev["a"], ev["b"], ev["c"], ev["d"], parallel,
                                   fork_times, tid, entered)
            if early == early:
                imp.warn(f"nofork-{rank}", f"rank {rank}: parallel region entered at {early!r} before any FORK; "
                                           f"its team is left undefined")
        for entered in threads.values():
            members += entered
        size = np.where(members > 0, members, len(locs)).astype(np.uint32)
        fj = (master["type"] == int(EventType.OMP_FORK)) | (master["type"] == int(EventType.OMP_JOIN))
        team = master["a"][fj].astype(np.int64)
        c = master["c"][fj]
        unset = (c == 0) | (c == NO_ID)
        known = team != NO_ID
        c[unset & known] = size[team[unset & known]]
        c[unset & ~known] = len(locs)  # a JOIN before any FORK
        master["c"][fj] = c


def _lock_orders(imp, cols: dict[int, dict]) -> None:
    n_locks = len(imp.locks)
    if not n_locks:
        return
    t, lock, loc, where = [], [], [], []
    for i, ev in cols.items():
        idx = np.flatnonzero(ev["type"] == K.E_ACQUIRE)
        t.append(seconds(ev)[idx])
        lock.append(ev["a"][idx].astype(np.int64))
        loc.append(np.full(len(idx), i, np.int64))
        where.append(idx)
    at = np.cumsum([0] + [len(w) for w in where])  # each location's acquisitions, in the order of cols
    t, lock, loc, where = (np.concatenate(x) for x in (t, lock, loc, where))
    order = np.lexsort((loc, t, lock))  # by lock, then time, then location
    lock_sorted = lock[order]
    start = np.r_[0, np.flatnonzero(np.diff(lock_sorted)) + 1]
    rank_in_lock = np.arange(len(order)) - np.repeat(start, np.diff(np.r_[start, len(order)]))
    numbers = np.empty(len(order), np.uint64)
    numbers[order] = rank_in_lock + 1
    for n, (i, ev) in enumerate(cols.items()):
        mine = slice(at[n], at[n + 1])
        ev["d"][where[mine]] = numbers[mine]
        bad = K.release_orders(ev["type"], ev["a"], ev["d"], n_locks)
        if bad >= 0:
            loc_def = imp.asm.locations[i]
            imp.warn(f"rel-{i}", f"lock {int(ev['a'][bad])} released at {float(seconds(ev)[bad])!r} without being "
                                 f"acquired (rank {loc_def.rank}, thread {loc_def.thread})")


def _receive_bytes(imp, cols: dict[int, dict]) -> None:
    locs = np.flatnonzero(imp.loc_messages).tolist()  # in the order of cols, as the sends' places are counted
    if not imp.record_counts[R.MPI_RECV] or not locs:
        return  # no receive to complete
    send_keys, recv_keys, recv_at = [], [], []
    for i in locs:
        ev = cols[i]
        s, r, at = K.messages(ev["type"], ev["a"], ev["b"], ev["c"], ev["d"], imp.loc_rank[i])
        send_keys.append(s)
        recv_keys.append(r)
        if len(at):
            recv_at.append((i, at))
    sends, recvs = np.concatenate(send_keys), np.concatenate(recv_keys)
    if not len(recvs):
        return
    # channel ids over sends and receives together, then each one's place within its channel
    both = np.concatenate([sends[:, :4], recvs])
    _u, chan = np.unique(both, axis=0, return_inverse=True)
    chan = chan.reshape(-1)
    s_chan, r_chan = chan[: len(sends)], chan[len(sends):]

    def place(ch):
        order = np.argsort(ch, kind="stable")
        srt = ch[order]
        start = np.r_[0, np.flatnonzero(np.diff(srt)) + 1]
        k = np.empty(len(ch), np.int64)
        k[order] = np.arange(len(ch)) - np.repeat(start, np.diff(np.r_[start, len(ch)]))
        return k

    s_key = s_chan * (len(both) + 1) + place(s_chan)
    r_key = r_chan * (len(both) + 1) + place(r_chan)
    order = np.argsort(s_key)
    j = np.searchsorted(s_key[order], r_key)
    found = j < len(s_key)
    found[found] = s_key[order][j[found]] == r_key[found]
    nbytes = np.where(found, sends[order[np.minimum(j, max(len(s_key) - 1, 0))], 4] if len(sends) else 0, 0)
    unmatched = 0
    at = 0
    for i, r in recv_at:
        d = cols[i]["d"]
        wanted = d[r] == K.BYTES_FROM_SEND
        got = nbytes[at:at + len(r)]
        ok = found[at:at + len(r)]
        d[r[wanted]] = np.where(ok[wanted], got[wanted], 0).astype(np.uint64)
        unmatched += int(np.count_nonzero(wanted & ~ok))
        at += len(r)
    if unmatched:
        imp.problems.append(f"{unmatched} receive(s) have no matching send; their byte count is set to 0")


def _ticks(imp, cols: dict[int, np.ndarray], origin: float, ticks_per_second: float) -> None:
    """The time field, float64 seconds so far, becomes ticks from origin (in place)."""
    for i, ev in cols.items():
        if not len(ev):
            continue
        back = K.to_ticks(seconds(ev), ev["time"], origin, ticks_per_second)
        if back >= 0:
            loc = imp.asm.locations[i]
            imp.warn(f"order-{i}", f"rank {loc.rank} thread {loc.thread}: event {back} is earlier than event "
                                   f"{back - 1}; times kept as recorded")


def finish_assembly(imp):
    """The TraceAssembly of an importer whose files are all read."""
    a = imp.asm
    cols = {i: imp.columns.location(i) for i in range(len(imp.lids))}
    _teams(imp, cols)
    _lock_orders(imp, cols)
    _receive_bytes(imp, cols)
    firsts = [float(seconds(ev)[0]) for ev in cols.values() if len(ev)]
    t_min = min(firsts, default=0.0)
    a.attributes["epilog.version"] = f"{imp.version // 1000}.{imp.version % 1000}"
    a.attributes["epilog.time_origin_seconds"] = repr(t_min)
    _ticks(imp, cols, t_min, a.ticks_per_second)
    a.events.update(cols)
    imp.columns = None  # the columns now live in the assembly's arrays
    return a
