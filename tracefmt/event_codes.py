"""Event codes as plain ints for jitted kernels.

numba folds module-level ints into the machine code as constants, but not the members of an IntEnum, so every
kernel that switches on ``tracefmt.layout.EventType`` takes the codes from here (one list, not one per kernel).
Kernels compiled with ``cache=True`` keep the values they were compiled with: a changed code needs their caches
cleared (a fresh checkout has none).
"""

from .layout import EventType

ENTER = int(EventType.ENTER)
EXIT = int(EventType.EXIT)
MPI_SEND = int(EventType.MPI_SEND)
MPI_RECV = int(EventType.MPI_RECV)
MPI_SEND_COMPLETE = int(EventType.MPI_SEND_COMPLETE)
MPI_RECV_REQUEST = int(EventType.MPI_RECV_REQUEST)
MPI_REQUEST_CANCELLED = int(EventType.MPI_REQUEST_CANCELLED)
MPI_COLLEXIT = int(EventType.MPI_COLLEXIT)
OMP_FORK = int(EventType.OMP_FORK)
OMP_JOIN = int(EventType.OMP_JOIN)
OMP_COLLEXIT = int(EventType.OMP_COLLEXIT)
OMP_ACQUIRE_LOCK = int(EventType.OMP_ACQUIRE_LOCK)
OMP_RELEASE_LOCK = int(EventType.OMP_RELEASE_LOCK)
OMP_TASK_CREATE = int(EventType.OMP_TASK_CREATE)
OMP_TASK_BEGIN = int(EventType.OMP_TASK_BEGIN)
OMP_TASK_END = int(EventType.OMP_TASK_END)
THREAD_CREATE = int(EventType.THREAD_CREATE)
THREAD_BEGIN = int(EventType.THREAD_BEGIN)
THREAD_END = int(EventType.THREAD_END)
THREAD_JOIN = int(EventType.THREAD_JOIN)
MPI_FILE_IO = int(EventType.MPI_FILE_IO)
MPI_RMA_PUT = int(EventType.MPI_RMA_PUT)
MPI_RMA_GET = int(EventType.MPI_RMA_GET)
MPI_RMA_ATOMIC = int(EventType.MPI_RMA_ATOMIC)
MPI_RMA_SYNC = int(EventType.MPI_RMA_SYNC)
