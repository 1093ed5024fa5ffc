"""``expert-profile``: ompP-style profiles computed directly from a trace.

ompP (Fürlinger & Moore, seed paper 004) reports per region and thread:

* ``execT`` / ``execC``: inclusive time and number of executions;
* ``bodyT`` / ``enterT`` / ``exitT`` for constructs with a body: time inside
  the body, before it (waiting for the lock, thread start-up) and after it
  (releasing, shutdown).  For ``critical``/``ordered``/``single`` the body is
  the ``*_BODY`` child region; for ``parallel`` the body is the thread's
  ENTER..EXIT, enterT the time since the master's FORK and exitT the time to
  its JOIN.  Other regions have no body columns.
* MPI activity inside the region (inclusive, as ompP samples thread-local
  counters at region enter/exit): ``mpiT`` (time in MPI calls), ``inV`` /
  ``outV`` (bytes received / sent), ``recvC`` / ``sendC`` (point-to-point
  receives and sends), ``collC`` (collective calls).
* Collective data volume by the paper's Fig. 4 in the *naive* or *minimal*
  accounting (see :func:`collective_volume`).

The overhead analysis splits each parallel region's total time (summed over
its threads) into Synch, Imbal, Limpar, Mgmt and MPI, plus a ``(program)`` row
for the whole run per process; PNG charts (an overhead pie per process and a
radar chart of the heaviest regions across processes) need matplotlib.

Recursion: an instance nested inside another instance of the same region on
the same thread counts in ``execC`` but not again in the time and MPI columns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from tracefmt import nesting
from tracefmt.columns import event_columns
from tracefmt.dense import dense_view
from tracefmt.names import printable
from tracefmt.layout import NO_ID, EventType, Paradigm, Role

from . import kernel as K


class ProfileError(Exception):
    """A trace cannot be profiled (missing, unreadable, broken nesting) or a request is bad.  The CLI exits 2."""


COLUMNS = K.COLUMNS
_I = {c: i for i, c in enumerate(COLUMNS)}
OVERHEADS = K.OVERHEADS
PROGRAM = "(program)"

#: the construct a ``*_BODY`` region is the body of
BODY_OF = {Role.OMP_CRITICAL_BODY: Role.OMP_CRITICAL, Role.OMP_SINGLE_BODY: Role.OMP_SINGLE,
           Role.OMP_ORDERED_BODY: Role.OMP_ORDERED}
#: constructs with body columns (bodyT, enterT, exitT)
HAS_BODY = {Role.OMP_CRITICAL, Role.OMP_SINGLE, Role.OMP_ORDERED, Role.OMP_PARALLEL}


# --------------------------------------------------------------------------
# Collective data volume (ompP Fig. 4)
# --------------------------------------------------------------------------
def _op(name: str) -> str:
    """``MPI_Allreduce`` -> ``allreduce``; non-blocking / persistent variants map to the blocking op."""
    op = name[4:].lower() if name[:4].upper() == "MPI_" else name.lower()
    if op.endswith("_init"):
        op = op[:-5]
    if op.startswith("i") and op[1:] in _ROOTED | _ALL:
        op = op[1:]
    return op


_ROOTED = {"bcast", "scatter", "scatterv", "gather", "gatherv", "reduce"}
_ALL = {"allreduce", "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw", "reduce_scatter",
        "reduce_scatter_block", "scan", "exscan", "barrier"}


def collective_volume(name: str, sent: int, recvd: int, np_: int, is_root: bool, comm_rank: int,
                      accounting: str = "naive") -> tuple[float, float]:
    """(send volume, receive volume) of one collective call on one process.

    The trace records EPIK's byte counts (``sent``/``recvd`` of MPI_COLLEXIT:
    Bcast root sent = N·d and everyone recvd = d; Reduce sent = d, root recvd
    = N·d; Allreduce sent = recvd = N·d; Scan sent = (N-rank)·d, recvd =
    (rank+1)·d; Gather/Scatter/Allgather/Alltoall: the local buffer sizes
    times N where the call moves N blocks).  From them the per-call sizes
    (``dsize``, ``ssize``, ``rsize``) are recovered and ompP's table applied.
    Unknown operations keep the recorded numbers.
    """
    n = max(int(np_), 1)
    op = _op(name)
    naive = accounting == "naive"
    if op == "barrier":
        return 0.0, 0.0
    if op == "bcast":
        d = float(recvd) if recvd else float(sent) / n
        if is_root:
            return (d * (n - 1) if naive else d), 0.0
        return 0.0, d
    if op == "reduce":
        d = float(sent) if sent else float(recvd) / n
        if is_root:
            return 0.0, (d * (n - 1) if naive else d)
        return d, 0.0
    if op in ("scatter", "scatterv"):  # root sends N blocks (Σ ssize[i]), everyone receives rsize
        return (float(sent) if is_root else 0.0), float(recvd)
    if op in ("gather", "gatherv"):  # everyone sends ssize, the root receives N blocks
        return float(sent), (float(recvd) if is_root else 0.0)
    if op == "allreduce":
        d = float(sent) / n
        return d * (n - 1), d * (n - 1)
    if op in ("allgather", "allgatherv"):
        ssize = float(sent) / n  # recorded N·ssize
        return (ssize * n if naive else ssize), float(recvd)
    if op in ("alltoall", "alltoallv", "alltoallw"):
        return float(sent), float(recvd)
    if op in ("reduce_scatter", "reduce_scatter_block"):
        # recorded: sent = Σ_j dsize[j], recvd = N·dsize[i]
        own = float(recvd) / n
        return float(sent) - own, (own * (n - 1) if naive else own)
    if op in ("scan", "exscan"):
        d = float(recvd) / (comm_rank + 1) if recvd else float(sent) / max(n - comm_rank, 1)
        first, last = comm_rank == 0, comm_rank == n - 1
        return (0.0 if last else d), (0.0 if first else d)
    return float(sent), float(recvd)


# --------------------------------------------------------------------------
# Profile
# --------------------------------------------------------------------------
@dataclass
class RegionRow:
    region: int
    name: str
    where: str  # "file (begin-end)"
    kind: str  # "CRITICAL", "PARALLEL", "USER", "FUNCTION", ...
    has_body: bool
    per_loc: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)  # (rank, thread) -> COLUMNS

    def total(self) -> np.ndarray:
        return np.sum(list(self.per_loc.values()), axis=0) if self.per_loc else np.zeros(len(COLUMNS))


@dataclass
class Profile:
    source: str
    volume: str
    regions: dict[int, RegionRow]
    # (parallel region name or PROGRAM, rank) -> [Total, Synch, Imbal, Limpar, Mgmt, MPI]
    overheads: dict[tuple[str, int], np.ndarray]
    header: dict[str, float]

    def overhead_rows(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for (name, _rank), v in self.overheads.items():
            out[name] = out.get(name, 0) + v
        return out

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "volume_accounting": self.volume,
            "header": self.header,
            "regions": [{
                "name": r.name, "where": r.where, "kind": r.kind,
                "threads": {f"{k[0]}.{k[1]}": dict(zip(COLUMNS, v.tolist())) for k, v in sorted(r.per_loc.items())},
                "sum": dict(zip(COLUMNS, r.total().tolist())),
            } for r in self.regions.values()],
            "overheads": [{"region": name, "rank": rank, **dict(zip(("Total",) + OVERHEADS, v.tolist()))}
                          for (name, rank), v in sorted(self.overheads.items(), key=lambda kv: (kv[0][0], kv[0][1]))],
        }


def region_kind(region) -> str:
    """The kind a region row shows: the OpenMP construct, USER_REGION, FUNCTION or the paradigm."""
    role = Role(region.role) if region.role in Role._value2member_map_ else None
    if region.paradigm == Paradigm.OPENMP and role is not None:
        return role.name.replace("OMP_", "")
    if region.paradigm == Paradigm.USER:
        return "USER_REGION" if role == Role.USER_REGION else "FUNCTION"
    return Paradigm(region.paradigm).name if region.paradigm in Paradigm._value2member_map_ else "UNKNOWN"


def overhead_class(role, name: str, parent_role) -> str | None:
    """ompP's class of the *whole* time of a region instance, or None (classified by parts or work)."""
    if role == Role.OMP_BARRIER:
        return "Synch"
    if role == Role.OMP_IMPLICIT_BARRIER:
        # threads idle while one executes a single (or a short sections) have limited parallelism
        return "Limpar" if parent_role == Role.OMP_SINGLE else "Imbal"
    if role == Role.OMP_LOCK_API:
        return "Synch" if ("_set_" in name or "_test_" in name) else "Mgmt"
    return None


