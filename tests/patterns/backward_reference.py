"""Slow, obvious references of the backward replay (patterns.kernels.backward / .delay) in plain Python.

Time maps are dicts {call path: seconds}; every quantity is recomputed from scratch where it is
needed, and the replay is scheduled by scanning all locations again and again until every point
has been visited.  Same inputs (``patterns.backward.BackwardInputs``), same semantics (Scalasca
2.6, see the modules' docstrings); used by tests/patterns/test_critical_path.py and
test_delay_kernels.py, which also take their random inputs and their comparison from the end of
this module.
"""

from __future__ import annotations

from collections import defaultdict

from random_hybrid_traces import random_trace

from analyzer.replay import replay
from patterns.backward import REQUIRES, backward_inputs

N_KINDS = 8
WAIT = N_KINDS
OMPBARRIER, OMPIDLE = 6, 7


def points(inp, loc):
    return list(range(int(inp.sp_off[loc]), int(inp.sp_off[loc + 1])))


def runtimes(inp, loc, a, b):
    out = defaultdict(float)
    for r in range(int(inp.seg_off[loc]), int(inp.seg_off[loc + 1])):
        if a < inp.seg_cut[r] <= b:
            out[int(inp.seg_cnode[r])] += float(inp.seg_time[r])
    return dict(out)


def waits(inp, loc, a, b):
    out = defaultdict(float)
    for j in points(inp, loc):
        if a < inp.sp_cut[j] < b and inp.sp_wait[j] > 0:
            out[int(inp.sp_cnode[j])] += float(inp.sp_wait[j])
    return dict(out), sum(out.values())


def diff(a, b):
    out = {k: v - b.get(k, 0.0) for k, v in a.items() if v - b.get(k, 0.0) > 0}
    return out, sum(out.values())


def cut_of(inp, j):
    return int(inp.sp_cut[j]) if j >= 0 else 0


def local_map(inp, j, prev):
    loc = int(inp.sp_loc[j])
    a, b = cut_of(inp, prev), int(inp.sp_cut[j])
    w, wsum = waits(inp, loc, a, b)
    m, total = diff(runtimes(inp, loc, a, b), w)
    if prev >= 0:
        cn = int(inp.sp_cnode[prev])
        t = m.get(cn, 0.0)
        off = float(inp.sp_total[prev] - inp.sp_compl[prev])
        m[cn] = max(t - off, 0.0)
        total -= min(off, t)
    return m, total, wsum


def synchronises(inp, j, rank):
    k, arg = int(inp.sp_sr_kind[j]), int(inp.sp_sr_arg[j])
    if k == 1:
        return True
    if k == 2:
        return arg == rank
    if k in (3, 4):
        for q in range(int(inp.grp_lo[arg]), int(inp.grp_hi[arg])):
            if inp.grp_rank[q] == rank:
                return k == 3 or inp.grp_sp[q] >= 0
    return False


def previous_mpi(inp, j, rank):
    loc = int(inp.sp_loc[j])
    before = [q for q in points(inp, loc) if q < j and inp.sp_mpi[q] and synchronises(inp, q, rank)]
    return before[-1] if before else -1


def previous_omp(inp, loc, j):
    before = [q for q in points(inp, loc) if (j < 0 or q < j) and not inp.sp_mpi[q]]
    return before[-1] if before else -1


# ----------------------------------------------------------------------------
def critical_path(inp):
    """{(cnode, loc): seconds} of the critical path."""
    sev = defaultdict(float)

    def charge(loc, a, b, minus):
        t = runtimes(inp, loc, a, b)
        for c, v in t.items():
            sev[(c, loc)] += v
        if minus >= 0:
            cn = int(inp.sp_cnode[minus])
            sev[(cn, loc)] -= min(float(inp.sp_wait[minus]), t.get(cn, 0.0))

    loc = int(inp.cp_start_loc)
    if inp.cp_start_sp >= 0:
        end, below = int(inp.sp_cut[inp.cp_start_sp]), int(inp.cp_start_sp)
    else:
        end, below = int(inp.n_cuts[loc]) + 1, int(inp.sp_off[loc + 1])
    for _ in range(len(inp.sp_loc) + 2):
        nxt = None
        for j in reversed([q for q in points(inp, loc) if q < below]):
            if inp.cp_stop[j]:
                charge(loc, int(inp.sp_cut[j]), end, j)
                return dict(sev)
            if inp.cp_next[j] >= 0 and inp.cp_next[j] != j:
                nxt = j
                break
        if nxt is None:
            charge(loc, 0, end, -1)
            return dict(sev)
        charge(loc, int(inp.sp_cut[nxt]), end, nxt)
        target = int(inp.cp_next[nxt])
        loc, end, below = int(inp.sp_loc[target]), int(inp.sp_cut[target]), target
    return dict(sev)


