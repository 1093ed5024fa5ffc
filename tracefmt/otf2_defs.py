"""OTF2 archives read by our own code: the buffer encoding, the anchor file, global and local definitions.

The events themselves are decoded by numba kernels (``tracefmt.otf2_kernels``);
this module reads the small files in Python.  Facts about the format, as
OTF2 1.0-3.x write it (``OTF2_Buffer``, ``OTF2_AnchorFile``, the generated
definition readers):

* Every file is a sequence of **chunks** of a fixed size (the anchor file is a
  single unchunked one).  A chunk starts with a header: the byte 3, an
  endianness byte (0x42 little, 0x23 big: the writer's host order, which
  every multi-byte value of the chunk follows) and, in chunked files, the
  numbers of the chunk's first and last event (two full 64-bit words); 18
  bytes in all.  The byte 0 ends a chunk (the rest up to the chunk size is
  padding), the byte 2 ends the file.
* A **record** is a type byte, a length byte (or 0xFF and a full 64-bit
  length) and that many bytes of fields; a reader skips fields it does not
  know at the end of a record and whole records of types it does not know.
  Ten event types of OTF2 1.1 (Enter, Leave, ...) are "singletons": the type
  byte and one compressed number, no length.
* **Compressed integers**: a byte 0 is the value 0, 0xFF the all-ones value
  (OTF2's UNDEFINED), a byte n in 1..8 is followed by the n low-order bytes of
  the value in the chunk's byte order.  Signed numbers are the same bits.
* **Timestamps** (event files only): the byte 5 and a full 64-bit time stand
  before the first event with that time; later events of the same time
  inherit it.  An attribute list (type 6, with a length) may stand between a
  timestamp and its event.

Errors are :class:`Otf2Error` (a :class:`TraceFormatError`) naming the file
and the byte offset.  No size read from a file is used to allocate memory.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

from .errors import TraceFormatError

LITTLE, BIG = 0x42, 0x23
END_OF_CHUNK, END_OF_BUFFER, END_OF_FILE, CHUNK_HEADER, TIMESTAMP, ATTRIBUTE_LIST = 0, 1, 2, 3, 5, 6
CHUNK_HEADER_SIZE = 18
UNDEFINED_U32 = 0xFFFFFFFF
UNDEFINED_U64 = 0xFFFFFFFFFFFFFFFF

#: file substrates and compressions of the anchor file
SUBSTRATE_POSIX, SUBSTRATE_SION, SUBSTRATE_NONE = 1, 2, 3
COMPRESSION_NONE, COMPRESSION_ZLIB = 1, 2

#: OTF2_MappingType values of the mapping tables in local definition files
MAP_STRING, MAP_ATTRIBUTE, MAP_LOCATION, MAP_REGION, MAP_GROUP, MAP_METRIC, MAP_COMM = range(7)
MAP_RMA_WIN, MAP_CALLING_CONTEXT = 8, 10

#: chunk sizes OTF2 accepts (OTF2_CHUNK_SIZE_MIN/MAX); anything else is damage
CHUNK_SIZE_MIN, CHUNK_SIZE_MAX = 256 * 1024, 128 * 1024 * 1024

# global definition record types used here
_CLOCK_PROPERTIES, _STRING, _SYSTEM_TREE_NODE, _LOCATION_GROUP, _LOCATION, _REGION, _GROUP, _COMM = (
    5, 10, 12, 13, 14, 15, 18, 22)
_CALLING_CONTEXT = 34
_RMA_WIN = 24
# local definition record types
_MAPPING_TABLE, _CLOCK_OFFSET = 5, 6


class Otf2Error(TraceFormatError):
    """An OTF2 archive (or one of its files) cannot be read; names the file and the byte offset."""


# ---------------------------------------------------------------------------------------------
# the buffer encoding
# ---------------------------------------------------------------------------------------------
class Cursor:
    """Reads the values of one record (or file part) in a chunk's byte order; bounds-checked."""

    __slots__ = ("data", "pos", "end", "big", "path")

    def __init__(self, data, pos: int, end: int, big: bool, path: str):
        self.data, self.pos, self.end, self.big, self.path = data, pos, end, big, path

    def fail(self, what: str, at: int | None = None) -> Otf2Error:
        return Otf2Error(what, path=self.path, offset=self.pos if at is None else at)

    def _take(self, n: int) -> int:
        p = self.pos
        if p + n > self.end:
            raise self.fail(f"record ends inside a value ({n} bytes needed, {self.end - p} left)")
        self.pos = p + n
        return p

    def at_end(self) -> bool:
        return self.pos >= self.end

    def u8(self) -> int:
        return self.data[self._take(1)]

    def full64(self) -> int:
        p = self._take(8)
        return int.from_bytes(self.data[p:p + 8], "big" if self.big else "little")

    def full32(self) -> int:
        p = self._take(4)
        return int.from_bytes(self.data[p:p + 4], "big" if self.big else "little")

    def f64(self) -> float:
        p = self._take(8)
        return struct.unpack_from(">d" if self.big else "<d", self.data, p)[0]

    def comp(self, width: int = 8) -> int:
        """A compressed unsigned integer of `width` bytes (4: uint32, 8: uint64)."""
        at = self.pos
        n = self.u8()
        if n == 0:
            return 0
        if n == 0xFF:
            return (1 << (8 * width)) - 1
        if n > width:
            raise self.fail(f"invalid compressed integer: length byte {n} for a {8 * width}-bit value", at)
        p = self._take(n)
        return int.from_bytes(self.data[p:p + n], "big" if self.big else "little")

    def u32(self) -> int:
        return self.comp(4)

    def i64(self) -> int:
        v = self.comp(8)
        return v - (1 << 64) if v >> 63 else v

    def string(self) -> str:
        start = self.pos
        stop = bytes(self.data[start:self.end]).find(b"\0")
        if stop < 0:
            raise self.fail("string without its terminating NUL byte")
        self.pos = start + stop + 1
        return bytes(self.data[start:start + stop]).decode("utf-8", "replace")


