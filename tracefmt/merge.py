"""One trace from the per-process traces a run leaves when its processes could not merge over MPI.

The C runtime (docs/runtime.md, "What survives a crash") writes ``OUT.<n>.elg`` next to the output
``OUT.elg`` when a rank ends without MPI_Finalize (a signal, MPI_Abort, exit), when the processes of
one launch made no MPI call, and for processes the traced program started; a process killed by
SIGKILL leaves its spool file under the same name, an unfinished trace of the buffers it flushed.
``merge`` makes one trace of them (``expert-trace merge OUT.elg``):

* processes keep their ids (MPI ranks); a second process with an id already taken (pid-named
  files: every one is process 0) gets the next free one;
* locations are renumbered densely, process by process, thread by thread;
* regions are unified by (name, file, lines, paradigm, role), metrics by name, nodes by name;
  locks stay per process;
* communicators are unified by their members and name and their rank among the file's
  communicators with those members and name (MPI creates communicators collectively, in the same
  order on every member), so ``MPI_COMM_WORLD`` and each split of it become one communicator;
* regions still open at the end of a location (a process killed while inside them) are closed at its
  last event's time, and counted in the report;
* the merged trace is unfinished (no FINISHED flag, attribute ``complete = no (...)``) when any piece
  was, so readers treat it as the crash trace it is.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field

import numpy as np

from .definitions import (Clock, Comm, Definitions, Location, Lock, Machine, Metric, Node, Offset, Process,
                          Window)
from .errors import TraceFormatError
from .layout import EVENT_DTYPE, EXIT_TYPES, NO_ID, RMA_GROUP_SYNCS, EventType
from .reader import open as open_trace
from .writer import TraceWriter, encode_file_header

E = EventType
_REGION_IN_A = np.array([E.ENTER, E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT, E.OMP_TASK_CREATE, E.OMP_TASK_BEGIN,
                         E.OMP_TASK_END], dtype=np.uint8)
_COMM_IN_B = np.array([E.MPI_COLLEXIT, E.MPI_SEND, E.MPI_RECV, E.MPI_RECV_REQUEST], dtype=np.uint8)
_LOCK_IN_A = np.array([E.OMP_ACQUIRE_LOCK, E.OMP_RELEASE_LOCK], dtype=np.uint8)
_METRIC_IN_A = np.array([E.COUNTER], dtype=np.uint8)
_WINDOW_IN_A = np.array([E.MPI_RMA_PUT, E.MPI_RMA_GET, E.MPI_RMA_ATOMIC, E.MPI_RMA_SYNC], dtype=np.uint8)
_GROUP_SYNCS = np.array([int(k) for k in RMA_GROUP_SYNCS], dtype=np.uint32)
#: ids of the groups MPI_RMA_SYNC names (post / start groups, 2.3); apart from the communicators' groups,
#: which take the ids 0, 1, ... of their communicators
RMA_GROUP_BASE = 1 << 30


def per_process_files(output: str) -> list[str]:
    """The per-process traces of ``output`` (``x.elg`` -> ``x.0.elg``, ``x.1.elg``, ...), by number."""
    stem = output[:-4] if output.endswith(".elg") else output
    folder = os.path.dirname(stem) or "."
    pattern = re.compile(re.escape(os.path.basename(stem)) + r"\.(\d+)\.elg\Z")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = [(int(m.group(1)), n) for n in names if (m := pattern.match(n))]
    return [os.path.join(os.path.dirname(stem), n) for _, n in sorted(found)]


def missing_trace_note(path: str) -> str:
    """For a trace that does not exist: what to do if the run left per-process traces instead ("" if none)."""
    pieces = per_process_files(path)
    if not pieces:
        return ""
    shown = pieces[0] if len(pieces) == 1 else f"{pieces[0]} ... {pieces[-1]}"
    return f"; the run left {len(pieces)} per-process trace(s) ({shown}): `expert-trace merge {path}` makes one of them"


@dataclass
class MergeReport:
    output: str
    pieces: list[str]
    processes: int = 0
    locations: int = 0
    events: int = 0
    complete: bool = True
    closed_regions: int = 0  # regions open at the end of a piece, closed by the merge
    notes: list[str] = field(default_factory=list)


def _lookup(mapping: dict[int, int], ids: np.ndarray) -> np.ndarray:
    """ids mapped through ``mapping``; ids it does not know become NO_ID."""
    out = np.full(len(ids), NO_ID, dtype=np.uint32)
    if len(mapping) == 0 or len(ids) == 0:
        return out
    keys = np.fromiter(mapping.keys(), dtype=np.int64, count=len(mapping))
    vals = np.fromiter(mapping.values(), dtype=np.int64, count=len(mapping))
    order = np.argsort(keys)
    keys, vals = keys[order], vals[order]
    pos = np.clip(np.searchsorted(keys, ids), 0, len(keys) - 1)
    hit = keys[pos] == ids
    out[hit] = vals[pos[hit]]
    return out


class _Unifier:
    """The merged definitions, built piece by piece; each ``add`` returns that piece's id maps."""

    def __init__(self) -> None:
        self.defs = Definitions()
        self.defs.machines[0] = Machine(0, "machine")
        self.region_key: dict[tuple, int] = {}
        self.file_key: dict[str, int] = {}
        self.node_key: dict[str, int] = {}
        self.metric_key: dict[str, int] = {}
        self.comm_key: dict[tuple, int] = {}
        self.window_key: dict[tuple, int] = {}
        self.group_key: dict[tuple, int] = {}

    def add(self, d: Definitions, proc_map: dict[int, int]) -> dict[str, dict[int, int]]:
        out = self.defs
        regions = {}
        for rid, r in sorted(d.regions.items()):
            fname = d.files.get(r.file, "") if r.file != NO_ID else ""
            fid = NO_ID
            if fname:
                fid = self.file_key.setdefault(fname, len(self.file_key))
                out.files[fid] = fname
            key = (r.name, fname, r.begin_line, r.end_line, int(r.paradigm), int(r.role))
            if key not in self.region_key:
                new = self.region_key[key] = len(self.region_key)
                out.regions[new] = dataclasses.replace(r, id=new, file=fid)
            regions[rid] = self.region_key[key]
        nodes = {}
        for nid, n in d.nodes.items():
            if n.name not in self.node_key:
                new = self.node_key[n.name] = len(self.node_key)
                out.nodes[new] = Node(new, 0, n.name)
            nodes[nid] = self.node_key[n.name]
        for pid, p in d.processes.items():
            new = proc_map[pid]
            out.processes[new] = Process(new, nodes.get(p.node, 0), f"rank {new}" if p.name == f"rank {pid}" else p.name)
            if pid in d.clocks:
                out.clocks[new] = Clock(new, d.clocks[pid].ticks_per_second, d.clocks[pid].origin)
            if pid in d.offsets:
                out.offsets[new] = [Offset(o.local_time, o.offset) for o in d.offsets[pid]]
        comms, seen = {}, {}
        for cid, c in sorted(d.comms.items()):
            ranks = tuple(proc_map.get(r, r) for r in c.ranks)
            k = seen[(c.name, ranks)] = seen.get((c.name, ranks), -1) + 1
            key = (c.name, ranks, k)
            if key not in self.comm_key:
                new = self.comm_key[key] = len(self.comm_key)
                out.groups[new] = ranks
                out.comms[new] = Comm(new, new, c.name, NO_ID, ranks)
            comms[cid] = self.comm_key[key]
        for cid, c in d.comms.items():  # parents, once every communicator of the piece has its new id
            if c.parent in comms and out.comms[comms[cid]].parent == NO_ID:
                out.comms[comms[cid]] = dataclasses.replace(out.comms[comms[cid]], parent=comms[c.parent])
        # A window is the k-th created on its communicator, in every piece: a finished trace's ids are agreed
        # that way and a spool file's are creation indices over all of that process's windows (runtime/src/
        # spool.c), so ids differ between pieces whose processes also created windows on other communicators.
        windows, created_on = {}, {}
        for wid, w in sorted(d.windows.items()):
            comm = comms.get(w.comm, NO_ID)
            if comm == NO_ID:  # nothing to agree on: a window of this piece alone
                key = (NO_ID, len(self.window_key))
            else:
                key = (comm, created_on.get(comm, 0))
                created_on[comm] = key[1] + 1
            if key not in self.window_key:
                new = self.window_key[key] = len(self.window_key)
                out.windows[new] = Window(new, key[0], w.name)
            windows[wid] = self.window_key[key]
        comm_groups = {c.group for c in d.comms.values()}
        groups = {}
        for gid, ranks in sorted(d.groups.items()):
            if gid in comm_groups:
                continue
            ranks = tuple(proc_map.get(r, r) for r in ranks)
            if ranks not in self.group_key:
                new = self.group_key[ranks] = RMA_GROUP_BASE + len(self.group_key)
                out.groups[new] = ranks
            groups[gid] = self.group_key[ranks]
        locks = {}
        for lid, lk in sorted(d.locks.items()):
            new = locks[lid] = len(out.locks)
            out.locks[new] = Lock(new, lk.kind, lk.name)
        metrics = {}
        for mid, m in sorted(d.metrics.items()):
            if m.name not in self.metric_key:
                new = self.metric_key[m.name] = len(self.metric_key)
                out.metrics[new] = Metric(new, m.name, m.unit, m.dtype, m.mode)
            metrics[mid] = self.metric_key[m.name]
        for k, v in d.attributes.items():
            out.attributes.setdefault(k, v)
        return {"region": regions, "comm": comms, "lock": locks, "metric": metrics, "window": windows,
                "group": groups}


