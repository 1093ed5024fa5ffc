"""Strict self-check of ``.cubex`` files: :func:`check_cubex`.

Checks, on a file, every invariant :mod:`.cubex_write` guarantees so that
cubelib/CubeGUI and pycubexr open it (``docs/cube.md`` lists them).  The
tests run it on every file they write; it is stricter than the reader,
which accepts what other producers write.
"""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .cubex_write import CUBE_START, XML_PROLOG
from .model import CubeFormatError
from .tar import DATA_MAGIC, INDEX_MAGIC, INDEX_SPARSE, TAR_BLOCK, TarMember, octal, scan_tar


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
        members = scan_tar(raw, str(path), problems)
    except CubeFormatError as e:
        return v + [str(e)]
    v += problems
    for m in members.values():
        hdr = raw[m.header_offset : m.header_offset + TAR_BLOCK]
        if "/" in m.name or len(m.name.encode()) > 99:
            v.append(f"member {m.name!r}: name must be flat and short")
        if m.size and m.size % TAR_BLOCK == 0:
            v.append(f"member {m.name!r}: size {m.size} is a multiple of 512 (cubelib loses later members)")
        if octal(hdr[136:148], "mtime", "") != 0 or octal(hdr[108:116], "uid", "") != 0:
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
            elif el.tag in ("locationgroup", "location"):  # a process or a thread
                group = el.tag == "locationgroup"
                (group_ids if group else locids).append(int(el.get("Id")))
                want = "process" if group else "thread"
                tags = [c.tag for c in el]
                if tags[:3] != ["name", "rank", "type"] or (el.findtext("type") or "") != want:
                    v.append(f"{el.tag} Id {el.get('Id')}: expected name, rank, type={want}")
                if group and not el.findall("location"):
                    v.append(f"locationgroup Id {el.get('Id')}: no location")
        if sorted(locids) != list(range(len(locids))):
            v.append("location Ids are not dense 0..L-1")
        if stn_ids != list(range(len(stn_ids))) or group_ids != list(range(len(group_ids))):
            v.append("systemtreenode / locationgroup Ids are not dense in document order")
    return v


def _check_data(root: ET.Element, members: dict[str, TarMember], raw: bytes) -> list[str]:
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
