"""CUBE4 ``.cubex`` writer: :func:`write_cubex` and :func:`cubex_bytes`.

A ``.cubex`` file is an uncompressed tar archive holding ``anchor.xml`` (all
metadata) and, per metric, ``<id>.index`` (which call-tree rows are stored)
and ``<id>.data`` (those rows, one value per location).  The facts and traps
this module follows are collected in ``shared/reference/cube-format.md``;
``docs/cube.md`` says what we write.  In short, cubelib (CubeGUI) and
pycubexr both open our files because the writer:

* writes a USTAR tar with fixed mtime/owner (identical cubes give identical
  bytes) and never a member whose size is a positive multiple of 512
  (cubelib's tar reader mis-steps after such a member and silently loses
  the rest of the archive);
* writes the XML prolog and ``<cube version="4.4">`` literally (cubelib's
  parser matches them byte for byte), double-quoted attributes, ``id`` on
  metric/region/cnode and ``Id`` on system-tree elements;
* numbers cnodes densely in depth-first pre-order under one root, and
  system-tree nodes, location groups and locations densely;
* stores every metric as ``EXCLUSIVE`` (values exclusive along the call
  tree) with a sparse little-endian index of ascending row positions and at
  least one row.

:mod:`.cubex_check` checks these invariants on a file, :mod:`.cubex_read`
reads CUBE4 files of any producer.
"""

from __future__ import annotations

import io
import os
import re
import struct
from pathlib import Path

import numpy as np

from tracefmt.names import escape_bytes

from .dimensions import absent_locations
from .model import Cube, CubeError, MetricInfo
from .tar import DATA_MAGIC, INDEX_MAGIC, INDEX_SPARSE, TAR_BLOCK, write_tar

XML_PROLOG = '<?xml version="1.0" encoding="UTF-8"?>\n'
CUBE_START = '<cube version="4.4">'
CREATOR = "expert-analyze"

# --------------------------------------------------------------------------
# XML text helpers
# --------------------------------------------------------------------------
# XML 1.0 forbids most control characters even when escaped; names taken
# from traces may contain them, so they are replaced.
_BAD_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _esc(text) -> str:
    """Element text: markup escaped; a carriage return as ``&#13;`` (a parser turns a literal one into a
    newline); bytes that were not UTF-8 as ``\\xNN`` (:func:`tracefmt.names.escape_bytes`)."""
    s = _BAD_XML_CHARS.sub("\ufffd", escape_bytes(str(text)))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return s.replace("\r", "&#13;")


def _attr(text) -> str:
    """An attribute value: as :func:`_esc`, and newlines and tabs as references (a parser makes them spaces)."""
    return _esc(text).replace("\n", "&#10;").replace("\t", "&#9;")


def write_cubex(cube: Cube, path) -> None:
    """Write ``cube`` as a CUBE4 file that cubelib/CubeGUI and pycubexr open.

    The name must end in ``.cubex``: cubelib strips and re-appends that
    suffix, so any other name cannot be opened there.  The file is written
    to a temporary name and renamed, so a reader never sees half a file.
    """
    path = Path(path)
    if path.suffix != ".cubex":
        raise CubeError(f"{path}: a CUBE4 file name must end in .cubex (cubelib cannot open other names)")
    roots = cube.roots()
    if len(roots) != 1:
        raise CubeError(
            f"{path}: the cube has {len(roots)} root cnodes; CUBE readers (pycubexr) need exactly one"
        )
    members = _build_members(cube)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            write_tar(f, members)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def cubex_bytes(cube: Cube) -> bytes:
    """The bytes :func:`write_cubex` would write (for tests and in-memory use)."""
    buf = io.BytesIO()
    write_tar(buf, _build_members(cube))
    return buf.getvalue()


def _metric_order(cube: Cube) -> list[int]:
    """Metric indices in depth-first pre-order (= CUBE metric ids)."""
    kids: dict[str | None, list[int]] = {}
    for i, m in enumerate(cube.metrics):
        kids.setdefault(m.parent, []).append(i)
    order: list[int] = []
    stack = list(reversed(kids.get(None, [])))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(kids.get(cube.metrics[i].name, [])))
    return order


