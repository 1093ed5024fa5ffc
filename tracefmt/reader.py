"""Reading ``.elg`` files: ``tracefmt.open`` and the lazy :class:`Trace`.

The file is memory-mapped.  Opening reads the header, the footer index (or,
when the index is missing or damaged, scans the block headers from the
start) and the definitions; event blocks are only touched when a location's
events are asked for.  They are then read with ``pread`` in chunks of a few
thousand records into one reused buffer, checksummed there and split into
contiguous numpy columns in one pass (a numba kernel; numpy for short
locations): no per-event Python work, one read of each byte, and no copy of
the raw file bytes kept in memory.
"""

from __future__ import annotations

import builtins
import mmap
import os
import stat
import struct
import sys
import zlib
from dataclasses import dataclass

import numpy as np

from . import layout
from .definitions import Clock, Definitions, RawDefinitions, decode_definitions, resolve
from .errors import TraceFormatError
from .clock import local_to_global, ticks_to_seconds
from .column_memory import CHUNK_RECORDS, COLUMNS, RECORD_WORDS, chunk_buffer, new_columns
from .layout import BlockKind

try:  # ISA-L's CRC-32 (carry-less multiply) is several times faster than zlib's; same checksum
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - isal is a dependency; zlib is the fallback where it has no wheel
    from zlib import crc32 as _crc32

#: locations with at least this many events are decoded by the numba kernel;
#: shorter ones by numpy unless the kernel is loaded already, so reading a
#: small trace never pays for importing numba (about 0.4 s)
_KERNEL_MIN_RECORDS = 1 << 14
_KERNEL_MODULE = __name__.rpartition(".")[0] + ".kernels"

_KNOWN_FLAGS = layout.FLAG_FINISHED


def load_decoder() -> None:
    """Import numba and load the decoding kernel's cached machine code now (once per process; 0.35 s here).

    ``Trace.events`` does this by itself on the first location long enough
    for the kernel; a program that wants the cost out of a timed region, or
    overlapped with other start-up work, calls this first.
    """
    if sys.byteorder != "little":
        return
    from .kernels import decode_records

    words = np.zeros((1, RECORD_WORDS), np.uint64)
    out = [np.zeros(1, dt) for dt in (np.uint64, np.float64, np.uint8, np.uint8, np.uint32, np.uint32, np.uint32,
                                      np.uint64, np.uint64)]
    decode_records(words, False, np.uint64(0), 1.0, 0, *out)


def _kernel_decoder(trace: "Trace", clock: Clock, cols: dict[str, np.ndarray]):
    """decode(words, at) running the numba kernel into `cols`, or None where it cannot run.

    The kernel reads the records as little-endian 64-bit words, so it needs a
    little-endian host; big-endian files are byte-swapped inside it.
    """
    if sys.byteorder != "little":
        return None
    from .kernels import decode_records

    swap = trace.header.byte_order == layout.BYTE_ORDER_BIG
    origin, rate = np.uint64(clock.origin), float(clock.ticks_per_second)
    c = cols

    def decode(words: np.ndarray, at: int) -> None:
        decode_records(words, swap, origin, rate, at,
                       c["ticks"], c["time"], c["type"], c["flags"], c["a"], c["b"], c["c"], c["d"], c["e"])

    return decode


@dataclass(frozen=True)
class Header:
    version: tuple[int, int]
    byte_order: int
    flags: int
    creator: str
    header_size: int

    @property
    def finished(self) -> bool:
        return bool(self.flags & layout.FLAG_FINISHED)


@dataclass(frozen=True)
class Block:
    """One block as found through the index or by scanning."""

    number: int  # position among the file's blocks, from 0
    kind: int
    location: int
    offset: int  # byte offset of the block header
    payload_length: int
    count: int
    payload_crc: int
    first_time: int = 0  # ticks, from the index (0 when found by scanning)
    last_time: int = 0

    @property
    def payload_offset(self) -> int:
        return self.offset + layout.BLOCK_HEADER_SIZE

    @property
    def end(self) -> int:
        """Offset just past the payload and its padding."""
        n = self.payload_length
        return self.payload_offset + n + (-n % layout.BLOCK_ALIGN)