def open_trace(path: str):
    import tracefmt

    if not os.path.exists(path):
        raise ProfileError(f"{path}: no such file")
    try:
        from tracefmt.detect import open_any

        return open_any(path)
    except tracefmt.TraceFormatError as e:
        raise ProfileError(str(e)) from None
    except OSError as e:
        raise ProfileError(f"{path}: cannot read: {e.strerror or e}") from None


def _where(defs, r) -> str:
    fname = defs.files.get(r.file, "") if r.file != NO_ID else ""
    if not fname or r.begin_line == NO_ID:
        lines = ""
    elif r.end_line == NO_ID or r.end_line == r.begin_line:
        lines = f" ({r.begin_line})"  # the runtime knows where a construct starts, not always where it ends
    else:
        lines = f" ({r.begin_line}-{r.end_line})"
    return f"{fname}{lines}"


def _region_table(regions) -> tuple[K.RegionTable, list[str]]:
    """The kernel's per-region-id arrays, and the names of the overhead rows they index.

    Overhead rows are keyed by name: parallel regions' names, then PROGRAM
    (shared if a region is so named).
    """
    n = max(regions, default=-1) + 1
    valid, is_mpi, is_parallel = np.zeros(n, np.bool_), np.zeros(n, np.bool_), np.zeros(n, np.bool_)
    has_body, is_crit_ord = np.zeros(n, np.bool_), np.zeros(n, np.bool_)
    role, body_of, cls, ovh = np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.zeros(n, np.int64), \
        np.full(n, -1, np.int64)
    index: dict[str, int] = {}
    for rid, r in regions.items():
        valid[rid] = True
        role[rid] = r.role
        is_mpi[rid] = r.paradigm == Paradigm.MPI
        is_parallel[rid] = r.role == Role.OMP_PARALLEL
        has_body[rid] = r.role in HAS_BODY
        body_of[rid] = int(BODY_OF[r.role]) if r.role in BODY_OF else -1
        is_crit_ord[rid] = r.role in (Role.OMP_CRITICAL, Role.OMP_ORDERED)
        if r.role == Role.OMP_IMPLICIT_BARRIER:
            cls[rid] = K.CLS_IMPLICIT_BARRIER
        else:
            c = overhead_class(r.role, r.name, None)
            cls[rid] = K.CLS_NONE if c is None else 1 + OVERHEADS.index(c)
        if r.role == Role.OMP_PARALLEL:
            ovh[rid] = index.setdefault(r.name, len(index))
    program = index.setdefault(PROGRAM, len(index))
    table = K.RegionTable(valid, role, is_mpi, is_parallel, has_body, body_of, is_crit_ord, cls, ovh, program)
    return table, list(index)


