"""A sane ``.cubex`` and hostile ones of about the same size, for the memory bound of the result tools
(issue 18, item 3): ``expert-report``, ``expert-diff`` and ``expert-check`` on a hostile file stay within
twice the memory of a sane file of the same size.

* ``sane``: our own kind of cube: a call tree of a few hundred call paths, 64 locations, every metric with a
  value in every cell (the file is mostly values);
* ``many_sparse``: the file is mostly its anchor: as many call paths x locations as one dense metric may take
  (:data:`analyzer.cube.cubex_read.ONE_METRIC_FLOOR`), and as many metrics as fit, each storing one row (a
  reader that holds every metric dense needs metrics x call paths x locations x 8 bytes);
* ``zeros``: the same shape, every metric storing all its rows as zeros (a dense index);
* ``compressed``: the same shape, every metric's rows all 1.0 in one zlib block (about 1000 : 1).

The cubes are built with row-stored values, so building one never holds more than one dense metric.
"""

from __future__ import annotations

import io
import struct
import tarfile
import zlib

import numpy as np

from analyzer.cube import Cube, LocationInfo, MetricInfo, RegionInfo, write_cubex
from analyzer.cube.stored_rows import RowValues, StoredRows

KINDS = ("sane", "many_sparse", "zeros", "compressed")


def _cube(n_c: int, n_l: int, n_m: int, rows_of) -> Cube:
    metrics = [MetricInfo("time", "Time", None, "sec", "time")]
    metrics += [MetricInfo(f"m{i}", f"M{i}", "time", "sec", "a metric") for i in range(1, n_m)]
    regions = [RegionInfo("main"), RegionInfo("work"), RegionInfo("MPI_Recv")]
    parent = np.zeros(n_c, np.int64)
    parent[0] = -1
    parent[2::3] = np.arange(1, n_c, 3)[: parent[2::3].size]  # a tree two and three levels deep
    region = np.ones(n_c, np.int64)
    region[0] = 0
    region[2::3] = 2
    locs = [LocationInfo("m", f"n{r // 16}", r, 0) for r in range(n_l)]
    cube = Cube(metrics, regions, parent, region, locs, strict=False)
    cube.values = RowValues({m.name: rows_of(i) for i, m in enumerate(metrics)}, [m.name for m in metrics],
                            (n_c, n_l))
    return cube


def sane_cubex(path, target_bytes: int = 1 << 20) -> int:
    """A cube with every cell set, about ``target_bytes`` long; returns its size."""
    n_c, n_l = 256, 64
    n_m = max(1, target_bytes // (n_c * n_l * 8))
    rng = np.random.default_rng(18)

    def rows_of(i):
        return StoredRows(np.arange(n_c), rng.random((n_c, n_l)) + 1.0 / (i + 1))

    write_cubex(_cube(n_c, n_l, n_m, rows_of), path)
    return path.stat().st_size


def _shape(target_bytes: int, metric_bytes: int) -> tuple[int, int]:
    """Call paths and locations with ``8 * n_c * n_l`` just within ``metric_bytes``."""
    n_l = 512
    return max(4, metric_bytes // (8 * n_l)), n_l


def hostile_cubex(path, kind: str, target_bytes: int = 1 << 20, metric_bytes: int = 16 << 20) -> int:
    """A hostile cube of ``kind`` (see the module docstring) about ``target_bytes`` long; returns its size."""
    if kind == "sane":
        return sane_cubex(path, target_bytes)
    n_c, n_l = _shape(target_bytes, metric_bytes)
    one = StoredRows(np.array([n_c - 1]), np.ones((1, n_l)))
    probe = _cube(n_c, n_l, 1, lambda i: one)
    write_cubex(probe, path)
    anchor_bytes = path.stat().st_size
    per_metric = 8 * n_l + 1600 if kind == "many_sparse" else 1600 + 8 * n_c * n_l // 1000
    n_m = max(2, (target_bytes - anchor_bytes) // per_metric)
    write_cubex(_cube(n_c, n_l, n_m, lambda i: one), path)
    if kind == "many_sparse":
        return path.stat().st_size
    members = _members(path)
    for name in [n for n in members if n.endswith(".index")]:
        members[name] = b"CUBEX.INDEX" + struct.pack("<IHB", 1, 0, 3)  # dense: every row stored
        data = name[: -len(".index")] + ".data"
        if kind == "zeros":
            members[data] = b"ZCUBEX.DATA" + _zblock(bytes(8 * n_c * n_l))
        else:
            members[data] = b"ZCUBEX.DATA" + _zblock(np.ones(n_c * n_l).tobytes())
    path.write_bytes(_tar(members))
    return path.stat().st_size


def _zblock(raw: bytes) -> bytes:
    block = zlib.compress(raw, 9)
    return struct.pack("<Q", 1) + struct.pack("<3Q", 0, 0, len(block)) + block


def _members(path) -> dict[str, bytes]:
    with tarfile.open(path) as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers()}


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()
