"""The ``collectives`` and ``mpi_rma_ops`` tables of a share (the hooks ``share_replay`` calls).

Collectives: an MPI collective instance spans processes of several shares.  A share's table holds its own
member rows plus, for each instance it has a member in, the rows of OTHER shares that hold an extreme the
wait states of ``patterns.instances`` take over the instance (a maximum or minimum over a superset of the
extreme rows is the serial one, so those patterns run unchanged).  Per (instance, region) group -- the
region decides which class of wait state a row belongs to, so mismatched calls stay apart -- the extremes
are: the latest ENTER of all members and of the sending ones, the earliest EXIT of all and of those that
send and receive, the earliest ENTER of a sending non-root, every root row, and for scan-like calls
(``Role.MPI_COLL_OTHER``: Early Scan takes the latest ENTER of the ranks up to each member) the rows that
ENTER later than every row before them in comm-local rank order (:func:`_scan_records`; a share's records
include the instance's, so each share sends only its own and the owner keeps the instance's).

The columns ``instance``, ``seq``, ``n_members`` and ``complete`` equal ``matching.build_collectives``':
each (communicator, rank) numbers its calls 0, 1, ... (``seq``; a rank is a process, so all of its rows are
on one share), and the dense ``instance`` of (communicator c, seq s) is the number of instances of the
communicators before c plus s, because the rank with the most calls on c covers every seq of c.

1. ``collective_summary``: per communicator the number of instances (largest seq + 1) and of distinct ranks
   this share saw -> every share.
2. ``collective_candidates``: the global numbering from all summaries; each instance goes to its owner share
   (``instance % K``) with this share's member count and candidate rows.
3. ``reduce_candidates`` (owner): the total member counts (-> ``complete``), the winners among the
   candidates; each share with a member gets the completeness of its instances and the winners of other
   shares.  The owner also counts its incomplete instances and those whose members called differently
   named operations (``analyzer.analyze.collective_mismatches``' check, exact here: every share sends one
   row per region of an instance).
4. ``collective_table``: own rows + winners, sorted (instance, loc) as the serial table.

``mpi_rma_ops``: every share gets every row (epochs pair origins with targets across processes); shares are
contiguous runs of the walk order, so the payloads in share order are the serial rows in serial order.

Rows handed to these functions carry merged builder call-tree ids (the same on every share); the tables
come back with them unchanged (the caller maps every table to final ids, as ``engine.assemble`` does).
"""

from __future__ import annotations

import numpy as np

from analyzer.replay.engine import region_arrays
from patterns.tables import COLLECTIVES, MPI_RMA_OPS, Table
from tracefmt.layout import Role

__all__ = ["collective_summary", "collective_candidates", "reduce_candidates", "collective_table",
           "collective_problems", "mismatch_problems", "rma_rows", "rma_table"]

_SCHEMA = COLLECTIVES | {"complete": "?"}
#: columns of this module's own in the rows it passes between shares (dropped from the table)
_SCAN = "_scan"
_SRC = "_src"


def _n(rows) -> int:
    return len(rows["comm"]) if rows and "comm" in rows else 0


def _group_keys(comm: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct communicators and, per communicator, (largest count of one rank's calls, distinct ranks)."""
    o = np.lexsort((rank, comm))
    c, r = comm[o], rank[o]
    new = np.ones(len(c), bool)
    new[1:] = (c[1:] != c[:-1]) | (r[1:] != r[:-1])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(c)))  # calls per (comm, rank)
    pc = c[starts]
    comms, inv = np.unique(pc, return_inverse=True)
    n_inst = np.zeros(len(comms), np.int64)
    np.maximum.at(n_inst, inv, counts)
    n_ranks = np.bincount(inv, minlength=len(comms)).astype(np.int64)
    return comms.astype(np.int64), np.stack([n_inst, n_ranks])


def collective_summary(trace, rows) -> dict:
    """Stage 1: per communicator this share's number of instances and of distinct ranks (to every share)."""
    if not _n(rows):
        return {"comm": np.zeros(0, np.int64), "n_inst": np.zeros(0, np.int64), "n_ranks": np.zeros(0, np.int64)}
    comms, (n_inst, n_ranks) = _group_keys(np.asarray(rows["comm"], np.int64), np.asarray(rows["rank"], np.int64))
    return {"comm": comms, "n_inst": n_inst, "n_ranks": n_ranks}


def comm_sizes(defs) -> dict[int, int]:
    """The size of every defined communicator (as ``engine.assemble`` passes to ``build_collectives``)."""
    return {cid: len(c.ranks) for cid, c in defs.comms.items() if len(c.ranks)}


