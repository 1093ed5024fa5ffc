"""The checks across locations of :mod:`tracefmt.validate`: messages, collectives, OpenMP teams, locks.

The walk over each location's events appends what these checks need to packed numpy rows (:class:`Rows`),
bytes per row rather than a Python tuple per row, so a check's memory is the largest location plus these
rows (docs/performance.md, "`expert-trace check`").  Each check finds its faulty groups with numpy and
words the problems of those groups only, in the order of the sorted group keys and, within a group, of the
walk.
"""

from __future__ import annotations

import numpy as np

#: events the Python walk takes from the columns at a time: the Python objects of one step, not of a location
WALK_CHUNK = 1 << 13
#: rows kept as Python tuples before they are packed into a numpy chunk
PACK_ROWS = 1 << 12


class Rows:
    """Rows appended one at a time by the walk, held as packed numpy records (no Python object per row).

    The bookkeeping across locations (messages, collectives, team members,
    lock acquisitions) grows with the trace, so it must cost bytes per row,
    not a tuple per row; rows wait in a short Python list and go to a numpy
    chunk every ``PACK_ROWS`` rows.
    """

    def __init__(self, **fields):
        self.dtype = np.dtype(list(fields.items()))
        self._pending: list[tuple] = []
        self._chunks: list[np.ndarray] = []
        self._n = 0

    def add(self, *row) -> None:
        self._pending.append(row)
        if len(self._pending) >= PACK_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._chunks.append(np.array(self._pending, self.dtype))
            self._n += len(self._pending)
            self._pending = []

    def __len__(self) -> int:
        return self._n + len(self._pending)

    def take(self) -> np.ndarray:
        """All rows in the order added, as one record array; the rows are handed over (self is emptied)."""
        self._flush()
        out = np.empty(self._n, self.dtype)
        at = 0
        chunks, self._chunks, self._n = self._chunks, [], 0
        chunks.reverse()
        while chunks:  # copy chunk by chunk, dropping each: the peak is the result plus one chunk
            c = chunks.pop()
            out[at : at + len(c)] = c
            at += len(c)
        return out


def groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For keys sorted ascending: (the distinct keys, where each group starts, each row's position in its group)."""
    if len(keys) == 0:
        return keys[:0], np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    sizes = np.diff(np.append(starts, len(keys)))
    pos = np.arange(len(keys), dtype=np.int64) - np.repeat(starts, sizes)
    return keys[starts], starts, pos


def pair_key(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """One sortable uint64 key from two 32-bit columns (hi first)."""
    return (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)


class AcrossLocations:
    """The checks after the walk; mixed into the validator, whose ``add``, ``defs``, rows and names they use."""

    # ------------------------------------------------------------------ across locations
    # Each check finds the faulty groups with numpy over the packed rows and words the problems of those only,
    # in the order of the sorted group keys and, within a group, of the rows.

    def check_messages(self) -> None:
        keys = sorted(self.message_keys)
        rank = np.empty(len(keys), np.int64)  # key number -> position of its key in sorted order
        for r, key in enumerate(keys):
            rank[self.message_keys[key]] = r
        sides = []
        for rows in (self.sends, self.recvs):
            m = rows.take()
            m = m[np.argsort(rank[m["key"]], kind="stable")]  # by sorted key, then in the walk's order
            n = np.bincount(rank[m["key"]], minlength=len(keys))
            sides.append((m, n, np.concatenate(([0], np.cumsum(n)))))
        (S, ns, s0), (R, nr, r0) = sides
        bad = ns != nr
        # the k-th send of a key matches its k-th receive (MPI's non-overtaking rule)
        _, _, pos = groups(rank[S["key"]])
        k_of = rank[S["key"]]
        paired = pos < nr[k_of]
        late = R["t"][r0[k_of[paired]] + pos[paired]] < S["t"][paired]
        bad[np.unique(k_of[paired][late])] = True
        for r in np.flatnonzero(bad).tolist():
            comm, src, dst, tag = keys[r]
            sends = list(zip(*(S[f][s0[r] : s0[r + 1]].tolist() for f in ("loc", "idx", "t"))))
            recvs = list(zip(*(R[f][r0[r] : r0[r + 1]].tolist() for f in ("loc", "idx", "t"))))
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
        rows = self.colls.take()
        for comm_id in np.unique(rows["comm"]).tolist():
            mine_all = rows[rows["comm"] == comm_id]
            comm = self.defs.comms[comm_id]
            # instance k of a rank is its k-th completed collective on the communicator
            by_rank = mine_all[np.argsort(mine_all["rank"], kind="stable")]
            ranks, starts, k = groups(by_rank["rank"])
            counts = dict(zip(ranks.tolist(), np.diff(np.append(starts, len(by_rank))).tolist()))
            ends = dict(zip(ranks.tolist(), (np.append(starts[1:], len(by_rank)) - 1).tolist()))
            n = max(counts.values())
            for rank in comm.ranks:
                have = counts.get(rank, 0)
                if have < n:
                    # point at the rank's last completed collective on this comm, if any
                    if have:
                        last = by_rank[ends[rank]]
                        loc, i, t = int(last["loc"]), int(last["idx"]), float(last["t"])
                    else:
                        loc, i, t = self.master_of(rank), None, None
                    self.add(
                        f"rank {rank} completes {have} collectives on {comm.name!r}, other members {n}: "
                        f"instances {have}..{n - 1} are incomplete",
                        loc, i, t,
                    )
            # each instance against its lowest rank's
            order = np.lexsort((by_rank["rank"], k))
            inst, k = by_rank[order], k[order]
            _, first, _ = groups(k)
            ref = np.repeat(first, np.diff(np.append(first, len(inst))))
            differs = (inst["region"] != inst["region"][ref]) | (inst["root"] != inst["root"][ref])
            for j in np.flatnonzero(differs).tolist():
                row, r0 = inst[j], inst[ref[j]]
                reg, root, reg0, root0, kk = int(row["region"]), int(row["root"]), int(r0["region"]), \
                    int(r0["root"]), int(k[j])
                loc, i, t = int(row["loc"]), int(row["idx"]), float(row["t"])
                if reg != reg0:
                    self.add(
                        f"collective instance {kk} on {comm.name!r} is {self.region_name(reg)} here "
                        f"but {self.region_name(reg0)} on rank {int(r0['rank'])}",
                        loc, i, t,
                    )
                else:
                    self.add(
                        f"collective instance {kk} on {comm.name!r} has root {root} here but {root0} on rank "
                        f"{int(r0['rank'])}",
                        loc, i, t,
                    )

    def check_teams(self) -> None:
        members = self.team_members.take()
        members = members[np.lexsort((members["team"], members["process"]))]  # by (process, team), walk order
        key = pair_key(members["process"], members["team"])
        keys, starts, _ = groups(key)
        del key
        if len(keys) == 0:
            self.forks.take(), self.team_barriers.take()
            return
        ends = np.append(starts[1:], len(members))
        # the team size: the last fork of (process, team)
        forks = self.forks.take()
        fkey = pair_key(forks["process"], forks["team"])
        order = np.argsort(fkey, kind="stable")
        fkeys, fstarts, _ = groups(fkey[order])
        sizes = forks["size"][order][np.append(fstarts[1:], len(order)) - 1].astype(np.int64)
        del forks, fkey, order
        j = np.minimum(np.searchsorted(fkeys, keys), max(len(fkeys) - 1, 0))
        forked = fkeys[j] == keys if len(fkeys) else np.zeros(len(keys), bool)
        size = np.where(forked, sizes[j] if len(sizes) else 0, 0)
        del j
        # OMP_COLLEXITs of each member location in the team (a location belongs to one process)
        barriers = self.team_barriers.take()
        bkey = pair_key(barriers["team"], barriers["loc"])
        border = np.argsort(bkey)
        bkey, bcount = bkey[border], barriers["count"][border]
        del barriers, border
        mkey = pair_key(members["team"], members["loc"])
        jb = np.minimum(np.searchsorted(bkey, mkey), max(len(bkey) - 1, 0))
        passes = np.where(bkey[jb] == mkey, bcount[jb], 0) if len(bkey) else np.zeros(len(members), np.int64)
        del mkey, jb, bkey, bcount
        # faulty teams: not forked, a thread number beyond the size, a repeated thread number, barrier counts
        gsize = np.repeat(size, ends - starts)
        bad = ~forked
        bad |= np.maximum.reduceat(members["num"] >= gsize.astype(np.uint64), starts)
        del gsize
        g = np.repeat(np.arange(len(keys)), ends - starts)
        o = np.lexsort((members["num"], g))
        same = (g[o][1:] == g[o][:-1]) & (members["num"][o][1:] == members["num"][o][:-1])
        bad[g[o][1:][same]] = True
        del o, same, g
        bad |= np.maximum.reduceat(passes, starts) != np.minimum.reduceat(passes, starts)
        for gi in np.flatnonzero(bad).tolist():
            part = members[starts[gi] : ends[gi]]
            process, team = int(part["process"][0]), int(part["team"][0])
            group = list(zip(*(part[f].tolist() for f in ("loc", "num", "idx", "t"))))
            counts = dict(zip(part["loc"].tolist(), passes[starts[gi] : ends[gi]].tolist()))
            self.about(process)
            self._words_team(process, team, group, int(size[gi]) if forked[gi] else None, counts)

    def _words_team(self, process, team, members, size, per_member) -> None:
        """The problems of one team: members [(loc, thread_num, idx, time)], per_member {loc: barriers}."""
        if size is None:
            loc, _, i, t = members[0]
            self.add(f"parallel region of team {team}, which no thread of process {process} forked", loc, i, t)
            return
        nums = [m[1] for m in members]
        for loc, num, i, t in members:
            if num >= size:
                self.add(f"thread number {num} in team {team} of size {size}", loc, i, t)
        if len(set(nums)) != len(nums):
            loc, _, i, t = members[-1]
            self.add(f"team {team} of process {process} has repeated thread numbers {sorted(nums)}", loc, i, t)
        if len(set(per_member.values())) > 1:
            detail = ", ".join(f"location {loc}: {c}" for loc, c in sorted(per_member.items()))
            fewest = min(per_member, key=lambda loc: (per_member[loc], loc))
            self.add(
                f"members of team {team} of process {process} pass different numbers of barriers ({detail})",
                fewest,
            )

    def check_locks(self) -> None:
        acq = self.acquisitions.take()
        # by (process, lock), then by order; equal orders keep the walk's order
        acq = acq[np.lexsort((acq["order"], acq["lock"], acq["process"]))]
        keys, starts, pos = groups(pair_key(acq["process"], acq["lock"]))
        if len(keys) == 0:
            return
        ends = np.append(starts[1:], len(acq))
        # orders must be 1..n per (process, lock)
        misordered = np.logical_or.reduceat(acq["order"] != (pos + 1).astype(np.uint64), starts)
        del pos
        early = np.flatnonzero(acq["acq_t"][1:] < acq["rel_t"][:-1]) + 1  # before the previous holder released
        early = early[~np.isin(early, starts)]
        group_of_early = np.searchsorted(starts, early, side="right") - 1
        for gi, (process, lock) in enumerate(zip((keys >> np.uint64(32)).tolist(),
                                                 (keys & np.uint64(0xFFFFFFFF)).tolist())):
            self.about(process)
            if misordered[gi]:
                part = acq[starts[gi] : ends[gi]]
                orders = part["order"].tolist()
                first = part[0]
                self.add(
                    f"acquisition orders of lock {lock} in process {process} are {orders[:10]}"
                    f"{'...' if len(orders) > 10 else ''}, not 1..{len(orders)}",
                    int(first["loc"]), int(first["idx"]), float(first["acq_t"]),
                )
                continue
            lo, hi = np.searchsorted(group_of_early, gi), np.searchsorted(group_of_early, gi, side="right")
            for j in early[lo:hi].tolist():
                prev, cur = acq[j - 1], acq[j]
                self.add(
                    f"lock {lock} acquired (order {int(cur['order'])}) before its previous holder, location "
                    f"{int(prev['loc'])}, released it at {float(prev['rel_t']):.9f} s",
                    int(cur["loc"]), int(cur["idx"]), float(cur["acq_t"]),
                )