def _collective_volumes(ev, rank: int, defs, regions, volume: str):
    """Send and receive volume of each MPI_COLLEXIT event (0 elsewhere), computed once per distinct call."""
    n = len(ev.type)
    sent = np.zeros(n)
    recvd = np.zeros(n)
    idx = np.flatnonzero(ev.type == EventType.MPI_COLLEXIT)
    if not len(idx):
        return sent, recvd
    cache: dict[tuple, tuple[float, float]] = {}
    s_out, r_out = [], []
    for key in zip(ev.a[idx].tolist(), ev.b[idx].tolist(), ev.c[idx].tolist(), ev.d[idx].tolist(),
                   ev.e[idx].tolist()):
        v = cache.get(key)
        if v is None:
            rid, cid, root, d, e = key
            r = regions.get(rid)
            if r is None:  # the kernel reports it: the exit cannot match an open (defined) region
                v = (0.0, 0.0)
            else:
                comm = defs.comms.get(cid)
                ranks = comm.ranks if comm is not None else ()
                np_ = len(ranks) or 1
                crank = ranks.index(rank) if rank in ranks else 0
                v = collective_volume(r.name, d, e, np_, root != NO_ID and root == rank, crank, volume)
            cache[key] = v
        s_out.append(v[0])
        r_out.append(v[1])
    sent[idx] = s_out
    recvd[idx] = r_out
    return sent, recvd