def _build_members(cube: Cube) -> list[tuple[str, bytes]]:
    dfs = np.asarray(cube.dfs_order(), dtype=np.int64)  # new id -> old cnode
    new_id = np.empty_like(dfs)
    new_id[dfs] = np.arange(dfs.size)
    metric_order = _metric_order(cube)
    anchor = _anchor_xml(cube, dfs, new_id, metric_order).encode("utf-8")
    if len(anchor) % TAR_BLOCK == 0:
        anchor += b"\n"  # cubelib's tar reader mis-steps after a member of 512*k bytes
    members = [("anchor.xml", anchor)]
    for mid, mi in enumerate(metric_order):
        m = cube.metrics[mi]
        vals = cube.values[m.name][dfs]  # rows in DFS order = EXCLUSIVE row positions
        rows = np.flatnonzero(np.any(vals != 0, axis=1))
        if rows.size == 0:
            rows = np.zeros(1, np.int64)  # pycubexr rejects empty indexes: store the root's zeros
        index = INDEX_MAGIC + struct.pack("<IHBI", 1, 0, INDEX_SPARSE, rows.size) + rows.astype("<u4").tobytes()
        payload = vals[rows]
        if m.dtype == "INTEGER" and m.aggregation == "sum":
            ints = np.rint(payload)
            if ints.size and (ints.min() < 0 or ints.max() >= 2.0**64):
                c, loc = np.argwhere((ints < 0) | (ints >= 2.0**64))[0]
                raise CubeError(
                    f"metric {m.name!r} (INTEGER, written as UINT64): value {float(payload[c, loc])!r} at "
                    f"call path {cube.callpath(int(dfs[rows[c]]))!r}, location {loc} is out of range"
                )
            data = DATA_MAGIC + ints.astype("<u8").tobytes()
        else:
            data = DATA_MAGIC + payload.astype("<f8").tobytes()
        members.append((f"{mid}.index", index))
        members.append((f"{mid}.data", data))
    return members


def _cube_dtype(m: MetricInfo) -> str:
    if m.aggregation == "min":
        return "MINDOUBLE"
    if m.aggregation == "max":
        return "MAXDOUBLE"
    return "UINT64" if m.dtype == "INTEGER" else "DOUBLE"


#: nesting levels indented in anchor.xml; deeper call trees stay at this indentation, so the file grows
#: linearly with the depth of the call tree (a trace nested 20,000 calls deep wrote 400 MB of spaces)
MAX_INDENT = 40


def _indent(level: int) -> str:
    return "  " * min(level, MAX_INDENT)


def _anchor_xml(cube: Cube, dfs: np.ndarray, new_id: np.ndarray, metric_order: list[int]) -> str:
    out: list[str] = [XML_PROLOG, CUBE_START, "\n"]
    attrs = {"Creator": CREATOR, "CUBE_CT_AGGR": "SUM"}
    attrs.update(cube.attrs)
    for k, v in attrs.items():
        out.append(f'  <attr key="{_attr(k)}" value="{_attr(v)}"/>\n')

    # metrics: nested, ids in DFS pre-order
    out.append("  <metrics>\n")
    mid = {mi: i for i, mi in enumerate(metric_order)}
    open_stack: list[str] = []  # names of the open <metric> elements
    for mi in metric_order:
        m = cube.metrics[mi]
        while open_stack and open_stack[-1] != m.parent:
            open_stack.pop()
            out.append("  " * (len(open_stack) + 2) + "</metric>\n")
        ind = "  " * (len(open_stack) + 2)
        out.append(f'{ind}<metric id="{mid[mi]}" type="EXCLUSIVE">\n')
        out.append(f"{ind}  <disp_name>{_esc(m.display_name)}</disp_name>\n")
        out.append(f"{ind}  <uniq_name>{_esc(m.name)}</uniq_name>\n")
        out.append(f"{ind}  <dtype>{_cube_dtype(m)}</dtype>\n")
        out.append(f"{ind}  <uom>{_esc(m.unit)}</uom>\n")
        out.append(f"{ind}  <url>{_esc(m.url)}</url>\n")
        out.append(f"{ind}  <descr>{_esc(m.description)}</descr>\n")
        if m.diagnosis:
            out.append(f'{ind}  <attr key="diagnosis" value="{_attr(m.diagnosis)}"/>\n')
        open_stack.append(m.name)
    while open_stack:
        open_stack.pop()
        out.append("  " * (len(open_stack) + 2) + "</metric>\n")
    out.append("  </metrics>\n")

    # program: regions, then the nested call tree
    out.append("  <program>\n")
    for rid, r in enumerate(cube.regions):
        out.append(
            f'    <region id="{rid}" mod="{_attr(r.file)}" begin="{int(r.begin_line)}" end="{int(r.end_line)}">\n'
            f"      <name>{_esc(r.name)}</name>\n"
            f"      <mangled_name>{_esc(r.name)}</mangled_name>\n"
            f"      <paradigm>{_esc(r.paradigm)}</paradigm>\n"
            f"      <role>{_esc(r.role)}</role>\n"
            f"      <url></url>\n"
            f"      <descr>{_esc(r.description)}</descr>\n"
            f"    </region>\n"
        )
    depth_stack: list[int] = []  # old ids of the open <cnode> elements
    for old in dfs.tolist():
        parent = int(cube.cnode_parent[old])
        while depth_stack and depth_stack[-1] != parent:
            depth_stack.pop()
            out.append(_indent(len(depth_stack) + 2) + "</cnode>\n")
        ind = _indent(len(depth_stack) + 2)
        extra = ""
        if cube.cnode_line[old] >= 0:
            extra += f' line="{int(cube.cnode_line[old])}"'
        if cube.cnode_file[old]:
            extra += f' mod="{_attr(cube.cnode_file[old])}"'
        out.append(f'{ind}<cnode id="{int(new_id[old])}"{extra} calleeId="{int(cube.cnode_region[old])}">\n')
        depth_stack.append(old)
    while depth_stack:
        depth_stack.pop()
        out.append(_indent(len(depth_stack) + 2) + "</cnode>\n")
    out.append("  </program>\n")

    out.append(_system_xml(cube))
    out.append("</cube>\n")
    return "".join(out)


