"""The ``time_segments`` and ``sync_points`` tables: every location's time line, cut at its synchronisation points.

Built only when a pattern requires them (the critical path, the delay analysis and the POP metrics,
``patterns.backward``).  Per location, :func:`location_fragments` runs the jitted pass of
``kernels.timeline`` over the events the replay has just walked (it also moves the OpenMP fork and join
spans onto the parallel region); :func:`build_timeline` joins the fragments of all locations into the two
tables (``patterns/tables.py``) and links every cut point to the row of the table it belongs to (the
message, the collective member, the team member, the barrier member, the team).
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

from patterns.tables import SYNC_POINTS, TIME_SEGMENTS, Table

from .kernels import keyjoin as KJ
from .kernels import timeline as K

#: tables the timeline links its cut points to: they are built along with it
LINKED_TABLES = ("messages", "collectives", "omp_teams", "omp_team_members", "omp_barriers")
#: the fragment kinds this module adds to a location's fragments
FRAGMENT_KINDS = ("cuts", "segments", "send_cuts", "recv_cuts")


def region_flags(names) -> np.ndarray:
    """uint8 per region id: FLAG_INIT for MPI_Init / MPI_Init_thread, FLAG_FINALIZE for MPI_Finalize."""
    flags = np.zeros(len(names), np.uint8)
    for rid, name in enumerate(names):
        if name in ("MPI_Init", "MPI_Init_thread"):
            flags[rid] = K.FLAG_INIT
        elif name == "MPI_Finalize":
            flags[rid] = K.FLAG_FINALIZE
    return flags


class Scratch:
    """What the kernel borrows across the locations of one process: zeroed per-node arrays (grown with the call
    tree), the forks of the masters walked so far (team id -> fork time; a master is walked before its workers,
    so the latest fork of a team id is the one of this process), and the share's :class:`Store` (default: one
    of its own)."""

    def __init__(self, store: Store | None = None):
        self.acc = np.zeros(0, np.float64)
        self.seen = np.zeros(0, np.int8)
        self._arrays = (np.zeros(0, np.int64), np.zeros(0, np.float64))
        self.store = Store() if store is None else store

    def arrays(self, n_nodes: int):
        if self.acc.shape[0] < n_nodes:
            self.acc = np.zeros(2 * n_nodes + 64, np.float64)
            self.seen = np.zeros(2 * n_nodes + 64, np.int8)
        return self.acc, self.seen

    def forks(self):
        return self._arrays

    def add_forks(self, teams: np.ndarray, times: np.ndarray) -> None:
        """Team ids ascending with the time of their latest fork (a later fork of an id replaces the earlier)."""
        if len(teams):
            keys = np.concatenate([np.asarray(teams, np.int64)[::-1], self._arrays[0]])
            when = np.concatenate([np.asarray(times, np.float64)[::-1], self._arrays[1]])
            keys, first = np.unique(keys, return_index=True)  # the first of the reversed: the latest
            self._arrays = (keys, when[first])


class Store:
    """The columns a share's cut points and entries are written to (:class:`Columns`), location after location.

    ``n_events`` and ``n_locations``: of the share's locations, ``largest``: the events of its largest one (0:
    unknown: every location gets columns of its own).  The first columns have room for every location's bound
    (rows never written are never faulted in), so the kernel writes a share's rows into one array per column
    and ``build_timeline`` takes them as they are: per-location arrays joined afterwards were that memory twice,
    each faulted in afresh.  Only where reserving costs nothing (:func:`reserving_is_free`): under strict
    overcommit accounting the room counts against the commit limit, written or not, so there every location
    gets columns of its own (joined by copies)."""

    def __init__(self, n_events: int = 0, n_locations: int = 0, largest: int = 0):
        if not reserving_is_free():
            n_events = n_locations = 0
        self._left = (n_events + n_locations, 3 * n_events + 16 * n_locations)  # room the walk may still need
        self._cut_dt = _index_dtype(largest + 1)
        self.columns = None

    def room(self, n_events: int) -> Columns:
        """Columns with room for a location of ``n_events`` events (a new set when the last one is full)."""
        need = (n_events + 1, 3 * n_events + 16)
        dt = np.promote_types(self._cut_dt, _index_dtype(n_events + 1))
        c = self.columns
        if c is None or c.cuts[2].shape[0] - c.c < need[0] or c.entries[0].shape[0] - c.e < need[1] or \
                c.cuts[1].dtype != dt:
            try:
                c = Columns(max(need[0], self._left[0]), max(need[1], self._left[1]), dt)
            except MemoryError:  # no room reserved for the rest (a strict overcommit policy): this location's
                c = Columns(*need, dt)
            self.columns = c
        self._left = (max(self._left[0] - need[0], 0), max(self._left[1] - need[1], 0))
        return c


def shared_stores(shares: list[list[int]]) -> list[Store]:
    """One :class:`Store` per share of the parallel replay (``shares``: each share's locations' event counts, in
    walk order), all of them writing into one set of columns: share k's rows start where the room of the shares
    before it ends.  ``build_timeline`` then joins the shares by moving each one's rows down to the end of the
    rows before it, in those same columns (:func:`_joined`), where separate columns per share were joined into
    fresh copies (170 MB at 10^7 events).  Where reserving room is not free, a store of its own per share."""
    def own(s):
        return Store(sum(s), len(s), max(s, default=0))

    if not reserving_is_free() or len(shares) < 2:
        return [own(s) for s in shares]
    need = [(sum(s) + len(s), 3 * sum(s) + 16 * len(s)) for s in shares]
    largest = max((max(s, default=0) for s in shares), default=0)
    try:
        whole = Columns(sum(n[0] for n in need), sum(n[1] for n in need), _index_dtype(largest + 1))
    except MemoryError:
        return [own(s) for s in shares]
    stores, c, e = [], 0, 0
    for (n_c, n_e), s in zip(need, shares):
        st = Store(sum(s), len(s), largest)
        st.columns = whole.part(c, c + n_c, e, e + n_e)
        stores.append(st)
        c, e = c + n_c, e + n_e
    return stores


def reserving_is_free() -> bool:
    """Whether memory allocated but never written costs nothing: Linux's heuristic or unconditional overcommit
    (``vm.overcommit_memory`` 0 or 1), not its strict accounting (2) or a system that does not say."""
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() in ("0", "1")
    except OSError:
        return False


class Columns:
    """The columns of a share's cut points (location, cut, kind, event, time, call node, call ENTER) and entries
    (location, interval, node, seconds), filled location by location: ``c`` and ``e`` rows used.  The fragments
    are views of them."""

    def __init__(self, n_cuts: int, n_entries: int, cut_dt):
        # the event indices in the cut type too: a location's events fit where its cut numbers do
        self.cuts = (np.empty(n_cuts, np.int32), np.empty(n_cuts, cut_dt), np.empty(n_cuts, np.int8),
                     np.empty(n_cuts, cut_dt), np.empty(n_cuts, np.float64), np.empty(n_cuts, np.int32),
                     np.empty(n_cuts, np.float64))
        self.entries = (np.empty(n_entries, np.int32), np.empty(n_entries, cut_dt), np.empty(n_entries, np.int32),
                        np.empty(n_entries, np.float64))
        self.c = self.e = 0

    def part(self, c_lo: int, c_hi: int, e_lo: int, e_hi: int) -> Columns:
        """Columns that are the rows c_lo:c_hi of these cut-point columns and e_lo:e_hi of these entries."""
        out = Columns.__new__(Columns)
        out.cuts = tuple(x[c_lo:c_hi] for x in self.cuts)
        out.entries = tuple(x[e_lo:e_hi] for x in self.entries)
        out.c = out.e = 0
        return out


def _index_dtype(largest: int):
    """int32 where every value fits, else int64 (fresh memory costs page faults: at 10^7 events the two
    tables are 200 MB and more)."""
    return np.int32 if largest <= np.iinfo(np.int32).max else np.int64


def location_fragments(loc: int, cols, calls, region_role, flags, is_worker: bool, n_nodes: int,
                       scratch: Scratch) -> dict:
    """The timeline fragments of one location (builder call-tree ids in ``cnode``): views of the share's
    columns (:meth:`Store.room`)."""
    acc, seen = scratch.arrays(n_nodes)
    fork_team, fork_time = scratch.forks()
    n_events = len(cols.type)
    out = scratch.store.room(n_events)
    c0, e0 = out.c, out.e
    n, k, send_cuts, recv_cuts, in_order, f_team, f_time = K.cut_timeline(
        cols.type, cols.time, cols.a, cols.c, cols.d, cols.e, calls.node, calls.enter, region_role, flags,
        bool(is_worker), fork_team, fork_time, acc, seen, loc, out.cuts, c0, out.entries, e0)
    scratch.add_forks(f_team, f_time)
    out.c, out.e = c0 + n, e0 + k
    c_loc, c_cut, kind, event, when, node, enter = (x[c0:c0 + n] for x in out.cuts)
    e_loc, e_int, e_node, e_time = (x[e0:e0 + k] for x in out.entries)
    if not in_order:
        o = np.argsort(e_int, kind="stable")
        e_int[:], e_node[:], e_time[:] = e_int[o], e_node[o], e_time[o]
    return {
        "cuts": {"loc": c_loc, "cut": c_cut, "kind": kind, "event": event, "time": when, "cnode": node,
                 "enter": enter},
        "segments": {"loc": e_loc, "cut": e_int, "cnode": e_node, "time": e_time},
        "send_cuts": {"loc": np.broadcast_to(np.int32(loc), len(send_cuts)), "event": send_cuts[:, 0],
                      "send_cut": send_cuts[:, 1], "sendc_cut": send_cuts[:, 2]},
        "recv_cuts": {"loc": np.broadcast_to(np.int32(loc), len(recv_cuts)),
                      "seq": np.arange(len(recv_cuts), dtype=np.int64),
                      "recv_cut": recv_cuts[:, 0], "recvp_cut": recv_cuts[:, 1]},
    }


def _join(b_loc, b_key, a_loc, a_key) -> np.ndarray:
    """Per (a_loc, a_key): the first row of (b_loc, b_key) with the same location and key, or -1 (keys are
    integers or times; a NaN time matches nothing).  Locations as int32 and the table columns as they are
    (no copies of the large ones: ``KJ.first_rows``)."""
    if len(a_loc) == 0 or len(b_loc) == 0:
        return np.full(len(a_loc), -1, np.int64)
    kt = np.float64 if np.asarray(b_key).dtype.kind == "f" or np.asarray(a_key).dtype.kind == "f" else np.int64
    return KJ.first_rows(np.ascontiguousarray(b_loc, np.int32), np.ascontiguousarray(b_key, kt),
                         np.ascontiguousarray(a_loc, np.int32), np.ascontiguousarray(a_key, kt))


def _link_kind(row, kind, want, loc, when, b_loc, b_time) -> None:
    """``row`` of the cut points of kind ``want`` := the first row of (b_loc, b_time) at their location and
    time (-1 where none is): walked straight over the cut points' columns where the table allows it
    (``KJ.walk_rows``), else joined on the gathered points."""
    if len(loc) == 0 or len(b_loc) == 0:
        return
    b_loc, b_time = np.ascontiguousarray(b_loc, np.int32), np.ascontiguousarray(b_time, np.float64)
    if not KJ.walk_rows(b_loc, b_time, np.ascontiguousarray(loc, np.int32), np.ascontiguousarray(when, np.float64),
                        np.ascontiguousarray(kind, np.int8), want, row):
        sel = np.flatnonzero(kind == want)
        row[sel] = _join(b_loc, b_time, loc[sel], when[sel])


def _loc_of(frag: dict) -> int:
    """The location of a per-location fragment (-1 when it has no row: any place will do)."""
    return int(frag["loc"][0]) if len(frag["loc"]) else -1


def _concat(frags: list[dict], dtypes: dict | None = None, compact: bool = False) -> dict:
    """The fragments' columns joined; ``dtypes``: the columns stored narrower than the fragments hold them
    (the values are known to fit); ``compact``: see :func:`_joined` (the fragments are not read afterwards)."""
    if not frags:
        return {}
    dtypes = dtypes or {}
    return {k: _joined([f[k] for f in frags], dtypes.get(k), compact) for k in frags[0]}


def _joined(pieces: list[np.ndarray], dtype=None, compact: bool = False) -> np.ndarray:
    """``np.concatenate(pieces, dtype=dtype)``; where the pieces lie one after the other in one array (the
    fragments of a share's locations walked in location order: views of its :class:`Columns`), a view of it
    instead of a copy (not to be written to: the fragments may be another share's too).  ``compact``: the pieces
    are this call's alone; where they lie in one array in order with gaps between them (the shares of a parallel
    replay: :func:`shared_stores`), each is moved down to the end of the one before and the view is returned:
    the pieces' own contents are then gone."""
    full = [p for p in pieces if len(p)]
    base = full[0].base if full else None
    if isinstance(base, np.ndarray) and base.ndim == 1 and base.flags.c_contiguous and \
            all(p.base is base and p.dtype == base.dtype and p.flags.c_contiguous for p in full):
        at = full[0].ctypes.data
        gaps = False
        for p in full:
            if p.ctypes.data < at:  # out of order or overlapping: only a copy joins them
                break
            gaps |= p.ctypes.data != at
            at += p.nbytes
        else:
            if gaps and not compact:
                return np.concatenate(pieces, dtype=dtype)
            if gaps:  # each piece lies at or after its place: moved down in order, nothing is overwritten unread
                at = full[0].ctypes.data
                for p in full:
                    if p.ctypes.data != at:
                        _move_down(at, p.ctypes.data, p.nbytes)
                    at += p.nbytes
            start = (full[0].ctypes.data - base.ctypes.data) // base.itemsize
            out = base[start:start + (at - full[0].ctypes.data) // base.itemsize]
            return out if dtype is None else out.astype(dtype, copy=False)
    return np.concatenate(pieces, dtype=dtype)


def _move_down(dst: int, src: int, nbytes: int, chunk: int = 4 << 20) -> None:
    """Move ``nbytes`` from address ``src`` down to ``dst`` (<= src) chunk by chunk, giving the pages the moved
    rows leave behind back to the system as it goes (:func:`_release`): the pages the next chunks land on are then
    those just given back (a VM faults memory the process never had in at a far higher cost)."""
    done = 0
    while done < nbytes:
        n = min(chunk, nbytes - done)
        ctypes.memmove(dst + done, src + done, n)
        done += n
        _release(max(dst + done, src), src + done)


#: pages given back whole only where a transparent huge page (2 MiB) may back them: none is split
_RELEASE_ALIGN = 2 << 20


def _release(lo: int, hi: int) -> None:
    """Give the whole 2 MiB pages of the addresses lo:hi back to the system (madvise MADV_DONTNEED: read again,
    they would be zeros; nothing reads them again).  Nothing where libc has no madvise."""
    lo = -(-lo // _RELEASE_ALIGN) * _RELEASE_ALIGN
    hi = hi // _RELEASE_ALIGN * _RELEASE_ALIGN
    if hi > lo and _MADVISE is not None:
        _MADVISE(ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo), _MADV_DONTNEED)


def _libc_madvise():
    try:
        f = ctypes.CDLL(None).madvise
    except (OSError, AttributeError):
        return None
    f.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    f.restype = ctypes.c_int
    return f


_MADV_DONTNEED = 4  # Linux (and the BSDs)
_MADVISE = _libc_madvise() if sys.platform.startswith("linux") else None


def _remapped(node: np.ndarray, new_id: np.ndarray, owned: bool) -> np.ndarray:
    """Builder call-tree nodes as final call-path ids, int32: in place where ``node`` is a joined copy or the
    fragments are ``owned``, else in a new array (a view of fragments others may hold: :func:`_joined`)."""
    out = np.asarray(node, np.int32)
    return KJ.remap(out if owned or out.base is None else out.copy(), new_id)


def build_timeline(frags: dict[str, list], tables: dict[str, Table], new_id: np.ndarray,
                   parent: np.ndarray, owned: bool = False) -> dict[str, Table]:
    """``time_segments`` and ``sync_points`` from the fragments of all locations (in walk order).

    ``tables``: the replay tables already built (at least :data:`LINKED_TABLES`, final call-path
    ids); ``new_id``: final call-path id of every builder node; ``parent``: the final call tree's
    parent array; ``owned``: the fragments are this call's alone (their call paths are remapped in place,
    no copy of the columns the tables take as they are).
    """
    order = sorted(range(len(frags.get("cuts", []))), key=lambda j: _loc_of(frags["cuts"][j]))
    # a location's intervals are numbered up to its cut points + 1; rows index the linked tables
    cut_dt = _index_dtype(max((len(f["kind"]) for f in frags.get("cuts", [])), default=0) + 1)
    row_dt = _index_dtype(max((len(tables[t]) for t in LINKED_TABLES if tables.get(t) is not None), default=0))
    cut_frags = [frags["cuts"][j] for j in order]
    # of the cut points' event indices only the collectives' are read (their link): not joined for all
    coll_event = np.concatenate([f["event"][f["kind"] == K.COLLECTIVE] for f in cut_frags]
                                or [np.zeros(0, np.int64)])
    # one fragment per location, in location order, its cut points numbered 1, 2, ...: the point (l, c) is
    # row cut_off[l] + c - 1 (np.bincount of the joined column, from the fragments' sizes: before they are joined,
    # which may move their rows)
    n_rows = np.zeros(max((_loc_of(f) for f in cut_frags), default=-1) + 1, np.int64)
    for f in cut_frags:
        if len(f["loc"]):
            n_rows[_loc_of(f)] += len(f["loc"])
    cuts = _concat([{k: v for k, v in f.items() if k != "event"} for f in cut_frags], {"cut": cut_dt}, owned)
    segs = _concat([frags["segments"][j] for j in order], {"cut": cut_dt}, owned)
    if not cuts:
        cuts = {k: np.zeros(0, dt) for k, dt in SYNC_POINTS.items()}
        cuts["cnode"] = np.zeros(0, np.int64)
    if not segs:
        segs = {k: np.zeros(0, dt) for k, dt in TIME_SEGMENTS.items()}
    new_id = np.asarray(new_id, np.int64)
    kind = cuts["kind"]
    loc = cuts["loc"]
    cut_off = np.concatenate([[0], np.cumsum(n_rows)]).astype(np.int64) if len(loc) else np.zeros(1, np.int64)
    row = np.full(len(kind), -1, row_dt)
    M = tables.get("messages")
    if M is not None and len(M):
        sc = _concat(frags.get("send_cuts", []))
        rc = _concat(frags.get("recv_cuts", []))
        m_rows = np.arange(len(M), dtype=np.int64)
        send_loc, recv_loc = np.asarray(M["send_loc"], np.int64), np.asarray(M["recv_loc"], np.int64)
        if sc and len(sc["loc"]):  # a share's own locations may have sent nothing of its table's rows
            s_sel = _join(sc["loc"], sc["event"], send_loc, M["send_pos"])
            ok = s_sel >= 0
            send_cut = np.where(ok, sc["send_cut"][np.maximum(s_sel, 0)], -1)
            sendc_cut = np.where(ok, sc["sendc_cut"][np.maximum(s_sel, 0)], -1)
            KJ.fill_rows(row, kind, cut_off, K.SEND, send_loc, send_cut, m_rows)
            nb = sendc_cut != send_cut  # the completions of non-blocking sends
            KJ.fill_rows(row, kind, cut_off, K.SEND_COMPLETE, send_loc[nb], sendc_cut[nb], m_rows[nb])
        if rc and len(rc["loc"]):
            r_sel = _join(rc["loc"], rc["seq"], recv_loc, M["recv_seq"])
            ok = r_sel >= 0
            recv_cut = np.where(ok, rc["recv_cut"][np.maximum(r_sel, 0)], -1)
            recvp_cut = np.where(ok, rc["recvp_cut"][np.maximum(r_sel, 0)], -1)
            KJ.fill_rows(row, kind, cut_off, K.RECV, recv_loc, recv_cut, m_rows)
            posted = recvp_cut != recv_cut
            KJ.fill_rows(row, kind, cut_off, K.RECV_REQUEST, recv_loc[posted], recvp_cut[posted], m_rows[posted])
    C = tables.get("collectives")
    if C is not None and len(C):
        sel = np.flatnonzero(kind == K.COLLECTIVE)
        row[sel] = _join(C["loc"], C["pos"], loc[sel], coll_event)
    members = tables.get("omp_team_members")
    teams = tables.get("omp_teams")
    if members is not None and len(members) and teams is not None:
        _link_kind(row, kind, K.FORK, loc, cuts["time"], members["loc"], members["enter"])
    B = tables.get("omp_barriers")
    if B is not None and len(B):
        _link_kind(row, kind, K.OMP_BARRIER, loc, cuts["time"], B["loc"], B["exit"])
    if teams is not None and len(teams):
        _link_kind(row, kind, K.JOIN, loc, cuts["time"], teams["master_loc"], teams["join_time"])
    segments = Table({"loc": segs["loc"].astype(np.int32, copy=False), "cut": segs["cut"].astype(cut_dt, copy=False),
                      "cnode": _remapped(segs["cnode"], new_id, owned),
                      "time": segs["time"].astype(np.float64, copy=False)})
    points = Table({"loc": loc.astype(np.int32, copy=False), "cut": cuts["cut"].astype(cut_dt, copy=False),
                    "kind": kind.astype(np.int8, copy=False), "row": row,
                    "time": cuts["time"].astype(np.float64, copy=False),
                    "cnode": _remapped(cuts["cnode"], new_id, owned),
                    "enter": np.asarray(cuts["enter"], np.float64)})
    return {"time_segments": segments, "sync_points": points}
