"""Checks of the OpenMP task and thread events of format 2.1 (part of :mod:`tracefmt.validate`).

The validator's walk hands every OMP_TASK_* and THREAD_* event to :class:`TaskChecks`
(:meth:`TaskChecks.event`), tells it when a location is done (:meth:`TaskChecks.end_location`)
and asks for the checks across locations at the end (:meth:`TaskChecks.finish`).  Problems are
reported through the validator's ``add(message, loc, idx, time)``.

Tasks (per process; task ids are unique within a process):

* OMP_TASK_CREATE names a region of role OMP_TASK, a task id not created before, and as parent
  the task whose fragment is innermost on that location (0 outside every task fragment);
* every fragment is ENTER(task region), OMP_TASK_BEGIN, ..., OMP_TASK_END, EXIT(task region) on
  one location (COUNTER records may follow the ENTER), fragments nest (an END ends the innermost
  open one) and none is left open;
* every executed task was created, in its creation's region, and begins no earlier than its
  creation; its fragments do not overlap, the first STARTs and the others RESUME, every fragment
  but the last is SUSPENDed and the last COMPLETEs (or is CANCELled or DETACHed): so every created
  task completes exactly once, and nothing of it runs after that;
* OMP_TASK_DEPENDENCE names two different tasks of the process, the successor created on that
  location no later than the record and the predecessor no later than the successor (a depend
  clause orders a task after tasks created before it), and the successor begins no earlier than
  the predecessor completed.

Threads (per process; thread ids are unique within a process):

* each THREAD_CREATE id once; THREAD_BEGIN of a created thread no earlier than its creation, on a
  location without another live lifetime and outside every region; THREAD_END of the live
  lifetime; every created thread begins and ends; THREAD_JOIN of a thread that was created, at
  most once, no earlier than the thread's end.
"""

from __future__ import annotations

from collections import defaultdict

from .layout import EventType, Role, TaskSwitch

TASK_TYPES = frozenset(int(t) for t in (EventType.OMP_TASK_CREATE, EventType.OMP_TASK_BEGIN, EventType.OMP_TASK_END,
                                        EventType.OMP_TASK_DEPENDENCE))
THREAD_TYPES = frozenset(int(t) for t in (EventType.THREAD_CREATE, EventType.THREAD_BEGIN, EventType.THREAD_END,
                                          EventType.THREAD_JOIN))
TYPES = TASK_TYPES | THREAD_TYPES
_DONE = (TaskSwitch.COMPLETE, TaskSwitch.CANCEL, TaskSwitch.DETACH)
_COUNTER = int(EventType.COUNTER)


