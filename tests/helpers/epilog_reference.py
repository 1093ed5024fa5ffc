"""The slow, obviously correct EPILOG event reader: one Python step per record.

It is the reader tracefmt had before the numba kernels
(``tracefmt.epilog_kernels``), kept as the reference the tests compare the
kernels with, column by column.  It reuses the importer's definitions
(``tracefmt.epilog.EpilogImporter``: our locations, regions, communicators,
lock naming) and decodes events with ``struct``, into per-event rows that
``tracefmt.foreign.EventRows`` completes (teams, lock orders, received bytes).
"""

from __future__ import annotations

import struct
from collections import defaultdict

from tracefmt import epilog
from tracefmt.epilog_decode import measurement_regions
from tracefmt.epilog_kernels import TIME_LIMIT
from tracefmt.epilog_records import (
    ATTR_ANYNESS,
    ATTR_BYTES,
    ATTR_REQUEST,
    DEF_CODES,
    ELG_NO_ID,
    EVENT_FIXED,
    RMA_CODES,
    TICKS_PER_SECOND,
    EpilogFile,
    R,
    RecordStream,
    bad_record,
    read_definitions,
)
from tracefmt.foreign import EventRows, Row
from tracefmt.layout import ANY, NO_ID, EventType, RecvFlag


def _mapped(table, local, what, ctx, off, rtype):
    if table is None or local == ELG_NO_ID:
        return local
    if local >= len(table):
        raise bad_record(ctx.f, off, rtype, f"local {what} id {local} is not in this rank's id map")
    return int(table[local])


