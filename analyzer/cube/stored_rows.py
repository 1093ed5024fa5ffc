"""Cube values held as the rows a file stores, made dense one metric at a time.

A CUBE file stores, per metric, only some call-path rows (a sparse index), and
a file a few kB long can declare ten thousand call paths, a thousand locations
and a hundred metrics: dense ``[cnodes x locations]`` arrays for every metric
would cost gigabytes the file never held.  The readers therefore keep each
metric as its nonzero rows (:class:`StoredRows`), and :class:`RowValues`, the
cube's ``values`` mapping, builds a metric's dense array when it is asked for
and keeps only the last one built (callers ask for one metric several times in
a row): the memory held is what the file holds, plus one dense metric.  A metric stored compressed is held as
its compressed member and decoded on each access (:class:`analyzer.cube.cubex_data.CompressedRows`), so a file
whose values deflate many times costs its size too.  The dense array is read-only, because a
change to it would be lost; a caller that needs to change values assigns a new
array (``cube.values[name] = arr``), which is then kept.
"""

from __future__ import annotations

import numpy as np

from .model import CubeFormatError, CubeValues


class StoredRows:
    """One metric's nonzero rows: ``rows`` (cnode ids, ascending, unique) and ``data`` [rows, locations]."""

    __slots__ = ("rows", "data")

    def __init__(self, rows: np.ndarray, data: np.ndarray):
        self.rows, self.data = rows, data

    @classmethod
    def nonzero(cls, rows: np.ndarray, data: np.ndarray) -> "StoredRows | None":
        """The rows of ``data`` (row ``i`` belongs to cnode ``rows[i]``) that hold a nonzero value, summed
        where a cnode repeats; None when no value is nonzero."""
        keep = np.flatnonzero(np.any(data != 0, axis=1))
        if keep.size == 0:
            return None
        if keep.size < rows.size:  # else the rows as they are (data may be a read-only view of what was read)
            rows, data = rows[keep], data[keep]
        if rows.size > 1 and np.any(np.diff(rows) <= 0):  # unsorted or repeated positions
            uniq, inv = np.unique(rows, return_inverse=True)
            summed = np.zeros((uniq.size, data.shape[1]), np.float64)
            np.add.at(summed, inv, data)
            rows, data = uniq, summed
        return cls(rows, data)

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes + self.data.nbytes)

    def minus_children(self, parent: np.ndarray) -> "StoredRows | None":
        """Inclusive rows turned exclusive: each cnode's value minus its children's (float64), over the rows
        that can be nonzero (the stored ones and their parents), never the whole call tree."""
        par = parent[self.rows]
        has = par >= 0
        rows = np.union1d(self.rows, par[has])
        out = np.zeros((rows.size, self.data.shape[1]), np.float64)
        out[np.searchsorted(rows, self.rows)] += self.data
        np.subtract.at(out, np.searchsorted(rows, par[has]), self.data[has])
        return StoredRows.nonzero(rows, out)

    def dense(self, shape: tuple[int, int]) -> np.ndarray:
        a = np.zeros(shape, np.float64)
        a[self.rows] = self.data
        return a


class RowValues(CubeValues):
    """``metric name -> float64 [n_cnodes, n_locations]`` over :class:`StoredRows`; see the module docstring."""

    def __init__(self, stored: dict[str, StoredRows], metric_names, shape: tuple[int, int]):
        super().__init__({}, metric_names, shape)
        self.names = frozenset(metric_names)
        self.stored = dict(stored)
        self.shape = shape
        self._last: tuple = (None, None)  # the dense array built last: (metric name, array)

    def __missing__(self, name):
        held = self.stored.get(name)
        if held is None:
            return super().__missing__(name)
        if self._last[0] != name:  # callers ask for one metric several times in a row (total, per location...)
            self._last = (None, None)  # the previous array goes before the next is built
            a = held.dense(self.shape)
            a.flags.writeable = False
            self._last = (name, a)
        return self._last[1]

    def __setitem__(self, name, value):
        self.stored.pop(name, None)
        self._last = (None, None)
        super().__setitem__(name, value)

    def __delitem__(self, name):
        self._last = (None, None)
        if self.stored.pop(name, None) is None:
            super().__delitem__(name)
        else:
            super().pop(name, None)

    def __contains__(self, name):
        return super().__contains__(name) or name in self.stored

    def __iter__(self):
        own = list(dict.__iter__(self))
        yield from own
        yield from (n for n in self.stored if not dict.__contains__(self, n))

    def __len__(self):
        return len(list(iter(self)))

    def __bool__(self):
        return len(self) > 0

    def keys(self):
        return list(iter(self))

    def items(self):
        return ((n, self[n]) for n in self.keys())

    def values(self):
        return (self[n] for n in self.keys())

    def get(self, name, default=None):
        return self[name] if name in self else default

    def pop(self, name, *default):
        if name in self:
            value = self[name]
            del self[name]
            return value
        if default:
            return default[0]
        raise KeyError(name)

    def copy(self):
        out = RowValues(self.stored, self.names, self.shape)
        for n in super().__iter__():
            dict.__setitem__(out, n, dict.__getitem__(self, n))
        return out

    def __reduce__(self):  # pickle/deepcopy: the rows, not dense arrays
        return (_rebuild, (self.stored, sorted(self.names), self.shape, dict(super().items())))


