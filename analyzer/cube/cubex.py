"""CUBE4 ``.cubex`` files: writer, strict self-check, and reader (plus CUBE3 ``.cube``).

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

The reader accepts what other producers write as well: INCLUSIVE metrics
(converted to exclusive), big-endian files, dense indexes, compressed data,
gzip-compressed archives and anchors, tar headers with bad checksums,
several root cnodes, CUBE3-style ``machine/node/process/thread`` system
trees inside a CUBE4 anchor, metrics without data.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import struct
import tarfile
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np

from .model import Cube, CubeError, CubeFormatError, LocationInfo, MetricInfo, RegionInfo

XML_PROLOG = '<?xml version="1.0" encoding="UTF-8"?>\n'
CUBE_START = '<cube version="4.4">'
INDEX_MAGIC = b"CUBEX.INDEX"
DATA_MAGIC = b"CUBEX.DATA"
ZDATA_MAGIC = b"ZCUBEX.DATA"
INDEX_SPARSE = 1
INDEX_DENSE = 3
INDEX_NONE = 0
TAR_BLOCK = 512
CREATOR = "expert-analyze"

# --------------------------------------------------------------------------
# XML text helpers
# --------------------------------------------------------------------------
# XML 1.0 forbids most control characters even when escaped; names taken
# from traces may contain them, so they are replaced.
_BAD_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _esc(text) -> str:
    s = _BAD_XML_CHARS.sub("\ufffd", str(text))
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


# --------------------------------------------------------------------------
# Writer
# --------------------------------------------------------------------------
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
            _write_tar(f, members)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def cubex_bytes(cube: Cube) -> bytes:
    """The bytes :func:`write_cubex` would write (for tests and in-memory use)."""
    buf = io.BytesIO()
    _write_tar(buf, _build_members(cube))
    return buf.getvalue()


def _write_tar(f, members: list[tuple[str, bytes]]) -> None:
    with tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            if len(data) and len(data) % TAR_BLOCK == 0:  # guarded by construction; keep the invariant explicit
                raise CubeError(f"internal error: member {name} is {len(data)} bytes, a multiple of 512")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))


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


def _anchor_xml(cube: Cube, dfs: np.ndarray, new_id: np.ndarray, metric_order: list[int]) -> str:
    out: list[str] = [XML_PROLOG, CUBE_START, "\n"]
    attrs = {"Creator": CREATOR, "CUBE_CT_AGGR": "SUM"}
    attrs.update(cube.attrs)
    for k, v in attrs.items():
        out.append(f'  <attr key="{_esc(k)}" value="{_esc(v)}"/>\n')

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
            out.append(f'{ind}  <attr key="diagnosis" value="{_esc(m.diagnosis)}"/>\n')
        open_stack.append(m.name)
    while open_stack:
        open_stack.pop()
        out.append("  " * (len(open_stack) + 2) + "</metric>\n")
    out.append("  </metrics>\n")

    # program: regions, then the nested call tree
    out.append("  <program>\n")
    for rid, r in enumerate(cube.regions):
        out.append(
            f'    <region id="{rid}" mod="{_esc(r.file)}" begin="{int(r.begin_line)}" end="{int(r.end_line)}">\n'
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
            out.append("  " * (len(depth_stack) + 2) + "</cnode>\n")
        ind = "  " * (len(depth_stack) + 2)
        extra = ""
        if cube.cnode_line[old] >= 0:
            extra += f' line="{int(cube.cnode_line[old])}"'
        if cube.cnode_file[old]:
            extra += f' mod="{_esc(cube.cnode_file[old])}"'
        out.append(f'{ind}<cnode id="{int(new_id[old])}"{extra} calleeId="{int(cube.cnode_region[old])}">\n')
        depth_stack.append(old)
    while depth_stack:
        depth_stack.pop()
        out.append("  " * (len(depth_stack) + 2) + "</cnode>\n")
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
                        f"{ind3}    <name>{_esc(loc.thread_name)}</name>\n"
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


# --------------------------------------------------------------------------
# Tar scanning (reader and checker)
# --------------------------------------------------------------------------
class _Member:
    __slots__ = ("name", "offset", "size", "header_offset")

    def __init__(self, name, offset, size, header_offset):
        self.name, self.offset, self.size, self.header_offset = name, offset, size, header_offset


def _octal(field: bytes, what: str, where: str) -> int:
    if field and field[0] & 0x80:  # GNU base-256 for big numbers
        return int.from_bytes(field[1:], "big")
    s = field.split(b"\0", 1)[0].strip()
    try:
        return int(s, 8) if s else 0
    except ValueError:
        raise CubeFormatError(f"{where}: tar header field {what} is not an octal number: {field!r}") from None


def _scan_tar(buf, where: str, problems: list[str], strict_eof: bool = False) -> dict[str, _Member]:
    """Members of an uncompressed tar in ``buf`` (bytes or mmap).

    Tolerant like the CUBE readers: checksums are checked but only reported,
    all-zero blocks are skipped (cubelib writes one after every member whose
    size is a multiple of 512, which standard readers take for the end).
    """
    members: dict[str, _Member] = {}
    pos = 0
    n = len(buf)
    pax_size = None
    long_name = None
    while pos + TAR_BLOCK <= n:
        hdr = bytes(buf[pos : pos + TAR_BLOCK])
        if hdr == b"\0" * TAR_BLOCK:
            pos += TAR_BLOCK
            continue
        name = hdr[0:100].split(b"\0", 1)[0]
        magic = hdr[257:263]
        if magic[:5] != b"ustar":
            if not members:
                raise CubeFormatError(f"{where}: not a tar archive (no ustar header at byte 0)")
            problems.append(f"{where}: unreadable tar header at byte {pos}; members after it are ignored")
            break
        prefix = hdr[345:500].split(b"\0", 1)[0] if magic == b"ustar\x00" else b""
        size = _octal(hdr[124:136], "size", f"{where} byte {pos}")
        chksum = _octal(hdr[148:156], "chksum", f"{where} byte {pos}")
        actual = sum(hdr[:148]) + 8 * 32 + sum(hdr[156:])
        if chksum != actual:
            problems.append(f"{where}: tar header at byte {pos} has a wrong checksum (ignored)")
        typeflag = hdr[156:157]
        data_off = pos + TAR_BLOCK
        if data_off + size > n:
            raise CubeFormatError(
                f"{where}: tar member {name.decode('utf-8', 'replace')!r} at byte {pos} claims {size} bytes "
                f"but the file ends at byte {n} (truncated file?)"
            )
        if typeflag == b"x":  # PAX extended header: only size/path matter here
            for rec in bytes(buf[data_off : data_off + size]).decode("utf-8", "replace").split("\n"):
                kv = rec.split(" ", 1)[-1]
                if kv.startswith("size="):
                    pax_size = int(kv[5:])
                elif kv.startswith("path="):
                    long_name = kv[5:]
        elif typeflag == b"L":  # GNU long name
            long_name = bytes(buf[data_off : data_off + size]).split(b"\0", 1)[0].decode("utf-8", "replace")
        elif typeflag in (b"0", b"\0", b"7"):
            full = long_name or (prefix + b"/" + name if prefix else name).decode("utf-8", "replace")
            if pax_size is not None:
                size = pax_size
            members[full] = _Member(full, data_off, size, pos)
            pax_size = long_name = None
        pos = data_off + (size + TAR_BLOCK - 1) // TAR_BLOCK * TAR_BLOCK
    return members


def _open_bytes(path: Path) -> tuple[bytes, list[str]]:
    problems: list[str] = []
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CubeFormatError(f"{path}: cannot read: {e.strerror or e}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise CubeFormatError(f"{path}: gzip-compressed file cannot be decompressed: {e}") from None
        problems.append(f"{path}: the archive is gzip-compressed; cubelib/CubeGUI cannot open such a file")
    return raw, problems


# --------------------------------------------------------------------------
# Self-check of written files
# --------------------------------------------------------------------------
def check_cubex(path) -> list[str]:
    """Every invariant our writer guarantees, checked on a file; returns violations (empty = good).

    Covers the container (USTAR, uncompressed, flat names, correct checksums,
    fixed mtime/owner, no member of 512*k bytes, name ends in .cubex), the
    anchor (literal prolog and version, double-quoted attributes, section
    order, id/Id spelling, dense ids, DFS pre-order cnodes, one root cnode and
    one root system-tree node, region begin/end, element order and types in
    the system tree) and the data (EXCLUSIVE metrics with DOUBLE/UINT64/
    MIN-/MAXDOUBLE, sparse little-endian indexes with >= 1 strictly ascending
    in-range positions, data sizes).
    """
    path = Path(path)
    v: list[str] = []
    if path.suffix != ".cubex":
        v.append(f"file name {path.name!r} does not end in .cubex")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        return v + ["the archive is gzip-compressed (cubelib rejects it)"]
    if raw[257:263] != b"ustar\x00":
        v.append("the first tar header is not POSIX USTAR ('ustar\\0' magic)")
    problems: list[str] = []
    try:
        members = _scan_tar(raw, str(path), problems)
    except CubeFormatError as e:
        return v + [str(e)]
    v += problems
    for m in members.values():
        hdr = raw[m.header_offset : m.header_offset + TAR_BLOCK]
        if "/" in m.name or len(m.name.encode()) > 99:
            v.append(f"member {m.name!r}: name must be flat and short")
        if m.size and m.size % TAR_BLOCK == 0:
            v.append(f"member {m.name!r}: size {m.size} is a multiple of 512 (cubelib loses later members)")
        if _octal(hdr[136:148], "mtime", "") != 0 or _octal(hdr[108:116], "uid", "") != 0:
            v.append(f"member {m.name!r}: mtime/uid not fixed at 0 (bytes would not be reproducible)")
    if "anchor.xml" not in members:
        return v + ["no anchor.xml member"]
    a = members["anchor.xml"]
    anchor_bytes = raw[a.offset : a.offset + a.size]
    try:
        text = anchor_bytes.decode("utf-8")
    except UnicodeDecodeError as e:
        return v + [f"anchor.xml is not UTF-8 (byte {e.start})"]
    if not text.startswith(XML_PROLOG.rstrip("\n")):
        v.append('anchor.xml does not start with the literal <?xml version="1.0" encoding="UTF-8"?>')
    if re.search(r"<cube\b[^>]*>", text) is None or re.search(r"<cube\b[^>]*>", text).group(0) != CUBE_START:
        v.append(f"root start tag is not literally {CUBE_START}")
    if re.search(r"<[^>]*\s[\w:]+\s*=\s*'", text):
        v.append("anchor.xml has a single-quoted attribute (cubelib accepts only double quotes)")
    try:
        root = ET.fromstring(anchor_bytes)
    except ET.ParseError as e:
        return v + [f"anchor.xml: XML error at line {e.position[0]}, column {e.position[1]}: {e}"]
    v += _check_anchor(root)
    v += _check_data(root, members, raw)
    return v


def _check_anchor(root: ET.Element) -> list[str]:
    v: list[str] = []
    order = [c.tag for c in root]
    sections = [t for t in order if t != "attr"]
    if sections not in (["metrics", "program", "system"], ["doc", "metrics", "program", "system"]):
        v.append(f"top-level sections are {sections}, expected [doc,] metrics, program, system")
    if any(t == "attr" for t in order[order.index("metrics") if "metrics" in order else 0 :]):
        v.append("<attr> elements after <metrics>")
    # metrics
    ids = []
    for m in root.iter("metric"):
        if "Id" in m.attrib or "id" not in m.attrib:
            v.append("metric without lower-case id attribute")
            continue
        ids.append(int(m.get("id")))
        if m.get("type") != "EXCLUSIVE":
            v.append(f"metric id {m.get('id')}: type {m.get('type')!r}, expected EXCLUSIVE")
        dt = (m.findtext("dtype") or "").strip()
        if dt not in ("DOUBLE", "UINT64", "MINDOUBLE", "MAXDOUBLE"):
            v.append(f"metric id {m.get('id')}: dtype {dt!r} not DOUBLE/UINT64/MINDOUBLE/MAXDOUBLE")
        if not (m.findtext("uniq_name") or "").strip():
            v.append(f"metric id {m.get('id')}: empty uniq_name")
    if ids != list(range(len(ids))):
        v.append(f"metric ids are not dense 0..M-1 in document order: {ids[:10]}")
    # program
    prog = root.find("program")
    if prog is not None:
        regions = prog.findall("region")
        rids = []
        for r in regions:
            if "id" not in r.attrib:
                v.append("region without lower-case id")
                continue
            rids.append(int(r.get("id")))
            for att in ("mod", "begin", "end"):
                if att not in r.attrib:
                    v.append(f"region id {r.get('id')}: missing attribute {att}")
        if rids != list(range(len(rids))):
            v.append("region ids are not dense 0..R-1")
        if not regions:
            v.append("no <region>")
        tags = [c.tag for c in prog]
        if tags != sorted(tags, key=lambda t: t != "region"):
            v.append("a <region> comes after a <cnode> (regions must come first)")
        roots = prog.findall("cnode")
        if len(roots) != 1:
            v.append(f"{len(roots)} root cnodes, expected exactly 1")
        cids = []
        stack = list(reversed(roots))
        while stack:
            c = stack.pop()
            if "id" not in c.attrib or "calleeId" not in c.attrib:
                v.append("cnode without id/calleeId")
                continue
            cids.append(int(c.get("id")))
            if not 0 <= int(c.get("calleeId")) < len(rids):
                v.append(f"cnode {c.get('id')}: calleeId {c.get('calleeId')} is not a region")
            stack.extend(reversed(c.findall("cnode")))
        if cids != list(range(len(cids))):
            v.append("cnode ids are not dense 0..N-1 in depth-first pre-order")
    # system
    system = root.find("system")
    if system is not None:
        stns = system.findall("systemtreenode")
        if len(stns) != 1:
            v.append(f"{len(stns)} root systemtreenodes, expected exactly 1")
        locids: list[int] = []
        stn_ids: list[int] = []
        group_ids: list[int] = []
        for el in system.iter():
            if el.tag in ("systemtreenode", "locationgroup", "location"):
                if "Id" not in el.attrib or "id" in el.attrib:
                    v.append(f"<{el.tag}> must carry a capital Id attribute (pycubexr)")
                    continue
            if el.tag == "systemtreenode":
                stn_ids.append(int(el.get("Id")))
                tags = [c.tag for c in el]
                want = ["name", "class"]
                if tags[:2] != want:
                    v.append(f"systemtreenode Id {el.get('Id')}: children start {tags[:2]}, expected {want}")
                rest = [t for t in tags[2:] if t not in ("descr", "attr")]
                if rest != sorted(rest, key=lambda t: t != "locationgroup"):
                    v.append(f"systemtreenode Id {el.get('Id')}: a locationgroup follows a child systemtreenode")
            elif el.tag == "locationgroup":
                group_ids.append(int(el.get("Id")))
                tags = [c.tag for c in el]
                if tags[:3] != ["name", "rank", "type"] or (el.findtext("type") or "") != "process":
                    v.append(f"locationgroup Id {el.get('Id')}: expected name, rank, type=process")
                if not el.findall("location"):
                    v.append(f"locationgroup Id {el.get('Id')}: no location")
            elif el.tag == "location":
                locids.append(int(el.get("Id")))
                tags = [c.tag for c in el]
                if tags[:3] != ["name", "rank", "type"] or (el.findtext("type") or "") != "thread":
                    v.append(f"location Id {el.get('Id')}: expected name, rank, type=thread")
        if sorted(locids) != list(range(len(locids))):
            v.append("location Ids are not dense 0..L-1")
        if stn_ids != list(range(len(stn_ids))) or group_ids != list(range(len(group_ids))):
            v.append("systemtreenode / locationgroup Ids are not dense in document order")
    return v


def _check_data(root: ET.Element, members: dict[str, _Member], raw: bytes) -> list[str]:
    v: list[str] = []
    n_cnodes = sum(1 for _ in root.iter("cnode"))
    n_locs = sum(1 for _ in root.iter("location"))
    for m in root.iter("metric"):
        mid = m.get("id")
        if (m.findtext("val") or "").strip() == "VOID":
            continue
        idx, dat = members.get(f"{mid}.index"), members.get(f"{mid}.data")
        if idx is None or dat is None:
            v.append(f"metric id {mid}: {mid}.index/{mid}.data missing")
            continue
        ib = raw[idx.offset : idx.offset + idx.size]
        if ib[:11] != INDEX_MAGIC or len(ib) < 18:
            v.append(f"{mid}.index: bad magic or shorter than the 18-byte header")
            continue
        probe, version, fmt = struct.unpack("<IHB", ib[11:18])
        if probe != 1 or version != 0:
            v.append(f"{mid}.index: expected a little-endian version-0 index, got probe {probe:#x}, version {version}")
            continue
        if fmt != INDEX_SPARSE or len(ib) < 22:
            v.append(f"{mid}.index: format {fmt} without row count; only a sparse index (1) with a count is "
                     "readable by pycubexr")
            continue
        (count,) = struct.unpack("<I", ib[18:22])
        if count < 1 or len(ib) != 22 + 4 * count:
            v.append(f"{mid}.index: {count} rows in {len(ib)} bytes (need >= 1 row, 22+4n bytes)")
            continue
        pos = np.frombuffer(ib, "<u4", count, 22).astype(np.int64)
        if np.any(np.diff(pos) <= 0):
            v.append(f"{mid}.index: row positions not strictly ascending (cubelib then reads zeros)")
        if pos.max() >= n_cnodes:
            v.append(f"{mid}.index: row position {pos.max()} >= {n_cnodes} cnodes")
        db = raw[dat.offset : dat.offset + dat.size]
        if db[:10] != DATA_MAGIC:
            v.append(f"{mid}.data: bad magic")
        elif len(db) != 10 + 8 * count * n_locs:
            v.append(f"{mid}.data: {len(db)} bytes, expected {10 + 8 * count * n_locs}")
    return v


# --------------------------------------------------------------------------
# Reader
# --------------------------------------------------------------------------
# CUBE dtype -> (numpy type code, is integer).  Non-scalar types (RATE,
# COMPLEX, TAU_ATOMIC, HISTOGRAM(n), NDOUBLES(n), SCALE_FUNC) have no single
# value per (call path, location) and are left out with a note.
_SCALAR_DTYPES = {
    "DOUBLE": ("f8", False),
    "FLOAT": ("f8", False),
    "MINDOUBLE": ("f8", False),
    "MAXDOUBLE": ("f8", False),
    "INT64": ("i8", True),
    "INTEGER": ("i8", True),
    "SIGNED INTEGER": ("i8", True),
    "UINT64": ("u8", True),
    "UNSIGNED INTEGER": ("u8", True),
    "INT32": ("i4", True),
    "INT": ("i4", True),
    "SIGNED INT": ("i4", True),
    "UINT32": ("u4", True),
    "UNSIGNED INT": ("u4", True),
    "INT16": ("i2", True),
    "SHORT INT": ("i2", True),
    "SIGNED SHORT INT": ("i2", True),
    "UINT16": ("u2", True),
    "UNSIGNED SHORT INT": ("u2", True),
    "INT8": ("i1", True),
    "UINT8": ("u1", True),
    "CHAR": ("u1", True),
}
_DERIVED_TYPES = ("POSTDERIVED", "DERIVED", "PREDERIVED_INCLUSIVE", "PREDERIVED_EXCLUSIVE")


def read_cubex(path) -> Cube:
    """Read a CUBE4 ``.cubex`` file (ours, Scalasca's, Score-P's, cubelib's).

    Values come back as our cube holds them: exclusive along the call tree
    (INCLUSIVE metrics are converted by subtracting the children, in
    float64), inclusive along the metric tree (as stored).  Cnode and
    location ids are the file's.  What cannot be represented (derived and
    non-scalar metrics) is left out and listed in ``cube.problems``.

    Raises:
        CubeFormatError: naming the file, member and byte offset at fault.
    """
    path = Path(path)
    raw, problems = _open_bytes(path)
    members = _scan_tar(raw, str(path), problems)
    if "anchor.xml" not in members:
        raise CubeFormatError(f"{path}: no anchor.xml member (members: {sorted(members)[:10]}); not a CUBE4 file")
    a = members["anchor.xml"]
    anchor = raw[a.offset : a.offset + a.size]
    if anchor[:2] == b"\x1f\x8b":
        try:
            anchor = gzip.decompress(anchor)
        except (OSError, EOFError, zlib.error) as e:
            raise CubeFormatError(f"{path}: anchor.xml: compressed but cannot be decompressed: {e}") from None
    root = _parse_xml(anchor, f"{path}: anchor.xml", problems)
    parsed = _parse_anchor(root, f"{path}: anchor.xml", problems)
    values = {}
    n_c, n_l = len(parsed.cnode_parent), len(parsed.locations)
    for m, el in zip(parsed.metrics, parsed.metric_elements):
        if parsed.void.get(m.name):
            continue
        prefix = "ghost_" if el.get("viztype", "").upper() == "GHOST" else ""
        mid = el.get("id")
        idx, dat = members.get(f"{prefix}{mid}.index"), members.get(f"{prefix}{mid}.data")
        if idx is None or dat is None:
            problems.append(f"{path}: metric {m.name!r} (id {mid}) has no data members; read as zeros")
            continue
        arr = _read_metric(raw, idx, dat, parsed.dtypes[m.name], n_c, n_l, f"{path}: metric {m.name!r}", problems)
        positions = parsed.inclusive_positions if parsed.inclusive[m.name] else parsed.exclusive_positions
        vals = np.zeros((n_c, n_l), np.float64)
        rows, data = arr
        vals[positions[rows]] = data
        if parsed.inclusive[m.name]:
            vals = _inclusive_to_exclusive(vals, parsed.cnode_parent, m.aggregation)
        values[m.name] = vals
    cube = Cube(
        parsed.metrics,
        parsed.regions,
        parsed.cnode_parent,
        parsed.cnode_region,
        parsed.locations,
        values,
        parsed.attrs,
        cnode_line=parsed.cnode_line,
        cnode_file=parsed.cnode_file,
        strict=False,
    )
    cube.problems = problems
    return cube


_BARE_AMP = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)")


def _parse_xml(data: bytes, where: str, problems: list[str]) -> ET.Element:
    try:
        return ET.fromstring(data)
    except ET.ParseError as e:
        line, col = e.position
        msg = re.sub(r": line \d+, column \d+$", "", str(e.msg))
        first = f"{where}: XML syntax error at line {line}, column {col}: {msg}"
    # cubelib's own scanner tolerates a bare '&' in text (its test files have them)
    fixed = _BARE_AMP.sub(b"&amp;", data)
    if fixed != data:
        try:
            root = ET.fromstring(fixed)
        except ET.ParseError:
            pass
        else:
            problems.append(f"{where}: unescaped '&' read as text (not well-formed XML)")
            return root
    raise CubeFormatError(first)


def _read_metric(raw, idx: _Member, dat: _Member, dtype: str, n_c: int, n_l: int, where: str, problems):
    """(row positions, data [rows, n_l] float64) of one metric."""
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
        payload = _inflate(db, e, dwhere)
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
    data = np.frombuffer(payload, np_dtype, need).astype(np.float64).reshape(rows.size, n_l)
    return rows, data


def _inflate(db: bytes, e: str, where: str) -> bytes:
    """Compressed data: count K, K (row start, block start, block size) triples, K zlib streams."""
    start = len(ZDATA_MAGIC)
    try:
        (k,) = struct.unpack(e + "Q", db[start : start + 8])
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
            parts.append(zlib.decompress(db[pos : pos + size]))
        except zlib.error as err:
            raise CubeFormatError(f"{where}: compressed block {i} at byte {pos}: {err}") from None
        pos += size
    return b"".join(parts)


def _inclusive_to_exclusive(vals: np.ndarray, parent: np.ndarray, aggregation: str) -> np.ndarray:
    if aggregation != "sum":
        return vals
    excl = vals.copy()
    kids = np.flatnonzero(parent >= 0)
    np.subtract.at(excl, parent[kids], vals[kids])
    return excl


class _Anchor:
    """What :func:`_parse_anchor` extracts from ``anchor.xml``."""

    def __init__(self):
        self.attrs: dict[str, str] = {}
        self.metrics: list[MetricInfo] = []
        self.metric_elements: list[ET.Element] = []
        self.dtypes: dict[str, str] = {}
        self.inclusive: dict[str, bool] = {}
        self.void: dict[str, bool] = {}
        self.regions: list[RegionInfo] = []
        self.cnode_parent: np.ndarray
        self.cnode_region: np.ndarray
        self.cnode_line: np.ndarray
        self.cnode_file: list[str]
        self.exclusive_positions: np.ndarray  # row position -> cnode id
        self.inclusive_positions: np.ndarray
        self.locations: list[LocationInfo] = []


def _int_attr(el: ET.Element, name: str, where: str, default=None) -> int:
    val = el.get(name)
    if val is None:
        if default is not None:
            return default
        raise CubeFormatError(f"{where}: <{el.tag}> lacks the {name} attribute")
    try:
        return int(val)
    except ValueError:
        raise CubeFormatError(f"{where}: <{el.tag} {name}={val!r}> is not an integer") from None


def _text(el: ET.Element, tag: str) -> str:
    return (el.findtext(tag) or "").strip()


def _parse_anchor(root: ET.Element, where: str, problems: list[str]) -> _Anchor:
    if root.tag != "cube":
        raise CubeFormatError(f"{where}: root element is <{root.tag}>, expected <cube>")
    out = _Anchor()
    for el in root.findall("attr"):
        out.attrs[el.get("key", "")] = el.get("value", "")
    metrics_el = root.find("metrics")
    program = root.find("program")
    system = root.find("system")
    for tag, el in (("metrics", metrics_el), ("program", program), ("system", system)):
        if el is None:
            raise CubeFormatError(f"{where}: no <{tag}> section")
    _parse_metrics(metrics_el, None, out, where, problems)
    _parse_program(program, out, where)
    out.locations = _parse_system(system, where)
    return out


def _parse_metrics(parent_el: ET.Element, parent: str | None, out: _Anchor, where: str, problems: list[str]):
    for el in parent_el.findall("metric"):
        mid = el.get("id", "?")
        name = _text(el, "uniq_name")
        mwhere = f"{where}: metric id {mid} ({name!r})"
        if not name:
            raise CubeFormatError(f"{mwhere}: empty <uniq_name>")
        mtype = (el.get("type") or "EXCLUSIVE").upper()
        dtype = _text(el, "dtype").upper()
        skip = None
        if mtype in _DERIVED_TYPES:
            skip = f"derived metric ({mtype}, computed by cubelib from a CubePL expression)"
        elif mtype not in ("EXCLUSIVE", "INCLUSIVE"):
            skip = f"metric type {mtype}"
        elif dtype not in _SCALAR_DTYPES:
            skip = f"data type {dtype or '(none)'} has no single value per call path and location"
        if skip:
            problems.append(f"{mwhere}: left out with its sub-metrics: {skip}")
            continue
        code, is_int = _SCALAR_DTYPES[dtype]
        agg = {"MINDOUBLE": "min", "MAXDOUBLE": "max"}.get(dtype, "sum")
        diagnosis = ""
        for a in el.findall("attr"):
            if a.get("key") == "diagnosis":
                diagnosis = a.get("value", "")
        info = MetricInfo(
            name=name,
            display_name=_text(el, "disp_name") or name,
            parent=parent,
            unit=_text(el, "uom"),
            description=_text(el, "descr"),
            diagnosis=diagnosis,
            dtype="INTEGER" if is_int else "FLOAT",
            url=_text(el, "url"),
            aggregation=agg,
        )
        if any(m.name == name for m in out.metrics):
            raise CubeFormatError(f"{mwhere}: unique name used twice")
        out.metrics.append(info)
        out.metric_elements.append(el)
        out.dtypes[name] = code
        out.inclusive[name] = mtype == "INCLUSIVE"
        out.void[name] = _text(el, "val").upper() == "VOID"
        _parse_metrics(el, name, out, where, problems)


def _parse_program(program: ET.Element, out: _Anchor, where: str):
    region_index: dict[int, int] = {}
    for el in program.findall("region"):
        rid = _int_attr(el, "id", where)
        if rid in region_index:
            raise CubeFormatError(f"{where}: region id {rid} defined twice")
        region_index[rid] = len(out.regions)
        out.regions.append(
            RegionInfo(
                name=_text(el, "name"),
                file=el.get("mod", ""),
                begin_line=_int_attr(el, "begin", where, -1),
                end_line=_int_attr(el, "end", where, -1),
                paradigm=_text(el, "paradigm") or "unknown",
                role=_text(el, "role") or "unknown",
                description=_text(el, "descr"),
            )
        )
    roots = program.findall("cnode")
    if not roots:
        raise CubeFormatError(f"{where}: <program> has no <cnode>")
    parent: dict[int, int] = {}
    region: dict[int, int] = {}
    line: dict[int, int] = {}
    mod: dict[int, str] = {}
    deep: list[int] = []  # ids in depth-first pre-order (EXCLUSIVE row positions)
    wide: list[int] = []  # ids in sibling-block order (INCLUSIVE row positions)
    # depth-first walk over document order; an explicit stack keeps deep trees safe
    stack: list[tuple[ET.Element, int]] = [(r, -1) for r in reversed(roots)]
    while stack:
        el, p = stack.pop()
        cid = _int_attr(el, "id", where)
        if cid in parent:
            raise CubeFormatError(f"{where}: cnode id {cid} used twice")
        callee = _int_attr(el, "calleeId", where)
        if callee not in region_index:
            raise CubeFormatError(f"{where}: cnode {cid}: calleeId {callee} is not a region id")
        parent[cid], region[cid] = p, region_index[callee]
        line[cid] = _int_attr(el, "line", where, -1)
        mod[cid] = el.get("mod", "")
        deep.append(cid)
        stack.extend((c, cid) for c in reversed(el.findall("cnode")))
    n = len(parent)
    if sorted(parent) != list(range(n)):
        missing = sorted(set(range(n)) - set(parent))[:5]
        raise CubeFormatError(
            f"{where}: cnode ids are not dense 0..{n - 1} (missing {missing}); cubelib crashes on such files"
        )
    # sibling-block order: each root, then for every node (depth first) all its children at once
    kids: dict[int, list[int]] = {c: [] for c in range(n)}
    for c in deep:
        if parent[c] >= 0:
            kids[parent[c]].append(c)
    for r in (c for c in deep if parent[c] < 0):
        wide.append(r)
        st = [r]
        while st:
            node = st.pop()
            wide.extend(kids[node])
            st.extend(reversed(kids[node]))
    out.cnode_parent = np.array([parent[c] for c in range(n)], np.int64)
    out.cnode_region = np.array([region[c] for c in range(n)], np.int64)
    out.cnode_line = np.array([line[c] for c in range(n)], np.int64)
    out.cnode_file = [mod[c] for c in range(n)]
    out.exclusive_positions = np.array(deep, np.int64)
    out.inclusive_positions = np.array(wide, np.int64)


def _sys_id(el: ET.Element, where: str) -> int:
    val = el.get("Id", el.get("id"))
    if val is None:
        raise CubeFormatError(f"{where}: <{el.tag}> lacks an Id attribute")
    try:
        return int(val)
    except ValueError:
        raise CubeFormatError(f"{where}: <{el.tag} Id={val!r}> is not an integer") from None


def _int_text(el: ET.Element, tag: str, where: str, default: int = 0) -> int:
    t = _text(el, tag)
    if not t:
        return default
    try:
        return int(t)
    except ValueError:
        raise CubeFormatError(f"{where}: <{el.tag}>/<{tag}> {t!r} is not an integer") from None


def _parse_system(system: ET.Element, where: str) -> list[LocationInfo]:
    found: dict[int, LocationInfo] = {}

    def add(lid: int, info: LocationInfo):
        if lid in found:
            raise CubeFormatError(f"{where}: location Id {lid} used twice")
        found[lid] = info

    # CUBE4 style: systemtreenode* -> locationgroup -> location
    def walk(el: ET.Element, machine: str | None, node: str | None, parent_name: str):
        name = _text(el, "name")
        cls = _text(el, "class").lower()
        if cls == "machine" or machine is None:
            machine = name if cls == "machine" or machine is None else machine
        if cls == "node":
            node = name
        for g in el.findall("locationgroup"):
            rank = _int_text(g, "rank", where)
            gname = _text(g, "name")
            for loc in g.findall("location"):
                add(
                    _sys_id(loc, where),
                    LocationInfo(
                        machine=machine or name,
                        node=node or name,
                        rank=rank,
                        thread=_int_text(loc, "rank", where),
                        name=_text(loc, "name"),
                        process_name=gname,
                    ),
                )
        for child in el.findall("systemtreenode"):
            walk(child, machine, node, name)

    for stn in system.findall("systemtreenode"):
        walk(stn, None, None, "")
    # CUBE3 style (also accepted inside a CUBE4 anchor): machine -> node -> process -> thread
    for m in system.findall("machine"):
        for nd in m.findall("node"):
            for p in nd.findall("process"):
                rank = _int_text(p, "rank", where)
                for t in p.findall("thread"):
                    add(
                        _sys_id(t, where),
                        LocationInfo(
                            machine=_text(m, "name"),
                            node=_text(nd, "name"),
                            rank=rank,
                            thread=_int_text(t, "rank", where),
                            name=_text(t, "name"),
                            process_name=_text(p, "name"),
                        ),
                    )
    n = len(found)
    if n == 0:
        raise CubeFormatError(f"{where}: the system tree has no locations")
    if sorted(found) != list(range(n)):
        missing = sorted(set(range(n)) - set(found))[:5]
        raise CubeFormatError(
            f"{where}: location Ids are not dense 0..{n - 1} (missing {missing}); cubelib crashes on such files"
        )
    return [found[i] for i in range(n)]


# --------------------------------------------------------------------------
# CUBE3 (.cube): one XML document with the values in <severity>
# --------------------------------------------------------------------------
def read_cube3(path) -> Cube:
    """Read a CUBE3 ``.cube`` (or ``.cube.gz``) file as written by EXPERT,
    Scalasca 1.x and cubelib's ``cube4to3``.

    CUBE3 values are exclusive along the call tree and inclusive along the
    metric tree; rows left out are zero.
    """
    path = Path(path)
    raw, problems = _open_bytes(path)
    where = str(path)
    root = _parse_xml(raw, where, problems)
    parsed = _parse_anchor(root, where, problems)
    n_c, n_l = len(parsed.cnode_parent), len(parsed.locations)
    by_id = {el.get("id"): m for m, el in zip(parsed.metrics, parsed.metric_elements)}
    values: dict[str, np.ndarray] = {}
    sev = root.find("severity")
    for matrix in sev.findall("matrix") if sev is not None else []:
        m = by_id.get(matrix.get("metricId"))
        if m is None:
            continue
        vals = values.setdefault(m.name, np.zeros((n_c, n_l), np.float64))
        for row in matrix.findall("row"):
            c = _int_attr(row, "cnodeId", where)
            if not 0 <= c < n_c:
                raise CubeFormatError(f"{where}: <matrix metricId={matrix.get('metricId')}> row for unknown cnode {c}")
            try:
                nums = [float(x) for x in (row.text or "").split()]
            except ValueError as e:
                raise CubeFormatError(f"{where}: metric {m.name!r} row cnodeId={c}: {e}") from None
            if len(nums) != n_l:
                raise CubeFormatError(f"{where}: metric {m.name!r} row cnodeId={c} has {len(nums)} values, {n_l} threads")
            vals[c] = nums
    cube = Cube(
        parsed.metrics,
        parsed.regions,
        parsed.cnode_parent,
        parsed.cnode_region,
        parsed.locations,
        values,
        parsed.attrs,
        cnode_line=parsed.cnode_line,
        cnode_file=parsed.cnode_file,
        strict=False,
    )
    cube.problems = problems
    return cube
