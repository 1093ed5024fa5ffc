"""The CUBE XML (a ``.cubex`` anchor, a CUBE3 file) parsed into what the readers read, compactly.

:func:`parse_xml` builds a tree of tuples (:class:`Element`) of only the elements the readers look up
(:data:`READ`), without the indentation between them, and keeps the call tree, the regions and the cube's
attributes as arrays and records (:class:`Cnodes`) instead of elements: an ElementTree element cost hundreds of
bytes, so a file of many small elements took tens of times its size as a tree.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from array import array

from .dimensions import RegionInfo


#: the elements the reader reads, by the element they are in (the root is always built): any other element
#: is not built, nor anything inside it, for no lookup of the reader reaches into it (a file of 2 million
#: ``<x/>`` took 176 MiB as a tree)
READ = {
    "cube": {"attr", "metrics", "program", "system", "severity"},
    "metrics": {"metric"},
    "metric": {"metric", "uniq_name", "disp_name", "dtype", "uom", "val", "url", "descr", "attr"},
    "program": {"region", "cnode"},
    "region": {"name", "paradigm", "role", "descr"},
    "cnode": {"cnode"},
    "system": {"systemtreenode", "machine"},
    "systemtreenode": {"name", "class", "locationgroup", "systemtreenode"},
    "locationgroup": {"name", "rank", "location"},
    "location": {"name", "rank"},
    "machine": {"name", "node"},
    "node": {"name", "process"},
    "process": {"name", "rank", "thread"},
    "thread": {"name", "rank"},
    "severity": {"matrix"},
    "matrix": {"row"},
}


class Cnodes:
    """The call tree as the anchor lists it, in document order (depth-first pre-order), kept as arrays while
    the XML is parsed: an element per cnode took hundreds of bytes (300,000 cnodes in 10 MB, 300 MiB); and the
    cube's attributes (``<attr>`` of the root) and the regions, as lists (an element with an attribute took
    400 bytes: 400,000 ``<region id="N"/>`` in 8 MB took 336 MiB)."""

    def __init__(self):
        self.attrs: dict[str, str] = {}
        self.regions: list[RegionInfo] = []  # the program's, in document order
        self.region_ids = array("q")  # their ids (NO_REGION: beyond 64 bits, in region_big)
        self.region_big: dict[int, int] = {}
        self.region_error = ""  # the first region attribute that is not an integer
        self.ids, self.callee, self.line, self.up = array("q"), array("q"), array("q"), array("q")
        self.mods: dict[int, str] = {}  # record -> call-site file, where one is given
        self.error = ""  # the first attribute that is not an integer
        self.texts: dict[int, str] = {}

    def add_region(self, raw: list) -> None:
        """A region from its attributes id, mod, begin, end and the text of its first name, paradigm, role and
        descr (None where it has none)."""
        rid, mod, begin, end, name, paradigm, role, descr = raw
        k = len(self.regions)
        rid = self._region_int(rid, "id", None)
        self.region_ids.append(rid if NO_REGION < rid < 1 << 63 else NO_REGION)
        if not NO_REGION < rid < 1 << 63:
            self.region_big[k] = rid
        self.regions.append(RegionInfo(
            name=name_of(name or ""),
            file=mod,
            begin_line=self._region_int(begin, "begin", -1),
            end_line=self._region_int(end, "end", -1),
            paradigm=(paradigm or "").strip() or "unknown",
            role=(role or "").strip() or "unknown",
            description=name_of(descr or ""),
        ))

    def _region_int(self, val, name: str, default) -> int:
        if val is None:
            if default is None and not self.region_error:
                self.region_error = f"<region> lacks the {name} attribute"
            return -1 if default is None else default
        try:
            return int(val)
        except ValueError:
            if not self.region_error:
                self.region_error = f"<region {name}={val!r}> is not an integer"
            return -1

    def callee_text(self, k: int) -> str:
        return self.texts.get(k, "?")

    def add(self, attrs: dict, up: int) -> int:
        k = len(self.ids)
        self.ids.append(self._int(attrs, "id", None, -1))
        self.callee.append(self._int(attrs, "calleeId", None, NO_REGION))
        if self.callee[-1] == NO_REGION and attrs.get("calleeId") is not None:
            self.texts[k] = attrs["calleeId"]  # beyond 64 bits: shown as written
        self.line.append(self._int(attrs, "line", -1, -1))
        self.up.append(up)
        mod = attrs.get("mod", "")
        if mod:
            self.mods[k] = mod
        return k

    def _int(self, attrs: dict, name: str, default, out_of_range: int) -> int:
        val = attrs.get(name)
        if val is None:
            if default is None and not self.error:
                self.error = f"<cnode> lacks the {name} attribute"
            return default if default is not None else out_of_range
        try:
            v = int(val)
        except ValueError:
            if not self.error:
                self.error = f"<cnode {name}={val!r}> is not an integer"
            return out_of_range
        return v if -(1 << 63) < v < (1 << 63) else out_of_range  # such an id is no cnode's, a line none


NO_REGION = -(1 << 63)
REGION_FIELDS = {"name": 4, "paradigm": 5, "role": 6, "descr": 7}


class Element(tuple):
    """A parsed element, ``(tag, attributes as (key, value, ...), text or None, children)``, with the part of
    ElementTree's API the readers use: a third of an ElementTree element's memory (one with an attribute took
    400 bytes)."""

    __slots__ = ()

    @property
    def tag(self) -> str:
        return self[0]

    @property
    def text(self) -> str | None:
        return self[2]

    def get(self, key: str, default=None):
        a = self[1]
        for i in range(0, len(a), 2):
            if a[i] == key:
                return a[i + 1]
        return default

    def find(self, tag: str):
        for child in self[3]:
            if child[0] == tag:
                return child
        return None

    def findall(self, tag: str) -> list:
        return [child for child in self[3] if child[0] == tag]

    def findtext(self, tag: str) -> str | None:
        child = self.find(tag)
        return None if child is None else child[2] or ""


#: a file may declare at most max(MAX_METRICS_FLOOR, its size / BYTES_PER_METRIC) metrics: each costs the reader
#: about 2 kB as Python objects while the smallest <metric> element is 80 bytes (101,893 of them in 8 MB took
#: 247 MiB in expert-diff).  A real profile has tens to a few hundred (Scalasca's scout.cubex 17-83, with many
#: hardware counters some hundreds), and a CUBE4 metric with values brings two archive members, 1 kB of headers
#: at least, so no cube whose metrics hold values comes near one per 512 bytes
MAX_METRICS_FLOOR = 16384
BYTES_PER_METRIC = 512


class TooManyMetrics(ValueError):
    """The anchor declares more metrics than :func:`max_metrics` allows; raised while parsing, before the rest
    is built."""


def max_metrics(file_bytes: int) -> int:
    return max(MAX_METRICS_FLOOR, file_bytes // BYTES_PER_METRIC)


class TreeBuilder:
    """The parser's target: builds :class:`Element` tuples of what the reader reads (:data:`READ`), without the
    text runs that are only
    whitespace holding a newline (the indentation between elements: a str object for each cost a third of an
    indented anchor's tree, 84 -> 48 MiB for 8 MB of XML), and with the call tree kept as arrays
    (:class:`Cnodes`).  The reader never reads such a run: tails are not read, and a name that is only such
    whitespace reads as empty (``cubex_read._name``)."""

    def __init__(self, metric_limit: int | None = None):
        self._metric_limit = metric_limit
        self._n_metrics = 0
        self._elements: list[list] = []  # the built elements open: [tag, attributes, text, children]
        self._root = None
        self._run: list[str] = []
        self._open: list[str | None] = []  # per open element: its tag, None where it is not built
        self._after_unbuilt = False  # the next run is the tail of an element not built
        self._cnode_stack: list[int] = []
        self._region: list = []  # the region open: see Cnodes.add_region
        self._sections: set[str] = set()  # the root's sections seen (metrics, program, system, severity)
        self.cnodes = Cnodes()

    def data(self, text):
        self._run.append(text)

    def _flush(self):
        if self._run:
            text = "".join(self._run) if len(self._run) > 1 else self._run[0]
            self._run.clear()
            if self._after_unbuilt or (self._open and self._open[-1] in (None, "cnode", "region")):
                return  # the text or tail of an element not built: never read
            if text.isspace() and "\n" in text:
                return
            if self._open and isinstance(self._open[-1], int):  # the text of a region's name, role...
                region = self._region
                if not region[self._open[-1]]:  # its text: what precedes its first child
                    region[self._open[-1]] = text
                return
            element = self._elements[-1]
            if element[2] is None and not element[3]:  # its text; after a child, a tail (never read)
                element[2] = text

    def start(self, tag, attrs):
        self._flush()
        self._after_unbuilt = False
        if self._open:
            parent = self._open[-1]
            if tag not in READ.get(parent, ()) or (len(self._open) == 1 and tag in self._sections):
                # (None: inside an element not built; the reader reads the first of each section)
                self._open.append(None)
                return None
            if len(self._open) == 1 and tag == "attr":  # a later one of the same key replaces it
                self.cnodes.attrs[attrs.get("key", "")] = attrs.get("value", "")
                self._open.append(None)
                return None
            if len(self._open) == 1:
                self._sections.add(tag)
            if tag == "region":
                self._region = [attrs.get("id"), attrs.get("mod", ""), attrs.get("begin"), attrs.get("end"),
                                None, None, None, None]
                self._open.append("region")
                return None
            if parent == "region":  # name, paradigm, role, descr: the first of each gives its text
                field = REGION_FIELDS[tag]
                region = self._region
                first = region[field] is None
                if first:
                    region[field] = ""
                self._open.append(field if first else None)
                return None
            if tag == "cnode":
                up = self._cnode_stack[-1] if self._cnode_stack else -1
                self._cnode_stack.append(self.cnodes.add(attrs, up))
                self._open.append("cnode")
                return None
        if tag == "metric" and self._metric_limit is not None:
            self._n_metrics += 1
            if self._n_metrics > self._metric_limit:
                raise TooManyMetrics(self._metric_limit)
        self._open.append(tag)
        flat = tuple(v for item in attrs.items() for v in item) if attrs else ()
        self._elements.append([tag, flat, None, []])

    def end(self, tag):
        self._flush()
        kind = self._open.pop()
        if kind is None or kind in ("cnode", "region") or isinstance(kind, int):
            if kind == "cnode":
                self._cnode_stack.pop()
            elif kind == "region":
                self.cnodes.add_region(self._region)
            self._after_unbuilt = True
            return None
        self._after_unbuilt = False
        tag, attrs, text, children = self._elements.pop()
        element = Element((tag, attrs, text, tuple(children)))
        if self._elements:
            self._elements[-1][3].append(element)
        else:
            self._root = element

    def close(self):
        return self._root


def name_of(t: str) -> str:
    """A name as written: only the line breaks and indentation a pretty-printer puts around it are dropped
    (whitespace at both ends, each run holding a newline), so every character of ``" a\\rb "`` survives."""
    core = t.strip()
    if core == t:
        return t
    head, tail = t[: len(t) - len(t.lstrip())], t[len(t.rstrip()):]
    if ("\n" in t and not core) or ("\n" in head and "\n" in tail):
        return core
    return t


def parse_xml(data: bytes, metric_limit: int | None = None) -> tuple[Element, Cnodes]:
    """The root element and the call tree; :class:`TooManyMetrics` once more than ``metric_limit`` metrics
    are read."""
    builder = TreeBuilder(metric_limit)
    parser = ET.XMLParser(target=builder)
    parser.feed(data)
    return parser.close(), builder.cnodes
