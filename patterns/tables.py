"""Schemas of the compound-event tables the replay builds and the patterns read.

A table is a :class:`Table`: a dict of equally long, contiguous numpy arrays
(struct of arrays), one entry per row.  Builders in ``analyzer/`` fill them;
patterns in ``patterns/`` only read them.  The column lists below are the
contract between the two; a builder may add columns, never drop or rename one.
:data:`TABLES` names every table; a pattern lists the ones it reads in its
``requires``, and the replay builds only the tables some selected pattern
requires.

Conventions for every table:

* times are float64 seconds on the trace's global (clock-corrected) time line;
* ``loc`` columns are global location ids (0..L-1), ``rank`` columns global MPI ranks;
* ``cnode`` columns are call-tree node ids of :class:`patterns.context.CallTree`;
* ``*_enter`` / ``*_exit`` are the ENTER / EXIT times of the named call;
* ids that do not apply are -1.
"""

from __future__ import annotations

import numpy as np


class Table(dict):
    """Columns by name; every column is a 1-d numpy array of the same length."""

    def __len__(self) -> int:  # number of rows, not of columns
        for col in self.values():
            return int(col.shape[0])
        return 0

    @property
    def n_rows(self) -> int:
        return len(self)

    def columns(self) -> list[str]:
        return list(self.keys())

    def take(self, index) -> "Table":
        """Rows selected by an integer index array or boolean mask."""
        return Table({k: v[index] for k, v in self.items()})

    @classmethod
    def empty(cls, schema: dict[str, str]) -> "Table":
        return cls({name: np.zeros(0, dtype=dt) for name, dt in schema.items()})


# One row per matched point-to-point message (a SEND matched with its RECV).
MESSAGES = {
    "send_loc": "i4",
    "send_rank": "i4",
    "send_time": "f8",  # time of the MPI_SEND event
    "send_region": "i4",  # region of the call holding the SEND (MPI_Send, MPI_Isend, ...)
    "send_cnode": "i4",  # call path of that call
    "send_enter": "f8",
    "send_exit": "f8",
    "send_flags": "u1",  # tracefmt.layout.SendFlag
    "send_request": "i8",  # 0 for blocking sends
    # completion of a non-blocking send (the Wait/Test call that completed it);
    # for a blocking send these repeat the send call's values
    "sendc_region": "i4",
    "sendc_cnode": "i4",
    "sendc_enter": "f8",
    "sendc_exit": "f8",
    "recv_loc": "i4",
    "recv_rank": "i4",
    "recv_time": "f8",  # time of the MPI_RECV event
    # the call that completed the receive (MPI_Recv, or the Wait*/Test* of an Irecv)
    "recv_region": "i4",
    "recv_cnode": "i4",
    "recv_enter": "f8",
    "recv_exit": "f8",
    "recv_call": "i8",  # id unique per completing call instance (groups a Waitall's messages)
    # the call that posted the receive (MPI_Recv itself, or MPI_Irecv)
    "recvp_region": "i4",
    "recvp_cnode": "i4",
    "recvp_enter": "f8",
    "recvp_exit": "f8",
    "recv_request": "i8",  # 0 for blocking receives
    "recv_flags": "u1",  # tracefmt.layout.RecvFlag
    "comm": "i4",
    "tag": "i8",
    "bytes": "i8",  # bytes as recorded by the sender
    "recv_bytes": "i8",  # bytes as recorded by the receiver
    "recv_seq": "i8",  # position of this receive among the receiver's receives (completion order)
}

# One row per (collective instance, member).  Instances are matched per
# communicator in the order each member completed them (FIFO per comm and rank).
COLLECTIVES = {
    "instance": "i8",  # dense instance id over all communicators
    "comm": "i4",
    "seq": "i8",  # sequence number of the instance within its communicator
    "loc": "i4",
    "rank": "i4",
    "region": "i4",
    "cnode": "i4",
    "enter": "f8",
    "exit": "f8",
    "root": "i4",  # global rank of the root, -1 if none
    "sent": "i8",
    "recvd": "i8",
    "n_members": "i4",  # size of the communicator
}

# One row per OpenMP team instance (one fork/join).
OMP_TEAMS = {
    "team": "i8",  # dense id over the whole trace
    "process": "i4",
    "team_id": "i8",  # team id as recorded (unique within the process)
    "master_loc": "i4",
    "fork_time": "f8",
    "join_time": "f8",
    "size": "i4",
    "parallel_region": "i4",
    "parallel_cnode": "i4",  # call path of the parallel region
    "parent_team": "i8",  # dense id of the enclosing team for nested parallelism, -1 at top level
}

# One row per (team instance, member thread).
OMP_TEAM_MEMBERS = {
    "team": "i8",
    "loc": "i4",
    "thread_num": "i4",
    "enter": "f8",  # ENTER of the parallel region on that thread
    "exit": "f8",  # EXIT of the parallel region on that thread
}

