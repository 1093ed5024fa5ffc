"""A structural validator of Chrome/Perfetto trace-event JSON, standing in for loading the file in Perfetto.

It checks what the trace-event format ("Trace Event Format", Google, the JSON object form) requires
and what Perfetto's JSON importer relies on:

* the object form: ``traceEvents`` a list, ``displayTimeUnit`` "ms" or "ns" when given;
* every event has the keys its phase needs (below), integer ``pid``/``tid``, ``ts`` in microseconds;
* per track (pid, tid) the file never goes back in time, complete slices (``X``), ``B``/``E`` pairs
  and thread instants (zero-length slices) nest properly in file order (a slice lies inside the one
  open around it or after it; of two that begin together the longer comes first), on whole
  nanoseconds;
* flows (``s``/``t``/``f``) pair by (cat, name, id): one start, one end, the start not later than the
  end; a start binds to the slice enclosing its time on its track, an end with ``"bp": "e"`` too,
  an end without it to the next slice beginning on its track: each must find its slice.  Perfetto's
  importer binds differently (:func:`perfetto_top`); both bindings are recorded.

:func:`validate` raises AssertionError naming the first broken rule and returns what it found, so
tests can ask which slices an arrow connects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REQUIRED = {
    "X": {"name", "ts", "dur", "pid", "tid"},
    "B": {"name", "ts", "pid", "tid"},
    "E": {"ts", "pid", "tid"},
    "i": {"name", "ts", "pid", "tid"},
    "I": {"name", "ts", "pid", "tid"},
    "s": {"name", "cat", "id", "ts", "pid", "tid"},
    "t": {"name", "cat", "id", "ts", "pid", "tid"},
    "f": {"name", "cat", "id", "ts", "pid", "tid"},
    "M": {"name", "pid", "args"},
}
METADATA = {"process_name", "process_sort_index", "thread_name", "thread_sort_index", "process_labels"}


@dataclass
class Slice:
    pid: int
    tid: int
    start: int  # ns
    end: int  # ns
    event: dict
    depth: int = 0


@dataclass
class Flow:
    start: dict
    end: dict
    source: Slice  # the slice the start binds to
    target: Slice  # the slice the end binds to
    perfetto_source: Slice | None = None  # what Perfetto's importer binds them to (:func:`perfetto_top`)
    perfetto_target: Slice | None = None


@dataclass
class Checked:
    slices: dict = field(default_factory=dict)  # (pid, tid) -> [Slice] in start order
    flows: list = field(default_factory=list)
    thread_names: dict = field(default_factory=dict)  # (pid, tid) -> name

    def named(self, name: str) -> list[Slice]:
        return [s for track in self.slices.values() for s in track if s.event.get("name") == name]


def _ns(us) -> int:
    return int(round(float(us) * 1e3))


def validate(doc) -> Checked:
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "no traceEvents list"
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns"), f"displayTimeUnit {doc.get('displayTimeUnit')!r}"
    out = Checked()
    last_ts: dict = {}
    open_b: dict = {}
    raw: dict = {}
    flows: dict = {}
    for k, e in enumerate(doc["traceEvents"]):
        e["_index"] = k  # position in the file, for the importer's order
        ph = e.get("ph")
        assert ph in REQUIRED, f"event {k}: phase {ph!r} is not one of {sorted(REQUIRED)}"
        missing = REQUIRED[ph] - e.keys()
        assert not missing, f"event {k} ({ph}): missing {sorted(missing)}"
        assert isinstance(e["pid"], int) and isinstance(e.get("tid", 0), int), f"event {k}: pid/tid not integers"
        if ph == "M":
            assert e["name"] in METADATA, f"event {k}: unknown metadata {e['name']!r}"
            if e["name"] == "thread_name":
                out.thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] == e["ts"], f"event {k}: ts {e['ts']!r}"
        track = (e["pid"], e["tid"])
        ts = _ns(e["ts"])
        assert ts >= last_ts.get(track, ts), f"event {k}: ts goes back on track {track}"
        last_ts[track] = ts
        if ph == "X":
            assert e["dur"] >= 0, f"event {k}: negative dur"
            raw.setdefault(track, []).append((ts, ts + _ns(e["dur"]), k, e))
        elif ph in "iI" and e.get("s", "t") == "t":
            raw.setdefault(track, []).append((ts, ts, k, e))
        elif ph == "B":
            open_b.setdefault(track, []).append((ts, k, e))
        elif ph == "E":
            assert open_b.get(track), f"event {k}: E without B on {track}"
            t0, kb, eb = open_b[track].pop()
            raw.setdefault(track, []).append((t0, ts, kb, eb))
        elif ph in "stf":
            flows.setdefault((e["cat"], e["name"], e["id"]), []).append((k, e))
    for track, left in open_b.items():
        assert not left, f"track {track}: B without E at ts {left[-1][0]} ns"
    for track, items in raw.items():
        items.sort(key=lambda x: (x[0], x[2]))  # the importer's order: by time, then as in the file
        stack: list[Slice] = []
        placed = []
        for start, end, k, e in items:
            while stack and stack[-1].end <= start:
                stack.pop()
            if stack:
                assert end <= stack[-1].end, (f"track {track}: slice {e.get('name')!r} [{start}, {end}] ns overlaps "
                                              f"{stack[-1].event.get('name')!r} [{stack[-1].start}, {stack[-1].end}]")
            s = Slice(track[0], track[1], start, end, e, len(stack))
            stack.append(s)
            placed.append(s)
        out.slices[track] = placed
    for key, evs in flows.items():
        phases = [e["ph"] for _, e in evs]
        assert phases.count("s") == 1 and phases.count("f") == 1, f"flow {key}: phases {phases}"
        s = next(e for _, e in evs if e["ph"] == "s")
        f = next(e for _, e in evs if e["ph"] == "f")
        assert _ns(s["ts"]) <= _ns(f["ts"]), f"flow {key}: ends before it starts"
        src = enclosing(out, s)
        assert src is not None, f"flow {key}: its start at {s['ts']} us is in no slice of track {(s['pid'], s['tid'])}"
        dst = enclosing(out, f) if f.get("bp") == "e" else next_slice(out, f)
        assert dst is not None, f"flow {key}: its end at {f['ts']} us binds to no slice of {(f['pid'], f['tid'])}"
        out.flows.append(Flow(s, f, src, dst, perfetto_top(out, s),
                              perfetto_top(out, f) if f.get("bp") == "e" else dst))
    return out


def perfetto_top(checked: Checked, e: dict) -> Slice | None:
    """The slice Perfetto's JSON importer binds a flow event to: the top of the track's slice stack as the
    slices begun up to the event's time left it.  Perfetto closes a slice only when a later one begins
    (``SliceTracker::MaybeCloseStack``), so where a slice ended and no other began since, that ended slice
    is still on top; the structural :func:`enclosing` and this one must agree for the arrow to show as meant.
    """
    ts, at = _ns(e["ts"]), e["_index"]
    stack: list[Slice] = []
    for s in checked.slices.get((e["pid"], e["tid"]), []):  # in the order the importer meets them
        if s.start > ts or (s.start == ts and s.event["_index"] > at):
            break
        while stack and (stack[-1].end < s.start or (stack[-1].end == s.start
                                                    and not (stack[-1].start == stack[-1].end and s.start == s.end))):
            stack.pop()
        stack.append(s)
    return stack[-1] if stack else None


def enclosing(checked: Checked, e: dict) -> Slice | None:
    """The innermost slice (not an instant) of the event's track that contains its time."""
    ts = _ns(e["ts"])
    best = None
    for s in checked.slices.get((e["pid"], e["tid"]), []):
        if s.start <= ts <= s.end and s.event["ph"] not in "iI" and (best is None or s.depth > best.depth):
            best = s
    return best


def next_slice(checked: Checked, e: dict) -> Slice | None:
    ts = _ns(e["ts"])
    later = [s for s in checked.slices.get((e["pid"], e["tid"]), []) if s.start >= ts]
    return min(later, key=lambda s: (s.start, s.depth)) if later else None