class TaskChecks:
    def __init__(self, defs, add):
        self.defs = defs
        self.add = add
        self.created = {}  # (process, task) -> (loc, idx, time, region)
        self.fragments = defaultdict(list)  # (process, task) -> [(begin_t, end_t, how_begin, how_end, loc, idx, region)]
        self.deps = []  # (process, predecessor, successor, loc, idx, time)
        self.running = {}  # loc -> [(task, region, idx, time, how)] open fragments, innermost last
        self.threads = {}  # (process, thread) -> (loc, idx, time) of THREAD_CREATE
        self.lifetimes = defaultdict(list)  # (process, thread) -> [(loc, begin_idx, begin_t, end_t)]
        self.live = {}  # loc -> (thread, idx, time) of its open lifetime
        self.joins = defaultdict(list)  # (process, thread) -> [(loc, idx, time)]

    # ------------------------------------------------------------------ one event
    def event(self, loc, process, ev, i, typ, a, c, d, e, t, depth=None) -> None:
        """One OMP_TASK_* / THREAD_* event; ``depth``: regions open before it (None: not tracked)."""
        if typ == EventType.OMP_TASK_CREATE:
            self._create(loc, process, i, a, d, e, t)
        elif typ == EventType.OMP_TASK_BEGIN:
            self._begin(loc, ev, i, a, c, d, t)
        elif typ == EventType.OMP_TASK_END:
            self._end(loc, process, ev, i, a, c, d, t)
        elif typ == EventType.OMP_TASK_DEPENDENCE:
            self.deps.append((process, d, e, loc, i, t))
        elif typ == EventType.THREAD_CREATE:
            if d == 0:
                self.add("THREAD_CREATE with thread id 0", loc, i, t)
            elif (process, d) in self.threads:
                self.add(f"thread id {d} created again (first at location {self.threads[(process, d)][0]})", loc, i, t)
            else:
                self.threads[(process, d)] = (loc, i, t)
        elif typ == EventType.THREAD_BEGIN:
            if loc in self.live:
                self.add(f"THREAD_BEGIN of thread {d} while thread {self.live[loc][0]} still lives here", loc, i, t)
            if depth:
                self.add(f"THREAD_BEGIN of thread {d} inside {depth} open region(s)", loc, i, t)
            self.live[loc] = (d, i, t)
        elif typ == EventType.THREAD_END:
            cur = self.live.pop(loc, None)
            if cur is None or cur[0] != d:
                self.add(f"THREAD_END of thread {d}, which does not live here", loc, i, t)
            else:
                self.lifetimes[(process, d)].append((loc, cur[1], cur[2], t))
        elif typ == EventType.THREAD_JOIN:
            self.joins[(process, d)].append((loc, i, t))

    def _create(self, loc, process, i, a, task, parent, t):
        r = self.defs.regions.get(a)
        if r is None or r.role != Role.OMP_TASK:
            self.add(f"OMP_TASK_CREATE of task {task} names region {a}, which is no task region", loc, i, t)
        if task == 0:
            self.add("OMP_TASK_CREATE with task id 0", loc, i, t)
            return
        if (process, task) in self.created:
            self.add(f"task id {task} created again (first at location {self.created[(process, task)][0]})", loc, i, t)
            return
        run = self.running.get(loc)
        current = run[-1][0] if run else 0
        if parent != current:
            where = f"task {current} is executing here" if current else "no explicit task is executing here"
            self.add(f"task {task} is created with parent {parent}, but {where}", loc, i, t)
        self.created[(process, task)] = (loc, i, t, a)

    def _begin(self, loc, ev, i, a, how, task, t):
        j = i - 1
        while j >= 0 and int(ev.type[j]) == _COUNTER:
            j -= 1
        if j < 0 or int(ev.type[j]) != EventType.ENTER or int(ev.a[j]) != a:
            self.add(f"OMP_TASK_BEGIN of task {task} does not follow the ENTER of its region", loc, i, t)
        if how not in (TaskSwitch.START, TaskSwitch.RESUME):
            self.add(f"OMP_TASK_BEGIN of task {task} with switch code {how}", loc, i, t)
        self.running.setdefault(loc, []).append((task, a, i, t, how))

    def _end(self, loc, process, ev, i, a, how, task, t):
        run = self.running.get(loc)
        if not run or run[-1][0] != task:
            inner = f"the innermost is task {run[-1][0]}" if run else "none is open"
            self.add(f"OMP_TASK_END of task {task}, but {inner}", loc, i, t)
            return
        task_, region, bi, bt, how_begin = run.pop()
        if how not in (TaskSwitch.COMPLETE, TaskSwitch.SUSPEND, TaskSwitch.CANCEL, TaskSwitch.DETACH):
            self.add(f"OMP_TASK_END of task {task} with switch code {how}", loc, i, t)
        if region != a:
            self.add(f"OMP_TASK_END of task {task} names region {a}, its fragment began in region {region}", loc, i, t)
        if i + 1 >= len(ev) or int(ev.type[i + 1]) != EventType.EXIT or int(ev.a[i + 1]) != a:
            self.add(f"OMP_TASK_END of task {task} is not followed by the EXIT of its region", loc, i, t)
        self.fragments[(process, task)].append((bt, t, how_begin, how, loc, bi, region))

    def end_location(self, loc, last_index, last_time) -> None:
        for task, _, bi, _, _ in self.running.pop(loc, []):
            self.add(f"the fragment of task {task} begun at event {bi} never ends", loc, last_index, last_time)
        cur = self.live.pop(loc, None)
        if cur is not None:
            self.add(f"thread {cur[0]} begun at event {cur[1]} never ends", loc, last_index, last_time)

    # ------------------------------------------------------------------ across locations
    def finish(self) -> None:
        self._finish_tasks()
        self._finish_threads()

    def _finish_tasks(self):
        completed = {}  # (process, task) -> completion time
        first_begin = {}
        for key, frags in sorted(self.fragments.items()):
            process, task = key
            frags.sort(key=lambda f: (f[0], f[1]))
            bt, _, _, _, loc, bi, region = frags[0]
            made = self.created.get(key)
            if made is None:
                self.add(f"task {task} of process {process} executes but was never created", loc, bi, bt)
            else:
                if made[3] != region:
                    self.add(f"task {task} executes region {region}, but was created for region {made[3]}", loc, bi, bt)
                if bt < made[2]:
                    self.add(f"task {task} begins {made[2] - bt:.9f} s before its creation", loc, bi, bt)
            first_begin[key] = bt
            for k, (b, en, hb, he, fl, fi, _) in enumerate(frags):
                want = TaskSwitch.START if k == 0 else TaskSwitch.RESUME
                if hb != want:
                    self.add(f"fragment {k} of task {task} begins with {TaskSwitch(hb).name if hb in (0, 1) else hb}, "
                             f"expected {want.name}", fl, fi, b)
                last = k == len(frags) - 1
                if not last and he != TaskSwitch.SUSPEND:
                    self.add(f"task {task} runs again after its fragment ended with "
                             f"{TaskSwitch(he).name if he in _DONE else he}", fl, fi, b)
                if last and he not in _DONE:
                    self.add(f"task {task} never completes (its last fragment is suspended)", fl, fi, b)
                if k and b < frags[k - 1][1]:
                    self.add(f"fragments of task {task} overlap (location {frags[k - 1][4]} and here)", fl, fi, b)
            completed[key] = frags[-1][1]
        for key, (loc, i, t, _) in sorted(self.created.items()):
            if key not in self.fragments:
                self.add(f"task {key[1]} created here never executes", loc, i, t)
        for process, pred, succ, loc, i, t in self.deps:
            for task in (pred, succ):
                if (process, task) not in self.created:
                    self.add(f"dependence names task {task}, which process {process} never created", loc, i, t)
            if pred == succ:
                self.add(f"task {succ} depends on itself", loc, i, t)
                continue
            made_s, made_p = self.created.get((process, succ)), self.created.get((process, pred))
            if made_s is not None and (made_s[0] != loc or made_s[2] > t):
                self.add(f"dependence of task {succ} recorded at {t:.9f} s on location {loc}, not where and after "
                         f"it was created (location {made_s[0]} at {made_s[2]:.9f} s)", loc, i, t)
            if made_s is not None and made_p is not None and made_p[2] > made_s[2]:
                self.add(f"task {succ} depends on task {pred}, created {made_p[2] - made_s[2]:.9f} s after it",
                         loc, i, t)
            done, start = completed.get((process, pred)), first_begin.get((process, succ))
            if done is not None and start is not None and start < done:
                self.add(f"task {succ} begins {done - start:.9f} s before task {pred}, which it depends on, "
                         f"completed", loc, i, t)

    def _finish_threads(self):
        for key, (loc, i, t) in sorted(self.threads.items()):
            lives = self.lifetimes.get(key)
            if not lives:
                self.add(f"thread {key[1]} created here never begins (or never ends)", loc, i, t)
                continue
            if len(lives) > 1:
                self.add(f"thread {key[1]} lives {len(lives)} times", lives[1][0], lives[1][1], lives[1][2])
            bl, bi, bt, _ = lives[0]
            if bt < t:
                self.add(f"thread {key[1]} begins {t - bt:.9f} s before its creation", bl, bi, bt)
        for key, lives in sorted(self.lifetimes.items()):
            if key not in self.threads:
                bl, bi, bt, _ = lives[0]
                self.add(f"thread {key[1]} of process {key[0]} begins but was never created", bl, bi, bt)
        for key, joins in sorted(self.joins.items()):
            loc, i, t = joins[0]
            if key not in self.threads:
                self.add(f"join of thread {key[1]}, which was never created", loc, i, t)
            if len(joins) > 1:
                self.add(f"thread {key[1]} joined {len(joins)} times", *joins[1])
            lives = self.lifetimes.get(key)
            if lives and t < lives[-1][3]:
                self.add(f"thread {key[1]} joined {lives[-1][3] - t:.9f} s before it ended", loc, i, t)