def _numbering(summaries, comm_size):
    """From every share's summary: the communicators (sorted), the first instance of each, its size, and the
    undefined communicators."""
    parts = [s for s in summaries if s is not None and len(s["comm"])]
    if not parts:
        z = np.zeros(0, np.int64)
        return z, z, z, []
    comm = np.concatenate([p["comm"] for p in parts])
    comms, inv = np.unique(comm, return_inverse=True)
    n_inst = np.zeros(len(comms), np.int64)
    np.maximum.at(n_inst, inv, np.concatenate([p["n_inst"] for p in parts]))
    n_ranks = np.bincount(inv, weights=np.concatenate([p["n_ranks"] for p in parts]), minlength=len(comms))
    first = np.cumsum(n_inst) - n_inst
    sizes = np.array([comm_size.get(int(c), int(n)) for c, n in zip(comms, n_ranks)], np.int64)
    undefined = [int(c) for c in comms if int(c) not in comm_size]
    return comms, first, sizes, undefined


def _extremes(inst, region, value, mask, largest: bool) -> np.ndarray:
    """Per (instance, region) group, one row among ``mask`` holding the group's largest (or smallest) ``value``
    -- a NaN where the group has one, as ``np.maximum.at`` / ``np.minimum.at`` give NaN then."""
    rows = np.flatnonzero(mask)
    if not len(rows):
        return rows
    v = value[rows]
    key = v if largest else -v  # NaN sorts last either way: the last row of a group is its extreme
    o = rows[np.lexsort((key, region[rows], inst[rows]))]
    last = np.ones(len(o), bool)
    last[:-1] = (inst[o][1:] != inst[o][:-1]) | (region[o][1:] != region[o][:-1])
    return o[last]


def _comm_local_ranks(comm: np.ndarray, rank: np.ndarray, comms: dict) -> np.ndarray:
    """Each row's position in its communicator's group (its global rank where the group lacks it), as
    ``patterns.instances.mpi_early_scan_instances`` orders the members of a scan."""
    local = rank.astype(np.int64)
    for c in np.unique(comm):
        group = np.asarray(comms[int(c)].ranks if int(c) in comms else (), np.int64)
        at = np.flatnonzero(comm == c)
        if not len(group):
            continue
        o = np.argsort(group, kind="stable")  # the first position of a rank listed twice, as list.index
        pos = np.minimum(np.searchsorted(group[o], local[at]), len(group) - 1)
        found = group[o][pos] == local[at]
        local[at] = np.where(found, o[pos], local[at])
    return local


def _scan_records(cols: dict, inst: np.ndarray, scan: np.ndarray, comms: dict) -> np.ndarray:
    """The rows of scan-like calls that transfer data and ENTER later than every such row before them (comm-local
    rank order, then location) in their instance.  Early Scan takes the latest ENTER of the members up to
    each rank: that is the ENTER of the last such record up to it, so the records of the other shares (with a
    share's own rows) give every member its serial value.  A NaN ENTER is no record, as that maximum skips it."""
    keep = np.zeros(len(inst), bool)
    rows = np.flatnonzero(scan & ((cols["sent"] > 0) | (cols["recvd"] > 0)))
    if not len(rows):
        return keep
    local = _comm_local_ranks(np.asarray(cols["comm"], np.int64)[rows], np.asarray(cols["rank"])[rows], comms)
    o = rows[np.lexsort((np.asarray(cols["loc"])[rows], local, inst[rows]))]
    enter, g = np.asarray(cols["enter"], np.float64)[o], inst[o]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    before = np.full(len(o), -np.inf)  # latest ENTER before each row in its instance
    for a, b in zip(starts, np.r_[starts[1:], len(o)]):  # one step per scan instance, not per row
        if b - a > 1:
            before[a + 1:b] = np.fmax.accumulate(enter[a:b - 1])
    keep[o[enter > before]] = True
    return keep


def _candidates(cols: dict, inst: np.ndarray, scan: np.ndarray, comms: dict) -> np.ndarray:
    """Boolean mask of the rows holding an extreme some collective wait state takes (module docstring)."""
    n = len(inst)
    region = np.asarray(cols["region"], np.int64)
    enter, exit_ = cols["enter"], cols["exit"]
    sent, recvd = cols["sent"] > 0, cols["recvd"] > 0
    root = cols["rank"] == cols["root"]
    everyone = np.ones(n, bool)
    keep = root | _scan_records(cols, inst, scan, comms)
    for value, mask, largest in ((enter, everyone, True), (exit_, everyone, False), (enter, sent, True),
                                 (exit_, sent & recvd, False), (enter, ~root & sent, False)):
        keep[_extremes(inst, region, value, mask, largest)] = True
    return keep