def _remap(rec: np.ndarray, maps: dict[str, dict[int, int]]) -> None:
    t = rec["type"]
    for field_name, types, kind in (("a", _REGION_IN_A, "region"), ("b", _COMM_IN_B, "comm"),
                                    ("a", _LOCK_IN_A, "lock"), ("a", _METRIC_IN_A, "metric")):
        sel = np.isin(t, types)
        if sel.any():
            rec[field_name][sel] = _lookup(maps[kind], rec[field_name][sel].astype(np.int64))
    sel = np.isin(t, _WINDOW_IN_A)
    if sel.any():
        rec["a"][sel] = _lookup(maps["window"], rec["a"][sel].astype(np.int64))
        sel &= (t == E.MPI_RMA_SYNC) & np.isin(rec["c"], _GROUP_SYNCS)
        if sel.any():
            rec["b"][sel] = _lookup(maps["group"], rec["b"][sel].astype(np.int64))


def _close_open_regions(rec: np.ndarray) -> np.ndarray:
    """``rec`` with an EXIT for every region still open at its end, at its last time."""
    if len(rec) == 0:
        return rec
    stack: list[int] = []
    types, regions = rec["type"], rec["a"]
    for i in np.flatnonzero(np.isin(types, [E.ENTER, *EXIT_TYPES])).tolist():
        if types[i] == E.ENTER:
            stack.append(int(regions[i]))
        elif stack:
            stack.pop()
    if not stack:
        return rec
    tail = np.zeros(len(stack), EVENT_DTYPE)
    tail["time"] = rec["time"][-1]
    tail["type"] = E.EXIT
    tail["a"] = stack[::-1]
    return np.concatenate([rec, tail])


