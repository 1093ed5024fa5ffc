"""Vectorised lookups and per-group reductions over table columns (the inputs of ``patterns.backward``)."""

from __future__ import annotations

import numpy as np


def lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``values`` at the position of each ``wanted`` key among ``keys`` (unique), -1 where absent."""
    if len(keys) == 0 or len(wanted) == 0:
        return np.full(len(wanted), -1, np.int64)
    o = np.argsort(keys, kind="stable")
    pos = np.minimum(np.searchsorted(keys[o], wanted), len(keys) - 1)
    return np.where(keys[o][pos] == wanted, np.asarray(values, np.int64)[o][pos], -1)


def csr(keys: np.ndarray, n: int) -> np.ndarray:
    """Offsets of rows sorted by ``keys`` (0..n-1)."""
    return np.concatenate([[0], np.cumsum(np.bincount(np.asarray(keys, np.int64), minlength=n))]).astype(np.int64)


def operation_in(ops: list[str], regions, names) -> np.ndarray:
    """Per region id in ``regions``: whether its MPI operation (``mpi_operations``) is one of ``names``."""
    table = np.array([o in names for o in ops] + [False], bool)
    r = np.asarray(regions, np.int64)
    return table[np.where((r >= 0) & (r < len(ops)), r, len(ops))]


def pairs_in(a, b, set_a, set_b) -> np.ndarray:
    """Whether each pair (a[i], b[i]) (integer, float) is one of the pairs (set_a[j], set_b[j])."""
    if len(a) == 0 or len(set_a) == 0:
        return np.zeros(len(a), bool)
    _, ids = np.unique(np.concatenate([np.asarray(b, np.float64), np.asarray(set_b, np.float64)]),
                       return_inverse=True)
    width = int(ids.max()) + 1
    keys = np.asarray(a, np.int64) * width + ids[:len(a)]
    return np.isin(keys, np.asarray(set_a, np.int64) * width + ids[len(a):])


def local_ranks(comms: dict, comm: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Each rank's position in its communicator's rank list (the rank itself where it is not listed)."""
    local = rank.copy()
    o = np.argsort(comm, kind="stable")
    bounds = np.flatnonzero(np.diff(comm[o])) + 1
    for rows in np.split(o, bounds) if len(o) else []:
        d = comms.get(int(comm[rows[0]]))
        if d is None or not len(d.ranks):
            continue
        listed = np.asarray(d.ranks, np.int64)
        by = np.argsort(listed, kind="stable")  # the first position of a rank listed twice, as list.index
        pos = np.minimum(np.searchsorted(listed[by], rank[rows]), len(listed) - 1)
        found = listed[by][pos] == rank[rows]
        local[rows] = np.where(found, by[pos], rank[rows])
    return local


def group_max(inst, values, local, n_inst):
    """Per instance: the largest value and the member holding it (lowest local rank on ties; MPI_MAXLOC)."""
    best = np.full(n_inst, -np.inf)
    np.maximum.at(best, inst, values)
    cand = np.where(values == best[inst], local, np.iinfo(np.int64).max)
    who_rank = np.full(n_inst, np.iinfo(np.int64).max)
    np.minimum.at(who_rank, inst, cand)
    return best, who_rank


def group_min(inst, values, n_inst):
    out = np.full(n_inst, np.inf)
    np.minimum.at(out, inst, values)
    return out


def by_keys(major: np.ndarray, minor: np.ndarray, tie: np.ndarray) -> np.ndarray:
    """``np.lexsort((tie, minor, major))`` for non-negative integer keys, as one stable sort of a combined key
    where that fits in 62 bits (one pass instead of three)."""
    major, minor, tie = (np.asarray(k, np.int64) for k in (major, minor, tie))
    if len(major) == 0 or min(major.min(), minor.min(), tie.min()) < 0:
        return np.lexsort((tie, minor, major))
    n_minor, n_tie = int(minor.max()) + 1, int(tie.max()) + 1
    if (int(major.max()) + 1) * n_minor * n_tie >= 1 << 62:
        return np.lexsort((tie, minor, major))
    return np.argsort((major * n_minor + minor) * n_tie + tie, kind="stable")


def dense_ids(x) -> np.ndarray:
    """``np.unique(x, return_inverse=True)[1]``: each value's rank among the distinct values, without a sort
    where the values are non-negative ids of a range not much larger than their number."""
    from .kernels import backward_build as K  # numba: only when a trace is analyzed

    x = np.asarray(x, np.int64)
    if len(x) == 0 or x.min() < 0 or x.max() >= 4 * len(x) + (1 << 16):
        return np.unique(x, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return K.dense_ids(x, int(x.max()) + 1)


def point_order(P, loc: np.ndarray, cut: np.ndarray, sizes, L: int) -> np.ndarray:
    """The points sorted by (loc, cut, part), a cut registered twice keeping its first meaning (Scalasca's map
    insert): by indexing sync_points (grouped by location, cuts 1, 2, ... each), else by a sort.  The points
    are the parts' rows one part after the other; ``sizes``: the rows of each part."""
    from .kernels import backward_build as K  # numba: only when a trace is analyzed

    p_loc = np.asarray(P["loc"])
    grouped, cut_off = K.grouped_offsets(p_loc, L)  # else the points' rows cannot be found by position
    if grouped:
        ok, o = K.first_per_point(loc, cut, p_loc, np.asarray(P["cut"]), cut_off, np.full(len(p_loc), -1, np.int64))
        if ok:
            return o
    src = np.repeat(np.arange(len(sizes), dtype=np.int64), np.asarray(sizes, np.int64))  # only a sort needs it
    o = by_keys(loc, cut, src)
    loc_o, cut_o = loc[o], cut[o]
    dup = np.zeros(len(o), bool)
    dup[1:] = (loc_o[1:] == loc_o[:-1]) & (cut_o[1:] == cut_o[:-1])
    return o[~dup]


def location_offsets(loc: np.ndarray, L: int) -> np.ndarray:
    """:func:`csr` of rows grouped by location in ascending order (the time maps), in one pass."""
    from .kernels import backward_build as K  # numba: only when a trace is analyzed

    grouped, off = K.grouped_offsets(loc, L)
    return off if grouped else csr(loc, L)


def order_touches(t_loc: np.ndarray, t_cut: np.ndarray, L: int) -> np.ndarray:
    """``np.lexsort((-t_cut, t_loc))``: by location, then from the last cut to the first (the end: int64 max)."""
    from .kernels import backward_build as K  # numba: only when a trace is analyzed

    if len(t_loc) == 0:
        return np.zeros(0, np.int64)
    ok, o = K.touch_order(t_loc, t_cut, L, np.empty(len(t_loc), np.int64), np.empty(len(t_loc), np.int64))
    return o if ok else np.lexsort((-t_cut, t_loc))