class CollState:
    """A share's collectives between the stages: its own rows (with instance, seq, n_members), the undefined
    communicators and, on an instance owner, the counts of its instances' problems."""

    def __init__(self, rows: dict, undefined: list[int], columns: bool):
        self.rows = rows
        self.undefined = undefined
        self.columns = columns  # some share has rows: the serial table has the fragments' extra column
        self.n_incomplete = 0
        self.mismatch: tuple | None = None  # (bad instances, first bad instance, its comm, its op names)


def _split(keys: np.ndarray) -> dict[int, np.ndarray]:
    """The indices of each non-negative key's entries, ascending."""
    o = np.argsort(keys, kind="stable")
    k = keys[o]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if len(k) else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], len(k)]
    return {int(k[a]): o[a:b] for a, b in zip(starts, ends) if k[a] >= 0}


def _take(cols: dict, idx) -> dict:
    return {k: v[idx] for k, v in cols.items()}


def collective_candidates(trace, shares, s, rows, summaries) -> tuple[CollState, dict]:
    """Stage 2: number this share's rows globally; per owner share, the member counts and candidate rows."""
    n_shares = len(shares)
    comms, first, sizes, undefined = _numbering(summaries, comm_sizes(trace.defs))
    if not _n(rows):
        return CollState({}, undefined, len(comms) > 0), {}
    o = np.lexsort((rows["pos"], rows["loc"], rows["enter"], rows["rank"], rows["comm"]))
    cols = _take(rows, o)  # the serial order of build_collectives: seq counts along it per (comm, rank)
    comm = np.asarray(cols["comm"], np.int64)
    rank = np.asarray(cols["rank"], np.int64)
    new = np.ones(len(comm), bool)
    new[1:] = (comm[1:] != comm[:-1]) | (rank[1:] != rank[:-1])
    starts = np.flatnonzero(new)
    seq = np.arange(len(comm), dtype=np.int64) - starts[np.cumsum(new) - 1]
    ci = np.searchsorted(comms, comm)
    inst = first[ci] + seq
    cols["instance"], cols["seq"], cols["n_members"] = inst, seq, sizes[ci]
    _, _, role = region_arrays(trace.defs)
    region = np.asarray(cols["region"], np.int64)
    cols[_SCAN] = (region >= 0) & (role[np.maximum(region, 0)] == int(Role.MPI_COLL_OTHER))
    cand = _candidates(cols, inst, cols[_SCAN], trace.defs.comms)
    insts, at, counts = np.unique(inst, return_index=True, return_counts=True)
    size_i = cols["n_members"][at]
    by_inst, by_row = _split(insts % n_shares), _split(np.where(cand, inst % n_shares, -1))
    out = {d: {"instance": insts[i], "count": counts[i].astype(np.int64), "n_members": size_i[i],
               "rows": _take(cols, by_row.get(d, np.zeros(0, np.int64)))} for d, i in by_inst.items()}
    return CollState(cols, undefined, True), out


def reduce_candidates(trace, shares, s, state: CollState, received) -> tuple[CollState, dict]:
    """Stage 3, on the owner of the instances: total member counts and winning rows back to the shares with
    members (each gets the winners of the other shares only)."""
    got = [(src, p) for src, p in enumerate(received or ()) if p is not None and len(p["instance"])]
    if not got:
        return state, {}
    src_i = np.concatenate([np.full(len(p["instance"]), src, np.int64) for src, p in got])
    inst_i = np.concatenate([p["instance"] for _, p in got])
    count = np.concatenate([p["count"] for _, p in got])
    size = np.concatenate([p["n_members"] for _, p in got])
    insts, inv = np.unique(inst_i, return_inverse=True)
    total = np.bincount(inv, weights=count, minlength=len(insts))
    n_members = np.zeros(len(insts), np.int64)
    n_members[inv] = size
    complete = total == n_members
    state.n_incomplete = int((~complete).sum())
    parts = [p["rows"] for _, p in got]
    rows = {k: np.concatenate([q[k] for q in parts]) for k in parts[0]}
    rows[_SRC] = np.concatenate([np.full(len(q["instance"]), src, np.int64) for (src, _), q in zip(got, parts)])
    r_inst = np.asarray(rows["instance"], np.int64)
    win = _candidates(rows, r_inst, rows[_SCAN], trace.defs.comms)
    state.mismatch = _mismatch(trace, rows, r_inst)
    # every (instance, member share) pair gets the instance's winners from the other shares
    w = np.flatnonzero(win)
    w = w[np.argsort(r_inst[w], kind="stable")]
    lo, hi = np.searchsorted(r_inst[w], inst_i), np.searchsorted(r_inst[w], inst_i, side="right")
    pair = np.repeat(np.arange(len(inst_i)), hi - lo)
    sent_row = w[np.arange(len(pair)) - np.repeat(np.cumsum(hi - lo) - (hi - lo), hi - lo) + lo[pair]]
    other = rows[_SRC][sent_row] != src_i[pair]
    sent_row, pair = sent_row[other], pair[other]
    del rows[_SRC]
    rows_to = _split(src_i[pair])
    out = {}
    for d, i in _split(src_i).items():  # src_i lists each member share's instances once, ascending
        mine = inst_i[i]
        sel = sent_row[rows_to[d]] if d in rows_to else np.zeros(0, np.int64)
        out[d] = {"instance": mine, "complete": complete[np.searchsorted(insts, mine)],
                  "rows": _take(rows, np.sort(sel))}
    return state, out