def read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise Otf2Error(f"cannot read: {exc.strerror or exc}", path=path) from None


def chunk_header(data, start: int, path: str, chunked: bool) -> bool:
    """Check the chunk header at `start`; return True for a big-endian chunk."""
    need = CHUNK_HEADER_SIZE if chunked else 2
    if start + need > len(data):
        raise Otf2Error(f"truncated chunk header ({len(data) - start} of {need} bytes)", path=path, offset=start)
    if data[start] != CHUNK_HEADER:
        raise Otf2Error(f"no chunk header (byte {data[start]:#04x}, expected 0x03)", path=path, offset=start)
    order = data[start + 1]
    if order not in (LITTLE, BIG):
        raise Otf2Error(f"invalid endianness byte {order:#04x} in the chunk header", path=path, offset=start + 1)
    return order == BIG


def records(data, path: str, chunk_size: int | None):
    """(type, Cursor over the record's fields) of a definition file; `chunk_size` None: unchunked.

    Stops at the end-of-file byte; a file that ends without one raises (it was truncated).
    """
    size = len(data)
    start = 0
    while True:
        big = chunk_header(data, start, path, chunk_size is not None)
        pos = start + (CHUNK_HEADER_SIZE if chunk_size is not None else 2)
        end = size if chunk_size is None else min(size, start + chunk_size)
        while True:
            if pos >= end:
                if end == size:
                    raise Otf2Error("the file ends without its end-of-file mark (truncated?)", path=path, offset=pos)
                raise Otf2Error("a record runs past the end of its chunk", path=path, offset=pos)
            rtype = data[pos]
            if rtype == END_OF_FILE:
                return
            if rtype == END_OF_CHUNK:
                if chunk_size is None:
                    raise Otf2Error("end-of-chunk mark in an unchunked file", path=path, offset=pos)
                break
            c = Cursor(data, pos + 1, end, big, path)
            length = c.u8()
            if length == 0xFF:
                length = c.full64()
            body = c.pos
            if length > end - body:
                raise Otf2Error(f"record of type {rtype} announces {length} bytes; its chunk holds "
                                f"{end - body}", path=path, offset=pos)
            yield rtype, Cursor(data, body, body + length, big, path)
            pos = body + length
        start += chunk_size
        if start >= size:
            raise Otf2Error("the file ends without its end-of-file mark (truncated?)", path=path, offset=size)


# ---------------------------------------------------------------------------------------------
# the anchor file
# ---------------------------------------------------------------------------------------------
@dataclass
class Anchor:
    path: str
    version: tuple[int, int, int]
    trace_format: int
    event_chunk_size: int
    def_chunk_size: int
    substrate: int
    compression: int
    n_locations: int
    n_global_defs: int
    machine: str = ""
    creator: str = ""
    description: str = ""
    properties: dict = field(default_factory=dict)

    @property
    def base(self) -> str:
        """The path without '.otf2': '<base>.def' holds the global definitions, '<base>/' the local files."""
        return os.path.splitext(self.path)[0]

    def location_file(self, location: int, ext: str) -> str:
        return os.path.join(self.base, f"{location}.{ext}")


