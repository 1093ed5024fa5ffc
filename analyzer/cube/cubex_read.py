"""CUBE4 ``.cubex`` and CUBE3 ``.cube`` readers: :func:`read_cubex`, :func:`read_cube3`.

Both formats describe a cube with the same XML vocabulary (metrics,
program, system); CUBE4 keeps it in the archive member ``anchor.xml`` and
the values in binary members, CUBE3 is one XML document with the values in
``<severity>``.  The readers share the XML parsing and the step that builds
the :class:`Cube` from the parsed anchor (:func:`_cube_from_anchor`).

The CUBE4 reader accepts what other producers write as well: INCLUSIVE
metrics (converted to exclusive), big-endian files, dense indexes,
compressed data, gzip-compressed archives and anchors, tar headers with bad
checksums, several root cnodes, CUBE3-style ``machine/node/process/thread``
system trees inside a CUBE4 anchor, metrics without data.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from array import array
from pathlib import Path

import numpy as np

from tracefmt.inflate import InflateError, gzip_cap, inflate

from . import cube_xml
from .cube_xml import NO_REGION, Cnodes, TooManyMetrics, name_of, parse_xml
from .cubex_data import Compressed, CompressedRows, check_finite, read_metric, rows_of
from .model import Cube, CubeFormatError, LocationInfo, MetricInfo, RegionInfo
# DENSE_BYTES_* and check_dense_size stay importable from here: the HDF5 reader's limit
from .stored_rows import DENSE_BYTES_FLOOR, DENSE_BYTES_RATIO, ONE_METRIC_FLOOR, ONE_METRIC_RATIO  # noqa: F401
from .stored_rows import HeldBudget, RowValues, StoredRows, check_dense_size, check_one_dense_metric
from .tar import scan_tar


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
    members = scan_tar(raw, str(path), problems)
    if "anchor.xml" not in members:
        raise CubeFormatError(f"{path}: no anchor.xml member (members: {sorted(members)[:10]}); not a CUBE4 file")
    a = members["anchor.xml"]
    anchor = raw[a.offset : a.offset + a.size]
    anchor = _gunzip(anchor, f"{path}: anchor.xml: compressed but cannot be decompressed")
    _, parsed = _parse_document(anchor, f"{path}: anchor.xml", problems, len(raw),
                                lambda anchor_, n_l: _check_first_dense(path, anchor_, members, n_l, len(raw)))
    n_c, n_l = len(parsed.cnode_parent), len(parsed.locations)
    held = HeldBudget(path, len(raw))
    stored: dict[str, StoredRows] = {}
    for m, el in zip(parsed.metrics, parsed.metric_elements):
        if parsed.void.get(m.name):
            continue
        prefix = "ghost_" if el.get("viztype", "").upper() == "GHOST" else ""
        mid = el.get("id")
        idx, dat = members.get(f"{prefix}{mid}.index"), members.get(f"{prefix}{mid}.data")
        if idx is None or dat is None:
            problems.append(f"{path}: metric {m.name!r} (id {mid}) has no data members; read as zeros")
            continue
        check_one_dense_metric(path, n_c, n_l, len(raw), ONE_METRIC_RATIO, ONE_METRIC_FLOOR)
        where = f"{path}: metric {m.name!r}"
        rows, source = read_metric(raw, idx, dat, parsed.dtypes[m.name], n_c, n_l, where, problems, held)
        positions = parsed.inclusive_positions if parsed.inclusive[m.name] else parsed.exclusive_positions
        parent = parsed.cnode_parent if parsed.inclusive[m.name] and m.aggregation == "sum" else None
        if isinstance(source, Compressed):  # decoded here to be checked, kept compressed (see CompressedRows)
            lazy = CompressedRows(source, rows, positions, parent, n_l)
            got = lazy.load()
            if got is not None:
                check_finite(m.name, got)
                held.take(got, m.name)  # the values a pass over the metrics decodes again
                lazy.nbytes = got.nbytes
                stored[m.name] = lazy
            del got
            continue
        got = rows_of(rows, source, positions, parent)
        del source
        if got is not None:
            check_finite(m.name, got)
            held.take(got, m.name)
            stored[m.name] = got
    # every caller's pass over the metrics builds each one dense: their work is bounded as HDF5's memory is
    check_dense_size(path, n_c, n_l, len(stored), len(raw))
    return _cube_from_anchor(parsed, stored, problems)


def _check_first_dense(path, parsed: _Anchor, members: dict, n_l: int, file_bytes: int) -> None:
    """The check the loop over the metrics makes first (its first metric with data members), made before the
    locations are built: a file refused for its size is refused before it costs them."""
    for m, el in zip(parsed.metrics, parsed.metric_elements):
        if parsed.void.get(m.name):
            continue
        prefix = "ghost_" if el.get("viztype", "").upper() == "GHOST" else ""
        mid = el.get("id")
        if members.get(f"{prefix}{mid}.index") is not None and members.get(f"{prefix}{mid}.data") is not None:
            check_one_dense_metric(path, len(parsed.cnode_parent), n_l, file_bytes, ONE_METRIC_RATIO, ONE_METRIC_FLOOR)
            return


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
    root, parsed = _parse_document(raw, where, problems, len(raw))
    n_c, n_l = len(parsed.cnode_parent), len(parsed.locations)
    sev = root.find("severity")
    by_id = {el.get("id"): m for m, el in zip(parsed.metrics, parsed.metric_elements)}
    rows: dict[str, dict[int, np.ndarray]] = {}  # nonzero rows only, as float64 (a "0 " is 2 bytes of text)
    for matrix in sev.findall("matrix") if sev is not None else []:
        m = by_id.get(matrix.get("metricId"))
        if m is None:
            continue
        check_one_dense_metric(path, n_c, n_l, len(raw), ONE_METRIC_RATIO, ONE_METRIC_FLOOR)
        got = rows.setdefault(m.name, {})
        for row in matrix.findall("row"):
            c = _int_attr(row, "cnodeId", where)
            if not 0 <= c < n_c:
                raise CubeFormatError(f"{where}: <matrix metricId={matrix.get('metricId')}> row for unknown cnode {c}")
            try:
                nums = np.array((row.text or "").split(), np.float64)
            except ValueError as e:
                raise CubeFormatError(f"{where}: metric {m.name!r} row cnodeId={c}: {e}") from None
            if len(nums) != n_l:
                raise CubeFormatError(f"{where}: metric {m.name!r} row cnodeId={c} has {len(nums)} values, {n_l} threads")
            got.pop(c, None)  # a repeated row replaces the earlier one
            if nums.any():
                got[c] = nums
    stored = {}
    budget = HeldBudget(path, len(raw))
    for name, by_cnode in rows.items():
        cn = np.array(sorted(by_cnode), np.int64)
        held = StoredRows.nonzero(cn, np.array([by_cnode[c] for c in cn.tolist()], np.float64).reshape(cn.size, n_l))
        if held is not None:
            check_finite(name, held)
            budget.take(held, name)
            stored[name] = held
    # every caller's pass over the metrics builds each one dense: their work is bounded as HDF5's memory is
    check_dense_size(path, n_c, n_l, len(stored), len(raw))
    return _cube_from_anchor(parsed, stored, problems)


def _cube_from_anchor(parsed: _Anchor, stored: dict, problems: list[str]) -> Cube:
    """The cube of a parsed anchor and its values' nonzero rows (both readers end here)."""
    cube = Cube(
        parsed.metrics,
        parsed.regions,
        parsed.cnode_parent,
        parsed.cnode_region,
        parsed.locations,
        {},
        parsed.attrs,
        cnode_line=parsed.cnode_line,
        cnode_file=parsed.cnode_file,
        strict=False,
    )
    cube.problems = problems
    cube.values = RowValues(stored, [m.name for m in parsed.metrics], (cube.n_cnodes, cube.n_locations))
    return cube


