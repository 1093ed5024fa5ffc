"""The whole cube as HDF5 (h5py), for large results and for tools outside Python.

Layout (``docs/cube.md``)::

    /                  attrs: format="expert-analyze-cube", version=1
    /attrs             attrs: the cube's key/value facts
    /metrics/<field>   1-d, one entry per metric in tree order: name, display_name, parent ("" = root),
                       unit, description, diagnosis, dtype, url, aggregation (strings)
    /regions/<field>   name, file, paradigm, role, description (strings); begin_line, end_line (int64)
    /calltree/<field>  parent, region, line (int64, -1 = none); file (strings)
    /locations/<field> machine, node, name, process_name (strings); rank, thread (int64)
    /values/<metric>/rows  int64 [n]: the cnodes (rows) with a non-zero value, ascending
    /values/<metric>/data  float64 [n, n_locations]: those rows, chunked and gzip-compressed
                       group attribute "metric" = the unique name ("/" in it is stored as %2F in
                       the group name); a metric without a group is all zero

Values have the cube's semantics (inclusive along the metric tree,
exclusive along the call tree).
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np

from . import cubex_read  # the one rule on how much dense value memory a file may ask for
from .model import Cube, CubeFormatError, LocationInfo, MetricInfo, RegionInfo
from .stored_rows import (ONE_METRIC_FLOOR, ONE_METRIC_RATIO, HeldBudget, RowValues, StoredRows,
                          check_one_dense_metric)

FORMAT = "expert-analyze-cube"
VERSION = 1


def _strings(group, name: str, items: list[str]):
    import h5py

    group.create_dataset(name, data=np.array(items, dtype=object), dtype=h5py.string_dtype("utf-8"))


def _dataset_name(metric: str) -> str:
    # HDF5 names cannot hold "/" (a path separator); the true name is kept in the "metric" attribute
    return metric.replace("%", "%25").replace("/", "%2F")


def write_hdf5(cube: Cube, path, compression: str | None = "gzip") -> None:
    import h5py

    with h5py.File(Path(path), "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["version"] = VERSION
        ga = f.create_group("attrs")
        for k, v in cube.attrs.items():
            ga.attrs[k] = v
        for gname, records, cls in (
            ("metrics", cube.metrics, MetricInfo),
            ("regions", cube.regions, RegionInfo),
            ("locations", cube.locations, LocationInfo),
        ):
            g = f.create_group(gname)
            for fld in fields(cls):
                col = [getattr(r, fld.name) for r in records]
                if fld.type in ("int", int):
                    g.create_dataset(fld.name, data=np.asarray(col, dtype=np.int64).reshape(len(col)))
                else:
                    _strings(g, fld.name, ["" if c is None else str(c) for c in col])
        gc = f.create_group("calltree")
        gc.create_dataset("parent", data=cube.cnode_parent)
        gc.create_dataset("region", data=cube.cnode_region)
        gc.create_dataset("line", data=cube.cnode_line)
        _strings(gc, "file", cube.cnode_file)
        gv = f.create_group("values")
        for m in cube.metrics:
            if m.name not in cube.values:  # a stored metric; missing ones read back as zeros
                continue
            vals = cube.values[m.name]
            rows = np.flatnonzero(np.any(vals != 0, axis=1))
            g = gv.create_group(_dataset_name(m.name))
            g.attrs["metric"] = m.name
            g.create_dataset("rows", data=rows.astype(np.int64))
            kw = {}
            if compression and rows.size:
                kw = {"chunks": True, "compression": compression, "shuffle": True}
                if compression == "gzip":
                    kw["compression_opts"] = 1  # level 1: nearly the same size, several times faster
            g.create_dataset("data", data=vals[rows], **kw)


def read_hdf5(path) -> Cube:
    """Read a cube written by :func:`write_hdf5`.

    Raises:
        CubeFormatError: naming the file and the missing or malformed dataset.
    """
    import h5py

    path = Path(path)
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise CubeFormatError(f"{path}: not an HDF5 file or unreadable: {e}") from None
    limit = max(cubex_read.DENSE_BYTES_FLOOR, cubex_read.DENSE_BYTES_RATIO * path.stat().st_size)

    def read(ds):
        """A dataset's values, if the file can justify their size (a declared shape costs no storage)."""
        need = int(ds.size) * ds.dtype.itemsize
        if need > limit:
            raise CubeFormatError(f"{path}: dataset {ds.name} declares {need} bytes, more than this reader holds "
                                  f"for a file of {path.stat().st_size} bytes")
        return ds[()]

    with f:
        if f.attrs.get("format") != FORMAT:
            raise CubeFormatError(f"{path}: HDF5 file without format={FORMAT!r}; not a cube written by us")
        try:
            records = {}
            for gname, cls in (("metrics", MetricInfo), ("regions", RegionInfo), ("locations", LocationInfo)):
                g = f[gname]
                cols = {}
                for fld in fields(cls):
                    ds = g[fld.name]
                    if fld.type in ("int", int):
                        cols[fld.name] = [int(x) for x in read(ds)]
                    else:
                        cols[fld.name] = [x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in read(ds)]
                n = len(next(iter(cols.values()))) if cols else 0
                records[gname] = [cls(**{k: v[i] for k, v in cols.items()}) for i in range(n)]
            parent = read(f["calltree/parent"])
            region = read(f["calltree/region"])
            line = read(f["calltree/line"])
            files = [x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in read(f["calltree/file"])]
            shape = (len(parent), len(records["locations"]))
            size = path.stat().st_size
            cubex_read.check_dense_size(path, shape[0], shape[1], len(f["values"]), size)
            check_one_dense_metric(path, shape[0], shape[1], size, ONE_METRIC_RATIO, ONE_METRIC_FLOOR)
            held = HeldBudget(path, size)  # the nonzero rows of all metrics: what the file can hold
            stored = {}
            for name, g in f["values"].items():
                metric = str(g.attrs.get("metric", name))
                if int(g["data"].size) * 8 > held.left:  # the writer stores nonzero rows only: no more than that
                    raise CubeFormatError(f"{path}: /values/{name}/data declares {int(g['data'].size) * 8} bytes, more "
                                          f"than a file of {size} bytes can hold (a decompression bomb?)")
                rows = np.asarray(read(g["rows"]), np.int64)
                data = np.asarray(read(g["data"]), np.float64)
                if rows.ndim != 1 or data.shape != (len(rows), shape[1]) or (len(rows) and (
                        rows.min() < 0 or rows.max() >= shape[0])):
                    raise CubeFormatError(f"{path}: /values/{name}: rows {rows.shape} and data {data.shape} do not "
                                          f"fit {shape[0]} call paths x {shape[1]} locations")
                got = StoredRows.nonzero(rows, data)
                if got is not None:
                    held.take(got, metric)
                    stored[metric] = got
            attrs = {k: str(v) for k, v in f["attrs"].attrs.items()}
        except KeyError as e:
            raise CubeFormatError(f"{path}: missing dataset or group: {e}") from None
    cube = Cube(
        records["metrics"],
        records["regions"],
        parent,
        region,
        records["locations"],
        {},
        attrs,
        cnode_line=line,
        cnode_file=files,
        strict=False,
    )
    # each metric held as its nonzero rows, made dense when asked for (stored_rows.py)
    cube.values = RowValues(stored, [m.name for m in records["metrics"]], (cube.n_cnodes, cube.n_locations))
    return cube
