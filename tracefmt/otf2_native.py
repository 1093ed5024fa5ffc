"""Native OTF2 reader: Score-P's traces decoded by our own code, no per-event Python.

``open_otf2(path)`` takes the anchor file (``traces.otf2``) or its directory
and returns a Trace whose events are the decoded columns themselves
(``tracefmt.otf2_trace``); ``read(path)`` returns a
:class:`tracefmt.foreign.TraceAssembly` with the same definitions and event
records as the ``otf2``-package reader (``tracefmt.otf2_in``, kept as the
reference the tests compare against):

* the anchor file, the global definitions and each location's local
  definitions (mapping tables, clock offsets) are read by
  ``tracefmt.otf2_defs``;
* each location's event file is decoded by one numba pass over its raw chunks
  (``tracefmt.otf2_kernels.decode_location``) straight into the event columns
  our own reader gives (``tracefmt.column_memory``);
* the fix-ups that need more than one location (team ids and sizes, lock
  kinds) run on those columns afterwards.

Locations are read independently, like the blocks of our own format: a
missing or damaged event file is named in one line of ``problems`` (with the
byte offset of the damage; the events before it are kept) and every other
location is read.  Conventions (ranks, threads, roles, collectives, teams,
requests, skipped records) are those of ``otf2_in``; see docs/interop.md.
"""

from __future__ import annotations

import enum
import os
import struct
from collections import defaultdict

import numpy as np

from . import otf2_defs as defs_mod
from .foreign import ForeignLocation, ForeignRegion, TraceAssembly
from .layout import EVENT_DTYPE, NO_ID, LockKind, RmaSync, Role
from .otf2_rma_kernels import REGION_RMA_FETCH_AND_OP, REGION_RMA_LOCAL, REGION_RMA_NONBLOCKING
from .otf2_defs import Otf2Error, read_anchor, read_global_defs
from .otf2_in import classify_region, find_anchor

# OTF2 enumerations by name, so that classify_region sees what the otf2 package would give it
Paradigm = enum.IntEnum("Paradigm", [(n, i) for i, n in enumerate(
    "UNKNOWN USER COMPILER OPENMP MPI CUDA MEASUREMENT_SYSTEM PTHREAD HMPP OMPSS HARDWARE GASPI UPC SHMEM "
    "WINTHREAD QTTHREAD ACETHREAD TBBTHREAD OPENACC OPENCL MTAPI SAMPLING NONE HIP KOKKOS OPENMP_TARGET".split())])
RegionRole = enum.IntEnum("RegionRole", [(n, i) for i, n in enumerate(
    "UNKNOWN FUNCTION WRAPPER LOOP CODE PARALLEL SECTIONS SECTION WORKSHARE SINGLE SINGLE_SBLOCK MASTER CRITICAL "
    "CRITICAL_SBLOCK ATOMIC BARRIER IMPLICIT_BARRIER FLUSH ORDERED ORDERED_SBLOCK TASK TASK_CREATE TASK_WAIT "
    "COLL_ONE2ALL COLL_ALL2ONE COLL_ALL2ALL COLL_OTHER FILE_IO POINT2POINT RMA DATA_TRANSFER ARTIFICIAL "
    "THREAD_CREATE THREAD_WAIT TASK_UNTIED ALLOCATE DEALLOCATE REALLOCATE FILE_IO_METADATA CANCEL KERNEL".split())])
LOCATION_TYPES = ("UNKNOWN", "CPU_THREAD", "ACCELERATOR_STREAM", "METRIC")
CPU_THREAD = 1
GROUP_COMM_LOCATIONS, GROUP_COMM_GROUP, GROUP_COMM_SELF = 4, 5, 6

#: what an MPI call tells about the one-sided records in it (otf2_rma_kernels): the RmaSync kind of its
#: RmaGroupSync / RmaSync records, and whether it is a _local flush, a request-based transfer, Fetch_and_op
_RMA_REGION_BITS = {
    "MPI_Win_post": RmaSync.POST, "MPI_Win_start": RmaSync.START, "MPI_Win_complete": RmaSync.COMPLETE,
    "MPI_Win_wait": RmaSync.WAIT, "MPI_Win_test": RmaSync.TEST, "MPI_Win_sync": RmaSync.SYNC,
    "MPI_Win_flush": RmaSync.FLUSH, "MPI_Win_flush_all": RmaSync.FLUSH,
    "MPI_Win_flush_local": RmaSync.FLUSH | REGION_RMA_LOCAL, "MPI_Win_flush_local_all": RmaSync.FLUSH | REGION_RMA_LOCAL,
    "MPI_Rput": REGION_RMA_NONBLOCKING, "MPI_Rget": REGION_RMA_NONBLOCKING, "MPI_Raccumulate": REGION_RMA_NONBLOCKING,
    "MPI_Rget_accumulate": REGION_RMA_NONBLOCKING, "MPI_Fetch_and_op": REGION_RMA_FETCH_AND_OP,
}