def _mismatch(trace, rows, inst) -> tuple | None:
    """(instances whose members called differently named operations, the first one, its communicator, the
    sorted names) among the candidates, or None: each share sent one row per region of its members."""
    names = np.asarray(region_arrays(trace.defs)[0], dtype=object)[np.asarray(rows["region"], np.int64)]
    names = names.astype(str)
    o = np.lexsort((names, inst))
    same = (inst[o][1:] == inst[o][:-1])
    bad = np.unique(inst[o][1:][same & (names[o][1:] != names[o][:-1])])
    if not len(bad):
        return None
    first = int(bad[0])
    at = inst == first
    return (len(bad), first, int(rows["comm"][np.flatnonzero(at)[0]]), sorted(set(names[at].tolist())))


def collective_table(trace, shares, s, state: CollState, received) -> tuple[Table, dict]:
    """Stage 4: the share's collectives table (own rows + the winners of other shares, sorted (instance, loc)
    as the serial table) and this share's part of the problems (:func:`collective_problems`)."""
    part = {"undefined": state.undefined, "incomplete": state.n_incomplete, "mismatch": state.mismatch}
    got = [p for p in (received or ()) if p is not None and len(p["instance"])]
    pieces = [q for q in [state.rows] + [p["rows"] for p in got] if _n(q)]
    if not pieces:  # the columns of the serial table: with the kernel's "pos" where it has rows
        return Table.empty(_SCHEMA | ({"pos": "i8"} if state.columns else {})), part
    insts = np.concatenate([p["instance"] for p in got]) if got else np.zeros(0, np.int64)
    flags = np.concatenate([p["complete"] for p in got]) if got else np.zeros(0, bool)
    o = np.argsort(insts, kind="stable")
    insts, flags = insts[o], flags[o]
    cols = {k: np.concatenate([q[k] for q in pieces]) for k in pieces[0]}
    inst = np.asarray(cols["instance"], np.int64)
    pos = np.minimum(np.searchsorted(insts, inst), max(len(insts) - 1, 0))
    if not len(insts) or not np.array_equal(insts[pos], inst):  # a broken delivery, not bad input
        raise RuntimeError(f"share {s}: no owner reported the completeness of some collective instances")
    cols["complete"] = flags[pos]
    o3 = np.lexsort((cols["loc"], inst))
    cols = _take(cols, o3)
    table = Table({k: np.ascontiguousarray(cols[k], dtype=dt) for k, dt in _SCHEMA.items()} |
                  {k: v for k, v in cols.items() if k not in _SCHEMA and not k.startswith("_")})
    return table, part


def collective_problems(parts) -> list[str]:
    """On share 0: the problems of ``build_collectives`` from every share's part, in its serial words."""
    from analyzer.replay.matching import collective_problem_lines

    parts = [p for p in parts if p is not None]
    undefined = sorted({c for p in parts for c in p["undefined"]})
    return collective_problem_lines(undefined, sum(int(p["incomplete"]) for p in parts))


def mismatch_problems(parts, trace) -> list[str]:
    """On share 0: ``analyzer.analyze.collective_mismatches``' line from every share's part (the owners
    counted their instances' mismatches)."""
    from analyzer.replay.matching import mismatch_problem

    found = [p["mismatch"] for p in parts if p is not None and p["mismatch"] is not None]
    if not found:
        return []
    first = min(found, key=lambda m: m[1])
    return [mismatch_problem(sum(m[0] for m in found), first[3], first[2], trace.defs.comms)]


def rma_rows(trace, rows) -> dict | None:
    """Stage 2: this share's ``mpi_rma_ops`` rows (walk order), for every share."""
    if not rows or not len(rows.get("loc", ())):
        return None
    return {k: np.ascontiguousarray(rows[k], dt) for k, dt in MPI_RMA_OPS.items()}


def rma_table(trace, payloads) -> Table:
    """Stage 3: every share's rows in share order, which is the serial order."""
    got = [p for p in (payloads or ()) if p is not None]
    if not got:
        return Table.empty(MPI_RMA_OPS)
    return Table({k: np.concatenate([p[k] for p in got]) for k in MPI_RMA_OPS})

