"""Tables of OpenMP tasks and threads (format 2.1) from the per-location fragments.

``kernels.location`` cuts out one row per task execution fragment (``tasks``), per task creation
(``task_creates``) and per THREAD_* event (``threads``), :func:`dependence_fragment` one per
OMP_TASK_DEPENDENCE (``task_deps``); :func:`build_task_tables` joins them into the ``omp_tasks`` (with
each task's ``ready_time``: its creation or its last predecessor's completion), ``omp_task_dependences``,
``omp_task_fragments`` and ``threads`` tables of ``patterns/tables.py``, and
:func:`add_task_busy` gives every OpenMP barrier row the time its thread spent executing tasks in it
before the last member arrived (``task_busy``), so a barrier's wait excludes the tasks it ran.
:func:`thread_grafts` publishes a location's thread creations for the walk (a created thread's calls
continue its creator's call path).  All vectorised numpy, no per-event Python loop.
"""

from __future__ import annotations

import numpy as np

from patterns.tables import OMP_TASK_DEPENDENCES, OMP_TASK_FRAGMENTS, OMP_TASKS, THREADS, Table
from tracefmt.layout import EventType, TaskSwitch

from .kernels.location import THREAD_KEY
from .matching import concat

_DONE = np.array([int(TaskSwitch.COMPLETE), int(TaskSwitch.CANCEL), int(TaskSwitch.DETACH)], np.int64)


def _typed(cols: dict, schema: dict) -> Table:
    """The schema's columns in their dtypes, then any extra column."""
    return Table({name: np.ascontiguousarray(cols[name], dtype=dt) for name, dt in schema.items()}
                 | {k: v for k, v in cols.items() if k not in schema})


def thread_grafts(threads: dict) -> dict:
    """The THREAD_CREATE rows of one location's ``threads`` fragment as fork-like rows for the walk
    (``team_id``: ``THREAD_KEY | thread``, ``fork_node``: builder node of the creating call, 0 outside any)."""
    create = np.asarray(threads["kind"]) == int(EventType.THREAD_CREATE)
    key = THREAD_KEY | np.asarray(threads["thread"], np.int64)[create]
    node = np.asarray(threads["cnode"], np.int64)[create]
    return {"team_id": key, "fork_node": np.where(node >= 0, node, 0).astype(np.int32)}


def dependence_fragment(loc: int, events) -> dict | None:
    """The location's OMP_TASK_DEPENDENCE records as rows (``loc``, ``time``, ``predecessor``, ``successor``),
    or None when it has none (the common case: one vectorised test).  ``events``: its event columns."""
    at = np.flatnonzero(events.type == int(EventType.OMP_TASK_DEPENDENCE))
    if len(at) == 0:
        return None
    return {"loc": np.full(len(at), loc, np.int32), "time": events.time[at].astype(np.float64),
            "predecessor": events.d[at].astype(np.int64), "successor": events.e[at].astype(np.int64)}


def _key(process, ident):
    return (np.asarray(process, np.int64) << 40) | np.asarray(ident, np.int64)


def _fragments(F: dict, loc_process: np.ndarray) -> Table:
    if not F or len(F["task"]) == 0:
        return Table.empty(OMP_TASK_FRAGMENTS)
    loc = np.asarray(F["loc"], np.int64)
    dur = np.asarray(F["exit"], np.float64) - np.asarray(F["enter"], np.float64)
    # fragments nested in another fragment (at any depth): their time is not the outer task's
    own = dur.copy()
    calls = np.asarray(F["call"], np.int64)
    hosts = np.asarray(F["outer_call"], np.int64)
    o = np.argsort(calls, kind="stable")
    pos = np.searchsorted(calls[o], hosts)
    pos = np.minimum(pos, len(o) - 1)
    nested = calls[o][pos] == hosts
    np.subtract.at(own, o[pos[nested]], dur[nested])
    cols = dict(F)
    cols.update(process=loc_process[loc], own_time=own, begin_how=F["begin_how"], end_how=F["end_how"])
    cols.pop("region", None)  # the fragment's call region is its task region
    return _typed(cols, OMP_TASK_FRAGMENTS)