def merge(pieces: list[str], output: str) -> MergeReport:
    """Write one trace at ``output`` from the traces ``pieces``; TraceFormatError if a piece is unreadable."""
    if not pieces:
        raise TraceFormatError("no per-process traces to merge (expected files named like "
                               f"{output[:-4] if output.endswith('.elg') else output}.0.elg)", path=output)
    report = MergeReport(output, list(pieces))
    uni = _Unifier()
    traces = []
    tmp = ""
    try:
        taken: set[int] = set()
        plans = []
        for path in pieces:
            tr = open_trace(path)
            traces.append(tr)
            if not tr.complete:
                report.complete = False
                report.notes.append(f"{path}: " + ("; ".join(tr.problems) if tr.problems else "unfinished"))
            proc_map = {}
            for pid in sorted(tr.defs.processes) or [0]:
                new = pid
                while new in taken:
                    new += 1
                taken.add(new)
                proc_map[pid] = new
            plans.append((tr, proc_map, uni.add(tr.defs, proc_map)))
        out = uni.defs
        loc_of = []
        for tr, proc_map, _ in plans:
            locs = sorted(tr.defs.locations.values(), key=lambda lc: (proc_map.get(lc.process, lc.process), lc.thread))
            mine = {}
            for lc in locs:
                new = len(out.locations)
                out.locations[new] = Location(new, proc_map.get(lc.process, lc.process), lc.thread, lc.name)
                mine[lc.id] = new
            loc_of.append(mine)
        complete = out.attributes.get("complete", "yes")
        if not report.complete or not complete.startswith("yes"):
            report.complete = False
            out.attributes["complete"] = f"no (merged from {len(pieces)} per-process traces, not all of them complete)"
        report.processes, report.locations = len(out.processes), len(out.locations)
        tmp = f"{output}.{os.getpid()}.tmp"
        with TraceWriter(tmp, creator="expert-trace merge") as w:
            w.write_definitions(out)
            for (tr, _, maps), mine in zip(plans, loc_of):
                for old, new in mine.items():
                    ev = tr.events(old)
                    rec = np.zeros(len(ev), EVENT_DTYPE)
                    rec["time"] = ev.ticks
                    for f in ("type", "flags", "a", "b", "c", "d", "e"):
                        rec[f] = getattr(ev, f)
                    _remap(rec, maps)
                    closed = _close_open_regions(rec)
                    report.closed_regions += len(closed) - len(rec)
                    report.events += len(closed)
                    if len(closed):
                        w.write_events(new, closed)
        if not report.complete:  # unfinished, as its pieces: readers say so
            with open(tmp, "r+b") as f:
                f.write(encode_file_header(w.byte_order, 0, w.creator))
        os.replace(tmp, output)
    except BaseException:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        raise
    finally:
        for tr in traces:
            tr.close()
    return report
