"""Where decoded event columns live: sized allocations and the per-thread chunk buffer.

Fresh memory is faulted in page by page on first touch, and on this
project's VMs that costs more than decoding the events
(docs/performance.md), so the reader (:mod:`tracefmt.reader`) takes the
columns of a location from :func:`new_columns` (one allocation, widest column
first; anonymous mappings populated by the mmap call, transparent huge pages
for large locations) and reads the raw records of each step into this
thread's reused :func:`chunk_buffer`.
"""

from __future__ import annotations

import mmap
import threading

import numpy as np

from . import layout
from .pages import huge_pages_pay

#: records decoded per step; small enough that the raw bytes of one step stay
#: in the CPU caches while they are checksummed and split into columns, large
#: enough that the per-step Python calls vanish (8192 x 40 bytes = 320 KiB)
CHUNK_RECORDS = 1 << 13
RECORD_WORDS = layout.EVENT_RECORD_SIZE // 8

#: sizes (bytes of one location's decoded columns) from which they get an
#: anonymous mapping of their own, populated in one call, and from which that
#: mapping asks for 2 MiB pages (see new_columns)
POPULATED_COLUMNS_BYTES = 256 << 10
HUGE_PAGE_COLUMNS_BYTES = 2 << 20
HUGE_PAGE = 2 << 20

#: the decoded columns of one location, laid out widest first in one
#: allocation so every column is aligned to its item size
COLUMNS = (
    ("time", np.dtype(np.float64)), ("ticks", np.dtype(np.uint64)), ("d", np.dtype(np.uint64)),
    ("e", np.dtype(np.uint64)), ("a", np.dtype(np.uint32)), ("b", np.dtype(np.uint32)),
    ("c", np.dtype(np.uint32)), ("type", np.dtype(np.uint8)), ("flags", np.dtype(np.uint8)),
)
BYTES_PER_EVENT = sum(dt.itemsize for _, dt in COLUMNS)

def new_columns(n: int) -> dict[str, np.ndarray]:
    """Uninitialised output columns for n events, laid out one after the other.

    Fresh memory is faulted in page by page on first touch, and on this
    project's VMs that costs more than decoding (docs/performance.md), so
    locations of some size get an anonymous mapping of their own instead of
    numpy's allocator: from ``POPULATED_COLUMNS_BYTES`` on, its pages are
    faulted in by the one mmap call (no trap per 4 KiB page); from
    ``HUGE_PAGE_COLUMNS_BYTES`` on, its whole 2 MiB pieces ask for
    transparent huge pages instead, where those pay (:mod:`tracefmt.pages`;
    else they are faulted in as used).  The mapping is returned to the system
    when the last of the location's columns is dropped.  Small locations, and
    platforms without anonymous mappings, get plain arrays.
    """
    total = n * BYTES_PER_EVENT
    buf, pos = anonymous_mapping(total) if total >= POPULATED_COLUMNS_BYTES else (None, 0)
    if buf is None:
        return {name: np.empty(n, dt) for name, dt in COLUMNS}
    cols = {}
    for name, dt in COLUMNS:
        cols[name] = np.frombuffer(buf, dt, n, pos)
        pos += n * dt.itemsize
    return cols


def anonymous_mapping(total: int) -> tuple[mmap.mmap | None, int]:
    """(a private anonymous mapping, the offset where `total` bytes of columns start), or (None, 0)."""
    if not hasattr(mmap, "MAP_ANONYMOUS"):
        return None, 0
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    try:
        if total < HUGE_PAGE_COLUMNS_BYTES:
            return mmap.mmap(-1, total, flags=flags | getattr(mmap, "MAP_POPULATE", 0)), 0
        buf = mmap.mmap(-1, total + HUGE_PAGE, flags=flags)
    except (OSError, ValueError, TypeError):
        return None, 0
    # start at a 2 MiB boundary (the address space before it is never touched,
    # so never resident); the last partial piece keeps small pages, so nothing
    # beyond the columns becomes resident
    start = -np.frombuffer(buf, np.uint8, 1).ctypes.data % HUGE_PAGE
    whole = total - total % HUGE_PAGE
    if hasattr(mmap, "MADV_HUGEPAGE") and huge_pages_pay():  # not on guests that report free pages (tracefmt.pages)
        try:
            buf.madvise(mmap.MADV_HUGEPAGE, start, whole)
        except OSError:  # kernel without transparent huge pages: small pages, still correct
            pass
    return buf, start


_scratch = threading.local()


def chunk_buffer() -> np.ndarray:
    """This thread's buffer for the raw records of one step, as (records, 5) 64-bit words.

    Reused for every step and every location, so it stays in the CPU caches
    and its pages are faulted in once per thread, not once per location; the
    same bytes are seen as words (kernel), records (numpy path) and bytes
    (checksum).  One per thread because threads may decode locations of the
    same trace at the same time.
    """
    words = getattr(_scratch, "words", None)
    if words is None or words.shape[0] != CHUNK_RECORDS:
        words = _scratch.words = np.empty((CHUNK_RECORDS, RECORD_WORDS), np.uint64)
    return words