# ----------------------------------------------------------------------------
class Delay:
    """The delay analysis: ``run()`` returns {(metric, cnode, loc): seconds} (metric: kind, 8 + kind long-term)."""

    def __init__(self, inp):
        self.inp = inp
        self.cost = defaultdict(float)  # (point, kind) -> seconds
        self.sev = defaultdict(float)

    def emit(self, metric, loc, m, scale):
        for c, v in m.items():
            self.sev[(metric, c, loc)] += scale * v

    def add_costs(self, loc, prev, cur, kind, scale_at):
        """scale_at(point) -> the scale in force at that point."""
        for j in points(self.inp, loc):
            if (prev < 0 or j > prev) and (cur < 0 or j < cur):
                s = scale_at(j)
                if s > 0 and self.inp.sp_wait[j] > 0:
                    self.cost[(j, kind)] += s * float(self.inp.sp_wait[j])

    def p2p(self, h, snap):
        inp = self.inp
        w, c, typ = int(inp.h_a[h]), int(inp.h_b[h]), int(inp.h_type[h])
        rwait = float(inp.sp_wait[w])
        if not rwait > 0:
            return
        lc, lw = int(inp.sp_loc[c]), int(inp.sp_loc[w])
        prev = previous_mpi(inp, c, int(inp.loc_rank[lw]))
        local, _, wsum = local_map(inp, c, prev)
        remote, _, _ = local_map(inp, w, previous_mpi(inp, w, int(inp.loc_rank[lc])))
        d, dsum = diff(local, remote)
        den = dsum + wsum
        scale_w = min(rwait / den, 1.0) if den > 0 else 0.0
        if dsum > 0:
            self.emit(typ, lc, d, scale_w)
        if not den > 0:
            return
        for kind in range(N_KINDS):
            s = snap[kind] / den
            if s > 0:
                self.emit(N_KINDS + kind, lc, d, s)
            total = s + (scale_w if kind == typ else 0.0)
            self.add_costs(lc, prev, c, kind, lambda j, t=total: t)

    def coll(self, h):
        inp = self.inp
        r, g, typ = int(inp.h_a[h]), int(inp.h_b[h]), int(inp.h_type[h])
        lr = int(inp.sp_loc[r])
        rank_r = int(inp.loc_rank[lr])
        members = list(range(int(inp.grp_lo[g]), int(inp.grp_hi[g])))
        remaining = {int(inp.grp_rank[q]) for q in members} - {rank_r}
        spmap, prev = {}, -1
        for j in reversed([q for q in points(inp, lr) if q < r and inp.sp_mpi[q]]):
            if not remaining:
                break
            hit = {rk for rk in remaining if synchronises(inp, j, rk)}
            if hit != remaining:
                for rk in hit:
                    spmap[rk] = j
                remaining -= hit
            else:
                remaining = set()
            prev = j
        gmap, _, propw = local_map(inp, r, prev)
        keys = sorted(gmap)
        delay = defaultdict(lambda: defaultdict(float))
        base = defaultdict(float)
        recent = defaultdict(lambda: defaultdict(float))  # point -> key -> scale
        for q in members:
            p, rank = int(inp.grp_sp[q]), int(inp.grp_rank[q])
            if p < 0:
                continue
            times, pw = gmap, propw
            if rank in spmap:
                smap, _, pw = local_map(inp, r, spmap[rank])
                times = {k: smap.get(k, 0.0) for k in keys}
            if p == r:
                d = {k: max(times[k], 0.0) for k in keys}
            else:
                lm, _, _ = local_map(inp, p, previous_mpi(inp, p, rank_r))
                d = {k: max(times[k] - lm.get(k, 0.0), 0.0) for k in keys}
            dsum = sum(d.values())
            for key in range(N_KINDS + 1):
                v = max(float(inp.sp_wait[p]), 0.0) if key == WAIT else self.cost[(p, key)]
                s = v / (dsum + pw) if dsum + pw > 0 else 0.0
                for k in keys:
                    delay[key][k] += s * d[k]
                if rank in spmap:
                    recent[spmap[rank]][key] += s
                else:
                    base[key] += s
        if sum(delay[WAIT].values()) > 0:
            self.emit(typ, lr, delay[WAIT], 1.0)
        for kind in range(N_KINDS):
            if sum(delay[kind].values()) > 0:
                self.emit(N_KINDS + kind, lr, delay[kind], 1.0)
        for key in range(N_KINDS + 1):
            # the scale in force at a point: the base, then at each more recent point the base plus the
            # scales of the points before it (Scalasca's ScaleMap); between those it keeps its last value
            table, run = {}, base[key]
            for j in sorted(recent):
                table[j] = run
                run += recent[j][key]
            state = {"s": base[key]}

            def scale_at(j, table=table, state=state):
                if j in table:
                    state["s"] = table[j]
                return state["s"]

            self.add_costs(lr, prev, r, typ if key == WAIT else key, scale_at)

    def ompbar(self, h):
        inp = self.inp
        latest = int(inp.h_a[h])
        ll = int(inp.sp_loc[latest])
        lprev = previous_omp(inp, ll, latest)
        lmap, _, propw = local_map(inp, latest, lprev)
        delay = defaultdict(lambda: defaultdict(float))
        sums = defaultdict(float)
        for q in range(int(inp.hm_off[h]), int(inp.hm_off[h + 1])):
            p = int(inp.hm_sp[q])
            mmap, _, _ = local_map(inp, p, previous_omp(inp, int(inp.sp_loc[p]), p))
            d, dsum = diff(lmap, mmap)
            for key in range(N_KINDS + 1):
                if key == OMPBARRIER:
                    continue
                v = float(inp.sp_time[latest] - inp.sp_time[p]) if key == WAIT else self.cost[(p, key)]
                s = v / (dsum + propw) if dsum + propw > 0 else 0.0
                sums[key] += s
                for k, x in d.items():
                    delay[key][k] += s * x
        if sum(delay[WAIT].values()) > 0:
            self.emit(OMPBARRIER, ll, delay[WAIT], 1.0)
        for kind in range(N_KINDS):
            if kind != OMPBARRIER and sum(delay[kind].values()) > 0:
                self.emit(N_KINDS + kind, ll, delay[kind], 1.0)
        for key in range(N_KINDS + 1):
            if key != OMPBARRIER:
                self.add_costs(ll, lprev, latest, OMPBARRIER if key == WAIT else key, lambda j, s=sums[key]: s)

    def idle(self, h):
        inp = self.inp
        f, loc, threads = int(inp.h_a[h]), int(inp.h_b[h]), int(inp.h_n[h])
        prev = previous_omp(inp, loc, f)
        b = int(inp.sp_cut[f]) if f >= 0 else int(inp.n_cuts[loc]) + 1
        a = 0
        if prev >= 0:
            joins = [int(x) for x in inp.join_cut[inp.join_off[loc]:inp.join_off[loc + 1]] if x > inp.sp_cut[prev]]
            if joins and joins[0] <= b:
                a = joins[0]
        w, wsum = waits(inp, loc, cut_of(inp, prev), b)
        d, dsum = diff(runtimes(inp, loc, a, b), w)
        scale = float(threads - 1) if dsum + wsum > 0 else 0.0
        if dsum > 0:
            self.emit(OMPIDLE, loc, d, scale)
        if wsum > 0:
            self.add_costs(loc, prev, f, OMPIDLE, lambda j: scale)

    def run(self):
        inp = self.inp
        L = int(inp.n_locations)
        todo = {l: list(range(int(inp.tc_off[l]), int(inp.tc_off[l + 1]))) for l in range(L)}
        snap, arrived, done = {}, defaultdict(set), set()
        while any(todo.values()):
            moved = False
            for l in range(L):
                while todo[l]:
                    t = todo[l][0]
                    h, kind = int(inp.tc_h[t]), int(inp.tc_kind[t])
                    if kind == 0:  # waiter: hand over the costs of its wait state
                        snap[h] = [self.cost[(int(inp.h_a[h]), k)] for k in range(N_KINDS)]
                    elif kind == 1:
                        if h not in snap:
                            break
                        self.p2p(h, snap[h])
                    elif kind == 3:
                        self.idle(h)
                    else:
                        arrived[h].add(t)
                        if h not in done:
                            if len(arrived[h]) < inp.h_n[h]:
                                break
                            (self.coll if inp.h_kind[h] == 1 else self.ompbar)(h)
                            done.add(h)
                    todo[l].pop(0)
                    moved = True
            if not moved:
                raise RuntimeError("the reference replay is stuck (inconsistent trace)")
        return dict(self.sev)


# --------------------------------------------------------------------------
# what the kernel tests compare on
# --------------------------------------------------------------------------
def random_inputs(seed: int):
    """``(context, BackwardInputs)`` of a random hybrid trace whose shape varies with ``seed``."""
    trace = random_trace(seed, n_ranks=3 + seed % 3, n_threads=1 + seed % 3, steps=18 + 2 * seed)
    ctx = replay(trace, tables=REQUIRES)
    return ctx, backward_inputs(ctx)


def assert_close(a: dict, b: dict, tol: float = 1e-12) -> None:
    """Two sparse results ({key: value}, a missing key is 0) agree to ``tol`` everywhere."""
    keys = set(a) | set(b)
    bad = {k: (a.get(k, 0.0), b.get(k, 0.0)) for k in keys if abs(a.get(k, 0.0) - b.get(k, 0.0)) > tol}
    assert not bad, sorted(bad.items())[:5]