def _dependences(D: dict, loc_process: np.ndarray) -> Table:
    if not D or len(D["loc"]) == 0:
        return Table.empty(OMP_TASK_DEPENDENCES)
    cols = dict(D, process=loc_process[np.asarray(D["loc"], np.int64)])
    return _typed(cols, OMP_TASK_DEPENDENCES)


def _ready_times(out: dict, key: np.ndarray, deps: Table) -> np.ndarray:
    """Per task row: its creation, or the latest completion of its predecessors if later.  A predecessor
    that never completes in the trace (or was never created) holds nothing back: a consistent trace has
    none, and a damaged one should not hide the task's own wait."""
    ready = np.asarray(out["create_time"], np.float64).copy()
    if len(deps) == 0 or len(key) == 0:
        return ready
    n = len(key)

    def rows(task):
        want = _key(deps["process"], task)
        at = np.minimum(np.searchsorted(key, want), n - 1)
        return np.where(key[at] == want, at, -1)

    pred, succ = rows(deps["predecessor"]), rows(deps["successor"])
    ok = (pred >= 0) & (succ >= 0)
    pred, succ = pred[ok], succ[ok]
    ok = out["complete"][pred]
    np.maximum.at(ready, succ[ok], out["end_time"][pred[ok]])
    return ready


def _tasks(C: dict, frag: Table, deps: Table, loc_process: np.ndarray) -> Table:
    if not C or len(C["task"]) == 0:
        return Table.empty(OMP_TASKS)
    proc = loc_process[np.asarray(C["loc"], np.int64)].astype(np.int64)
    key = _key(proc, C["task"])
    o = np.lexsort((C["task"], proc))
    n = len(o)
    out = {
        "process": proc[o], "task": np.asarray(C["task"], np.int64)[o], "parent": np.asarray(C["parent"])[o],
        "task_region": np.asarray(C["task_region"])[o], "flags": np.asarray(C["flags"])[o],
        "dependences": np.asarray(C["dependences"])[o], "create_loc": np.asarray(C["loc"])[o],
        "create_time": np.asarray(C["time"])[o], "create_region": np.asarray(C["region"])[o],
        "create_cnode": np.asarray(C["cnode"])[o],
        "cnode": np.full(n, -1, np.int64), "first_loc": np.full(n, -1, np.int64),
        "start_time": np.full(n, np.nan), "end_time": np.full(n, np.nan), "n_fragments": np.zeros(n, np.int64),
        "own_time": np.zeros(n), "complete": np.zeros(n, bool),
    }
    key = key[o]
    if len(frag):
        fkey = _key(frag["process"], frag["task"])
        row = np.searchsorted(key, fkey)
        row = np.minimum(row, n - 1)
        ok = key[row] == fkey
        fo = np.flatnonzero(ok)
        fo = fo[np.lexsort((frag["enter"][fo], row[fo]))]  # by task, then time
        r = row[fo]
        np.add.at(out["n_fragments"], r, 1)
        np.add.at(out["own_time"], r, frag["own_time"][fo])
        first = np.ones(len(r), bool)
        first[1:] = r[1:] != r[:-1]
        last = np.ones(len(r), bool)
        last[:-1] = r[1:] != r[:-1]
        out["cnode"][r[first]] = frag["cnode"][fo[first]]
        out["first_loc"][r[first]] = frag["loc"][fo[first]]
        out["start_time"][r[first]] = frag["enter"][fo[first]]
        out["end_time"][r[last]] = frag["exit"][fo[last]]
        out["complete"][r[last]] = np.isin(frag["end_how"][fo[last]], _DONE)
    out["ready_time"] = _ready_times(out, key, deps)
    return _typed(out, OMP_TASKS)