def read_anchor(path: str) -> Anchor:
    data = read_file(path)
    big = chunk_header(data, 0, path, False)
    c = Cursor(data, 2, len(data), big, path)
    if c.string() != "OTF2":
        raise c.fail("not an OTF2 anchor file (no 'OTF2' magic)", 2)
    fmt = c.u8()
    if fmt == 0:
        raise c.fail("anchor file format 0 (damaged anchor file)", c.pos - 1)
    trace_format, major, minor, bugfix = c.u8(), c.u8(), c.u8(), c.u8()
    ev_chunk, def_chunk = c.full64(), c.full64()
    substrate, compression = c.u8(), c.u8()
    n_loc, n_defs = c.full64(), c.full64()
    a = Anchor(path, (major, minor, bugfix), trace_format, ev_chunk, def_chunk, substrate, compression, n_loc, n_defs)
    a.machine, a.creator, a.description = c.string(), c.string(), c.string()
    if fmt > 1:
        n = c.full32()
        for _ in range(n):  # each property needs two NUL bytes: the loop ends at the record's end
            name = c.string()
            a.properties[name] = c.string()
    for what, v in (("event", ev_chunk), ("definition", def_chunk)):
        if not CHUNK_SIZE_MIN <= v <= CHUNK_SIZE_MAX:
            raise Otf2Error(f"invalid {what} chunk size {v} in the anchor file", path=path, offset=12)
    if substrate == SUBSTRATE_SION:
        raise Otf2Error("SIONlib-containered OTF2 archives are not supported (convert with 'otf2-sion-to-posix' "
                        "or record with SCOREP_TRACING_... posix files)", path=path)
    if substrate not in (SUBSTRATE_POSIX, SUBSTRATE_NONE):
        raise Otf2Error(f"unknown file substrate {substrate} in the anchor file", path=path, offset=c.pos)
    if compression == COMPRESSION_ZLIB:
        raise Otf2Error("zlib-compressed OTF2 archives are not supported", path=path)
    return a


# ---------------------------------------------------------------------------------------------
# global definitions
# ---------------------------------------------------------------------------------------------
@dataclass
class RegionDef:
    ref: int
    name: str
    source_file: str
    begin_line: int
    end_line: int
    role: int
    paradigm: int


@dataclass
class LocationDef:
    ref: int
    name: str
    type: int
    n_events: int
    group: int


@dataclass
class LocationGroupDef:
    ref: int
    name: str
    type: int
    parent: int


@dataclass
class GroupDef:
    ref: int
    name: str
    type: int  # OTF2_GroupType
    paradigm: int
    members: tuple  # refs or ranks, as written


@dataclass
class CommDef:
    ref: int
    name: str
    group: int
    parent: int


@dataclass
class GlobalDefs:
    clock: tuple[int, int, int] | None = None  # timer resolution, global offset, trace length
    strings: dict = field(default_factory=dict)
    nodes: dict = field(default_factory=dict)  # ref -> (name, parent)
    location_groups: dict = field(default_factory=dict)  # ref -> LocationGroupDef, in file order
    locations: dict = field(default_factory=dict)  # ref -> LocationDef
    regions: list = field(default_factory=list)
    groups: list = field(default_factory=list)
    comms: list = field(default_factory=list)
    calling_contexts: list = field(default_factory=list)  # (ref, region ref, parent ref), in file order
    rma_wins: list = field(default_factory=list)  # (ref, name ref, comm ref), in file order

    def string(self, ref: int) -> str:
        return self.strings.get(ref, "")


# OTF2 1.0's region types as (role, paradigm) (OTF2_RegionType, removed in 1.1)
_PRE_1_1_REGION_TYPES = {
    1: (1, 0), 2: (3, 1), 3: (1, 0), 4: (27, 1), 5: (5, 3), 6: (3, 3), 7: (6, 3), 8: (7, 3), 9: (8, 3),
    10: (9, 3), 11: (11, 3), 12: (12, 3), 13: (14, 3), 14: (15, 3), 15: (16, 3), 16: (17, 3), 17: (13, 3),
    18: (10, 3), 19: (2, 3), 20: (20, 3), 21: (22, 3), 22: (15, 4), 23: (23, 4), 24: (24, 4), 25: (25, 4),
    26: (26, 4), 27: (4, 1), 28: (4, 1), 29: (4, 1), 30: (3, 1), 31: (1, 1), 32: (3, 1), 33: (21, 3),
    34: (18, 3), 35: (19, 3),
}
# OTF2 1.0/1.1 group types as (group type, paradigm) (OTF2_GroupTypePre12, removed in 1.2)
_PRE_1_2_GROUP_TYPES = {1: (1, 0), 2: (2, 0), 3: (3, 0), 4: (5, 4), 5: (6, 4), 6: (4, 4)}


