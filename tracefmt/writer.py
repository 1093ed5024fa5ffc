"""Writing ``.elg`` files: header, definition and event blocks, footer index."""

from __future__ import annotations

import io
import os
import struct
import zlib

import numpy as np

from . import layout
from .definitions import Definitions, StringTable, encode_definitions
from .layout import BlockKind

#: an EVENTS block never holds more records than its u32 count field allows
_MAX_BLOCK_RECORDS = 0xFFFFFFFF


def encode_file_header(byte_order: int, flags: int, creator: str) -> bytes:
    c = creator.encode("utf-8")[: layout.CREATOR_SIZE]
    # never cut a multi-byte character in half: the reader insists on valid UTF-8
    c = c.decode("utf-8", "ignore").encode("utf-8")
    st = layout.file_header_struct(byte_order)
    fields = [layout.MAGIC, byte_order, flags, layout.VERSION_MAJOR, layout.VERSION_MINOR,
              layout.FILE_HEADER_SIZE, c.ljust(layout.CREATOR_SIZE, b"\0")]
    crc = zlib.crc32(st.pack(*fields, 0)[: layout.HEADER_CRC_OFFSET])
    return st.pack(*fields, crc)


def encode_block_header(
    byte_order: int, kind: int, location: int, payload_crc: int, payload_length: int, count: int
) -> bytes:
    p = "<" if byte_order == layout.BYTE_ORDER_LITTLE else ">"
    first = struct.pack(
        p + layout.BLOCK_HEADER_FMT[:-1], layout.BLOCK_MAGIC, kind, 0, location, payload_crc, payload_length, count
    )
    return first + struct.pack(p + "I", zlib.crc32(first))


class TraceWriter:
    """Writes one trace file.

    ``path`` is a file name or a seekable binary file object (left open).
    Call :meth:`write_definitions` and :meth:`write_events` in any order and
    as often as needed, then :meth:`close`, which writes the footer index and
    marks the file finished.  A file whose writer never closed stays readable
    (the reader scans its blocks) but reports itself incomplete.
    """

    def __init__(self, path, creator: str = "tracefmt", byte_order: int = layout.BYTE_ORDER_LITTLE):
        if byte_order not in (layout.BYTE_ORDER_LITTLE, layout.BYTE_ORDER_BIG):
            raise ValueError(f"byte_order must be {layout.BYTE_ORDER_LITTLE} or {layout.BYTE_ORDER_BIG}")
        if isinstance(path, (str, os.PathLike)):
            self._f = open(path, "wb")
            self._owned = True
        else:
            self._f = path
            self._owned = False
        self.byte_order = byte_order
        self.creator = creator
        self._p = "<" if byte_order == layout.BYTE_ORDER_LITTLE else ">"
        self._dtype = layout.event_dtype(byte_order)
        self._strings = StringTable()
        self._index: list[tuple] = []
        self._start = self._f.tell()
        self._f.write(encode_file_header(byte_order, 0, creator))
        self._pos = layout.FILE_HEADER_SIZE
        self.closed = False

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        elif self._owned:  # leave the unfinished file as it is: readable, but marked incomplete
            self._f.close()

    # ------------------------------------------------------------------
    def _write_block(self, kind: int, location: int, payload, count: int, first: int = 0, last: int = 0) -> None:
        if self.closed:
            raise ValueError("TraceWriter is closed")
        mv = memoryview(payload).cast("B")
        n = mv.nbytes
        header = encode_block_header(self.byte_order, kind, location, zlib.crc32(mv), n, count)
        self._index.append((int(kind), location, self._pos, n, count, first, last))
        self._f.write(header)
        self._f.write(mv)
        pad = -n % layout.BLOCK_ALIGN
        if pad:
            self._f.write(b"\0" * pad)
        self._pos += layout.BLOCK_HEADER_SIZE + n + pad

    def write_definitions(self, defs: Definitions) -> None:
        """Write the definitions as one DEFINITIONS block (may be called again for more)."""
        payload, count = encode_definitions(defs, self._strings, self.byte_order)
        self._write_block(BlockKind.DEFINITIONS, layout.NO_ID, payload, count)

    def write_events(self, location: int, records: np.ndarray) -> None:
        """Append event records (a structured array of ``layout.EVENT_DTYPE``) of one location."""
        records = np.asarray(records)
        if records.dtype.names != layout.EVENT_DTYPE.names:
            raise ValueError(f"event records must have the fields {layout.EVENT_DTYPE.names}, got {records.dtype}")
        if records.ndim != 1:
            raise ValueError("event records must be a 1-d array")
        if not 0 <= location < layout.NO_ID:
            raise ValueError(f"location id {location} out of range")
        if records.dtype != self._dtype or not records.flags.c_contiguous:
            records = np.ascontiguousarray(records.astype(self._dtype))
        for s in range(0, len(records), _MAX_BLOCK_RECORDS):
            part = records[s : s + _MAX_BLOCK_RECORDS]
            t = part["time"]
            self._write_block(BlockKind.EVENTS, location, part, len(part), int(t[0]), int(t[-1]))

    def close(self) -> None:
        if self.closed:
            return
        entry = struct.Struct(self._p + layout.INDEX_ENTRY_FMT)
        payload = b"".join(entry.pack(k, 0, loc, off, n, c, t0, t1) for (k, loc, off, n, c, t0, t1) in self._index)
        index_at = self._pos
        self._write_block(BlockKind.INDEX, layout.NO_ID, payload, len(self._index))
        self._f.write(struct.pack(self._p + "Q", index_at) + layout.TRAILER_MAGIC)
        end = self._f.tell()
        self._f.seek(self._start)
        self._f.write(encode_file_header(self.byte_order, layout.FLAG_FINISHED, self.creator))
        self._f.seek(end)
        self._f.flush()
        if self._owned:
            self._f.close()
        self.closed = True


def write_trace(path, defs: Definitions, events: dict[int, np.ndarray], creator: str = "tracefmt", **kw) -> None:
    """Write a whole trace in one call: definitions, then each location's events in id order."""
    with TraceWriter(path, creator=creator, **kw) as w:
        w.write_definitions(defs)
        for loc in sorted(events):
            w.write_events(loc, events[loc])


def to_bytes(defs: Definitions, events: dict[int, np.ndarray], **kw) -> bytes:
    buf = io.BytesIO()
    write_trace(buf, defs, events, **kw)
    return buf.getvalue()
