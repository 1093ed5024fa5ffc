"""POSIX threads performance properties (format 2.1 traces): Scalasca 2.6's ``Pthread.pattern`` tree.

::

    execution
      pthread_time                              time in POSIX threads API calls
        pthread_management                      pthread_create, pthread_join, pthread_exit, ...
          pthread_join_wait                     (ours) waiting in pthread_join for the thread to end
        pthread_synchronization                 mutex and condition-variable calls
          pthread_lock_api                      pthread_mutex_*
            pthread_lock_contention_mutex_lock
          pthread_conditional                   pthread_cond_*
            pthread_lock_contention_conditional

Time categories are classified by the region role the trace records (THREAD_CREATE, THREAD_JOIN,
THREAD_MANAGEMENT, THREAD_MUTEX, THREAD_CONDITION) instead of Scalasca's name matching.  Lock contention
is the one of OpenMP locks (Scalasca's ``THREAD_LOCK_CONTENTION``, :func:`patterns.omp.lock_contention`):
the previous holder's release minus the ENTER of the acquiring call, for acquisitions inside
``pthread_mutex_lock`` / ``_trylock`` / ``_timedlock`` (mutex) or inside ``pthread_cond_wait`` /
``_timedwait`` (condition: the mutex taken back when the wait ends; as in Scalasca, the wait for the
signal before it counts, since the signaller held the mutex until then).  ``pthread_join_wait`` is ours:
Scalasca's diagnosis of Pthread Management points at such waits without measuring them.
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import Role

from .api import Pattern, Severity
from .omp import lock_contention, time_in_roles

__all__ = ["PthreadTime", "PthreadManagement", "PthreadJoinWait", "PthreadSynchronization", "PthreadLockApi",
           "PthreadLockContentionMutexLock", "PthreadConditional", "PthreadLockContentionConditional", "PATTERNS"]

MANAGEMENT_ROLES = (Role.THREAD_CREATE, Role.THREAD_JOIN, Role.THREAD_MANAGEMENT)
MUTEX_ROLES = (Role.THREAD_MUTEX,)
CONDITION_ROLES = (Role.THREAD_CONDITION,)
SYNC_ROLES = MUTEX_ROLES + CONDITION_ROLES
PTHREAD_ROLES = MANAGEMENT_ROLES + SYNC_ROLES


class _RoleTime(Pattern):
    """Exclusive time of call paths whose callee has one of ``roles``."""

    scope = "location"
    roles: tuple = ()

    def compute(self, ctx):
        return time_in_roles(ctx, self.roles)


class PthreadTime(_RoleTime):
    name = "pthread_time"
    parent = "execution"
    paradigm = "pthread"  # inherited by the whole subtree
    display_name = "POSIX threads"
    description = ("Time spent in POSIX threads API calls: thread management (create, join, exit) and "
                   "synchronization (mutexes, condition variables).")
    diagnosis = "Expand the metric to see whether thread management or synchronization dominates."
    roles = PTHREAD_ROLES


class PthreadManagement(_RoleTime):
    name = "pthread_management"
    parent = "pthread_time"
    display_name = "Pthread Management"
    description = "Time spent creating, joining, detaching and ending POSIX threads."
    diagnosis = ("Time in pthread_join is load imbalance: the joining thread waits for the others to finish (see "
                 "Pthread Join Wait).  Many short management calls: use a thread pool instead of creating threads "
                 "again and again.")
    roles = MANAGEMENT_ROLES


class PthreadJoinWait(Pattern):
    name = "pthread_join_wait"
    scope = "location"
    parent = "pthread_management"
    display_name = "Pthread Join Wait"
    description = ("Time a thread waits in pthread_join for the joined thread to end: the joined thread's end "
                   "(THREAD_END) minus the ENTER of the pthread_join call, at most the call's duration.")
    diagnosis = ("The joined thread had more work than the joining one.  Give the joining thread a share of the work, "
                 "or balance the work among the threads it waits for.")
    requires = ("threads",)

    def compute(self, ctx):
        th = ctx.table("threads")
        enter = np.asarray(th["join_enter"], np.float64)
        end = np.minimum(np.asarray(th["end_time"], np.float64), np.asarray(th["join_exit"], np.float64))
        ok = (np.asarray(th["join_cnode"]) >= 0) & np.isfinite(enter) & np.isfinite(end)
        wait = np.where(ok, end - np.where(ok, enter, 0.0), 0.0)
        keep = wait > 0
        return Severity(np.asarray(th["join_cnode"], np.int64)[keep], np.asarray(th["join_loc"], np.int64)[keep],
                        wait[keep])


class PthreadSynchronization(_RoleTime):
    name = "pthread_synchronization"
    parent = "pthread_time"
    display_name = "Pthread Synchronization"
    description = "Time spent in POSIX threads mutex and condition-variable calls."
    diagnosis = ("Expand the metric to see whether mutexes or condition variables dominate, and look at the "
                 "distribution over the threads for contention.")
    roles = SYNC_ROLES


class PthreadLockApi(_RoleTime):
    name = "pthread_lock_api"
    parent = "pthread_synchronization"
    display_name = "Pthread Mutex"
    description = "Time spent in POSIX threads mutex calls (pthread_mutex_lock, _trylock, _timedlock, _unlock)."
    diagnosis = ("Locate the most costly mutex operations and check whether they are needed, whether the protected "
                 "section can be shorter, or whether lock-free data structures or finer-grained locks would do.")
    roles = MUTEX_ROLES


class PthreadLockContentionMutexLock(Pattern):
    name = "pthread_lock_contention_mutex_lock"
    scope = "location"
    parent = "pthread_lock_api"
    display_name = "Pthread Mutex Lock Contention"
    description = ("Time lost waiting for a mutex to be acquired while another thread still holds it: the release "
                   "time of the mutex's previous holder minus the ENTER of the waiting pthread_mutex_lock call.")
    diagnosis = ("Threads ask for the same mutex at nearly the same time.  Hold it for less time, split it into "
                 "several mutexes for independent data, or stagger the threads' arrival at the lock.")
    requires = ("locks",)

    def compute(self, ctx):
        return lock_contention(ctx, MUTEX_ROLES)


class PthreadConditional(_RoleTime):
    name = "pthread_conditional"
    parent = "pthread_synchronization"
    display_name = "Pthread Condition"
    description = "Time spent in POSIX threads condition-variable calls (pthread_cond_wait, _timedwait, _signal, ...)."
    diagnosis = ("Locate the most costly condition operations; long waits mean the thread that fulfils the "
                 "condition is late.  Balance the work that precedes the signal.")
    roles = CONDITION_ROLES


class PthreadLockContentionConditional(Pattern):
    name = "pthread_lock_contention_conditional"
    scope = "location"
    parent = "pthread_conditional"
    display_name = "Pthread Condition Lock Contention"
    description = ("Time lost in a condition wait until the mutex could be taken back: the release time of the "
                   "mutex's previous holder minus the ENTER of the pthread_cond_wait call (Scalasca's definition).")
    diagnosis = ("The thread responsible for fulfilling the condition is late or holds the mutex long.  Balance the "
                 "work before the signal and release the mutex soon after signalling.")
    requires = ("locks",)

    def compute(self, ctx):
        return lock_contention(ctx, CONDITION_ROLES)


PATTERNS = (PthreadTime, PthreadManagement, PthreadJoinWait, PthreadSynchronization, PthreadLockApi,
            PthreadLockContentionMutexLock, PthreadConditional, PthreadLockContentionConditional)