def _nesting_message(got: K.ProfileStatus, ev, regions) -> str:
    """The words for the kernel's nesting problem (``tracefmt.nesting``; regions it names by id, open ones by name)."""
    i = got.event
    return nesting.message(got.status, event=i, time=got.time,
                           event_type=int(ev.type[i]) if i >= 0 else EventType.EXIT,
                           region=str(int(ev.a[i])) if i >= 0 else "",
                           open_region=repr(regions[got.region].name) if got.region >= 0 else "")


def _team_table(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted team ids and their FORK (or JOIN) times from (teams, times) pieces in location order.

    A team id recorded twice keeps its last time, as a dictionary filled in that order would.
    """
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0)
    teams = np.concatenate([p[0] for p in parts]).astype(np.int64)
    times = np.concatenate([p[1] for p in parts])
    uniq, first_from_end = np.unique(teams[::-1], return_index=True)
    return uniq, times[::-1][first_from_end]


def profile_trace(trace, volume: str = "naive") -> Profile:
    """Profile a trace (path or open tracefmt.Trace)."""
    if volume not in ("naive", "minimal"):
        raise ProfileError(f"volume accounting {volume!r}: choose naive or minimal")
    if isinstance(trace, (str, os.PathLike)):
        source = os.fspath(trace)
        trace = open_trace(source)
    else:
        source = getattr(trace, "path", "<trace>")
    trace = dense_view(trace)  # tables sized by the ids that occur, not by the largest id
    defs = trace.defs
    regions = defs.regions
    locs = [int(x) for x in trace.location_ids]
    loc_rank = {l: int(defs.locations[l].process) for l in locs}
    loc_thread = {l: int(defs.locations[l].thread) for l in locs}

    # FORK / JOIN times per (process, team id), from the masters (the last one recorded wins)
    fork_parts: dict[int, list] = {}  # rank -> [(team ids, times)] in location order
    join_parts: dict[int, list] = {}
    t_first, t_last = np.inf, -np.inf
    events = {}
    for l in locs:
        ev = trace.events(l)
        events[l] = ev
        if len(ev):
            t_first, t_last = min(t_first, float(ev.time[0])), max(t_last, float(ev.time[-1]))
        for kind, parts in ((EventType.OMP_FORK, fork_parts), (EventType.OMP_JOIN, join_parts)):
            sel = ev.type == kind
            if sel.any():
                parts.setdefault(loc_rank[l], []).append((ev.a[sel], ev.time[sel]))
    duration = max(t_last - t_first, 0.0) if np.isfinite(t_first) else 0.0
    fork = {rank: _team_table(p) for rank, p in fork_parts.items()}
    join = {rank: _team_table(p) for rank, p in join_parts.items()}
    no_team = (np.zeros(0, np.int64), np.zeros(0))

    threads_of_rank: dict[int, int] = {}
    for l in locs:
        threads_of_rank[loc_rank[l]] = threads_of_rank.get(loc_rank[l], 0) + 1

    rt, ovh_names = _region_table(regions)
    n_reg, n_names = len(rt.valid), len(ovh_names)
    seq = np.zeros(2, np.int64)  # first-touch counters: regions, overhead rows
    reg_stamp = np.full(n_reg, -1, np.int64)
    tables: dict[tuple[int, int], np.ndarray] = {}  # (rank, thread) -> [region, COLUMNS]
    table_order: list[tuple[int, int]] = []
    ovh_acc: dict[int, np.ndarray] = {}  # rank -> [overhead row, Total..MPI]
    ovh_stamp: dict[int, np.ndarray] = {}

    def rank_ovh(rank: int):
        if rank not in ovh_acc:
            ovh_acc[rank] = np.zeros((n_names, 1 + len(OVERHEADS)))
            ovh_stamp[rank] = np.full(n_names, -1, np.int64)
        return ovh_acc[rank], ovh_stamp[rank]

    def touch_program(rank: int) -> np.ndarray:
        acc, stamp = rank_ovh(rank)
        if stamp[rt.program] < 0:
            stamp[rt.program] = seq[K.SEQ_OVERHEAD_ROWS]
            seq[K.SEQ_OVERHEAD_ROWS] += 1
        return acc[rt.program]

    for l in locs:
        rank, thread = loc_rank[l], loc_thread[l]
        ev = events.pop(l)
        key = (rank, thread)
        if key not in tables:
            tables[key] = np.zeros((n_reg, len(COLUMNS)))
            table_order.append(key)
        acc, stamp = rank_ovh(rank)
        volumes = K.EventVolumes(*_collective_volumes(ev, rank, defs, regions, volume))
        teams = K.TeamTimes(*fork.get(rank, no_team), *join.get(rank, no_team))
        got = K.profile_location(event_columns(ev), volumes, teams, rt,
                                 K.Accumulators(tables[key], reg_stamp, acc, stamp, seq))
        if got.status != nesting.OK:
            raise ProfileError(f"{source}: location {l} (rank {rank} thread {thread}): "
                               f"{_nesting_message(got, ev, regions)}")
        if thread != 0:
            # a worker thread outside every parallel region idles: limited parallelism
            touch_program(rank)[K.OVH_LIMPAR] += max(duration - got.time_in_parallel, 0.0)

    for rank, n in threads_of_rank.items():
        touch_program(rank)[K.OVH_TOTAL] = duration * n

    # rebuild the dictionaries in first-touch order: the report lists rows in that order
    rows: dict[int, RegionRow] = {}
    for rid in sorted(np.flatnonzero(reg_stamp >= 0).tolist(), key=lambda r: reg_stamp[r]):
        r = regions[rid]
        row = RegionRow(rid, r.name, _where(defs, r), region_kind(r), r.role in HAS_BODY)
        for key in table_order:
            if tables[key][rid, _I["execC"]] > 0:
                row.per_loc[key] = tables[key][rid].copy()
        rows[rid] = row
    touched = [(int(stamp[k]), ovh_names[k], rank, ovh_acc[rank][k])
               for rank, stamp in ovh_stamp.items() for k in np.flatnonzero(stamp >= 0).tolist()]
    overheads = {(name, rank): v.copy() for _s, name, rank, v in sorted(touched, key=lambda x: x[0])}

    # drop MPI calls and measurement regions from the region profile: ompP shows MPI only as columns
    rows = {rid: r for rid, r in rows.items()
            if regions[rid].paradigm not in (Paradigm.MPI, Paradigm.MEASUREMENT)}
    header = {
        "duration": duration,
        "processes": float(len(threads_of_rank)),
        "max_threads": float(max(threads_of_rank.values(), default=0)),
    }
    return Profile(source, volume, rows, overheads, header)


# --------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------
def _fmt(col: str, v: float, has_body: bool) -> str:
    if col in ("bodyT", "enterT", "exitT") and not has_body:
        return "-"
    if col.endswith("T"):
        return f"{v:.2f}"
    return f"{int(round(v))}"


def format_profile(p: Profile, regions: list[str] | None = None) -> str:
    lines = [f"ompP-style profile of {printable(str(p.source))}",
             f"duration {p.header['duration']:.6f} s, {int(p.header['processes'])} process(es), "
             f"up to {int(p.header['max_threads'])} thread(s) each; data volume: {p.volume} accounting", ""]
    rows = sorted(p.regions.values(), key=lambda r: (-r.total()[_I["execT"]], r.name))
    if regions:
        wanted = set(regions)
        rows = [r for r in rows if r.name in wanted]
        missing = wanted - {r.name for r in rows}
        if missing:
            raise ProfileError(f"{p.source}: no region named {', '.join(sorted(map(ascii, missing)))}")
    for n, r in enumerate(rows, 1):
        # names are bytes from the trace: no control character reaches the terminal (tracefmt.names)
        lines.append(f"R{n:05d} {printable(r.name)}" + (f"  {printable(r.where)}" if r.where else "") + f"  {r.kind}")
        table = [["TID"] + list(COLUMNS)]
        for (rank, thread), v in sorted(r.per_loc.items()):
            table.append([f"{rank}.{thread}"] + [_fmt(c, x, r.has_body) for c, x in zip(COLUMNS, v)])
        table.append(["SUM"] + [_fmt(c, x, r.has_body) for c, x in zip(COLUMNS, r.total())])
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        for row in table:
            lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        lines.append("")
    lines.append("Overheads per parallel region (time summed over threads; % of the row's total):")
    table = [["region", "Total", "Ovhds (%)"] + [f"{o} (%)" for o in OVERHEADS]]
    agg = p.overhead_rows()
    names = sorted((n for n in agg if n != PROGRAM), key=lambda n: -agg[n][0]) + ([PROGRAM] if PROGRAM in agg else [])
    for name in names:
        v = agg[name]
        total = v[0]
        pct = lambda x: f"{x:.2f} ({100 * x / total:5.2f})" if total > 0 else f"{x:.2f}"
        table.append([printable(name), f"{total:.2f}", pct(v[1:].sum())] + [pct(x) for x in v[1:]])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------
def write_charts(p: Profile, outdir: str, radar_regions: int = 3) -> list[str]:
    """Overhead pie per process and a radar chart of the heaviest regions' execT per process (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ProfileError("charts need matplotlib: pip install 'expert-analyze[reports]'") from None
    os.makedirs(outdir, exist_ok=True)
    files = []
    ranks = sorted({rank for (_n, rank) in p.overheads})
    colours = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#1f77b4", "#2ca02c"]
    for rank in ranks:
        v = p.overheads.get((PROGRAM, rank))
        if v is None:
            continue
        parts = list(v[1:]) + [max(v[0] - v[1:].sum(), 0.0)]
        labels = list(OVERHEADS) + ["Work"]
        fig, ax = plt.subplots(figsize=(4.5, 4.5))
        if sum(parts) > 0:
            shown = [(x, lab, c) for x, lab, c in zip(parts, labels, colours) if x > 0]
            ax.pie([s[0] for s in shown], labels=[s[1] for s in shown], colors=[s[2] for s in shown],
                   autopct="%1.1f%%", startangle=90, counterclock=False)
        ax.set_title(f"rank {rank}: overheads ({v[0]:.3g} s thread time)")
        path = os.path.join(outdir, f"overheads_rank{rank}.png")
        fig.savefig(path, dpi=90, bbox_inches="tight")
        plt.close(fig)
        files.append(path)

    fig = radar_figure(p, radar_regions, plt)
    if fig is not None:
        path = os.path.join(outdir, "radar_execT.png")
        fig.savefig(path, dpi=90, bbox_inches="tight")
        plt.close(fig)
        files.append(path)
    return files


#: names Fortran compilers give the main program (gfortran, flang: ``MAIN__``, called from a C ``main``)
FORTRAN_MAIN = ("MAIN__",)


def radar_regions(p: Profile, n: int = 3) -> list[tuple[str, RegionRow]]:
    """(label, region) of the ``n`` heaviest regions by execT, the program's main counted once.

    A Fortran program's ``MAIN__`` is its main: with a ``main`` beside it (the C ``main`` that calls it)
    only the heavier of the two is a series, labelled ``main``.
    """
    out: list[tuple[str, RegionRow]] = []
    seen: set[str] = set()
    for r in sorted(p.regions.values(), key=lambda r: -r.total()[_I["execT"]]):
        key = "main" if r.name in FORTRAN_MAIN else r.name
        if key in seen:
            continue
        seen.add(key)
        out.append((key, r))
        if len(out) == n:
            break
    return out


def radar_figure(p: Profile, n_regions: int = 3, plt=None):
    """The radar chart of :func:`write_charts` as a matplotlib figure (None without regions or processes):
    the title above the polar axes, the legend below them, so neither covers the other."""
    if plt is None:
        import matplotlib.pyplot as plt
    ranks = sorted({rank for (_n, rank) in p.overheads})
    heavy = radar_regions(p, n_regions)
    if not heavy or not ranks:
        return None
    angles = np.linspace(0, 2 * np.pi, len(ranks), endpoint=False).tolist()
    fig = plt.figure(figsize=(5.5, 6.5))
    ax = fig.add_subplot(projection="polar")
    for label, r in heavy:
        per_rank = np.array([sum(v[_I["execT"]] for (rk, _t), v in r.per_loc.items() if rk == rank)
                             for rank in ranks])
        top = per_rank.max()
        norm = (per_rank / top if top > 0 else per_rank).tolist()
        ax.plot(angles + angles[:1], norm + norm[:1], marker="o", label=f"{label} (max {top:.3g} s)")
        ax.fill(angles + angles[:1], norm + norm[:1], alpha=0.1)
    ax.set_xticks(angles)
    ax.set_xticklabels([f"rank {k}" for k in ranks])
    ax.set_ylim(0, 1.05)
    ax.set_title("execT per process, relative to the largest", pad=18)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=8, frameon=False)
    return fig
