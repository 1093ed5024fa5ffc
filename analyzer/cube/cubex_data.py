"""CUBE4 data members: a metric's index (which call-path rows it stores) and its values, plain or compressed.

:func:`read_metric` checks both members against the call tree and the file's budgets
(:class:`analyzer.cube.stored_rows.HeldBudget`) and returns the metric's rows.  A compressed member
(``ZCUBEX.DATA``, as Scalasca's writer stores data) is decoded once to be checked and then held as the
member's bytes (:class:`CompressedRows`): its values may inflate to many times the file, a pass over the
metrics decodes it again.
"""

from __future__ import annotations

import struct

import numpy as np

from tracefmt.inflate import InflateError, inflate

from .model import CubeFormatError
from .stored_rows import HeldBudget, StoredRows
from .tar import DATA_MAGIC, INDEX_DENSE, INDEX_MAGIC, INDEX_NONE, INDEX_SPARSE, ZDATA_MAGIC, TarMember


def check_finite(name: str, held: StoredRows) -> None:
    bad = np.argwhere(~np.isfinite(held.data))
    if bad.size:
        r, loc = bad[0]
        raise CubeFormatError(f"metric {name!r}: value at cnode {held.rows[r]}, location {loc} is "
                              f"{held.data[r, loc]}")


def rows_of(rows: np.ndarray, data: np.ndarray, positions: np.ndarray, parent) -> StoredRows | None:
    """A metric's nonzero rows by cnode id from its rows by position; ``parent``: inclusive values to turn
    exclusive (None: they are exclusive)."""
    got = StoredRows.nonzero(positions[rows], data)
    if got is not None and parent is not None:
        got = got.minus_children(parent)
    return got


class Compressed:
    """A compressed data member as the file holds it, and how to decode it (:func:`read_metric`)."""

    __slots__ = ("member", "dtype", "endian", "cap", "need")

    def __init__(self, member: bytes, dtype: np.dtype, endian: str, cap: int, need: int):
        self.member, self.dtype, self.endian, self.cap, self.need = member, dtype, endian, cap, need

    def values(self) -> np.ndarray:
        payload = _inflate(self.member, self.endian, "", self.cap)
        return np.frombuffer(payload, self.dtype, self.need).astype(np.float64, copy=False)


class CompressedRows:
    """One metric of a compressed data member, held as the member's bytes and decoded again whenever a caller
    asks for the metric (:class:`analyzer.cube.stored_rows.RowValues` builds it dense, one metric at a time).

    Held decoded, a file's nonzero rows may take HELD_RATIO times its size (values deflate: a legitimate
    compressed cube holds more than its size); held compressed, a file costs its size plus the one metric a
    caller works on.  The reader decodes each member once to check it, so decoding it again cannot fail.
    """

    __slots__ = ("source", "rows", "positions", "parent", "n_l", "nbytes")

    def __init__(self, source: Compressed, rows, positions, parent, n_l: int):
        self.source, self.rows, self.positions, self.parent, self.n_l = source, rows, positions, parent, n_l
        self.nbytes = 0  # of the nonzero rows decoded, set by the reader

    def load(self) -> StoredRows | None:
        data = self.source.values().reshape(self.rows.size, self.n_l)
        return rows_of(self.rows, data, self.positions, self.parent)

    def dense(self, shape: tuple[int, int]) -> np.ndarray:
        got = self.load()
        return np.zeros(shape, np.float64) if got is None else got.dense(shape)


