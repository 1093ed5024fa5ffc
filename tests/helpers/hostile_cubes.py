"""A sane ``.cubex`` and hostile ones of about the same size, for the memory bound of the result tools
(issue 18, item 3): ``expert-report``, ``expert-diff`` and ``expert-check`` on a hostile file stay within
twice the memory of a sane file of the same size.

* ``sane``: our own kind of cube: a call tree of a few hundred call paths, 64 locations, every metric with a
  value in every cell (the file is mostly values);
* ``sane_compressed``: the same values stored as Scalasca's cubew writes compressed data (``ZCUBEX.DATA``, one
  zlib block per row at level 1): the hostile kinds that compress are compared with a sane cube of their kind;
* ``sane_calltree``: a file that is mostly its anchor, as a serial program's profile of a large C++ call tree
  (one location, two metrics, tens of thousands of call paths and regions): ``void_metrics`` is compared with it;
* ``many_sparse``: the file is mostly its anchor: as many call paths x locations as one dense metric may take
  (:data:`analyzer.cube.cubex_read.ONE_METRIC_FLOOR`), and as many metrics as fit, each storing one row (a
  reader that holds every metric dense needs metrics x call paths x locations x 8 bytes);
* ``zeros``: the same shape, every metric storing all its rows as zeros (a dense index);
* ``compressed``: the same shape, every metric's rows all 1.0 in one zlib block (about 1000 : 1);
* ``void_metrics``: a few call paths, and half the file locations, half metrics without values (no data
  members; at most 90 % of the metrics a reader takes from a file of its size, the rest locations): a summary
  holding a value per metric and location as a dict entry took 100 bytes each;
* ``tiny_regions``, ``tiny_metrics``, ``tiny_locations``: a small cube whose anchor is filled with the
  smallest elements of one kind (``<region id="N"/>``; a metric of a unique name and a data type, without
  values;
  ``<locationgroup><location Id="N"/></locationgroup>``, the system tree's only locations): what an element of
  the XML costs once parsed.

The cubes are built with row-stored values, so building one never holds more than one dense metric.
"""

from __future__ import annotations

import io
import struct
import tarfile
import zlib

import numpy as np

from analyzer.cube import Cube, LocationInfo, MetricInfo, RegionInfo, write_cubex
from analyzer.cube.cube_xml import max_metrics
from analyzer.cube.stored_rows import RowValues, StoredRows

KINDS = ("sane", "sane_compressed", "sane_calltree", "many_sparse", "zeros", "compressed", "void_metrics",
         "tiny_regions", "tiny_metrics", "tiny_locations")


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


