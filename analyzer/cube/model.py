"""The severity cube: performance properties x call paths x locations.

A :class:`Cube` holds the three dimensions of an analysis result and its
values:

* the **metric tree** (:class:`MetricInfo`, parents before children),
* the **call tree** (``cnode_parent`` / ``cnode_region`` arrays over
  :class:`RegionInfo` regions; node ids are the row index of every value array),
* the **system tree** (one :class:`LocationInfo` per location, i.e. per
  thread; machine / node / process are attributes of the location),
* **values**: per metric a dense float64 array ``[n_cnodes, n_locations]``,
  *inclusive along the metric tree* (a parent's value contains its
  children's) and *exclusive along the call tree* (charged to one call path).
  These are CUBE's and Scalasca's conventions.

The cube is the hub between the analyzer and every output.  It knows none of
its file formats: the functions of the format modules take a cube (CUBE4
``.cubex``: :mod:`analyzer.cube.cubex_write`, :mod:`~analyzer.cube.cubex_read`;
the JSON summary: :mod:`analyzer.cube.json_summary`; HDF5:
:mod:`analyzer.cube.hdf5`), all available from :mod:`analyzer.cube`, e.g.
``write_cubex(cube, path)``.  Readers return :class:`Cube` objects too, so a
file written by Scalasca or Score-P can be queried the same way as our own.
``docs/cube.md`` describes the file formats.  Comparing cubes by identity is
:mod:`analyzer.cube.compare`.

The dimension records and the cube's errors are in :mod:`.dimensions`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable, Mapping

import numpy as np

from .dimensions import (
    AGGREGATIONS,
    DTYPES,
    UNITS,
    CubeError,
    CubeFormatError,
    LocationInfo,
    MetricInfo,
    RegionInfo,
    region_strings,
)

__all__ = [
    "Cube",
    "CubeError",
    "CubeFormatError",
    "MetricInfo",
    "RegionInfo",
    "LocationInfo",
    "region_strings",
]

class CubeValues(dict):
    """``metric name -> float64 [n_cnodes, n_locations]``.

    A metric of the cube without stored values reads as a read-only array of
    zeros (no memory is allocated for it); an unknown name raises ``KeyError``.
    """

    def __init__(self, data, metric_names, shape):
        super().__init__(data)
        self._names = frozenset(metric_names)
        self._shape = shape

    def __missing__(self, name):
        if name not in self._names:
            raise KeyError(f"no metric {name!r} in this cube; metrics: {sorted(self._names)}")
        return np.broadcast_to(np.zeros((), np.float64), self._shape)


_NAME_RE = re.compile(r"[a-z][a-z0-9_.\-]*")
#: the longest call path :attr:`Cube.callpaths` spells out; a longer one is a digest and its last names
MAX_CALLPATH = 4096


# --------------------------------------------------------------------------
# The cube
# --------------------------------------------------------------------------
class Cube:
    """Severity cube; see the module docstring for the value semantics.

    Args:
        metrics: the metric tree, parents before their children.
        regions: regions by id.
        cnode_parent: int array, parent cnode of every cnode, -1 for the root.
        cnode_region: int array, region id of every cnode.
        locations: locations by id (= column of every value array).
        values: metric name -> array ``[n_cnodes, n_locations]``; metrics left
            out are all zero.
        attrs: free-form key/value facts (written as CUBE ``<attr>``).
        cnode_line: optional int array, call-site line of every cnode (-1 unknown).
        cnode_file: optional list of call-site file names ("" unknown).
        strict: enforce our naming conventions (lower-case unique names, units
            sec/occ/bytes, one root cnode, unique (rank, thread)).  Readers of
            files from other tools pass ``False``.

    Raises:
        CubeError: with a message naming the offending metric/cnode/location.
    """

    def __init__(
        self,
        metrics: list[MetricInfo],
        regions: list[RegionInfo],
        cnode_parent,
        cnode_region,
        locations: list[LocationInfo],
        values: Mapping[str, np.ndarray] | None = None,
        attrs: Mapping[str, str] | None = None,
        *,
        cnode_line=None,
        cnode_file: list[str] | None = None,
        strict: bool = True,
    ):
        self.metrics: list[MetricInfo] = list(metrics)
        self.regions: list[RegionInfo] = list(regions)
        self.locations: list[LocationInfo] = list(locations)
        self.attrs: dict[str, str] = {str(k): str(v) for k, v in (attrs or {}).items()}
        #: notes from a reader: what in the file could not be represented
        self.problems: list[str] = []
        #: properties left out because the trace cannot measure them (``patterns.Pattern.unmeasured``):
        #: name -> (MetricInfo, reason), in metric-tree order; set by the analysis, reports print "n/a"
        self.not_measured: dict[str, tuple[MetricInfo, str]] = {}
        self.strict = strict

        self.cnode_parent = self._int_array(cnode_parent, "cnode_parent")
        self.cnode_region = self._int_array(cnode_region, "cnode_region")
        n = self.cnode_parent.shape[0]
        if self.cnode_region.shape[0] != n:
            raise CubeError(f"cnode_region has {self.cnode_region.shape[0]} entries, cnode_parent has {n}")
        self.cnode_line = (
            np.full(n, -1, np.int64) if cnode_line is None else self._int_array(cnode_line, "cnode_line")
        )
        if self.cnode_line.shape[0] != n:
            raise CubeError(f"cnode_line has {self.cnode_line.shape[0]} entries, expected {n}")
        self.cnode_file = [""] * n if cnode_file is None else [str(f) for f in cnode_file]
        if len(self.cnode_file) != n:
            raise CubeError(f"cnode_file has {len(self.cnode_file)} entries, expected {n}")

        self._index = {}
        self._validate_metrics()
        self._validate_calltree()
        self._validate_locations()
        self.values = CubeValues(self._validate_values(values or {}), self._index, (n, len(self.locations)))
        self._paths: list[str] | None = None
        self._unique_paths: bool | None = None
        self._children: list[list[int]] | None = None

    @classmethod
    def from_arrays(
        cls,
        metrics: list[MetricInfo],
        regions: list[RegionInfo],
        cnode_parent,
        cnode_region,
        locations: list[LocationInfo],
        values,
        attrs: Mapping[str, str] | None = None,
        **kwargs,
    ) -> "Cube":
        """Build a cube from a dense ``[n_metrics, n_cnodes, n_locations]`` array
        (metric order as in ``metrics``) or a name -> array mapping."""
        if isinstance(values, np.ndarray):
            if values.ndim != 3 or values.shape[0] != len(metrics):
                raise CubeError(
                    f"values array has shape {values.shape}; expected ({len(metrics)}, n_cnodes, n_locations)"
                )
            values = {m.name: values[i] for i, m in enumerate(metrics)}
        return cls(metrics, regions, cnode_parent, cnode_region, locations, values, attrs, **kwargs)

    # ---------------------------------------------------------------- validation
    @staticmethod
    def _int_array(a, what: str) -> np.ndarray:
        arr = np.asarray(a)
        if arr.ndim != 1:
            raise CubeError(f"{what} must be a 1-d integer array, got shape {arr.shape}")
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            if not np.all(np.equal(np.mod(arr, 1), 0)):
                raise CubeError(f"{what} must hold integers, got dtype {arr.dtype}")
        return arr.astype(np.int64)

    def _validate_metrics(self):
        for i, m in enumerate(self.metrics):
            if not isinstance(m, MetricInfo):
                raise CubeError(f"metric #{i} is a {type(m).__name__}, not a MetricInfo")
            if not m.name:
                raise CubeError(f"metric #{i} has an empty unique name")
            if m.name in self._index:
                raise CubeError(f"metric #{i}: unique name {m.name!r} is used twice")
            if m.parent is not None:
                if m.parent not in self._index:
                    later = any(o.name == m.parent for o in self.metrics[i + 1 :])
                    raise CubeError(
                        f"metric {m.name!r}: parent {m.parent!r} "
                        + ("comes after its child; list parents first" if later else "does not exist")
                    )
            if m.dtype not in DTYPES:
                raise CubeError(f"metric {m.name!r}: dtype {m.dtype!r} is not one of {DTYPES}")
            if m.aggregation not in AGGREGATIONS:
                raise CubeError(f"metric {m.name!r}: aggregation {m.aggregation!r} is not one of {AGGREGATIONS}")
            if self.strict:
                if not _NAME_RE.fullmatch(m.name):
                    raise CubeError(
                        f"metric {m.name!r}: unique names are lower case ([a-z][a-z0-9_.-]*), as in Scalasca"
                    )
                if m.unit not in UNITS:
                    raise CubeError(f"metric {m.name!r}: unit {m.unit!r} is not one of {UNITS}")
            self._index[m.name] = i

    def _validate_calltree(self):
        parent, region = self.cnode_parent, self.cnode_region
        n = parent.shape[0]
        if n == 0:
            raise CubeError("the call tree is empty; a cube needs at least one (root) cnode")
        bad = np.flatnonzero((parent < -1) | (parent >= n) | (parent == np.arange(n)))
        if bad.size:
            c = int(bad[0])
            raise CubeError(f"cnode {c}: parent {int(parent[c])} is not a cnode id in [-1, {n}) other than itself")
        bad = np.flatnonzero((region < 0) | (region >= len(self.regions)))
        if bad.size:
            c = int(bad[0])
            raise CubeError(f"cnode {c}: region {int(region[c])} is not a region id in [0, {len(self.regions)})")
        roots = np.flatnonzero(parent == -1)
        if roots.size == 0:
            raise CubeError("the call tree has no root cnode (parent -1)")
        if self.strict and roots.size > 1:
            names = [self.regions[int(region[r])].name for r in roots[:5]]
            raise CubeError(
                f"the call tree has {roots.size} root cnodes (ids {roots[:5].tolist()}, regions {names}); "
                "a cube needs exactly one: add a synthetic root (e.g. the program) above them"
            )
        # every node must reach a root: depth by repeated parent lookup
        depth = self._depths()
        if depth is None:
            raise CubeError("the call tree has a cycle (a cnode is its own ancestor)")
        for i, r in enumerate(self.regions):
            if not isinstance(r, RegionInfo):
                raise CubeError(f"region #{i} is a {type(r).__name__}, not a RegionInfo")

    def _depths(self) -> np.ndarray | None:
        """Depth of every cnode (roots 0), or None if the parents form a cycle.

        Pointer jumping: each round adds the distance to the current ancestor
        and jumps to that ancestor's ancestor, so about log2(depth) vectorised
        rounds suffice (a chain 200,000 calls deep takes 18), never depth rounds.
        """
        parent = np.asarray(self.cnode_parent, np.int64)
        n = parent.shape[0]
        anc = parent.copy()
        depth = (anc >= 0).astype(np.int64)
        for _ in range(max(1, n).bit_length() + 1):
            live = np.flatnonzero(anc >= 0)
            if not live.size:
                self._depth = depth
                return depth
            a = anc[live]
            depth[live] += depth[a]
            anc[live] = anc[a]
        return None

    def _validate_locations(self):
        if not self.locations:
            raise CubeError("a cube needs at least one location")
        seen: dict[tuple[int, int], int] = {}
        where: dict[int, tuple[str, str]] = {}
        for i, loc in enumerate(self.locations):
            if not isinstance(loc, LocationInfo):
                raise CubeError(f"location {i} is a {type(loc).__name__}, not a LocationInfo")
            if loc.rank < 0 or loc.thread < 0:
                raise CubeError(f"location {i}: rank {loc.rank} and thread {loc.thread} must be >= 0")
            if not self.strict:
                continue
            key = (loc.rank, loc.thread)
            if key in seen:
                raise CubeError(f"locations {seen[key]} and {i} are both rank {loc.rank} thread {loc.thread}")
            seen[key] = i
            host = (loc.machine, loc.node)
            if where.setdefault(loc.rank, host) != host:
                raise CubeError(
                    f"location {i}: rank {loc.rank} is on {host[0]}/{host[1]} but another thread of it "
                    f"is on {where[loc.rank][0]}/{where[loc.rank][1]}"
                )

    def _validate_values(self, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        shape = (self.cnode_parent.shape[0], len(self.locations))
        out = {}
        for name, arr in values.items():
            if name not in self._index:
                raise CubeError(f"values given for unknown metric {name!r}; metrics: {list(self._index)}")
            a = np.ascontiguousarray(arr, dtype=np.float64)
            if a.shape != shape:
                raise CubeError(f"metric {name!r}: values have shape {a.shape}, expected {shape} (cnodes, locations)")
            if not np.all(np.isfinite(a)):
                c, loc = np.argwhere(~np.isfinite(a))[0]
                raise CubeError(f"metric {name!r}: value at cnode {c}, location {loc} is {a[c, loc]}")
            out[name] = a
        return out

    # ---------------------------------------------------------------- dimensions
    @property
    def n_cnodes(self) -> int:
        return int(self.cnode_parent.shape[0])

    @property
    def n_locations(self) -> int:
        return len(self.locations)

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def metric(self, name: str) -> MetricInfo:
        try:
            return self.metrics[self._index[name]]
        except KeyError:
            raise KeyError(f"no metric {name!r} in this cube; metrics: {self.metric_names}") from None

    def metric_children(self, name: str) -> list[str]:
        self.metric(name)
        return [m.name for m in self.metrics if m.parent == name]

    def metric_roots(self) -> list[str]:
        return [m.name for m in self.metrics if m.parent is None]

    def roots(self) -> list[int]:
        return np.flatnonzero(self.cnode_parent == -1).tolist()

    def children(self, cnode: int) -> list[int]:
        if self._children is None:
            kids: list[list[int]] = [[] for _ in range(self.n_cnodes)]
            for c, p in enumerate(self.cnode_parent.tolist()):
                if p >= 0:
                    kids[p].append(c)
            self._children = kids
        return self._children[cnode]

    def dfs_order(self) -> list[int]:
        """Cnode ids in depth-first pre-order, roots and children by ascending id."""
        order: list[int] = []
        stack = list(reversed(self.roots()))
        while stack:
            c = stack.pop()
            order.append(c)
            stack.extend(reversed(self.children(c)))
        return order

    def region_of(self, cnode: int) -> RegionInfo:
        return self.regions[int(self.cnode_region[cnode])]

    @property
    def callpaths(self) -> list[str]:
        """``main/foo/MPI_Recv`` for every cnode (index = cnode id).

        A path longer than :data:`MAX_CALLPATH` characters (a call tree
        thousands of calls deep), and every path below it, is
        ``…<digest>/<name>``: the digest is of the whole path, so the key is
        still the same in every cube of the same program, and the paths of a
        deep tree take linear, not quadratic, space.
        """
        if self._paths is None:
            paths: list[str | None] = [None] * self.n_cnodes
            digest: list = [None] * self.n_cnodes
            short = [False] * self.n_cnodes
            for c in self.dfs_order():
                name = self.regions[int(self.cnode_region[c])].name
                p = int(self.cnode_parent[c])
                h = hashlib.blake2b(digest_size=8) if p < 0 else digest[p].copy()
                h.update(("/" + name).encode("utf-8", "surrogatepass"))
                digest[c] = h
                path = name if p < 0 else f"{paths[p]}/{name}"
                short[c] = p >= 0 and (short[p] or len(path) > MAX_CALLPATH)  # below a digest, a digest too
                paths[c] = f"\u2026{h.hexdigest()}/{name}" if short[c] else path
            self._paths = paths  # type: ignore[assignment]
        return self._paths  # type: ignore[return-value]

    def callpath(self, cnode: int) -> str:
        if not 0 <= cnode < self.n_cnodes:
            raise IndexError(f"cnode {cnode} out of range [0, {self.n_cnodes})")
        return self.callpaths[cnode]

    def find_cnodes(self, path: str) -> list[int]:
        """Cnode ids whose call path is ``path`` (several when only the call site differs)."""
        return [c for c, p in enumerate(self.callpaths) if p == path]

    # ---------------------------------------------------------------- values
    def _reduce(self, name: str, arr: np.ndarray, axis) -> np.ndarray:
        agg = self.metric(name).aggregation
        if agg == "min":
            return arr.min(axis=axis)
        if agg == "max":
            return arr.max(axis=axis)
        return arr.sum(axis=axis)

    def total(self, name: str) -> float:
        """The metric's value over the whole run (call paths and locations)."""
        return float(self._reduce(name, self.values[name], None))

    def per_location(self, name: str) -> np.ndarray:
        """``[n_locations]``: the metric summed over all call paths."""
        return np.asarray(self._reduce(name, self.values[name], 0), dtype=np.float64)

    def per_cnode(self, name: str) -> np.ndarray:
        """``[n_cnodes]``: the metric summed over all locations (exclusive along the call tree)."""
        return np.asarray(self._reduce(name, self.values[name], 1), dtype=np.float64)

    def per_callpath(self, name: str, nonzero: bool = False) -> dict[str, float]:
        """Call path string -> value summed over locations, in cnode order (``nonzero``: only paths whose
        value is not 0).

        Cnodes that share a path string (same regions, different call sites)
        are combined.
        """
        agg = self.metric(name).aggregation
        paths = self.callpaths
        if self._unique_paths is None:
            self._unique_paths = len(set(paths)) == len(paths)
        if self._unique_paths:  # the common case: one cnode per path, no combining (and no Python loop)
            vals = self.per_cnode(name)
            if nonzero:
                keep = np.flatnonzero(vals).tolist()
                return dict(zip([paths[c] for c in keep], vals[keep].tolist()))
            return dict(zip(paths, vals.tolist()))
        if nonzero:
            return {p: v for p, v in self.per_callpath(name).items() if v != 0}
        out: dict[str, float] = {}
        for path, v in zip(paths, self.per_cnode(name).tolist()):
            if path in out:
                out[path] = min(out[path], v) if agg == "min" else max(out[path], v) if agg == "max" else out[path] + v
            else:
                out[path] = v
        return out

    def inclusive(self, name: str) -> np.ndarray:
        """``[n_cnodes, n_locations]`` inclusive along the call tree (a cnode plus its subtree)."""
        incl = np.array(self.values[name], dtype=np.float64, copy=True)
        agg = self.metric(name).aggregation
        depth = self._depth
        parent = self.cnode_parent
        for d in range(int(depth.max()), 0, -1):
            nodes = np.flatnonzero(depth == d)
            if agg == "sum":
                np.add.at(incl, parent[nodes], incl[nodes])
            elif agg == "min":
                np.minimum.at(incl, parent[nodes], incl[nodes])
            else:
                np.maximum.at(incl, parent[nodes], incl[nodes])
        return incl

    def exclusive_in_metric(self, name: str) -> np.ndarray:
        """The metric's own share: its values minus its children's (CUBE's
        "exclusive along the metric tree" view)."""
        own = np.array(self.values[name], dtype=np.float64, copy=True)
        if self.metric(name).aggregation != "sum":
            return own
        for child in self.metric_children(name):
            if self.metric(child).aggregation == "sum":
                own -= self.values[child]
        return own

    # ---------------------------------------------------------------- views
    def calltree_graph(self, metrics: Iterable[str] | str | None = None):
        """The call tree as a ``networkx.DiGraph`` (edge parent -> child).

        Node = cnode id with attributes ``region``, ``path``, ``file``,
        ``line`` (call-site line, else the region's first line), ``paradigm``,
        ``role``.  For every metric in ``metrics`` (a name, a list, or
        ``"all"``) two more: ``<metric>`` (the cnode's own value summed over
        locations) and ``<metric>.incl`` (inclusive along the call tree).
        """
        import networkx as nx

        names = self._metric_selection(metrics)
        g = nx.DiGraph(kind="calltree")
        paths = self.callpaths
        for c in range(self.n_cnodes):
            r = self.region_of(c)
            line = int(self.cnode_line[c]) if self.cnode_line[c] >= 0 else r.begin_line
            g.add_node(
                c,
                region=r.name,
                path=paths[c],
                file=self.cnode_file[c] or r.file,
                line=line,
                paradigm=r.paradigm,
                role=r.role,
            )
        for c, p in enumerate(self.cnode_parent.tolist()):
            if p >= 0:
                g.add_edge(p, c)
        for name in names:
            excl = self.per_cnode(name)
            incl = self._reduce(name, self.inclusive(name), 1)
            for c in range(self.n_cnodes):
                g.nodes[c][name] = float(excl[c])
                g.nodes[c][name + ".incl"] = float(incl[c])
        return g

    def system_graph(self, metrics: Iterable[str] | str | None = None):
        """The system tree as a ``networkx.DiGraph``: machine -> node -> process -> thread.

        Node keys are tuples: ``("machine", m)``, ``("node", m, n)``,
        ``("process", rank)``, ``("thread", rank, thread)``; every node has
        ``kind`` and ``name``; processes have ``rank``; threads ``rank``,
        ``thread`` and ``location`` (the value column).  For each metric in
        ``metrics`` every node gets ``<metric>``: the sum over its locations.
        """
        import networkx as nx

        names = self._metric_selection(metrics)
        g = nx.DiGraph(kind="system")
        per_loc = {name: self.per_location(name) for name in names}
        for i, loc in enumerate(self.locations):
            m = ("machine", loc.machine)
            n = ("node", loc.machine, loc.node)
            p = ("process", loc.rank)
            t = ("thread", loc.rank, loc.thread)
            g.add_node(m, kind="machine", name=loc.machine)
            g.add_node(n, kind="node", name=loc.node)
            g.add_node(p, kind="process", name=loc.group_name, rank=loc.rank)
            g.add_node(t, kind="thread", name=loc.thread_name, rank=loc.rank, thread=loc.thread, location=i)
            g.add_edge(m, n)
            g.add_edge(n, p)
            g.add_edge(p, t)
            for name in names:
                v = float(per_loc[name][i])
                g.nodes[t][name] = v
        # aggregate upwards (sum) for the inner nodes
        for name in names:
            for node in reversed(list(nx.topological_sort(g))):
                if g.nodes[node]["kind"] != "thread":
                    g.nodes[node][name] = float(sum(g.nodes[k][name] for k in g.successors(node)))
        return g

    def _metric_selection(self, metrics) -> list[str]:
        if metrics is None:
            return []
        if metrics == "all":
            return self.metric_names
        if isinstance(metrics, str):
            metrics = [metrics]
        names = list(metrics)
        for n in names:
            self.metric(n)
        return names

    def to_dataframe(self, metrics: Iterable[str] | str | None = "all"):
        """A tidy ``pandas.DataFrame``: one row per non-zero (metric, cnode, location) value.

        Columns: ``metric``, ``cnode``, ``callpath``, ``region``, ``location``,
        ``rank``, ``thread``, ``value`` (as stored: inclusive along the metric
        tree, exclusive along the call tree).  Needs pandas
        (``pip install expert-analyze[dataframe]``).
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Cube.to_dataframe() needs pandas, which is not installed: "
                "pip install pandas  (or: pip install 'expert-analyze[dataframe]')"
            ) from None
        names = self._metric_selection(metrics)
        cols: dict[str, list] = {k: [] for k in ("metric", "cnode", "location", "value")}
        for name in names:
            c, loc = np.nonzero(self.values[name])
            cols["metric"].append(np.full(c.size, name, dtype=object))
            cols["cnode"].append(c)
            cols["location"].append(loc)
            cols["value"].append(np.asarray(self.values[name])[c, loc])
        cat = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
        cnode = cat["cnode"].astype(np.int64)
        location = cat["location"].astype(np.int64)
        paths = np.array(self.callpaths, dtype=object)
        region_names = np.array([self.region_of(c).name for c in range(self.n_cnodes)], dtype=object)
        ranks = np.array([loc.rank for loc in self.locations], dtype=np.int64)
        threads = np.array([loc.thread for loc in self.locations], dtype=np.int64)
        return pd.DataFrame(
            {
                "metric": cat["metric"].astype(object),
                "cnode": cnode,
                "callpath": paths[cnode],
                "region": region_names[cnode],
                "location": location,
                "rank": ranks[location],
                "thread": threads[location],
                "value": cat["value"].astype(np.float64),
            }
        )

    def __repr__(self) -> str:
        return (
            f"<Cube {len(self.metrics)} metrics, {self.n_cnodes} call paths, "
            f"{self.n_locations} locations, {len(self.values)} with data>"
        )