def _system_xml(cube: Cube) -> str:
    """machine -> node -> process (location group) -> thread (location).

    One root system-tree node is required; with several machines a synthetic
    root of class ``system`` holds them.  Location ``Id`` = value column.
    """
    machines: dict[str, dict[str, dict[int, list[int]]]] = {}
    for i, loc in enumerate(cube.locations):
        machines.setdefault(loc.machine, {}).setdefault(loc.node, {}).setdefault(loc.rank, []).append(i)
    gone = absent_locations(cube.attrs)  # marked in their names too, for viewers that show no attributes
    out = ["  <system>\n"]
    stn_id = 0
    group_id = 0
    base = 2
    if len(machines) > 1:
        out.append('    <systemtreenode Id="0">\n      <name>system</name>\n      <class>system</class>\n')
        stn_id = 1
        base = 3
    for mname in machines:  # machines and nodes in order of first appearance
        ind = "  " * base
        out.append(f'{ind}<systemtreenode Id="{stn_id}">\n{ind}  <name>{_esc(mname)}</name>\n')
        out.append(f"{ind}  <class>machine</class>\n")
        stn_id += 1
        for nname in machines[mname]:
            ind2 = ind + "  "
            out.append(f'{ind2}<systemtreenode Id="{stn_id}">\n{ind2}  <name>{_esc(nname)}</name>\n')
            out.append(f"{ind2}  <class>node</class>\n")
            stn_id += 1
            for rank in sorted(machines[mname][nname]):
                locs = sorted(machines[mname][nname][rank], key=lambda i: cube.locations[i].thread)
                first = cube.locations[locs[0]]
                ind3 = ind2 + "  "
                out.append(
                    f'{ind3}<locationgroup Id="{group_id}">\n'
                    f"{ind3}  <name>{_esc(first.group_name)}</name>\n"
                    f"{ind3}  <rank>{int(rank)}</rank>\n"
                    f"{ind3}  <type>process</type>\n"
                )
                group_id += 1
                for i in locs:
                    loc = cube.locations[i]
                    out.append(
                        f'{ind3}  <location Id="{i}">\n'
                        f"{ind3}    <name>{_esc(loc.thread_name + (' (absent)' if loc.key in gone else ''))}</name>\n"
                        f"{ind3}    <rank>{int(loc.thread)}</rank>\n"
                        f"{ind3}    <type>thread</type>\n"
                        f"{ind3}  </location>\n"
                    )
                out.append(f"{ind3}</locationgroup>\n")
            out.append(f"{ind2}</systemtreenode>\n")
        out.append(f"{ind}</systemtreenode>\n")
    if len(machines) > 1:
        out.append("    </systemtreenode>\n")
    out.append("  </system>\n")
    return "".join(out)