def sane_cubex(path, target_bytes: int = 1 << 20, compressed: bool = False) -> int:
    """A cube with every cell set, about ``target_bytes`` long (``compressed``: its data members as cubew
    writes them compressed); returns its size."""
    n_c, n_l = 256, 64
    per_metric = n_c * n_l * 8
    if compressed:  # measured values deflate little: the size of one metric's member, compressed
        rows = np.random.default_rng(18).random((n_c, n_l)) + 1.0
        per_metric = len(_zrows(rows))
    n_m = max(1, target_bytes // per_metric)
    rng = np.random.default_rng(18)

    def rows_of(i):
        return StoredRows(np.arange(n_c), rng.random((n_c, n_l)) + 1.0 / (i + 1))

    cube = _cube(n_c, n_l, n_m, rows_of)
    if compressed:
        return compressed_cubex(cube, path)
    write_cubex(cube, path)
    return path.stat().st_size


def compressed_cubex(cube: Cube, path) -> int:
    """``cube`` written with its data members compressed as Scalasca's cubew writes them; returns the size."""
    write_cubex(cube, path)
    members = _members(path)
    for name in [n for n in members if n.endswith(".data")]:
        values = np.frombuffer(members[name], "<f8", offset=len(b"CUBEX.DATA")).reshape(-1, cube.n_locations)
        members[name] = b"ZCUBEX.DATA" + _zrows(values)
    path.write_bytes(_tar(members))
    return path.stat().st_size


def _zrows(values: np.ndarray) -> bytes:
    """Compressed data as cubew writes it: a block per row (zlib level 1), a (row start, block start, block
    size) triple each, then the blocks."""
    blocks = [zlib.compress(row.tobytes(), 1) for row in values]
    table, start = [], 0
    for i, b in enumerate(blocks):
        table += [i * values.shape[1] * 8, start, len(b)]
        start += len(b)
    return struct.pack(f"<Q{len(table)}Q", len(blocks), *table) + b"".join(blocks)


def _shape(target_bytes: int, metric_bytes: int) -> tuple[int, int]:
    """Call paths and locations with ``8 * n_c * n_l`` just within ``metric_bytes``."""
    n_l = 512
    return max(4, metric_bytes // (8 * n_l)), n_l


def hostile_cubex(path, kind: str, target_bytes: int = 1 << 20, metric_bytes: int = 16 << 20) -> int:
    """A hostile cube of ``kind`` (see the module docstring) about ``target_bytes`` long; returns its size."""
    if kind in ("sane", "sane_compressed"):
        return sane_cubex(path, target_bytes, compressed=kind == "sane_compressed")
    if kind == "sane_calltree":
        return _sane_calltree(path, target_bytes)
    if kind == "void_metrics":
        return _void_metrics(path, target_bytes)
    if kind.startswith("tiny_"):
        return _tiny_elements(path, kind, target_bytes)
    n_c, n_l = _shape(target_bytes, metric_bytes)
    block = None
    if kind != "many_sparse":  # one block for every metric (the same bytes)
        block = b"ZCUBEX.DATA" + _zblock(bytes(8 * n_c * n_l) if kind == "zeros" else np.ones(n_c * n_l).tobytes())
    # as many metrics as make the file about target_bytes long: the size of 4 metrics' file, and the size per
    # metric from a larger one (first 36 metrics, then the estimate: sizes grow in 10 kB tar records)
    m0, s0 = 4, _write_hostile(path, kind, n_c, n_l, 4, block)
    m1, size = 36, _write_hostile(path, kind, n_c, n_l, 36, block)
    for _ in range(2):
        n_m = max(2, m0 + round((target_bytes - s0) * (m1 - m0) / max(1, size - s0)))
        if n_m == m1:
            break
        m1, size = n_m, _write_hostile(path, kind, n_c, n_l, n_m, block)
    return size


def _sane_calltree(path, target_bytes: int) -> int:
    def write(n_c: int) -> int:
        rng = np.random.default_rng(18)
        parent = (rng.random(n_c) * np.arange(n_c)).astype(np.int64)  # a random tree, about 2.7 ln(n) deep
        parent[0] = -1
        n_r = max(2, n_c // 4)
        region = np.concatenate([[0], rng.integers(1, n_r, n_c - 1)])
        regions = [RegionInfo("main")] + [RegionInfo(f"app{j % 97}::Solver{j % 13}::step_{j}") for j in range(1, n_r)]
        metrics = [MetricInfo("time", "Time", None, "sec", "time"), MetricInfo("visits", "Visits", None, "occ", "visits")]
        cube = Cube(metrics, regions, parent, region, [LocationInfo("m", "n0", 0, 0)], strict=False)
        cube.values = RowValues({"time": StoredRows(np.arange(n_c), rng.random((n_c, 1)) + 1e-3),
                                 "visits": StoredRows(np.arange(n_c), rng.integers(1, 1000, (n_c, 1)).astype(float))},
                                ["time", "visits"], (n_c, 1))
        write_cubex(cube, path)
        return path.stat().st_size

    n0, s0 = 1000, write(1000)
    n_c, size = 10000, write(10000)
    n_c = max(2, n0 + round((target_bytes - s0) * (n_c - n0) / max(1, size - s0)))
    return write(n_c)


def _tiny_elements(path, kind: str, target_bytes: int) -> int:
    sane_cubex(path, 1)  # one metric over 256 call paths x 64 locations
    members = _members(path)
    anchor = members["anchor.xml"].decode()
    if kind == "tiny_regions":
        at, end, element = anchor.index("<region"), None, '<region id="{}"/>'
    elif kind == "tiny_metrics":
        at, end = anchor.index("</metrics>"), None
        element = '<metric id="{}"><uniq_name>m{}</uniq_name><dtype>DOUBLE</dtype></metric>'
    else:
        at, end = anchor.index("<system>") + len("<system>"), anchor.index("</system>")
        element = '<locationgroup><location Id="{}"/></locationgroup>'
    per = len(element.format(1_000_000, 1_000_000))
    n = max(1, (target_bytes - len(anchor)) // per)
    first = 10 if kind != "tiny_locations" else 0  # the cube's own ids stay
    filled = "".join(element.format(k + first, k) for k in range(n))
    if end is None:
        anchor = anchor[:at] + filled + anchor[at:]
    else:
        anchor = anchor[:at] + "<systemtreenode><name>m</name><class>machine</class>" + filled + \
                 "</systemtreenode>" + anchor[end:]
    members["anchor.xml"] = anchor.encode()
    path.write_bytes(_tar(members))
    return path.stat().st_size


def _void_metrics(path, target_bytes: int) -> int:
    def write(n_l: int, n_m: int) -> int:
        write_cubex(_cube(4, n_l, n_m, lambda i: StoredRows(np.array([3]), np.ones((1, n_l)))), path)
        members = _members(path)  # the time metric keeps its values, the others lose their members
        first = next(n for n in members if n.endswith(".index"))[: -len(".index")]
        path.write_bytes(_tar({n: d for n, d in members.items()
                               if not n.endswith((".index", ".data")) or n.startswith(first + ".")}))
        return path.stat().st_size

    base = write(100, 100)
    per_loc, per_metric = (write(1100, 100) - base) / 1000, (write(100, 1100) - base) / 1000
    half = max(0.0, target_bytes - base) / 2
    # the metrics a reader takes from a file of its size at most (max_metrics), the rest of the half locations
    n_m = min(100 + int(half / per_metric), int(0.9 * max_metrics(target_bytes)))
    rest = max(0.0, target_bytes - base - (n_m - 100) * per_metric)
    return write(100 + int(rest / per_loc), n_m)


def _write_hostile(path, kind: str, n_c: int, n_l: int, n_m: int, block: bytes | None) -> int:
    one = StoredRows(np.array([n_c - 1]), np.ones((1, n_l)))
    write_cubex(_cube(n_c, n_l, n_m, lambda i: one), path)
    if kind == "many_sparse":
        return path.stat().st_size
    members = _members(path)
    for name in [n for n in members if n.endswith(".index")]:
        members[name] = b"CUBEX.INDEX" + struct.pack("<IHB", 1, 0, 3)  # dense: every row stored
        members[name[: -len(".index")] + ".data"] = block
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