class ReferenceImporter(epilog.EpilogImporter):
    def __init__(self, *args):
        super().__init__(*args)
        self.rows = {i: [] for i in range(len(self.lids))}

    def loc(self, glob_lid, ctx, off, rtype):
        if glob_lid not in self.loc_index:
            raise bad_record(ctx.f, off, rtype, f"location id {glob_lid} is not defined")
        return self.loc_index[glob_lid]

    def read_events(self, ctx, start):
        f, e = ctx.f, ctx.f.endian
        corr = self.file_clock(ctx)
        hist = [0] * 256
        for _off, rtype, _body in RecordStream(f, start):
            hist[rtype] += 1
        self.pausing, self.tracing = measurement_regions(self, hist)
        stack = defaultdict(list)
        pending = {}
        default = self.loc_index.get(ctx.default_location) if ctx.default_location is not None else None
        for off, rtype, body in RecordStream(f, start):
            if rtype in DEF_CODES:
                continue
            L = len(body)
            if rtype in (R.ATTR_UI1, R.ATTR_UI4):
                base = 2 if rtype == R.ATTR_UI1 else 5
                if L == base + 4:
                    loc = self.loc(_mapped(ctx.loc_map, struct.unpack_from(e + "I", body)[0], "location", ctx, off,
                                           rtype), ctx, off, rtype)
                    at = 4
                else:
                    loc, at = None, 0
                atype = body[at]
                val = body[at + 1] if rtype == R.ATTR_UI1 else struct.unpack_from(e + "I", body, at + 1)[0]
                if 1 <= atype <= 4:
                    pending.setdefault(loc, {})[atype] = val
                continue
            if rtype < 100:
                continue
            ctx.events_read += 1
            if rtype in RMA_CODES or rtype not in EVENT_FIXED:
                continue
            fixed, has_metrics = EVENT_FIXED[rtype]
            if has_metrics and self.metc < 0 and rtype in (R.ENTER, R.EXIT, R.OMP_COLLEXIT):
                rest = L - fixed
                self.metc = rest // 8 if rest >= 0 and rest % 8 in (0, 4) else 0
            metc = max(self.metc, 0) if has_metrics else 0
            expect = fixed + 8 * metc
            if L == expect + 4:
                loc = self.loc(_mapped(ctx.loc_map, struct.unpack_from(e + "I", body)[0], "location", ctx, off,
                                       rtype), ctx, off, rtype)
                p = 4
            else:
                assert L == expect and default is not None
                loc, p = default, 0
            (t,) = struct.unpack_from(e + "d", body, p)
            if corr is not None:
                t0, o0, slope = corr
                t = t + o0 + slope * (t - t0)
            assert -TIME_LIMIT <= t <= TIME_LIMIT
            attrs = pending.pop(loc, None) or pending.pop(None, None) or {}
            self.event(ctx, off, rtype, body, p + 8, t, loc, stack[loc], attrs, metc)

    def event(self, ctx, off, rtype, body, p, t, loc, stack, attrs, metc):
        e = ctx.f.endian
        rows = self.rows[loc]
        rank = int(self.loc_rank[loc])
        metv = struct.unpack_from(e + f"{metc}Q", body, p + (4 if rtype in (R.ENTER, R.ENTER_CS) else 0))

        def counters():
            for i, v in enumerate(metv):
                rows.append(Row([t, EventType.COUNTER, 0, i, 0, 0, v, 0]))

        if rtype in (R.ENTER, R.ENTER_CS):
            (x,) = struct.unpack_from(e + "I", body, p)
            cs = NO_ID
            if rtype == R.ENTER_CS:
                cs = _mapped(ctx.callsite_map, x, "call site", ctx, off, rtype)
                rid = self.defs.callsites[cs][2]
            else:
                rid = _mapped(ctx.region_map, x, "region", ctx, off, rtype)
            assert rid in self.asm.regions
            stack.append(rid)
            rows.append(Row([t, EventType.ENTER, 0, rid, cs, NO_ID, NO_ID, 0]))
            counters()
        elif rtype in (R.EXIT, R.OMP_COLLEXIT, R.MPI_COLLEXIT, R.COLLEXIT, R.MPI_WINEXIT, R.MPI_WINCOLLEXIT):
            rid = stack.pop()
            if rtype == R.OMP_COLLEXIT:
                rows.append(Row([t, EventType.OMP_COLLEXIT, 0, rid, NO_ID, 0, 0, 0]))
            elif rtype in (R.MPI_COLLEXIT, R.COLLEXIT):
                root, cid, sent, recvd = struct.unpack_from(e + "IIII", body, p + 8 * metc)
                cid = self.comm(ctx, cid)
                if root != ELG_NO_ID:
                    root = self.partner(ctx, root, cid, rank)
                rows.append(Row([t, EventType.MPI_COLLEXIT, 0, rid, self.our(ctx, cid, rank), root, sent, recvd]))
            else:
                rows.append(Row([t, EventType.EXIT, 0, rid, 0, 0, 0, 0]))
            counters()
        elif rtype == R.MPI_SEND:
            dest, cid, tag, sent = struct.unpack_from(e + "IIII", body, p)
            cid = self.comm(ctx, cid)
            dest = self.partner(ctx, dest, cid, rank)
            rows.append(Row([t, EventType.MPI_SEND, 0, dest, self.our(ctx, cid, rank), tag, sent,
                             attrs.get(ATTR_REQUEST, 0)]))
        elif rtype == R.MPI_RECV:
            src, cid, tag = struct.unpack_from(e + "III", body, p)
            cid = self.comm(ctx, cid)
            src = self.partner(ctx, src, cid, rank)
            flags = 0
            anyness = attrs.get(ATTR_ANYNESS, 0)
            if anyness & 1:
                flags |= RecvFlag.ANY_SOURCE
            if anyness & 2:
                flags |= RecvFlag.ANY_TAG
            rows.append(Row([t, EventType.MPI_RECV, int(flags), src, self.our(ctx, cid, rank), tag,
                             attrs.get(ATTR_BYTES, -1), attrs.get(ATTR_REQUEST, 0)]))
        elif rtype in (R.MPI_SEND_COMPLETE, R.MPI_RECV_REQUEST, R.MPI_CANCELLED):
            (req,) = struct.unpack_from(e + "I", body, p)
            if rtype == R.MPI_RECV_REQUEST:
                rows.append(Row([t, EventType.MPI_RECV_REQUEST, 0, ANY, NO_ID, ANY, 0, req]))
            else:
                kind = EventType.MPI_SEND_COMPLETE if rtype == R.MPI_SEND_COMPLETE else EventType.MPI_REQUEST_CANCELLED
                rows.append(Row([t, kind, 0, 0, 0, 0, 0, req]))
        elif rtype in (R.OMP_FORK, R.OMP_JOIN):
            rows.append(Row([t, EventType.OMP_FORK if rtype == R.OMP_FORK else EventType.OMP_JOIN,
                             0, NO_ID, 0, 0, 0, 0]))
        elif rtype in (R.OMP_ALOCK, R.OMP_RLOCK, R.ALOCK, R.RLOCK):
            (lk,) = struct.unpack_from(e + "I", body, p)
            gl = self.lock_id(rank, lk, stack[-1] if stack else NO_ID)
            rows.append(Row([t, EventType.OMP_ACQUIRE_LOCK if rtype in (R.OMP_ALOCK, R.ALOCK)
                             else EventType.OMP_RELEASE_LOCK, 0, gl, 0, 0, 0, 0]))
        elif rtype in (R.LOG_OFF, R.ENTER_TRACING):
            rid = self.pausing if rtype == R.LOG_OFF else self.tracing
            stack.append(rid)
            rows.append(Row([t, EventType.ENTER, 0, rid, NO_ID, NO_ID, NO_ID, 0]))
            counters()
        elif rtype in (R.LOG_ON, R.EXIT_TRACING):
            rid = stack.pop() if stack else self.tracing
            rows.append(Row([t, EventType.EXIT, 0, rid, 0, 0, 0, 0]))
            counters()

    def comm(self, ctx, local):
        return _mapped(ctx.comm_map, local, "communicator", ctx, 0, 0)

    def our(self, ctx, cid, rank):
        return self.our_comm(cid, rank)

    def partner(self, ctx, x, cid, rank):
        if ctx.merged:
            return self.location_rank(x) if x in self.defs.locations else x
        if self.version < 1008:
            return x
        if self.is_self(cid):
            ranks = (rank,)
        else:
            ranks = self.comm_ranks(cid)
        if ranks is None:
            return x
        return ranks[x]

    def finish(self):
        a = self.asm
        rank_thread = {i: (loc.rank, loc.thread) for i, loc in a.locations.items()}
        rs = EventRows(self.rows, rank_thread, a)
        rs.resolve_teams()
        rs.resolve_lock_orders()
        rs.resolve_receive_bytes()
        t_min = min((r[0][0] for r in self.rows.values() if r), default=0.0)
        a.events.update(rs.arrays(t_min, TICKS_PER_SECOND))
        return a


def read(path):
    """The reference reading of an EPILOG file or EPIK archive (a TraceAssembly)."""
    return epilog.read(path, importer=ReferenceImporter)


__all__ = ["ReferenceImporter", "read", "EpilogFile", "read_definitions"]