def read_metric(raw, idx: TarMember, dat: TarMember, dtype: str, n_c: int, n_l: int, where: str, problems,
                 held: HeldBudget):
    """(row positions, data [rows, n_l] float64) of one metric; for a compressed member, decoded once here to
    check it, (row positions, :class:`Compressed`)."""
    ib = bytes(raw[idx.offset : idx.offset + idx.size])
    iwhere = f"{where}: index member at byte {idx.offset}"
    if ib[:11] != INDEX_MAGIC or len(ib) < 18:
        raise CubeFormatError(f"{iwhere}: does not start with {INDEX_MAGIC!r}")
    probe = ib[11:15]
    if probe == b"\x01\x00\x00\x00":
        e = "<"
    elif probe == b"\x00\x00\x00\x01":
        e = ">"
    else:
        raise CubeFormatError(f"{iwhere}: endianness probe at offset 11 is {probe!r}, expected 1 in either order")
    fmt = ib[17]
    if fmt == INDEX_SPARSE:
        if len(ib) < 22:
            raise CubeFormatError(f"{iwhere}: sparse index without a row count (18-byte header only)")
        (count,) = struct.unpack(e + "I", ib[18:22])
        if len(ib) < 22 + 4 * count:
            raise CubeFormatError(f"{iwhere}: claims {count} rows but holds {(len(ib) - 22) // 4}")
        if count > n_c:  # each cnode has one row at most
            raise CubeFormatError(f"{iwhere}: claims {count} rows but the call tree has {n_c} cnodes")
        rows = np.frombuffer(ib, e + "u4", count, 22).astype(np.int64)
        if count and rows.max() >= n_c:
            raise CubeFormatError(f"{iwhere}: row position {rows.max()} but the call tree has {n_c} cnodes")
        if np.any(np.diff(rows) <= 0):
            problems.append(f"{where}: index positions not strictly ascending (cubelib would read zeros)")
    elif fmt == INDEX_DENSE:
        rows = np.arange(n_c, dtype=np.int64)
    elif fmt == INDEX_NONE:
        rows = np.zeros(0, np.int64)
    else:
        raise CubeFormatError(f"{iwhere}: unsupported index format {fmt} at offset 17 (1 sparse, 3 dense)")
    db = bytes(raw[dat.offset : dat.offset + dat.size])
    dwhere = f"{where}: data member at byte {dat.offset}"
    np_dtype = np.dtype(e + dtype)
    need = rows.size * n_l
    if db.startswith(ZDATA_MAGIC):
        # what the index lists, and all compressed members together as much as a gzip'ed archive may inflate
        if held.inflate_left <= 0:
            raise CubeFormatError(f"{dwhere}: the compressed members before it inflate to more than a file of "
                                  f"{held.file_bytes} bytes may hold (a decompression bomb?)")
        cap = min(need * np_dtype.itemsize + (1 << 20), held.inflate_left)
        payload = _inflate(db, e, dwhere, cap)
        held.inflate_left -= len(payload)
        source = Compressed(db, np_dtype, e, cap, need)
    elif db.startswith(DATA_MAGIC):
        payload = db[len(DATA_MAGIC) :]
    else:
        raise CubeFormatError(f"{dwhere}: does not start with {DATA_MAGIC!r} or {ZDATA_MAGIC!r}")
    have = len(payload) // np_dtype.itemsize
    if have < need:
        raise CubeFormatError(
            f"{dwhere}: holds {have} values of {np_dtype.itemsize} bytes, but {rows.size} rows x {n_l} locations "
            f"= {need} are needed"
        )
    if have > need:
        problems.append(f"{dwhere}: {have - need} values more than the index lists; ignored (as cubelib does)")
    if db.startswith(ZDATA_MAGIC):
        return rows, source
    data = np.frombuffer(payload, np_dtype, need).astype(np.float64, copy=False).reshape(rows.size, n_l)
    return rows, data


def _inflate(db: bytes, e: str, where: str, cap: int) -> bytes:
    """Compressed data: count K, K (row start, block start, block size) triples, K zlib streams, inflated to
    at most ``cap`` bytes in all."""
    start = len(ZDATA_MAGIC)
    try:
        (k,) = struct.unpack(e + "Q", db[start : start + 8])
        if 24 * k > len(db) - start - 8:  # checked before the table is unpacked
            raise struct.error
        table = struct.unpack(e + "Q" * (3 * k), db[start + 8 : start + 8 + 24 * k])
    except struct.error:
        raise CubeFormatError(f"{where}: compressed data header is truncated") from None
    pos = start + 8 + 24 * k
    parts = []
    for i in range(k):
        size = table[3 * i + 2]
        if size == 0:  # an empty block holds no rows
            continue
        # blocks follow the table back to back (pycubexr reads them the same way)
        try:
            parts.append(inflate(db[pos : pos + size], cap, gzip=False))
        except InflateError as err:
            raise CubeFormatError(f"{where}: compressed block {i} at byte {pos}: {err}") from None
        cap -= len(parts[-1])
        pos += size
    return b"".join(parts)