class Events:
    """The decoded events of one location: one contiguous numpy array per field."""

    __slots__ = ("location", "time", "ticks", "type", "flags", "a", "b", "c", "d", "e")

    def __init__(self, location, time, ticks, type, flags, a, b, c, d, e):
        self.location = location
        self.time = time  # float64 seconds, global clock
        self.ticks = ticks  # uint64, the process's raw clock
        self.type = type
        self.flags = flags
        self.a, self.b, self.c = a, b, c
        self.d, self.e = d, e

    def __len__(self) -> int:
        return int(self.type.shape[0])

    def __getitem__(self, index) -> "Events":
        """The events selected by a slice, an index array or a boolean mask."""
        return Events(self.location, *(getattr(self, f)[index] for f in Events.__slots__[1:]))

    def __repr__(self) -> str:
        return f"<Events of location {self.location}: {len(self)} events>"

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in Events.__slots__[1:])

    @classmethod
    def empty(cls, location: int) -> "Events":
        dt = layout.EVENT_DTYPE
        cols = [np.zeros(0, np.float64), np.zeros(0, np.uint64)]
        cols += [np.zeros(0, dt[f].newbyteorder("=")) for f in ("type", "flags", "a", "b", "c", "d", "e")]
        return cls(location, *cols)


class Trace:
    """An open trace file.  Use :func:`tracefmt.open`."""

    def __init__(self, source, verify: bool = True):
        self.verify = verify
        self.problems: list[str] = []  # damage: what is missing or was repaired (--salvage territory)
        self.notes: list[str] = []  # what a foreign source held that is not analysed; no damage
        self._mmap = None
        self._file = None
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            try:
                if not stat.S_ISREG(os.stat(self.path).st_mode):  # a FIFO would block, a device never end
                    raise self._error("not a regular file")
                self._file = builtins.open(self.path, "rb")
                size = os.fstat(self._file.fileno()).st_size
                if size == 0:
                    raise self._error("empty file (0 bytes); not a trace")
                self._mmap = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            except OSError as e:
                self.close()
                raise TraceFormatError(f"cannot open: {e.strerror or e}", path=self.path) from None
            except TraceFormatError:
                self.close()
                raise
            self._buf = self._mmap
        else:
            self.path = "<bytes>"
            self._buf = bytes(source)
        self.size = len(self._buf)
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ basics
    def _error(self, msg, location=None, block=None, offset=None) -> TraceFormatError:
        return TraceFormatError(msg, path=self.path, location=location, block=block, offset=offset)

    def close(self) -> None:
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:  # numpy views still exist; the OS unmaps when they go
                pass
            self._mmap = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self) -> None:
        # a Trace dropped without close() (scripts, the CLIs) still releases its file and mapping at once
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to release
            pass

    def __enter__(self) -> "Trace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        n = len(getattr(self, "location_ids", ()))
        return f"<Trace {self.path}: {n} locations>"

    @property
    def complete(self) -> bool:
        """The writer finished normally and nothing is missing or damaged."""
        return self.header.finished and not self.problems

    # ------------------------------------------------------------------ opening
    def _open(self) -> None:
        self.header = self._read_header()
        p = "<" if self.header.byte_order == layout.BYTE_ORDER_LITTLE else ">"
        self._p = p
        self._block_header = struct.Struct(p + layout.BLOCK_HEADER_FMT)
        self._dtype = layout.event_dtype(self.header.byte_order)
        blocks = self._blocks_from_index()
        if blocks is None:
            blocks = self._blocks_by_scanning()
        self.blocks = blocks
        if not self.header.finished:
            self.problems.append("the writer did not finish this file (no end-of-run mark in the header)")
        self._read_definitions()
        self._map_locations()

    def _read_header(self) -> Header:
        buf, size = self._buf, self.size
        if bytes(buf[:7]) == b"EPILOG\0":
            raise self._error("this is an EPILOG 1.x file; this reader reads the .elg format version 2", offset=0)
        if size < layout.FILE_HEADER_SIZE:
            if bytes(buf[: min(size, 8)]) == layout.MAGIC[: min(size, 8)]:
                raise self._error(f"truncated file header ({size} of {layout.FILE_HEADER_SIZE} bytes)", offset=0)
            raise self._error(f"not a trace file: {size} bytes, shorter than a file header", offset=0)
        if bytes(buf[:8]) != layout.MAGIC:
            raise self._error("not a trace file (bad magic number)", offset=0)
        order = buf[8]
        if order not in (layout.BYTE_ORDER_LITTLE, layout.BYTE_ORDER_BIG):
            raise self._error(f"invalid byte-order code {order} in the file header", offset=8)
        _, _, flags, major, minor, hsize, creator, hcrc = layout.file_header_struct(order).unpack_from(buf, 0)
        if major != layout.VERSION_MAJOR:
            raise self._error(
                f"unsupported format version {major}.{minor} (this reader reads {layout.VERSION_MAJOR}.x)", offset=10
            )
        if zlib.crc32(bytes(buf[: layout.HEADER_CRC_OFFSET])) != hcrc:
            raise self._error("file header checksum mismatch (damaged header)", offset=layout.HEADER_CRC_OFFSET)
        if hsize < layout.FILE_HEADER_SIZE or hsize > size or hsize % layout.BLOCK_ALIGN:
            raise self._error(f"invalid header size {hsize} in the file header", offset=14)
        if minor <= layout.VERSION_MINOR and flags & ~_KNOWN_FLAGS:  # a newer minor version may add flags
            raise self._error(f"unknown header flags 0x{flags:02x} (damaged header?)", offset=9)
        text, _, padding = creator.partition(b"\0")
        try:
            creator_text = text.decode("utf-8")
        except UnicodeDecodeError:
            creator_text = None
        if creator_text is None or padding.strip(b"\0"):
            raise self._error("creator field is not NUL-padded UTF-8 text (damaged header?)", offset=16)
        return Header((major, minor), order, flags, creator_text, hsize)

    def _parse_block_header(self, offset: int, number: int) -> tuple[Block | None, str | None]:
        """The block whose header starts at `offset`, or (None, why not)."""
        if offset + layout.BLOCK_HEADER_SIZE > self.size:
            return None, f"block header at byte {offset} runs past the end of the file"
        magic, kind, _, loc, pcrc, plen, count, hcrc = self._block_header.unpack_from(self._buf, offset)
        if magic != layout.BLOCK_MAGIC:
            return None, f"no block header at byte {offset} (bad block magic)"
        if zlib.crc32(self._buf[offset : offset + layout.BLOCK_HEADER_SIZE - 4]) != hcrc:
            return None, f"damaged block header at byte {offset} (checksum mismatch)"
        return Block(number, kind, loc, offset, plen, count, pcrc), None

    def _check_block_shape(self, b: Block) -> str | None:
        """Why a block's header is inconsistent, or None.  Bounds come before any allocation."""
        if b.payload_offset + b.payload_length > self.size:
            have = max(0, self.size - b.payload_offset)
            return (
                f"{self._describe(b)} is truncated: its payload needs {b.payload_length} bytes, "
                f"the file holds {have}"
            )
        if b.kind == BlockKind.EVENTS and b.payload_length != b.count * layout.EVENT_RECORD_SIZE:
            return f"{self._describe(b)} holds {b.payload_length} bytes, not {b.count} records of 40"
        if b.kind == BlockKind.INDEX and b.payload_length != b.count * layout.INDEX_ENTRY_SIZE:
            return f"{self._describe(b)} holds {b.payload_length} bytes, not {b.count} entries of 48"
        if b.kind == BlockKind.DEFINITIONS and b.count > b.payload_length // layout.DEF_RECORD_HEADER_SIZE:
            return f"{self._describe(b)} claims {b.count} records in {b.payload_length} bytes"
        return None

    @staticmethod
    def _describe(b: Block) -> str:
        kind = BlockKind(b.kind).name if b.kind in BlockKind._value2member_map_ else f"kind-{b.kind}"
        what = f"block {b.number} ({kind}"
        if b.kind == BlockKind.EVENTS:
            what += f" of location {b.location}"
        return what + f", at byte {b.offset})"

    def _blocks_from_index(self) -> list[Block] | None:
        """Blocks listed in the footer index, or None (plus a problem line) when it is unusable."""
        size, hs = self.size, self.header.header_size
        if size < hs + layout.TRAILER_SIZE:
            self.problems.append("truncated: the file ends before its footer index; scanned the blocks instead")
            return None
        at = size - layout.TRAILER_SIZE
        (index_at,) = struct.unpack_from(self._p + "Q", self._buf, at)
        if bytes(self._buf[at + 8 : size]) != layout.TRAILER_MAGIC:
            self.problems.append(
                "truncated or unfinished: no footer index at the end of the file; scanned the blocks instead"
            )
            return None

        def bad(why: str) -> None:
            self.problems.append(f"footer index unusable: {why}; scanned the blocks instead")

        if not hs <= index_at <= at - layout.BLOCK_HEADER_SIZE:
            return bad(f"trailer points to byte {index_at}, outside the file")
        ib, why = self._parse_block_header(index_at, -1)
        if ib is None:
            return bad(why)
        if ib.kind != BlockKind.INDEX or ib.end != at:
            return bad(f"the block at byte {index_at} is not an index block that ends at the trailer")
        if ib.payload_length != ib.count * layout.INDEX_ENTRY_SIZE:
            return bad(f"index block at byte {index_at} has a bad length")
        payload = self._buf[ib.payload_offset : ib.payload_offset + ib.payload_length]
        if zlib.crc32(payload) != ib.payload_crc:
            return bad(f"index block at byte {index_at}: checksum mismatch")
        entry = struct.Struct(self._p + layout.INDEX_ENTRY_FMT)
        blocks, expect = [], hs
        for i, (kind, _, loc, off, plen, count, t0, t1) in enumerate(entry.iter_unpack(payload)):
            if off != expect:
                return bad(f"entry {i} points to byte {off}, expected the next block at byte {expect}")
            b, why = self._parse_block_header(off, i)
            if b is None:
                return bad(f"entry {i}: {why}")
            if (b.kind, b.location, b.payload_length, b.count) != (kind, loc, plen, count):
                return bad(f"entry {i} does not match the block header at byte {off}")
            why = self._check_block_shape(b)
            if why is not None or b.end > index_at:
                return bad(f"entry {i}: {why or 'block overlaps the index'}")
            blocks.append(Block(i, kind, loc, off, plen, count, b.payload_crc, t0, t1))
            expect = b.end
        if expect != index_at:
            return bad(f"{index_at - expect} bytes between the last indexed block and the index")
        return blocks

    def _blocks_by_scanning(self) -> list[Block]:
        """Walk the block headers from the file header on, keeping every complete block."""
        blocks: list[Block] = []
        pos, size, align = self.header.header_size, self.size, layout.BLOCK_ALIGN
        while pos + layout.BLOCK_HEADER_SIZE <= size:
            b, why = self._parse_block_header(pos, len(blocks))
            if b is None:
                nxt = self._resync(pos + align)
                lost = (nxt if nxt is not None else size) - pos
                self.problems.append(f"{why}: skipped {lost} bytes")
                if nxt is None:
                    return blocks
                pos = nxt
                continue
            why = self._check_block_shape(b)
            if why is not None:
                self.problems.append(why + "; this block and anything after it is missing")
                return blocks
            if b.kind == BlockKind.INDEX:
                return blocks  # the index is always last; what follows is the trailer
            blocks.append(b)
            pos = b.end
        if pos < size:
            self.problems.append(
                f"the file ends inside a block header at byte {pos} ({size - pos} of "
                f"{layout.BLOCK_HEADER_SIZE} bytes); that block and any after it are missing"
            )
        return blocks

    def _resync(self, start: int) -> int | None:
        """Offset of the next plausible block header at or after `start` (8-aligned), or None."""
        start += -start % layout.BLOCK_ALIGN
        while True:
            i = self._buf_find(layout.BLOCK_MAGIC, start)
            if i < 0:
                return None
            if i % layout.BLOCK_ALIGN == 0 and self._parse_block_header(i, 0)[0] is not None:
                return i
            start = i + 1

    def _buf_find(self, needle: bytes, start: int) -> int:
        return self._buf.find(needle, start)  # mmap and bytes both search natively

    def _verify_payload(self, b: Block, location=None) -> None:
        """Checksum and zero padding of a block (raises TraceFormatError)."""
        mv = self._buf[b.payload_offset : b.end]
        n = b.payload_length
        if zlib.crc32(mv[:n]) != b.payload_crc:
            raise self._error("checksum mismatch: the block's data is damaged", location, b.number, b.offset)
        if any(mv[n:]):
            raise self._error("non-zero padding after the block's data", location, b.number, b.offset + 32 + n)

    def _read_definitions(self) -> None:
        raw = RawDefinitions()
        for b in self.blocks:
            if b.kind != BlockKind.DEFINITIONS:
                continue
            self._verify_payload(b)
            payload = self._buf[b.payload_offset : b.payload_offset + b.payload_length]

            def where(msg, rel, b=b):
                return self._error(msg, block=b.number, offset=b.payload_offset + rel)

            decode_definitions(payload, b.count, self.header.byte_order, raw, where)
        if not any(b.kind == BlockKind.DEFINITIONS for b in self.blocks):
            # without definitions no event can be interpreted: nothing is usable
            why = f" ({self.problems[-1]})" if self.problems else ""
            raise self._error("no complete definitions block in the file" + why)
        self.defs: Definitions = resolve(raw, self.problems)

    def _map_locations(self) -> None:
        self._blocks_of: dict[int, list[Block]] = {}
        undefined = set()
        for b in self.blocks:
            if b.kind != BlockKind.EVENTS:
                continue
            if b.location not in self.defs.locations:
                undefined.add(b.location)
                continue
            self._blocks_of.setdefault(b.location, []).append(b)
        for loc in sorted(undefined):
            self.problems.append(f"events of location {loc}, which has no LOCATION definition, were ignored")
        self.location_ids = np.array(sorted(self.defs.locations), dtype=np.int64)

    # ------------------------------------------------------------------ events
    def n_events(self, location: int) -> int:
        """Number of events of a location, from the block headers (nothing decoded)."""
        self.check_location(location)
        return sum(b.count for b in self._blocks_of.get(location, ()))

    def check_location(self, location: int) -> None:
        """Raise ``KeyError`` (naming the trace's locations) unless ``location`` is defined.

        :meth:`events` and :meth:`n_events` check this themselves; a caller of
        :meth:`decode_into` checks it first.
        """
        if location not in self.defs.locations:
            raise KeyError(f"{self.path}: no location {location} (locations: {self.location_ids.tolist()})")

    def events(self, location: int) -> Events:
        """Decode all events of one location (its EVENTS blocks concatenated in file order)."""
        self.check_location(location)
        blocks = self._blocks_of.get(location, [])
        n = sum(b.count for b in blocks)
        if n == 0:
            return Events.empty(location)
        return Events(location, **self.decode_into(location, new_columns(n)))

    def new_column_buffer(self, n: int) -> dict[str, np.ndarray]:
        """Uninitialised columns for ``n`` events, to be filled again and again by :meth:`decode_into`.

        Laid out like the columns of :meth:`events` (one allocation, fresh
        pages faulted in cheaply; see ``new_columns``).  Size it for the
        largest location it will hold (:meth:`n_events`).
        """
        return new_columns(n)

    def decode_into(self, location: int, buffer: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Decode one location into the start of caller-owned columns and return views of its length.

        This exists for the replay's buffer reuse (``analyzer.replay``): it
        decodes every location of its share into one buffer from
        :meth:`new_column_buffer`, so the buffer's pages are faulted in once,
        not once per location (docs/performance.md).  The returned views
        (the keyword arguments of :class:`Events`) are overwritten by the
        next call with the same buffer; :meth:`events` returns independent
        arrays.  ``location`` must be defined (:meth:`check_location`); a
        ``ValueError`` names it when the buffer is too small.
        """
        blocks = self._blocks_of.get(location, [])
        n = sum(b.count for b in blocks)
        if n > len(buffer["time"]):
            raise ValueError(f"column buffer of {len(buffer['time'])} events is too small for location "
                             f"{location} ({n} events)")
        cols = {name: buffer[name][:n] for name, _ in COLUMNS}
        if n == 0:
            return cols
        loc = self.defs.locations[location]
        clock = self.defs.clock(loc.process)
        offsets = self.defs.offsets.get(loc.process, [])
        words = chunk_buffer()
        raw = words.reshape(-1).view(np.uint8)
        use_kernel = n >= _KERNEL_MIN_RECORDS or _KERNEL_MODULE in sys.modules
        decode = _kernel_decoder(self, clock, cols) if use_kernel else None
        at = 0
        for b in blocks:
            crc = 0
            for s in range(0, b.count, CHUNK_RECORDS):
                k = min(CHUNK_RECORDS, b.count - s)
                self._read_records(b.payload_offset + s * layout.EVENT_RECORD_SIZE, k, raw, location, b)
                if self.verify:
                    crc = _crc32(raw[: k * layout.EVENT_RECORD_SIZE], crc)
                if decode is not None:
                    decode(words[:k], at)
                else:
                    self._decode_numpy(words[:k], at, cols, clock)
                if offsets:
                    part = cols["time"][at : at + k]
                    part[...] = local_to_global(part, offsets)
                at += k
            if self.verify:
                if crc != b.payload_crc:
                    raise self._error("checksum mismatch: the block's data is damaged", location, b.number, b.offset)
                pad = self._buf[b.payload_offset + b.payload_length : b.end]
                if any(pad):
                    raise self._error("non-zero padding after the block's data", location, b.number, b.offset)
        return cols

    def _decode_numpy(self, words: np.ndarray, at: int, cols: dict, clock: Clock) -> None:
        """The vectorised decoder: short locations (no numba import needed) and big-endian hosts."""
        rec = words.view(self._dtype).reshape(-1)
        k = rec.shape[0]
        t = cols["ticks"][at : at + k]
        t[:] = rec["time"]
        for f in ("type", "flags", "a", "b", "c", "d", "e"):
            cols[f][at : at + k] = rec[f]
        ticks_to_seconds(t, clock, [], out=cols["time"][at : at + k])

    def _read_records(self, offset: int, k: int, raw: np.ndarray, location: int, b: Block) -> None:
        """Copy k raw records from `offset` into the start of `raw` (bytes).

        Reading with pread into a small reused buffer is faster than touching
        the mapping (no page faults) and keeps the raw bytes out of our
        resident memory, so peak memory is the decoded columns plus one chunk.
        """
        nbytes = k * layout.EVENT_RECORD_SIZE
        if self._file is None:
            raw[:nbytes] = np.frombuffer(self._buf, np.uint8, nbytes, offset)
            return
        got = os.preadv(self._file.fileno(), [raw[:nbytes]], offset)
        if got != nbytes:  # the file shrank since it was opened
            raise self._error(f"short read ({got} of {nbytes} bytes)", location, b.number, offset)

    def time_range(self, location: int) -> tuple[float, float] | None:
        """Global (first, last) event time of a location from the index, or None without events/index."""
        blocks = self._blocks_of.get(location, [])
        if not blocks or blocks[0].first_time == blocks[-1].last_time == 0:
            return None
        loc = self.defs.locations[location]
        t = np.array([blocks[0].first_time, blocks[-1].last_time], np.uint64)
        g = ticks_to_seconds(t, self.defs.clock(loc.process), self.defs.offsets.get(loc.process, []))
        return float(g[0]), float(g[1])


def open(path, verify: bool = True) -> Trace:  # noqa: A001 - tracefmt.open is the documented name
    """Open a trace (a path, or the bytes of a file).

    Raises :class:`TraceFormatError` when the file is not usable at all.  A
    damaged but partly readable file opens; ``trace.problems`` then lists
    what is missing and ``trace.complete`` is False.  ``verify=False`` skips
    the per-block checksum of event data (faster; damage goes unnoticed).
    """
    return Trace(path, verify=verify)
