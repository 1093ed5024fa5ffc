"""Arrays kept on disk and mapped into memory (``np.memmap``): how ``--memory`` holds every share's data at once.

The root-cause analysis by shares (``share_root_cause``) runs its replays in rounds, every share a little
further each round: under ``--mpi`` each rank holds its share, but under ``--memory`` one process holds all
of them, which is what the limit forbids.  :class:`MappedStore` moves the large arrays of a share's data into
files of the spill folder and puts mapped views of them in their place; the replays then read and write
them as before (numba takes a ``np.memmap`` as an array), the operating system brings in the pages a round
touches, and :meth:`MappedStore.trim` hands pages back after a share's step when the next step could pass
the budget (``madvise(DONTNEED)``: their contents stay in the files and the page cache; the next touch maps
them again), so what stays resident is within the limit, not every share's data.
"""

from __future__ import annotations

import collections
import dataclasses
import mmap
import os
import weakref

import numpy as np

__all__ = ["MappedStore", "MIN_BYTES", "bound_heap", "resident_bytes"]

#: arrays smaller than this stay in memory (each mapped array is a file and a mapping)
MIN_BYTES = 1 << 16


class MappedStore:
    """Large arrays moved into files under ``directory`` and mapped back.  ``min_bytes``: smaller arrays stay
    in memory (default :data:`MIN_BYTES`)."""

    def __init__(self, directory: str, min_bytes: int | None = None, budget: int | None = None):
        self.directory = directory
        self.min_bytes = MIN_BYTES if min_bytes is None else int(min_bytes)
        self.budget = budget  # resident bytes a step may reach before trim() releases every mapping (None: always)
        self._steps: collections.deque = collections.deque()  # what the recent steps added to the resident bytes
        self._keys: set = set()  # the shares seen in trim()
        self._key_bytes: dict = {}  # bytes mapped per share
        self._stepped: set = set()  # the shares stepped since the stage began
        self._after = None  # resident bytes when trim() last returned
        self._maps: list = []  # weak references to every mapping made
        self.mapped_bytes = 0  # written to the files
        self._n = 0
        self._roots: dict[int, tuple] = {}  # id of a mapped array -> (weak reference to it, its mapped copy)
        os.makedirs(directory, exist_ok=True)

    def array(self, a: np.ndarray, key=None) -> np.ndarray:
        """``a`` as a mapped array (a copy in a new file), or ``a`` itself if small or already mapped.  A view of
        another array becomes the same view of that array's mapped copy (columns of a packed array stay
        columns of it: written through one, read through the other).  ``key``: whose data it is (a share), for
        :meth:`trim`."""
        if isinstance(a, np.memmap) or _mapped_base(a) is not None or a.dtype.hasobject:
            return a
        got = self._roots.get(id(a))
        if got is not None and got[0]() is a:
            return got[1]
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        if root is not a and root.flags.c_contiguous:
            mapped = self.array(root, key)
            if not isinstance(mapped, np.memmap):
                return a
            offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            return np.ndarray(a.shape, a.dtype, buffer=mapped, offset=offset, strides=a.strides)
        if a.nbytes < self.min_bytes:
            return a
        c = np.ascontiguousarray(a)
        path = os.path.join(self.directory, f"array{self._n}.bin")
        self._n += 1
        c.tofile(path)
        self.mapped_bytes += c.nbytes
        self._key_bytes[key] = self._key_bytes.get(key, 0) + c.nbytes
        mapped = np.memmap(path, dtype=c.dtype, mode="r+", shape=c.shape)
        if getattr(mapped, "_mmap", None) is not None:
            self._maps.append((key, weakref.ref(mapped._mmap)))
        # a later view of it maps onto this copy; weakly held: the original goes once nothing else holds it
        self._roots[id(a)] = (weakref.ref(a), mapped)
        return mapped

    def empty(self, shape, dtype=np.float64, fill=None, key=None) -> np.ndarray:
        """A new mapped array (zeros, or ``fill``), for data a replay writes as it goes."""
        a = np.zeros(shape, dtype)
        if fill is not None:
            a[...] = fill
        return self.array(a, key) if a.nbytes >= self.min_bytes else a

    def map(self, obj, skip=("trace",), key=None):
        """``obj`` with every large array in it mapped: dicts, lists and objects changed in place, tuples
        (named ones too) and dataclasses without a ``__dict__`` rebuilt; returns the object to use.  Keys and
        attributes named in ``skip`` are left as they are (a context's trace reader).  ``key``: as for
        :meth:`array`."""
        return self._map(obj, set(), frozenset(skip), key)

    def _map(self, obj, seen: set, skip, key=None):
        if isinstance(obj, np.ndarray):
            return self.array(obj, key)
        if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool, np.generic)):
            return obj
        seen.add(id(obj))
        if isinstance(obj, dict):
            for k in list(obj):
                if k not in skip:
                    obj[k] = self._map(obj[k], seen, skip, key)
            return obj
        if isinstance(obj, list):
            obj[:] = [self._map(x, seen, skip, key) for x in obj]
            return obj
        if isinstance(obj, tuple):
            items = [self._map(x, seen, skip, key) for x in obj]
            return obj._make(items) if hasattr(obj, "_fields") else type(obj)(items)
        if hasattr(obj, "__dict__") and not isinstance(obj, type):
            for k, v in list(vars(obj).items()):
                if k not in skip:
                    setattr(obj, k, self._map(v, seen, skip, key))
            return obj
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return dataclasses.replace(obj, **{f.name: self._map(getattr(obj, f.name), seen, skip, key)
                                               for f in dataclasses.fields(obj) if f.name not in skip})
        return obj

    @property
    def growth(self) -> int:
        """What the next step is expected to add to the resident bytes: the most one of the last two rounds' steps
        (two per share) added, and while some share has not stepped in this stage, all it has mapped (a first
        round's steps differ the most: a share that waits early touches little, one after it may touch all of
        its data; measured at 10^8 events, 180 MiB more than the steps before it).  Not the stage's maximum: a
        round's first steps fault in much of each share's data, later ones little, and keeping room for the
        first steps' growth released pages round after round."""
        unseen = [n for k, n in self._key_bytes.items() if k is not None and k not in self._stepped]
        return max(max(self._steps, default=0), max(unseen, default=0))

    def new_stage(self) -> int:
        """Before a stage whose steps grow the process by an amount not known yet: every mapping released, so its
        first step starts without any share's pages, and the growth measured afresh (a stage's rounds grow a
        share by far less than the stage that built its data); returns how many mappings were released."""
        self._steps.clear()
        self._stepped.clear()
        return self.release_all()

    def release_all(self) -> int:
        """Release the pages of every mapping now; returns how many were released."""
        n = self._release_mappings(None)
        self._after = resident_bytes()
        return n

    def trim(self, key=None) -> int:
        """Called after each step (of the share ``key``): if this process's resident memory plus what the next
        step is expected to add (:attr:`growth`) would pass the budget (or there is none), release the pages of
        the mappings made for ``key``, and if that is not enough of every mapping (their contents stay in the
        files and the page cache); returns how many were released.  The rounds step the shares in turn, so the
        share just stepped is the one needed last: releasing it first keeps the other shares' pages for their
        steps (releasing every share each time faulted all of them back in, round after round).  Releasing
        only when the next step could pass the budget keeps the page faults and system calls few, and counting
        a step's growth keeps its peak, not only its end, within the budget (the steps met before are the
        guide, not a bound)."""
        now = resident_bytes()
        self._stepped.add(key)
        if self._after is not None:
            self._steps.append(now - self._after)
            self._keys.add(key)
            while len(self._steps) > 2 * len(self._keys):
                self._steps.popleft()
        n = 0
        if key is not None and (self.budget is None or now + self.growth > self.budget):
            n = self._release_mappings(key)
            now = resident_bytes()
        if self.budget is None or now + self.growth > self.budget:
            return self.release_all()  # every mapping, the key's among them
        self._after = now
        return n

    def _release_mappings(self, key) -> int:
        """``madvise(DONTNEED)`` on the live mappings made for ``key`` (None: all); forgets the closed ones."""
        n = 0
        live = []
        for k, ref in self._maps:
            m = ref()
            if m is None or m.closed:
                continue
            live.append((k, ref))
            if key is None or k == key:
                m.madvise(mmap.MADV_DONTNEED)
                n += 1
        self._maps = live
        return n


def _mapped_base(a: np.ndarray):
    """The mapped array ``a`` is a view of, or None."""
    b = a.base
    while b is not None:
        if isinstance(b, np.memmap):
            return b
        b = getattr(b, "base", None)
    return None


_STATM: list = []  # /proc/self/statm, opened once: the rounds ask after every step


def resident_bytes() -> int:
    """This process's resident memory now (``/proc/self/statm``), 0 where it cannot be read."""
    try:
        if not _STATM:
            _STATM.append(os.open("/proc/self/statm", os.O_RDONLY))
        return int(os.pread(_STATM[0], 128, 0).split()[1]) * mmap.PAGESIZE
    except (OSError, ValueError, IndexError):
        return 0


def bound_heap() -> bool:
    """Make glibc's malloc give large freed blocks back at once (arrays of 256 KiB and more mapped on their own,
    the heap's free top trimmed above 1 MiB), so the memory a share's step frees leaves the process instead of
    staying in the heap for the next share (by default the mmap threshold grows to 32 MiB as arrays are freed:
    measured under --memory, 390 MB of the process were such freed heap against 235 MB with this).  False
    where there is no glibc."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_mmap_threshold, 256 << 10)) and bool(mallopt(m_trim_threshold, 1 << 20))