def _enum(cls, value: int):
    try:
        return cls(value)
    except ValueError:
        return cls(0)


def _lookup_arrays(keys: np.ndarray, vals: np.ndarray):
    """(dense, keys, vals) for otf2_kernels._lookup: a dense table where the keys are compact, else sorted pairs."""
    empty_k, empty_v = np.zeros(0, np.uint64), np.zeros(0, np.int64)
    if len(keys) == 0:
        return empty_v, empty_k, empty_v
    top = int(keys.max())
    if top < 4 * len(keys) + 1024:  # bounded by the number of definitions, never by a value alone
        dense = np.full(top + 1, -1, np.int64)
        dense[keys.astype(np.int64)] = vals
        return dense, empty_k, empty_v
    order = np.argsort(keys, kind="stable")
    return empty_v, keys[order], vals[order]


def _compose(gkeys: np.ndarray, gvals: np.ndarray, mapping) -> tuple:
    """Local id -> our index through a mapping table (OTF2 leaves ids it does not map unchanged)."""
    if mapping is None:
        return _lookup_arrays(gkeys, gvals)
    local, glob = mapping
    if len(gkeys):
        order = np.argsort(gkeys)
        sk, sv = gkeys[order], gvals[order]
        pos = np.minimum(np.searchsorted(sk, glob), len(sk) - 1)
        mapped = np.where(sk[pos] == glob, sv[pos], -1)
    else:
        mapped = np.full(len(glob), -1, np.int64)
    keep = ~np.isin(gkeys, local)
    return _lookup_arrays(np.concatenate([gkeys[keep], local]), np.concatenate([gvals[keep], mapped]))


def decode(path: str | os.PathLike, jobs: int | None = None) -> tuple[TraceAssembly, dict, dict]:
    """(the archive's definitions, problems and notes as a TraceAssembly without events, {our location id: its
    event columns}, {our location id: why it has no events} of the locations whose file is missing or
    unreadable), decoded natively (locations on `jobs` threads; default: the cores)."""
    anchor_path = find_anchor(os.fspath(path))
    if not os.path.isfile(anchor_path):
        raise Otf2Error("no such OTF2 anchor file", path=anchor_path)
    anchor = read_anchor(anchor_path)
    gdefs = read_global_defs(anchor.base + ".def", anchor.def_chunk_size)
    if gdefs.clock is None:
        raise Otf2Error("the global definitions have no ClockProperties record", path=anchor.base + ".def")
    from .otf2_events import decode_events  # numba: imported only when there are events to decode

    imp = _Definitions(anchor, gdefs)
    columns = decode_events(imp, jobs)
    return imp.asm, columns, imp.absent


def read(path: str | os.PathLike, jobs: int | None = None) -> TraceAssembly:
    """An OTF2 archive as a TraceAssembly (events as ``layout.EVENT_DTYPE`` records, as the ``otf2``-package
    reader gives them: what the tests compare)."""
    asm, columns, _absent = decode(path, jobs)
    for loc, cols in columns.items():
        ev = np.zeros(len(cols["type"]), EVENT_DTYPE)
        ev["time"] = cols["ticks"]
        for f in ("type", "flags", "a", "b", "c", "d", "e"):
            ev[f] = cols[f]
        asm.events[loc] = ev
    return asm


def open_otf2(path: str | os.PathLike, jobs: int | None = None):
    """An OTF2 archive as a Trace (:class:`tracefmt.otf2_trace.Otf2Trace`: the decoded columns themselves,
    no copy into our format)."""
    from .otf2_trace import Otf2Trace

    asm, columns, absent = decode(path, jobs)
    try:
        return Otf2Trace(asm, columns, absent)
    except (ValueError, OverflowError, struct.error) as exc:  # definitions our format cannot hold
        raise Otf2Error(f"cannot convert the definitions: {exc}", path=asm.source) from None