# One row per (barrier instance, member): explicit and implicit barriers,
# matched within a team by their order on each member thread.
OMP_BARRIERS = {
    "instance": "i8",  # dense id
    "team": "i8",
    "seq": "i8",  # position of the barrier within the team instance
    "loc": "i4",
    "region": "i4",
    "cnode": "i4",
    "implicit": "?",
    "enter": "f8",
    "exit": "f8",
    "n_members": "i4",  # team size
}
# The replay adds the column "task_busy" (f8) to omp_barriers: the time the member spent executing OpenMP
# tasks inside the barrier before the last member arrived (format 2.1; 0 without tasks).  Its wait for the
# others is the rest.

# One row per lock acquisition, in hand-over order per (process, lock).
LOCKS = {
    "process": "i4",
    "lock": "i4",
    "order": "i8",  # acquisition order from the trace (1, 2, ...)
    "loc": "i4",
    "acquire_time": "f8",
    "release_time": "f8",
    "prev_release_time": "f8",  # release time of the previous acquisition of that lock, NaN for the first
    "region": "i4",  # the acquiring call: critical construct or omp_*_lock call
    "cnode": "i4",
    "call_enter": "f8",  # ENTER time of the acquiring call
    "call_exit": "f8",
    "lock_kind": "i4",  # tracefmt.layout.LockKind
}


# One row per created OpenMP task (format 2.1), in (process, task) order.  Its execution summarised from its
# fragments (omp_task_fragments); -1 / NaN where it never ran.
OMP_TASKS = {
    "process": "i4",
    "task": "i8",  # task id as recorded (unique within the process)
    "parent": "i8",  # the creating task's id, 0 for an implicit task
    "task_region": "i4",  # the region of its task construct (role OMP_TASK)
    "flags": "i4",  # tracefmt.layout.TaskFlag
    "dependences": "i4",  # depend items of its construct
    "create_loc": "i4",
    "create_time": "f8",
    "create_region": "i4",  # the call it was created in (single, loop, another task, ...)
    "create_cnode": "i4",
    "cnode": "i4",  # call path of its execution (that of its first fragment: .../!$omp parallel/!$omp task)
    "first_loc": "i4",  # the location of its first fragment
    "start_time": "f8",  # first fragment's ENTER
    "end_time": "f8",  # last fragment's EXIT
    "n_fragments": "i4",
    "own_time": "f8",  # time executing it: its fragments minus the fragments of other tasks nested in them
    "complete": "?",  # its last fragment ended with COMPLETE, CANCEL or DETACH
    # from when it could run: create_time, or the latest end_time of its completed predecessors
    # (omp_task_dependences) if later
    "ready_time": "f8",
}

# One row per OMP_TASK_DEPENDENCE (format 2.1, from depend clauses), on the location that created the successor,
# in walk order.  Task ids as in omp_tasks.
OMP_TASK_DEPENDENCES = {
    "process": "i4",
    "loc": "i4",
    "time": "f8",
    "predecessor": "i8",  # the task that must complete ...
    "successor": "i8",  # ... before this one may start
}

# One row per task execution fragment (ENTER .. EXIT of a task region), per location in ENTER order.
OMP_TASK_FRAGMENTS = {
    "process": "i4",
    "loc": "i4",
    "task": "i8",
    "task_region": "i4",
    "cnode": "i4",  # call path of the fragment (.../!$omp parallel/!$omp task)
    "enter": "f8",
    "exit": "f8",
    "begin_how": "i4",  # tracefmt.layout.TaskSwitch: START or RESUME
    "end_how": "i4",  # COMPLETE, SUSPEND, CANCEL, DETACH; -1 if the fragment has no OMP_TASK_END
    "own_time": "f8",  # exit - enter minus the fragments of other tasks nested in it (at any depth)
    "call": "i8",  # id of its call, (loc << 32) | call index
    "outer_call": "i8",  # the call of the fragment it runs in (at any depth), -1 if none
    # the call it ran in (barrier, taskwait, taskgroup wait, another task's fragment, the creating construct)
    "host_call": "i8",
    "host_region": "i4",
    "host_cnode": "i4",
    "host_enter": "f8",
    "host_exit": "f8",
}

# One row per created thread (THREAD_CREATE, format 2.1), in (process, thread) order.
THREADS = {
    "process": "i4",
    "thread": "i8",  # thread id as recorded (unique within the process)
    "create_loc": "i4",
    "create_time": "f8",
    "create_cnode": "i4",  # call path of the creating call (pthread_create)
    "loc": "i4",  # where it ran (-1: never began)
    "begin_time": "f8",
    "end_time": "f8",
    "join_loc": "i4",  # -1: never joined
    "join_time": "f8",  # the THREAD_JOIN
    "join_cnode": "i4",  # the joining call (pthread_join)
    "join_enter": "f8",
    "join_exit": "f8",
}

