"""OpenMP task metrics (format 2.1 traces): the foundation the task properties of issue 16 build on.

Two root metrics, from the replay's task tables:

* ``omp_task_creation``: tasks created, at the creating call path and location;
* ``omp_task_execution``: time spent executing explicit tasks, at the task's call path
  (``.../!$omp parallel/!$omp task @file:line``, analyzer/replay) and the executing location: each
  execution fragment's duration minus the fragments of other tasks run inside it (in its taskwait, at a
  scheduling point), so a nested task's time is counted once, at its own construct.  Its distribution
  over the locations is the balance of task work over the threads.

The replay already charges a task run inside a barrier, taskwait or taskgroup to the task's call path,
not to the barrier (whose exclusive time is waiting only), and barrier waits exclude task time
(``omp_barriers.task_busy``); see docs/analysis.md.
"""

from __future__ import annotations

import numpy as np

from .api import Pattern, Severity

__all__ = ["OmpTaskCreation", "OmpTaskExecution", "PATTERNS"]


class OmpTaskCreation(Pattern):
    name = "omp_task_creation"
    parent = None
    paradigm = "openmp"
    display_name = "OMP Tasks Created"
    unit = "occ"
    description = "Number of explicit OpenMP tasks created, at the call path and on the thread that created them."
    diagnosis = ("Compare with OMP Task Execution: many tasks with little execution time each mean creation and "
                 "scheduling overhead dominates; raise the grain size (cut-off depth, final, fewer larger tasks).")
    requires = ("omp_tasks",)

    def compute(self, ctx):
        t = ctx.table("omp_tasks")
        cnode = np.asarray(t["create_cnode"], np.int64)
        ok = cnode >= 0
        return Severity(cnode[ok], np.asarray(t["create_loc"], np.int64)[ok], np.ones(int(ok.sum())))


class OmpTaskExecution(Pattern):
    name = "omp_task_execution"
    parent = None
    paradigm = "openmp"
    display_name = "OMP Task Execution"
    unit = "sec"
    description = ("Time threads spend executing explicit OpenMP tasks, at the task construct's call path and the "
                   "executing thread: every execution fragment's duration minus the fragments of other tasks run "
                   "inside it.")
    diagnosis = ("Uneven values over the threads of a team mean the task work is imbalanced (too few tasks, a serial "
                 "producer, long tasks created last); per call path it shows which task construct does the work.")
    requires = ("omp_task_fragments",)

    def compute(self, ctx):
        f = ctx.table("omp_task_fragments")
        cnode = np.asarray(f["cnode"], np.int64)
        ok = cnode >= 0
        return Severity(cnode[ok], np.asarray(f["loc"], np.int64)[ok], np.asarray(f["own_time"], np.float64)[ok])


PATTERNS = (OmpTaskCreation, OmpTaskExecution)