def _threads(T: dict, loc_process: np.ndarray) -> Table:
    if not T or len(T["kind"]) == 0:
        return Table.empty(THREADS)
    kind = np.asarray(T["kind"], np.int64)
    proc = loc_process[np.asarray(T["loc"], np.int64)].astype(np.int64)
    key = _key(proc, T["thread"])
    create = np.flatnonzero(kind == int(EventType.THREAD_CREATE))
    ckey, first = np.unique(key[create], return_index=True)
    create = create[first]
    n = len(create)
    out = {"process": proc[create], "thread": np.asarray(T["thread"], np.int64)[create],
           "create_loc": np.asarray(T["loc"])[create], "create_time": np.asarray(T["time"])[create],
           "create_cnode": np.asarray(T["cnode"])[create], "loc": np.full(n, -1, np.int64),
           "begin_time": np.full(n, np.nan), "end_time": np.full(n, np.nan), "join_loc": np.full(n, -1, np.int64),
           "join_time": np.full(n, np.nan), "join_cnode": np.full(n, -1, np.int64),
           "join_enter": np.full(n, np.nan), "join_exit": np.full(n, np.nan)}
    for code, cols in ((EventType.THREAD_BEGIN, (("loc", "loc"), ("begin_time", "time"))),
                       (EventType.THREAD_END, (("end_time", "time"),)),
                       (EventType.THREAD_JOIN, (("join_loc", "loc"), ("join_time", "time"), ("join_cnode", "cnode"),
                                                ("join_enter", "call_enter"), ("join_exit", "call_exit")))):
        rows = np.flatnonzero(kind == int(code))
        if n == 0 or len(rows) == 0:
            continue
        at = np.minimum(np.searchsorted(ckey, key[rows]), n - 1)
        ok = ckey[at] == key[rows]
        for name, src in cols:
            out[name][at[ok]] = np.asarray(T[src])[rows[ok]]
    return _typed(out, THREADS)


def build_task_tables(frags: dict, want: set, loc_process: np.ndarray) -> dict[str, Table]:
    """The wanted ones of ``omp_tasks``, ``omp_task_dependences``, ``omp_task_fragments`` and ``threads``
    from the fragment lists."""
    out = {}
    if want & {"omp_tasks", "omp_task_dependences"}:
        deps = _dependences(concat(frags.get("task_deps", [])), loc_process)
    if want & {"omp_tasks", "omp_task_fragments"}:
        frag = _fragments(concat(frags["tasks"]), loc_process)
        if "omp_tasks" in want:
            out["omp_tasks"] = _tasks(concat(frags["task_creates"]), frag, deps, loc_process)
    if "omp_task_dependences" in want:
        out["omp_task_dependences"] = deps
    if "omp_task_fragments" in want:
        out["omp_task_fragments"] = frag
    if "threads" in want:
        out["threads"] = _threads(concat(frags["threads"]), loc_process)
    return out


def add_task_busy(barriers: Table, task_frags: list) -> None:
    """Add ``task_busy`` to the ``omp_barriers`` table: per row, the time its location executed task
    fragments inside that barrier call before the instance's last member arrived (or the barrier ended)."""
    n = len(barriers)
    busy = np.zeros(n)
    F = concat(task_frags)
    if n and F and len(F["task"]) and "call_id" in barriers:
        enter = np.asarray(barriers["enter"], np.float64)
        inst = np.asarray(barriers["instance"], np.int64)
        latest = np.full(int(inst.max()) + 1, -np.inf)
        np.maximum.at(latest, inst, enter)
        cut = np.minimum(latest[inst], np.asarray(barriers["exit"], np.float64))
        ids = np.asarray(barriers["call_id"], np.int64)
        o = np.argsort(ids, kind="stable")
        host = np.asarray(F["host_call"], np.int64)
        pos = np.minimum(np.searchsorted(ids[o], host), n - 1)
        ok = ids[o][pos] == host
        row = o[pos[ok]]
        lo = np.maximum(np.asarray(F["enter"])[ok], enter[row])
        hi = np.minimum(np.asarray(F["exit"])[ok], cut[row])
        np.add.at(busy, row, np.maximum(hi - lo, 0.0))
    barriers["task_busy"] = busy