# One row per MPI file read or write (MPI_FILE_IO, format 2.2), per location in event order.
MPI_FILE_OPS = {
    "loc": "i4",
    "cnode": "i4",  # call path of the MPI_File_* call that did it
    "flags": "i4",  # tracefmt.layout.FileIoFlag: READ / WRITE, COLLECTIVE, NONBLOCKING
    "bytes": "i8",  # bytes asked to transfer (count x type size)
    "time": "f8",
}

# One row per MPI one-sided event (MPI_RMA_PUT / _GET / _ATOMIC / _SYNC, format 2.3), per location in event order,
# with the times of the MPI call it lies in (patterns.mpi_rma matches epochs from them).
MPI_RMA_OPS = {
    "loc": "i4",
    "rank": "i4",
    "cnode": "i4",  # call path of the MPI call that made it (-1: outside every call)
    "op": "i4",  # tracefmt.layout.EventType: MPI_RMA_PUT, _GET, _ATOMIC or _SYNC
    "kind": "i4",  # RmaSync kind (MPI_RMA_SYNC), RmaAtomic op (MPI_RMA_ATOMIC), else 0
    "flags": "i4",  # RmaFlag / RmaSyncFlag
    "window": "i8",
    "peer": "i8",  # target rank (transfers, LOCK, UNLOCK, FLUSH), group id (POST, START, ...), -1: none
    "sent": "i8",  # bytes sent (puts, atomics)
    "recvd": "i8",  # bytes received (gets, atomics)
    "enter": "f8",  # the call's ENTER and EXIT times
    "exit": "f8",
    "time": "f8",  # the event's own time
}

# Every location's time line, cut at its synchronisation points (the input of the backward replay,
# patterns.backward).  Cut points are numbered 1, 2, ... per location in event order (sync_points);
# interval j of a location is the time from cut j-1 to cut j (interval 1 from its first event,
# interval n+1 to its last).  One row per (location, interval, call path) with time in it, sorted by
# (loc, cut): the exclusive time charged as Scalasca's time maps do (docs/analysis.md, "Critical path").
TIME_SEGMENTS = {
    "loc": "i4",
    "cut": "i4",  # the interval: time between cut point cut-1 and cut point cut (i8 where a
    #               location has 2**31 - 1 cut points or more)
    "cnode": "i4",
    "time": "f8",  # seconds (a fork/join shift may make single rows negative)
}

# One row per cut point, in (loc, cut) order: the events that can be synchronisation points.
SYNC_POINTS = {
    "loc": "i4",
    "cut": "i4",  # its number on the location (1, 2, ...; i8 where a location has 2**31 - 1 or more)
    "kind": "i1",  # CUT_KINDS
    "row": "i4",  # the row it belongs to in messages / collectives / omp_team_members / omp_barriers / omp_teams
    #               (-1: none; i8 if one of those has 2**31 rows)
    "time": "f8",  # time of the event
    "cnode": "i4",  # call path of the call the event belongs to (entered / left / innermost open), -1 outside
    "enter": "f8",  # ENTER time of that call
}
#: sync_points kinds: which event, and the table its ``row`` refers to
CUT_KINDS = {
    1: ("send", "messages"),  # MPI_SEND (its own cut is also the completion of a blocking send)
    2: ("send_complete", "messages"),  # MPI_SEND_COMPLETE of a non-blocking send
    3: ("recv", "messages"),  # MPI_RECV (also the posting of a blocking receive)
    4: ("recv_request", "messages"),  # MPI_RECV_REQUEST of a non-blocking receive
    5: ("collective", "collectives"),  # MPI_COLLEXIT
    6: ("init", None),  # the first EXIT of MPI_Init / MPI_Init_thread
    7: ("finalize", None),  # the first EXIT of MPI_Finalize
    8: ("fork", "omp_team_members"),  # ENTER of a parallel region on a team member
    9: ("omp_barrier", "omp_barriers"),  # EXIT of an OpenMP barrier inside a team
    10: ("join", "omp_teams"),  # OMP_JOIN on the master
}

#: every table the replay can build, by the name patterns use in ``requires`` and ``ctx.table(name)``
TABLES = {
    "messages": MESSAGES,
    "collectives": COLLECTIVES,
    "omp_teams": OMP_TEAMS,
    "omp_team_members": OMP_TEAM_MEMBERS,
    "omp_barriers": OMP_BARRIERS,
    "locks": LOCKS,
    "omp_tasks": OMP_TASKS,
    "omp_task_dependences": OMP_TASK_DEPENDENCES,
    "omp_task_fragments": OMP_TASK_FRAGMENTS,
    "threads": THREADS,
    "mpi_file_ops": MPI_FILE_OPS,
    "mpi_rma_ops": MPI_RMA_OPS,
    "time_segments": TIME_SEGMENTS,
    "sync_points": SYNC_POINTS,
}
TABLE_NAMES = tuple(TABLES)