def read_global_defs(path: str, chunk_size: int) -> GlobalDefs:
    """The definitions of ``<base>.def`` that the import needs; other record types are skipped."""
    d = GlobalDefs()
    data = read_file(path)
    for rtype, c in records(data, path, chunk_size):
        if rtype == _STRING:
            ref = c.u32()
            d.strings[ref] = c.string()
        elif rtype == _CLOCK_PROPERTIES:
            d.clock = (c.comp(), c.comp(), c.comp())
        elif rtype == _SYSTEM_TREE_NODE:
            ref, name = c.u32(), c.u32()
            c.u32()  # class name
            d.nodes[ref] = (name, c.u32())
        elif rtype == _LOCATION_GROUP:
            ref, name, typ, parent = c.u32(), c.u32(), c.u8(), c.u32()
            d.location_groups[ref] = LocationGroupDef(ref, name, typ, parent)
        elif rtype == _LOCATION:
            ref, name, typ, n, group = c.comp(), c.u32(), c.u8(), c.comp(), c.u32()
            d.locations[ref] = LocationDef(ref, name, typ, n, group)
        elif rtype == _REGION:
            ref, name = c.u32(), c.u32()
            c.u32()  # description
            rtype_pre11, src, beg, end = c.u8(), c.u32(), c.u32(), c.u32()
            if not c.at_end():
                c.u32()  # canonical name
                role, par = c.u8(), c.u8()
            else:
                role, par = _PRE_1_1_REGION_TYPES.get(rtype_pre11, (0, 0))
            d.regions.append(RegionDef(ref, name, src, beg, end, role, par))
        elif rtype == _GROUP:
            ref, name, gt_pre12, n = c.u32(), c.u32(), c.u8(), c.u32()
            members = tuple(c.comp() for _ in range(n)) if n <= c.end - c.pos else None
            if members is None:  # each member needs at least one byte
                raise c.fail(f"group {ref}: {n} members announced in a record of {c.end - c.pos} bytes")
            if not c.at_end():
                gtype, par = c.u8(), c.u8()
            else:
                gtype, par = _PRE_1_2_GROUP_TYPES.get(gt_pre12, (0, 0))
            d.groups.append(GroupDef(ref, name, gtype, par, members))
        elif rtype == _COMM:
            d.comms.append(CommDef(c.u32(), c.u32(), c.u32(), c.u32()))
        elif rtype == _RMA_WIN:  # (OTF2 3.0 appends a type and flags: skipped with the rest of the record)
            d.rma_wins.append((c.u32(), c.u32(), c.u32()))
        elif rtype == _CALLING_CONTEXT:
            ref, region = c.u32(), c.u32()
            c.u32()  # source code location
            d.calling_contexts.append((ref, region, c.u32()))
    return d


# ---------------------------------------------------------------------------------------------
# local definitions: mapping tables and clock offsets
# ---------------------------------------------------------------------------------------------
@dataclass
class LocalDefs:
    mappings: dict = field(default_factory=dict)  # mapping type -> (local ids, global ids) as uint64 arrays
    clock_offsets: list = field(default_factory=list)  # (local time, offset) in file order


def read_local_defs(path: str, chunk_size: int) -> LocalDefs:
    out = LocalDefs()
    data = read_file(path)
    for rtype, c in records(data, path, chunk_size):
        if rtype == _MAPPING_TABLE:
            at = c.pos
            mtype = c.u8()
            n, mode = c.comp(), c.u8()
            per = 1 if mode == 0 else 2
            if n * per > c.end - c.pos:  # every item needs at least one byte
                raise c.fail(f"mapping table announces {n} entries in {c.end - c.pos} bytes", at)
            items = [c.comp() for _ in range(n * per)]
            if mode == 0:
                local, glob = np.arange(n, dtype=np.uint64), np.array(items, np.uint64)
            elif mode == 1:
                local, glob = np.array(items[0::2], np.uint64), np.array(items[1::2], np.uint64)
            else:
                raise c.fail(f"unknown id map mode {mode}", at)
            if mtype in out.mappings:
                raise c.fail(f"a second mapping table of type {mtype}", at)
            out.mappings[mtype] = (local, glob)
        elif rtype == _CLOCK_OFFSET:
            t, off = c.full64(), c.i64()
            out.clock_offsets.append((t, off))
    return out


def clock_intervals(offsets: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """OTF2's clock correction: one interval per pair of consecutive offsets, linear in between.

    (begin, end, offset, slope); a time past the last interval uses the last one; with fewer
    than two offsets there is no interval and times stay as recorded (as the OTF2 library does).
    """
    begin, end, off, slope = [], [], [], []
    for (t0, o0), (t1, o1) in zip(offsets, offsets[1:]):
        if t1 <= t0:
            raise ValueError(f"clock offsets at local times {t0} and {t1} are not increasing")
        begin.append(t0)
        end.append(t1)
        off.append(o0)
        slope.append(float(o1 - o0) / float(t1 - t0))
    return (np.array(begin, np.uint64), np.array(end, np.uint64), np.array(off, np.int64),
            np.array(slope, np.float64))