class _Definitions:
    """Our definitions of an archive (what otf2_in's _Import builds from the otf2 package's objects)."""

    def __init__(self, anchor, gdefs):
        self.anchor, self.d = anchor, gdefs
        res, offset, _length = gdefs.clock
        if res <= 0:  # every time is ticks / resolution
            raise Otf2Error(f"the clock properties give a timer resolution of {res} ticks per second",
                            path=os.path.join(os.path.dirname(anchor.path), "traces.def"))
        self.timer_resolution, self.origin = res, offset
        self.asm = TraceAssembly(source=anchor.path, creator="OTF2", ticks_per_second=float(res))
        self.skipped: dict[str, int] = defaultdict(int)
        self._members()
        self._system()
        self._regions()
        self._comms()
        self._calling_contexts()
        self._windows()

    def _members(self) -> None:
        """Group members as location refs where the otf2 package gives Locations (COMM_GROUP ranks resolved
        through the latest COMM_LOCATIONS group of the same paradigm defined before them)."""
        last_comm_locations: dict[int, tuple] = {}
        self.members: dict[int, tuple] = {}
        for g in self.d.groups:
            members = g.members
            if g.type == GROUP_COMM_GROUP and members:
                parent = last_comm_locations.get(g.paradigm)
                if parent is None or max(members) >= len(parent):
                    self.asm.problems.append(f"{self.anchor.path}: group {g.ref}: members refer to ranks of a "
                                             f"missing or smaller COMM_LOCATIONS group; ignored")
                    members = ()
                else:
                    members = tuple(parent[m] for m in members)
            elif g.type == GROUP_COMM_LOCATIONS:
                last_comm_locations[g.paradigm] = members
            self.members[g.ref] = members

    def _system(self) -> None:
        d, a = self.d, self.asm
        mpi_locs = None
        for g in d.groups:
            if g.type == GROUP_COMM_LOCATIONS and g.paradigm == Paradigm.MPI:
                mpi_locs = self.members[g.ref]
        self.group_rank: dict[int, int] = {}
        for r, lref in enumerate(mpi_locs or ()):
            loc = d.locations.get(lref)
            if loc is not None and loc.group in d.location_groups:
                self.group_rank.setdefault(loc.group, r)
        next_rank = max(self.group_rank.values(), default=-1) + 1
        for lg in d.location_groups:
            if lg not in self.group_rank:
                self.group_rank[lg] = next_rank
                next_rank += 1
        by_group = defaultdict(list)
        for loc in d.locations.values():
            if loc.type != CPU_THREAD:
                kind = LOCATION_TYPES[loc.type] if loc.type < len(LOCATION_TYPES) else f"type-{loc.type}"
                self.skipped[f"{kind} location"] += 1
            elif loc.group not in self.group_rank:
                a.problems.append(f"{self.anchor.path}: location {loc.ref} names an undefined location group "
                                  f"{loc.group}; ignored")
            else:
                by_group[loc.group].append(loc)
        self.rank_thread: dict[int, tuple[int, int]] = {}  # location ref -> (rank, thread)
        for lg, locs in by_group.items():
            locs.sort(key=lambda x: x.ref)
            for t, loc in enumerate(locs):
                self.rank_thread[loc.ref] = (self.group_rank[lg], t)
        self.order = sorted(self.rank_thread, key=lambda x: self.rank_thread[x])  # our location id -> ref
        for i, ref in enumerate(self.order):
            r, t = self.rank_thread[ref]
            a.locations[i] = ForeignLocation(r, t, d.string(d.locations[ref].name))
        for lg, r in self.group_rank.items():
            g = d.location_groups[lg]
            a.process_names[r] = d.string(g.name)
            node = d.nodes.get(g.parent)
            a.node_of_process[r] = d.string(node[0]) if node is not None else "node"
            seen = set()
            while node is not None and node[1] in d.nodes and node[1] not in seen:  # a cycle is damage
                seen.add(node[1])
                node = d.nodes[node[1]]
            if node is not None:
                a.machine_name = d.string(node[0])

    def _regions(self) -> None:
        d = self.d
        refs, ours = [], []
        self.region_flags = np.zeros(max(len(d.regions), 1), np.uint8)
        self.region_rma = np.zeros(max(len(d.regions), 1), np.uint8)
        for i, r in enumerate(d.regions):
            name = d.string(r.name)
            par, role = classify_region(name, _enum(Paradigm, r.paradigm), _enum(RegionRole, r.role))
            bl = r.begin_line if r.begin_line else NO_ID
            el = r.end_line if r.end_line else NO_ID
            src = d.strings.get(r.source_file) or ""
            self.asm.regions[i] = ForeignRegion(name, src, bl, el, int(par), int(role))
            refs.append(r.ref)
            ours.append(i)
            flags = 0
            if role == Role.OMP_PARALLEL:
                flags |= 1
            if role in (Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER):
                flags |= 2
            if role in (Role.OMP_CRITICAL, Role.OMP_CRITICAL_BODY):
                flags |= 4
            self.region_flags[i] = flags
            self.region_rma[i] = int(_RMA_REGION_BITS.get(name, 0))
        self.region_keys, self.region_vals = np.array(refs, np.uint64), np.array(ours, np.int64)

    def _comms(self) -> None:
        """MPI communicators (ranks in comm order), OpenMP team members (thread numbers)."""
        d, a = self.d, self.asm
        groups = {g.ref: g for g in d.groups}
        self.comm_refs = [c.ref for c in d.comms]
        n = len(d.comms)
        self.comm_kind = np.zeros(max(n, 1), np.int8)
        self.comm_off = np.zeros(max(n, 1), np.int64)
        self.comm_size = np.zeros(max(n, 1), np.int64)
        self.comm_names = [d.string(c.name) for c in d.comms]
        ranks_flat: list[int] = []
        self.comm_id: dict[int, object] = {}  # index -> our comm id, or {rank: id} for COMM_SELF
        self.team_members: dict[int, list] = {}  # index -> location refs
        gid_of: dict[tuple, int] = {}
        rank_of = {ref: rt[0] for ref, rt in self.rank_thread.items()}
        for j, c in enumerate(d.comms):
            g = groups.get(c.group)
            if g is None:
                continue
            if g.paradigm == Paradigm.OPENMP:
                self.team_members[j] = list(self.members[g.ref])
                continue
            if g.paradigm != Paradigm.MPI:
                continue
            if g.type == GROUP_COMM_SELF:
                self.comm_kind[j] = 2
                continue
            ranks = tuple(rank_of.get(m, NO_ID) for m in self.members[g.ref])
            if NO_ID in ranks:
                a.problems.append(f"{self.anchor.path}: communicator {self.comm_names[j]!r}: a member is no thread "
                                  f"location of a process; its rank is unknown")
            self.comm_kind[j], self.comm_off[j], self.comm_size[j] = 1, len(ranks_flat), len(ranks)
            ranks_flat.extend(ranks)
            if ranks not in gid_of:
                gid_of[ranks] = len(a.groups)
                a.groups[gid_of[ranks]] = ranks
            cid = len(a.comms)
            a.comms[cid] = (gid_of[ranks], self.comm_names[j], NO_ID)
            self.comm_id[j] = cid
        for j in range(n):
            if self.comm_kind[j] != 2:
                continue
            ids = {}
            for r in sorted(set(self.group_rank.values())):
                gid = len(a.groups)
                a.groups[gid] = (r,)
                cid = len(a.comms)
                a.comms[cid] = (gid, self.comm_names[j] or "MPI_COMM_SELF", NO_ID)
                ids[r] = cid
            self.comm_id[j] = ids
        index = {ref: j for j, ref in enumerate(self.comm_refs)}
        for j, cid in self.comm_id.items():
            parent = index.get(d.comms[j].parent)
            if isinstance(cid, int) and parent is not None and isinstance(self.comm_id.get(parent), int):
                g, name, _ = a.comms[cid]
                a.comms[cid] = (g, name, self.comm_id[parent])
        self.comm_ranks = np.array(ranks_flat, np.uint32)
        self.comm_keys = np.array(self.comm_refs, np.uint64)
        self.comm_vals = np.arange(n, dtype=np.int64)

    def _calling_contexts(self) -> None:
        """Calling-context nodes as arrays by definition order: our region id, parent index, depth.

        A node whose parent is undefined or whose ancestry loops (damage) is treated as a root, with a
        problem line; a node of an undefined region is an error only when an event reaches it.
        """
        ccs = self.d.calling_contexts
        m = len(ccs)
        index = {ref: i for i, (ref, _r, _p) in enumerate(ccs)}
        region_of = dict(zip(self.region_keys.tolist(), self.region_vals.tolist()))
        self.cc_region = np.full(max(m, 1), -1, np.int64)
        self.cc_parent = np.full(max(m, 1), -1, np.int64)
        for i, (ref, region, parent) in enumerate(ccs):
            self.cc_region[i] = region_of.get(region, -1)
            if parent != defs_mod.UNDEFINED_U32:
                if parent in index:
                    self.cc_parent[i] = index[parent]
                else:
                    self.asm.problems.append(f"{self.anchor.base}.def: calling context {ref}: undefined parent "
                                             f"{parent}; taken as a root")
        self.cc_depth = np.zeros(max(m, 1), np.int64)
        for i in range(m):  # depth by walking up once per chain (memoised): linear in the nodes
            chain, seen, j = [], set(), i
            while j >= 0 and self.cc_depth[j] == 0 and j not in seen:
                chain.append(j)
                seen.add(j)
                j = int(self.cc_parent[j])
            if j >= 0 and self.cc_depth[j] == 0:  # the walk came back to its own chain: a cycle
                self.asm.problems.append(f"{self.anchor.base}.def: calling context {ccs[j][0]} is its own "
                                         f"ancestor; cut there")
                self.cc_parent[j] = -1
                chain = chain[:chain.index(j) + 1]
                j = -1
            base = int(self.cc_depth[j]) if j >= 0 else 0
            for k in reversed(chain):
                base += 1
                self.cc_depth[k] = base
        self.cc_keys = np.array([ref for ref, _r, _p in ccs], np.uint64)
        self.cc_vals = np.arange(m, dtype=np.int64)

    def _windows(self) -> None:
        """RMA windows (our ids in definition order, over our id of their communicator) and the index of
        every group definition (RmaGroupSync names groups; rma_group_ids makes our ids of those it does)."""
        a = self.asm
        index = {ref: j for j, ref in enumerate(self.comm_refs)}
        wins = self.d.rma_wins
        self.win_comm = np.full(max(len(wins), 1), -1, np.int64)
        self.win_id = np.arange(max(len(wins), 1), dtype=np.int64)
        for k, (_ref, name, comm) in enumerate(wins):
            j = index.get(comm, -1)
            cid = self.comm_id.get(j) if j >= 0 else None
            self.win_comm[k] = j
            a.windows[k] = (cid if isinstance(cid, int) else NO_ID, self.d.string(name))
        self.win_keys = np.array([ref for ref, _n, _c in wins], np.uint64)
        self.win_vals = np.arange(len(wins), dtype=np.int64)
        self.grp_keys = np.array([g.ref for g in self.d.groups], np.uint64)
        self.grp_vals = np.arange(len(self.d.groups), dtype=np.int64)

    def rma_group_ids(self, used) -> dict[int, int]:
        """{index of a group definition: our group id (its members as ranks)} for the group indices `used`."""
        a = self.asm
        rank_of = {ref: rt[0] for ref, rt in self.rank_thread.items()}
        gid_of = {ranks: gid for gid, ranks in sorted(a.groups.items(), reverse=True)}
        out = {}
        for i in sorted(int(x) for x in used):
            ranks = tuple(rank_of.get(m, NO_ID) for m in self.members[self.d.groups[i].ref])
            if ranks not in gid_of:
                gid_of[ranks] = max(a.groups, default=-1) + 1
                a.groups[gid_of[ranks]] = ranks
            out[i] = gid_of[ranks]
        return out

    # -- per-location tables ---------------------------------------------------------------
    def location_tables(self, ref: int, local) -> dict:
        """The kernel's tables for one location (its rank's comm ids, its team positions, its id maps)."""
        rank, tid = self.rank_thread[ref]
        n = len(self.comm_refs)
        cid = np.full(max(n, 1), NO_ID, np.uint32)
        team_pos = np.full(max(n, 1), tid, np.int64)
        for j, v in self.comm_id.items():
            cid[j] = v if isinstance(v, int) else v.get(rank, NO_ID)
        for j, members in self.team_members.items():
            if ref in members:
                team_pos[j] = members.index(ref)
        maps = local.mappings if local is not None else {}
        reg = _compose(self.region_keys, self.region_vals, maps.get(defs_mod.MAP_REGION))
        com = _compose(self.comm_keys, self.comm_vals, maps.get(defs_mod.MAP_COMM))
        ccs = _compose(self.cc_keys, self.cc_vals, maps.get(defs_mod.MAP_CALLING_CONTEXT))
        win = _compose(self.win_keys, self.win_vals, maps.get(defs_mod.MAP_RMA_WIN))
        grp = _compose(self.grp_keys, self.grp_vals, maps.get(defs_mod.MAP_GROUP))
        return dict(rank=rank, tid=tid, reg=reg, comm=com, cc=ccs, win=win, grp=grp, comm_cid=cid, team_pos=team_pos)

    def where(self, ref: int, t: int) -> str:
        rank = self.rank_thread[ref][0]
        return f"location {self.d.string(self.d.locations[ref].name)!r} (rank {rank}) at tick {t}"

    def lock_kind(self, lk: int, top: int) -> tuple[int, str]:
        region = self.asm.regions.get(top) if top >= 0 else None
        if region is not None and region.role in (Role.OMP_CRITICAL, Role.OMP_CRITICAL_BODY):
            return int(LockKind.OMP_CRITICAL), region.name.split(" @")[0]
        return int(LockKind.OMP_LOCK), f"lock {lk}"


__all__ = ["decode", "read", "open_otf2", "Otf2Error"]