def _open_bytes(path: Path) -> tuple[bytes, list[str]]:
    problems: list[str] = []
    try:
        if path.exists() and not path.is_file():  # a FIFO would block, a device never end
            raise CubeFormatError(f"{path}: not a regular file")
        raw = path.read_bytes()
    except OSError as e:
        raise CubeFormatError(f"{path}: cannot read: {e.strerror or e}") from None
    data = _gunzip(raw, f"{path}: gzip-compressed file cannot be decompressed")
    if data is not raw:
        problems.append(f"{path}: the archive is gzip-compressed; cubelib/CubeGUI cannot open such a file")
    return data, problems


#: a gzip-compressed archive or anchor inflates to at most GZIP_RATIO times its size plus GZIP_FLOOR (XML and
#: values compress 5 to 20 times; a 2.8 MB bomb asked for 5 GB)
GZIP_RATIO = 64
GZIP_FLOOR = 64 << 20


def _gunzip(data: bytes, failure: str) -> bytes:
    """``data``, decompressed if it is gzip-compressed; ``failure`` starts the message if it cannot be."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return inflate(data, gzip_cap(len(data), GZIP_RATIO, GZIP_FLOOR))
    except InflateError as e:
        raise CubeFormatError(f"{failure}: {e}") from None


def _parse_document(data: bytes, where: str, problems: list[str], file_bytes: int,
                    before_locations=None) -> tuple[ET.Element, _Anchor]:
    """The XML root and what the reader needs of it (metrics, program, system); at most
    :func:`~analyzer.cube.cube_xml.max_metrics` metrics for a file of ``file_bytes``.  ``before_locations(anchor,
    n_locations)`` is called once the system tree is checked, before its locations are built."""
    limit = cube_xml.max_metrics(file_bytes)
    try:
        root, cnodes = _parse_xml(data, where, problems, limit)
    except TooManyMetrics:
        bound = f"max({cube_xml.MAX_METRICS_FLOOR}, one per {cube_xml.BYTES_PER_METRIC} bytes)"
        raise CubeFormatError(f"{where}: declares more than {limit} metrics, more than this reader takes from a "
                              f"file of {file_bytes} bytes ({bound}); a profile has hundreds at most") from None
    return root, _parse_anchor(root, cnodes, where, problems, before_locations)


_BARE_AMP = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)")


def _parse_xml(data: bytes, where: str, problems: list[str], metric_limit: int) -> tuple[ET.Element, Cnodes]:
    try:
        return parse_xml(data, metric_limit)
    except ET.ParseError as e:
        line, col = e.position
        msg = re.sub(r": line \d+, column \d+$", "", str(e.msg))
        first = f"{where}: XML syntax error at line {line}, column {col}: {msg}"
    # cubelib's own scanner tolerates a bare '&' in text (its test files have them)
    fixed = _BARE_AMP.sub(b"&amp;", data)
    if fixed != data:
        try:
            parsed = parse_xml(fixed, metric_limit)
        except ET.ParseError:
            pass
        else:
            problems.append(f"{where}: unescaped '&' read as text (not well-formed XML)")
            return parsed
    raise CubeFormatError(first)


class _Anchor:
    """What :func:`_parse_anchor` extracts from ``anchor.xml``."""

    def __init__(self):
        self.attrs: dict[str, str] = {}
        #: per <region> of the program: its attributes id, mod, begin, end and the text of its first name,
        #: paradigm, role and descr (None where it has none)
        self.regions: list[list] = []
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
    return _int_of(el.get(name), el.tag, name, where, default)


def _int_of(val: str | None, tag: str, name: str, where: str, default=None) -> int:
    if val is None:
        if default is not None:
            return default
        raise CubeFormatError(f"{where}: <{tag}> lacks the {name} attribute")
    try:
        return int(val)
    except ValueError:
        raise CubeFormatError(f"{where}: <{tag} {name}={val!r}> is not an integer") from None


def _text(el: ET.Element, tag: str) -> str:
    return (el.findtext(tag) or "").strip()


def _name(el: ET.Element, tag: str) -> str:
    """A name as written (:func:`analyzer.cube.cube_xml.name_of`)."""
    return name_of(el.findtext(tag) or "")


def _parse_anchor(root: ET.Element, cnodes: Cnodes, where: str, problems: list[str], before_locations=None) -> _Anchor:
    if root.tag != "cube":
        raise CubeFormatError(f"{where}: root element is <{root.tag}>, expected <cube>")
    out = _Anchor()
    out.attrs = dict(cnodes.attrs)
    metrics_el = root.find("metrics")
    program = root.find("program")
    system = root.find("system")
    for tag, el in (("metrics", metrics_el), ("program", program), ("system", system)):
        if el is None:
            raise CubeFormatError(f"{where}: no <{tag}> section")
    _parse_metrics(metrics_el, None, out, where, problems)
    _parse_program(program, cnodes, out, where)
    out.locations = _parse_system(system, where, lambda n: before_locations and before_locations(out, n))
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
            display_name=_name(el, "disp_name") or name,
            parent=parent,
            unit=_text(el, "uom"),
            description=_name(el, "descr"),
            diagnosis=diagnosis,
            dtype="INTEGER" if is_int else "FLOAT",
            url=_text(el, "url"),
            aggregation=agg,
        )
        if name in out.dtypes:  # a dict: a scan of the metrics so far was quadratic (17,778 metrics took 10 s)
            raise CubeFormatError(f"{mwhere}: unique name used twice")
        out.metrics.append(info)
        out.metric_elements.append(el)
        out.dtypes[name] = code
        out.inclusive[name] = mtype == "INCLUSIVE"
        out.void[name] = _text(el, "val").upper() == "VOID"
        _parse_metrics(el, name, out, where, problems)


def _parse_program(program: ET.Element, cnodes: Cnodes, out: _Anchor, where: str):
    if cnodes.region_error:
        raise CubeFormatError(f"{where}: {cnodes.region_error}")
    rids = np.frombuffer(cnodes.region_ids, np.int64)  # per region, in document order
    valid = np.flatnonzero(rids != NO_REGION)
    by_id = valid[np.argsort(rids[valid], kind="stable")]  # regions by id (then document order)
    later = by_id[1:][rids[by_id[1:]] == rids[by_id[:-1]]]
    big = sorted(cnodes.region_big.values())
    twice = [int(rids[later.min()])] if later.size else [a for a, b in zip(big, big[1:]) if a == b]
    if twice:
        raise CubeFormatError(f"{where}: region id {twice[0]} defined twice")
    out.regions = cnodes.regions
    region_keys = rids[by_id]
    if cnodes.error:
        raise CubeFormatError(f"{where}: {cnodes.error}")
    n = len(cnodes.ids)
    if n == 0:
        raise CubeFormatError(f"{where}: <program> has no <cnode>")
    ids = np.frombuffer(cnodes.ids, np.int64)  # in document order: depth-first pre-order
    up = np.frombuffer(cnodes.up, np.int64)  # the record of each one's parent, -1 for a root
    order = np.argsort(ids, kind="stable")
    later = order[1:][ids[order[1:]] == ids[order[:-1]]]  # second and later records of an id
    if later.size:
        raise CubeFormatError(f"{where}: cnode id {ids[later.min()]} used twice")
    callee = np.frombuffer(cnodes.callee, np.int64)
    at = np.minimum(np.searchsorted(region_keys, callee), max(0, region_keys.size - 1))
    known = (region_keys[at] == callee) if region_keys.size else np.zeros(n, bool)
    if not known.all():
        i = int(np.flatnonzero(~known)[0])
        shown = cnodes.callee_text(i) if callee[i] == NO_REGION else int(callee[i])
        raise CubeFormatError(f"{where}: cnode {ids[i]}: calleeId {shown} is not a region id")
    if not np.array_equal(ids[order], np.arange(n)):
        missing = np.setdiff1d(np.arange(n), ids)[:5].tolist()
        raise CubeFormatError(
            f"{where}: cnode ids are not dense 0..{n - 1} (missing {missing}); cubelib crashes on such files"
        )
    out.cnode_parent = np.empty(n, np.int64)
    out.cnode_parent[ids] = np.where(up >= 0, ids[up], -1)
    out.cnode_region = np.empty(n, np.int64)
    out.cnode_region[ids] = by_id[at]
    out.cnode_line = np.empty(n, np.int64)
    out.cnode_line[ids] = np.frombuffer(cnodes.line, np.int64)
    out.cnode_file = [""] * n
    for k, mod in cnodes.mods.items():
        out.cnode_file[ids[k]] = mod
    out.exclusive_positions = ids.copy()  # ids in depth-first pre-order (EXCLUSIVE row positions)
    # sibling-block order (INCLUSIVE row positions): each root, then for every node (depth first) all its
    # children at once: a child sorts by its parent's place in pre-order, after that parent's own root
    pre = np.arange(n)
    out.inclusive_positions = ids[np.lexsort((pre, np.where(up >= 0, 2 * up + 1, 2 * pre)))]


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


def _parse_system(system: ET.Element, where: str, before_build=None) -> list[LocationInfo]:
    """The locations by Id.  The tree is walked twice: first for its Ids and errors, then, after
    ``before_build(n_locations)``, for the records (a reader refusing a file for its size refuses it before
    building them: 151,913 locations of 50 bytes each took 148 MiB)."""
    ids = array("q")
    big: dict[int, int] = {}  # position -> an Id beyond 64 bits
    try:
        for lid, *_ in _system_walk(system, where):
            if -(1 << 63) <= lid < 1 << 63:
                ids.append(lid)
            else:
                big[len(ids)] = lid
                ids.append(0)
    except CubeFormatError:
        _first_twice(ids, big, where)  # the walk met that one first
        raise
    _first_twice(ids, big, where)
    n = len(ids)
    if n == 0:
        raise CubeFormatError(f"{where}: the system tree has no locations")
    got = np.frombuffer(ids, np.int64)
    if big or not np.array_equal(np.sort(got), np.arange(n)):
        small = np.delete(got, list(big)) if big else got
        missing = np.setdiff1d(np.arange(n), small)[:5].tolist()
        raise CubeFormatError(
            f"{where}: location Ids are not dense 0..{n - 1} (missing {missing}); cubelib crashes on such files"
        )
    del got
    if before_build is not None:
        before_build(n)
    out: list = [None] * n
    for lid, *fields in _system_walk(system, where):
        out[lid] = LocationInfo(*fields)
    return out


def _first_twice(ids: array, big: dict[int, int], where: str) -> None:
    """The error for the first Id in walk order that an earlier location has, if one has."""
    got = np.frombuffer(ids, np.int64)
    if big:  # beyond 64 bits: rare, compared as Python ints
        seen: set[int] = set()
        for k, lid in enumerate(got.tolist()):
            lid = big.get(k, lid)
            if lid in seen:
                raise CubeFormatError(f"{where}: location Id {lid} used twice")
            seen.add(lid)
        return
    order = np.argsort(got, kind="stable")
    later = order[1:][got[order[1:]] == got[order[:-1]]]
    if later.size:
        raise CubeFormatError(f"{where}: location Id {got[later.min()]} used twice")


def _system_walk(system: ET.Element, where: str):
    """Every location of the system tree, in document order, as ``(Id, machine, node, rank, thread, name,
    process_name)`` (the fields of :class:`LocationInfo`)."""

    # CUBE4 style: systemtreenode* -> locationgroup -> location
    def walk(el: ET.Element, machine: str | None, node: str | None):
        name = _name(el, "name")
        cls = _text(el, "class").lower()
        if cls == "machine" or machine is None:
            machine = name if cls == "machine" or machine is None else machine
        if cls == "node":
            node = name
        for g in el.findall("locationgroup"):
            rank = _int_text(g, "rank", where)
            gname = _name(g, "name")
            for loc in g.findall("location"):
                yield (_sys_id(loc, where), machine or name, node or name, rank, _int_text(loc, "rank", where),
                       _name(loc, "name"), gname)
        for child in el.findall("systemtreenode"):
            yield from walk(child, machine, node)

    for stn in system.findall("systemtreenode"):
        yield from walk(stn, None, None)
    # CUBE3 style (also accepted inside a CUBE4 anchor): machine -> node -> process -> thread
    for m in system.findall("machine"):
        for nd in m.findall("node"):
            for p in nd.findall("process"):
                rank = _int_text(p, "rank", where)
                for t in p.findall("thread"):
                    yield (_sys_id(t, where), _name(m, "name"), _name(nd, "name"), rank, _int_text(t, "rank", where),
                           _name(t, "name"), _name(p, "name"))
