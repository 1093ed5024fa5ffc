"""Joining the per-location fragments into the replay tables.

Every builder here is vectorised numpy over the rows of all locations,
helped by linear jitted passes where sorting by many keys would dominate
(message matching: ``kernels.fifo``); never a per-event Python loop.
"""

from __future__ import annotations

import numpy as np

from .kernels.fifo import channel_ids, fifo_pairs
from .kernels.keyjoin import remap
from .kernels.teamref import team_numbers
from patterns.tables import COLLECTIVES, LOCKS, MESSAGES, OMP_BARRIERS, OMP_TEAM_MEMBERS, OMP_TEAMS, Table


def concat(frags: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if not frags:
        return {}
    return {k: np.concatenate([f[k] for f in frags]) for k in frags[0]}


def _rank_in_group(*keys_sorted: np.ndarray) -> np.ndarray:
    """Position of each row within its run of equal keys (rows already sorted)."""
    n = len(keys_sorted[0]) if keys_sorted else 0
    if n == 0:
        return np.zeros(0, np.int64)
    new = np.zeros(n, bool)
    new[0] = True
    for k in keys_sorted:
        new[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(new)
    group_start = starts[np.cumsum(new) - 1]
    return np.arange(n, dtype=np.int64) - group_start


def _typed(cols: dict, schema: dict) -> Table:
    return Table({name: np.ascontiguousarray(cols[name], dtype=dt) for name, dt in schema.items()} |
                 {k: v for k, v in cols.items() if k not in schema and not k.startswith("_")})


def build_messages(S: dict, R: dict, problems: list[str]) -> Table:
    """Match sends to receives per (source, dest, comm, tag) in FIFO order (:func:`match_messages`),
    reporting the unmatched ones in ``problems``."""
    table, counts = match_messages(S, R)
    text = message_problem(*counts)
    if text:
        problems.append(text)
    return table


def message_problem(n_sends: int, n_recvs: int, n_matched: int) -> str | None:
    """The problem line for ``n_sends`` send and ``n_recvs`` receive rows of which ``n_matched`` pairs
    matched (None: all matched).  The counts of disjoint sets of channels add up: a distributed match
    sums them and formats once."""
    if n_sends == 0 or n_recvs == 0:
        return f"{n_sends + n_recvs} point-to-point events have no matching partner" if n_sends + n_recvs else None
    unmatched = n_sends + n_recvs - 2 * n_matched
    if unmatched:
        return (f"{unmatched} point-to-point events have no matching partner "
                f"({n_sends - n_matched} sends, {n_recvs - n_matched} receives); they are ignored")
    return None


def match_messages(S: dict, R: dict) -> tuple[Table, tuple[int, int, int]]:
    """The messages table and ``(send rows, receive rows, matched pairs)``.

    Sends are ordered by their SEND event (time, location, position); receives
    by the posting of the receive (MPI_RECV_REQUEST for non-blocking, the
    RECV itself otherwise), which is the order MPI's non-overtaking rule
    matches them in.  Rows are presented in receiver order (receiving
    location, completion order).
    """
    ns = len(S["send_time"]) if S else 0
    nr = len(R["recv_time"]) if R else 0
    if ns == 0 or nr == 0:
        return Table.empty(MESSAGES), (ns, nr, 0)
    i8 = lambda a: np.asarray(a, np.int64)  # noqa: E731
    chan, n_chan = channel_ids(np.concatenate([i8(S["send_rank"]), i8(R["source"])]),
                               np.concatenate([i8(S["dest"]), i8(R["recv_rank"])]),
                               np.concatenate([i8(S["comm"]), i8(R["comm"])]),
                               np.concatenate([i8(S["tag"]), i8(R["tag"])]))
    so = np.lexsort((S["send_pos"], S["send_loc"], S["send_time"]))
    ro = np.lexsort((R["post_pos"], R["recv_loc"], R["post_time"]))
    partner = fifo_pairs(chan[:ns], so, chan[ns:], ro, n_chan)
    recv_loc = np.asarray(R["recv_loc"])
    if (partner >= 0).all() and (recv_loc[1:] >= recv_loc[:-1]).all():  # every receive, grouped by location
        ri, si = None, partner  # the rows as they are: no gathers of the receive columns
    else:
        ri = np.flatnonzero(partner >= 0)  # receive rows are per location in completion order
        ri = ri[np.argsort(recv_loc[ri], kind="stable")]
        si = partner[ri]
    cols = {}
    for k in ("send_loc", "send_rank", "send_time", "send_region", "send_cnode", "send_enter", "send_exit",
              "send_flags", "send_request", "sendc_region", "sendc_cnode", "sendc_enter", "sendc_exit", "send_pos"):
        cols[k] = S[k][si]
    cols["comm"] = S["comm"][si]
    cols["tag"] = S["tag"][si]
    cols["bytes"] = S["bytes"][si]
    for k in ("recv_loc", "recv_rank", "recv_time", "recv_region", "recv_cnode", "recv_enter", "recv_exit",
              "recv_call", "recvp_region", "recvp_cnode", "recvp_enter", "recvp_exit", "recv_request",
              "recv_flags", "recv_bytes", "recv_seq"):
        cols[k] = R[k] if ri is None else R[k][ri]
    return _typed(cols, MESSAGES), (ns, nr, len(si))


def build_collectives(C: dict, comm_size: dict[int, int], problems: list[str]) -> Table:
    """Collective instances per communicator, FIFO per (communicator, rank)."""
    if not C or len(C["comm"]) == 0:
        return Table.empty(COLLECTIVES | {"complete": "?"})
    o = np.lexsort((C["pos"], C["loc"], C["enter"], C["rank"], C["comm"]))
    C = {k: v[o] for k, v in C.items()}
    seq = _rank_in_group(C["comm"], C["rank"])
    io = np.lexsort((seq, C["comm"]))
    first = np.ones(len(io), bool)
    first[1:] = (C["comm"][io][1:] != C["comm"][io][:-1]) | (seq[io][1:] != seq[io][:-1])
    inst = np.empty(len(io), np.int64)
    inst[io] = np.cumsum(first) - 1
    counts = np.bincount(inst)
    observed = {}
    for cm in np.unique(C["comm"]):
        observed[int(cm)] = len(np.unique(C["rank"][C["comm"] == cm]))
    ucomm, cinv = np.unique(C["comm"], return_inverse=True)
    sizes = np.array([comm_size.get(int(cm), observed[int(cm)]) for cm in ucomm], np.int32)[cinv]
    missing = sorted({int(cm) for cm in np.unique(C["comm"]) if int(cm) not in comm_size})
    complete = counts[inst] == sizes
    problems.extend(collective_problem_lines(missing, len(np.unique(inst[~complete]))))
    cols = dict(C)
    cols.update(instance=inst, seq=seq, n_members=sizes, complete=complete)
    o3 = np.lexsort((cols["loc"], inst))
    return _typed({k: v[o3] for k, v in cols.items()}, COLLECTIVES | {"complete": "?"})


def collective_problem_lines(undefined: list[int], n_incomplete: int) -> list[str]:
    """The problem lines of :func:`build_collectives`: collectives on the communicators ``undefined`` (sorted
    ids), ``n_incomplete`` instances missing members.  Instances are disjoint, so a distributed build sums
    the counts of every instance's one owner and formats once."""
    out = []
    if undefined:
        out.append(f"collectives on undefined communicators {undefined}: size taken from the ranks seen")
    if n_incomplete:
        out.append(f"{n_incomplete} collective instances miss members; wait states are not computed for them")
    return out


def mismatch_problem(n_bad: int, ops: list[str], comm_id: int, comms: dict) -> str:
    """The line for ``n_bad`` collective instances whose members called differently named operations; the
    first one's sorted names ``ops`` and communicator id (``comms``: the trace's definitions)."""
    comm = comms.get(comm_id)
    where = f"communicator {comm.name!r}" if comm is not None and comm.name else f"communicator {comm_id}"
    return (f"{n_bad} MPI collective instance(s) have members that called different operations (first: "
            f"{' and '.join(ops)} on {where}); their wait states are computed as if the calls matched")


def _team_rows(F: dict) -> np.ndarray:
    """Where each location's fork rows start in ``F`` (by location id), for resolving team references."""
    locs = np.asarray(F["master_loc"], np.int64)
    start = np.zeros(int(locs.max()) + 1 if len(locs) else 0, np.int64)
    u, first = np.unique(locs, return_index=True)
    start[u] = first
    return start


def build_omp(F: dict, J: dict, M: dict, B: dict, loc_process: np.ndarray,
              problems: list[str]) -> tuple[Table, Table, Table]:
    """Team instances, their members and their barrier instances (:func:`build_omp_counted`), reporting
    the members whose team has no fork in ``problems``."""
    tables, n_unforked = build_omp_counted(F, J, M, B, loc_process)
    text = unforked_problem(n_unforked)
    if text:
        problems.append(text)
    return tables


def unforked_problem(n_unforked: int) -> str | None:
    """The problem line for ``n_unforked`` parallel-region entries without a fork (None for none); teams
    live within a process, so the counts of disjoint sets of processes add up."""
    return f"{n_unforked} parallel-region entries name teams without an OMP_FORK; ignored" if n_unforked else None


def build_omp_counted(F: dict, J: dict, M: dict, B: dict,
                      loc_process: np.ndarray) -> tuple[tuple[Table, Table, Table], int]:
    """Team instances, their members and their barrier instances, and how many members name a team
    without an OMP_FORK (they are ignored).

    Members, joins, barriers and nested forks name their team by a team
    reference ``(location << 32) | k``, the k-th fork row of that location
    (``kernels.location``); teams are numbered densely by (fork time,
    process, team id).
    """
    empty = (Table.empty(OMP_TEAMS), Table.empty(OMP_TEAM_MEMBERS), Table.empty(OMP_BARRIERS))
    if not F or len(F["team_id"]) == 0:
        return empty, (len(M["team_id"]) if M else 0)
    proc = loc_process[F["master_loc"]].astype(np.int64)
    o = np.lexsort((F["team_id"], proc, F["fork_time"]))
    n_t = len(o)
    dense_of_row = np.empty(n_t, np.int64)
    dense_of_row[o] = np.arange(n_t, dtype=np.int64)
    start = _team_rows(F)

    def dense(ref):
        out = np.empty(len(ref), np.int64)
        if team_numbers(np.asarray(ref), start, dense_of_row, out):
            return out
        ref = np.asarray(ref, np.int64)  # a reference out of range: NumPy's indexing says where
        ok = ref >= 0
        r = np.where(ok, ref, 0)
        return np.where(ok, dense_of_row[start[r >> 32] + (r & 0xFFFFFFFF)], -1)

    F = {k: v[o] for k, v in F.items()}
    proc = proc[o]
    join_time = np.full(n_t, np.nan)
    if J and len(J["team_id"]):
        jt = dense(J["team_ref"])
        okj = jt >= 0
        join_time[jt[okj]] = J["join_time"][okj]
    parent_team = dense(F["parent_ref"])
    mt = dense(M["team_ref"]) if M and len(M["team_id"]) else np.zeros(0, np.int64)
    n_unforked = int((mt < 0).sum())
    okm = mt >= 0
    Mk = {k: v[okm] for k, v in M.items()} if not okm.all() else M
    mt = mt[okm]
    par_region = np.full(n_t, -1, np.int32)
    par_cnode = np.full(n_t, -1, np.int64)
    master_rows = np.flatnonzero(Mk["loc"] == F["master_loc"][mt])
    par_region[mt[master_rows]] = Mk["region"][master_rows]
    par_cnode[mt[master_rows]] = Mk["cnode"][master_rows]
    teams = _typed({
        "team": np.arange(n_t, dtype=np.int64), "process": proc, "team_id": F["team_id"],
        "master_loc": F["master_loc"], "fork_time": F["fork_time"], "join_time": join_time,
        "size": F["size"], "parallel_region": par_region, "parallel_cnode": par_cnode,
        "parent_team": parent_team,
        # the master's call path at the FORK; -1 when it forked outside every region
        "fork_cnode": np.where(F["fork_node"] == 0, -1, F["fork_node"]),
    }, OMP_TEAMS)
    mo = np.lexsort((Mk["thread_num"], mt))
    members = _typed({"team": mt[mo], "loc": Mk["loc"][mo], "thread_num": Mk["thread_num"][mo],
                      "enter": Mk["enter"][mo], "exit": Mk["exit"][mo], "cnode": Mk["cnode"][mo]},
                     OMP_TEAM_MEMBERS)
    # barriers: the k-th barrier of each member within a team instance (its seq) is instance k of that team
    bt = dense(B["team_ref"]) if B and len(B["team_id"]) else np.zeros(0, np.int64)
    okb = bt >= 0
    if okb.any():
        Bk = {k: v[okb] for k, v in B.items()} if not okb.all() else B
        bt = bt[okb]
        seq = Bk["seq"]
        # every member's seqs are 0, 1, ...: team t owns instances first[t] .. first[t] + max seq
        n_inst = np.zeros(n_t, np.int64)
        np.maximum.at(n_inst, bt, seq + 1)
        first = np.cumsum(n_inst) - n_inst
        inst = first[bt] + seq
        o4 = np.lexsort((Bk["loc"], inst))
        barriers = _typed({"instance": inst[o4], "team": bt[o4], "seq": seq[o4], "loc": Bk["loc"][o4],
                           "region": Bk["region"][o4], "cnode": Bk["cnode"][o4], "implicit": Bk["implicit"][o4],
                           "enter": Bk["enter"][o4], "exit": Bk["exit"][o4],
                           "n_members": teams["size"][bt[o4]],
                           "call_id": (Bk["loc"][o4].astype(np.int64) << 32) | Bk["call"][o4]}, OMP_BARRIERS)
    else:
        barriers = Table.empty(OMP_BARRIERS)
    return (teams, members, barriers), n_unforked


def build_locks(L: dict, loc_process: np.ndarray, lock_kind: dict[int, int]) -> Table:
    """Lock acquisitions in hand-over order per (process, lock)."""
    if not L or len(L["lock"]) == 0:
        return Table.empty(LOCKS)
    proc = loc_process[L["loc"]].astype(np.int64)
    o = np.lexsort((L["acquire_time"], L["order"], L["lock"], proc))
    cols = {k: v[o] for k, v in L.items()}
    proc = proc[o]
    prev = np.full(len(o), np.nan)
    same = (proc[1:] == proc[:-1]) & (cols["lock"][1:] == cols["lock"][:-1])
    prev[1:] = np.where(same, cols["release_time"][:-1], np.nan)
    ids = np.asarray(sorted(lock_kind), np.int64)
    kinds = np.asarray([lock_kind[i] for i in ids], np.int32)
    pos = np.minimum(np.searchsorted(ids, cols["lock"]), max(len(ids) - 1, 0))
    known = (len(ids) > 0) & (ids[pos] == cols["lock"]) if len(ids) else np.zeros(len(o), bool)
    cols.update(process=proc, prev_release_time=prev,
                lock_kind=np.where(known, kinds[pos] if len(ids) else -1, -1).astype(np.int32))
    return _typed(cols, LOCKS)


def remap_cnodes(table: Table, new_id: np.ndarray) -> None:
    """Rewrite builder node ids (columns named cnode / *_cnode) into final ids, in place."""
    new_id = np.asarray(new_id, np.int64)
    for k in list(table.keys()):
        if k == "cnode" or k.endswith("_cnode"):
            if table[k].dtype == np.int32:  # as the tables store them: a copy (the column may be another's too)
                table[k] = remap(table[k].copy(), new_id)  # remapped in place
                continue
            v = table[k].astype(np.int64)
            table[k] = np.where(v >= 0, new_id[np.maximum(v, 0)], -1).astype(np.int32)