def _rebuild(stored, names, shape, dense):
    out = RowValues(stored, names, shape)
    for n, a in dense.items():
        dict.__setitem__(out, n, a)
    return out


#: the readers hold each metric as its nonzero rows and build a dense [cnodes x locations] array only while a
#: caller works on that metric: one such array may take ONE_METRIC_RATIO times the file's size or
#: ONE_METRIC_FLOOR bytes, whichever is more (a real cube stores most rows of its time metric, so its dense
#: metric is about the size of the file)
ONE_METRIC_RATIO = 4
ONE_METRIC_FLOOR = 16 << 20
#: the nonzero rows of all metrics together: HELD_RATIO times the file's size or HELD_FLOOR bytes (only
#: compressed data can hold more than the file; measured values deflate about 2 times); compressed ones are held
#: as their members and count here as what every pass over the metrics decodes again
HELD_RATIO = 8
HELD_FLOOR = 16 << 20
#: HDF5 cubes hold every metric dense: DENSE_BYTES_RATIO times the file's size or DENSE_BYTES_FLOOR; the same
#: bound applies to the CUBE readers' metrics with data together, as work: a caller's pass over the metrics
#: builds each dense in turn
DENSE_BYTES_RATIO = 64
DENSE_BYTES_FLOOR = 1 << 31


def check_dense_size(path, n_c: int, n_l: int, n_metrics: int, file_bytes: int) -> None:
    need = 8 * n_c * n_l * n_metrics
    limit = max(DENSE_BYTES_FLOOR, DENSE_BYTES_RATIO * file_bytes)
    if need > limit:
        raise CubeFormatError(f"{path}: {n_c} call paths x {n_l} locations x {n_metrics} metrics need "
                              f"{need / 2**30:.1f} GiB as dense values, more than this reader holds for a file of "
                              f"{file_bytes} bytes ({limit / 2**30:.1f} GiB)")


INFLATE_RATIO = 64
INFLATE_FLOOR = 64 << 20


class HeldBudget:
    """What the nonzero rows of all metrics may take (HELD_RATIO, HELD_FLOOR), and what their compressed
    members may inflate to (INFLATE_RATIO, INFLATE_FLOOR)."""

    def __init__(self, path, file_bytes: int):
        self.path, self.file_bytes = path, file_bytes
        self.left = max(HELD_FLOOR, HELD_RATIO * file_bytes)
        #: what compressed data members may inflate to, all together (as a gzip'ed archive: 64 x + 64 MiB)
        self.inflate_left = max(INFLATE_FLOOR, INFLATE_RATIO * file_bytes)

    def take(self, rows: StoredRows, metric: str) -> None:
        self.left -= rows.nbytes
        if self.left < 0:
            raise CubeFormatError(f"{self.path}: metric {metric!r}: the nonzero values read so far pass "
                                  f"{max(HELD_FLOOR, HELD_RATIO * self.file_bytes) >> 20} MiB, more than a file of "
                                  f"{self.file_bytes} bytes can hold (a decompression bomb?)")


def check_one_dense_metric(where, n_c: int, n_l: int, file_bytes: int, ratio: int, floor: int) -> None:
    """A dense metric ``n_c x n_l`` (what :class:`RowValues` builds on access) within ``ratio`` times the
    file's size or ``floor`` bytes."""
    need = 8 * n_c * n_l
    limit = max(floor, ratio * file_bytes)
    if need > limit:
        raise CubeFormatError(f"{where}: {n_c} call paths x {n_l} locations need {need / 2**20:.0f} MiB per metric "
                              f"as dense values, more than this reader holds for a file of {file_bytes} bytes "
                              f"({limit / 2**20:.0f} MiB)")
