"""The MPI functions the runtime wraps, one line each: what gen_mpi_wrappers.py turns into C.

Each entry: (name, parameter list, kind, role).  In parameter lists COUNT / COUNTS / DISPLS
stand for the count, count-array and displacement-array types, so the same line also yields
the MPI-4 large-count variant MPI_<name>_c (MPI_Count / MPI_Aint) where the library has it.

kind:
  plain           enter/exit only
  send / isend    a message send (flags from the SEND_FLAGS map)
  recv / irecv    a message receive
  coll:<rule>     a blocking collective: MPI_COLLEXIT with root and bytes by the EPIK rule <rule>
  icoll:<rule>    a non-blocking collective: the posting call is a plain region; the request remembers
                  comm, root and bytes (rule as for coll:), and the call that completes it records
                  the collective instance (see src/mpi_request.c, xt_complete_set)
  psend / precv   persistent send / receive (Send_init, Recv_init): remembered under the request;
                  each MPI_Start records the message as a non-blocking one
  io:<flags>      an MPI file read or write: MPI_FILE_IO (format 2.2) with count x type size bytes;
                  <flags> are elg_file_io_flag names without the prefix, joined by '|'
  rma:<op>[|NONBLOCKING]
                  an MPI one-sided transfer (format 2.3): <op> PUT or GET (MPI_RMA_PUT / _GET, origin
                  count x type size bytes) or an elg_rma_atomic name without the prefix (MPI_RMA_ATOMIC, bytes
                  sent and received by that op's rule); the target rank as a global rank; NONBLOCKING for
                  the request-based forms (MPI_Rput, ...)
  win:<kind>      an MPI one-sided synchronisation: one MPI_RMA_SYNC of elg_rma_sync kind <kind> (without the
                  prefix; FLUSH_ALL, FLUSH_LOCAL and FLUSH_LOCAL_ALL are FLUSH with target NO_ID and / or
                  the LOCAL flag), after the call; CREATE defines the window *win over comm, FREE names the
                  window *win had before the call; see src/mpi_rma.c
Functions with a string parameter (MPI_File_open, _delete, _set_view) get no Fortran wrapper: Fortran
passes hidden string lengths the generic Fortran wrapper does not know.
Functions with bespoke logic (Init*, Finalize, Abort, Sendrecv*, Wait*/Test*, Start*, Request_free,
Comm creation, Cancel) are written by hand in src/mpi*.c (C) and src/mpi_fortran.c (Fortran) and are
not listed here.  Every entry also yields a Fortran wrapper (mpi_<name>_ and its other manglings)
for MPI libraries whose Fortran bindings bypass the C ones (Open MPI); large-count variants have
no Fortran (mpif.h / use mpi) binding.
"""

P2P = "MPI_POINT2POINT"
OTHER = "MPI_OTHER"

SEND = "const void *buf, COUNT count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm"
ISEND = SEND + ", MPI_Request *request"
RECV = "void *buf, COUNT count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status"
IRECV = "void *buf, COUNT count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request"

SEND_FLAGS = {"Ssend": "ELG_SEND_SYNCHRONOUS", "Issend": "ELG_SEND_SYNCHRONOUS", "Bsend": "ELG_SEND_BUFFERED",
              "Ibsend": "ELG_SEND_BUFFERED", "Rsend": "ELG_SEND_READY", "Irsend": "ELG_SEND_READY"}

GATHER = ("const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, COUNT recvcount, "
          "MPI_Datatype recvtype")
GATHERV = ("const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, COUNTS recvcounts, "
           "DISPLS displs, MPI_Datatype recvtype")
SCATTERV = ("const void *sendbuf, COUNTS sendcounts, DISPLS displs, MPI_Datatype sendtype, void *recvbuf, "
            "COUNT recvcount, MPI_Datatype recvtype")
ALLTOALLV = ("const void *sendbuf, COUNTS sendcounts, DISPLS sdispls, MPI_Datatype sendtype, void *recvbuf, "
             "COUNTS recvcounts, DISPLS rdispls, MPI_Datatype recvtype")
FILE_IO = "MPI_FILE_IO"
RMA = "MPI_RMA"
ORIGIN = "const void *origin_addr, COUNT origin_count, MPI_Datatype origin_datatype"
GORIGIN = ORIGIN.replace("const void", "void")
RESULT = ", void *result_addr, COUNT result_count, MPI_Datatype result_datatype"
TARGET = ", int target_rank, MPI_Aint target_disp, COUNT target_count, MPI_Datatype target_datatype"
FREAD = "MPI_File fh, void *buf, COUNT count, MPI_Datatype datatype, MPI_Status *status"
FWRITE = "MPI_File fh, const void *buf, COUNT count, MPI_Datatype datatype, MPI_Status *status"
FIREAD = "MPI_File fh, void *buf, COUNT count, MPI_Datatype datatype, MPI_Request *request"
FIWRITE = "MPI_File fh, const void *buf, COUNT count, MPI_Datatype datatype, MPI_Request *request"
AT = "MPI_File fh, MPI_Offset offset, "
REDUCE = "const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype datatype, MPI_Op op"

FUNCTIONS = [
    # point to point
    ("Send", SEND, "send", P2P),
    ("Ssend", SEND, "send", P2P),
    ("Bsend", SEND, "send", P2P),
    ("Rsend", SEND, "send", P2P),
    ("Isend", ISEND, "isend", P2P),
    ("Issend", ISEND, "isend", P2P),
    ("Ibsend", ISEND, "isend", P2P),
    ("Irsend", ISEND, "isend", P2P),
    ("Recv", RECV, "recv", P2P),
    ("Irecv", IRECV, "irecv", P2P),
    ("Probe", "int source, int tag, MPI_Comm comm, MPI_Status *status", "plain", P2P),
    ("Iprobe", "int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status", "plain", P2P),
    # persistent point to point
    ("Send_init", ISEND, "psend", P2P),
    ("Ssend_init", ISEND, "psend", P2P),
    ("Bsend_init", ISEND, "psend", P2P),
    ("Rsend_init", ISEND, "psend", P2P),
    ("Recv_init", IRECV, "precv", P2P),
    ("Get_count", None, None, None),  # not wrapped: cheap queries stay out of the trace
    # blocking collectives
    ("Barrier", "MPI_Comm comm", "coll:barrier", "MPI_COLL_BARRIER"),
    ("Bcast", "void *buffer, COUNT count, MPI_Datatype datatype, int root, MPI_Comm comm", "coll:bcast",
     "MPI_COLL_ONE2ALL"),
    ("Reduce", REDUCE + ", int root, MPI_Comm comm", "coll:reduce", "MPI_COLL_ALL2ONE"),
    ("Allreduce", REDUCE + ", MPI_Comm comm", "coll:allreduce", "MPI_COLL_ALL2ALL"),
    ("Gather", GATHER + ", int root, MPI_Comm comm", "coll:gather", "MPI_COLL_ALL2ONE"),
    ("Gatherv", GATHERV + ", int root, MPI_Comm comm", "coll:gatherv", "MPI_COLL_ALL2ONE"),
    ("Scatter", GATHER + ", int root, MPI_Comm comm", "coll:scatter", "MPI_COLL_ONE2ALL"),
    ("Scatterv", SCATTERV + ", int root, MPI_Comm comm", "coll:scatterv", "MPI_COLL_ONE2ALL"),
    ("Allgather", GATHER + ", MPI_Comm comm", "coll:allgather", "MPI_COLL_ALL2ALL"),
    ("Allgatherv", GATHERV + ", MPI_Comm comm", "coll:allgatherv", "MPI_COLL_ALL2ALL"),
    ("Alltoall", GATHER + ", MPI_Comm comm", "coll:alltoall", "MPI_COLL_ALL2ALL"),
    ("Alltoallv", ALLTOALLV + ", MPI_Comm comm", "coll:alltoallv", "MPI_COLL_ALL2ALL"),
    ("Reduce_scatter", "const void *sendbuf, void *recvbuf, COUNTS recvcounts, MPI_Datatype datatype, MPI_Op op, "
     "MPI_Comm comm", "coll:reduce_scatter", "MPI_COLL_ALL2ALL"),
    ("Reduce_scatter_block", REDUCE.replace("count", "recvcount") + ", MPI_Comm comm", "coll:reduce_scatter_block",
     "MPI_COLL_ALL2ALL"),
    ("Scan", REDUCE + ", MPI_Comm comm", "coll:scan", "MPI_COLL_OTHER"),
    ("Exscan", REDUCE + ", MPI_Comm comm", "coll:exscan", "MPI_COLL_OTHER"),
    # non-blocking collectives (MPI-3)
    ("Ibarrier", "MPI_Comm comm, MPI_Request *request", "icoll:barrier", "MPI_COLL_BARRIER"),
    ("Ibcast", "void *buffer, COUNT count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request",
     "icoll:bcast", "MPI_COLL_ONE2ALL"),
    ("Ireduce", REDUCE + ", int root, MPI_Comm comm, MPI_Request *request", "icoll:reduce", "MPI_COLL_ALL2ONE"),
    ("Iallreduce", REDUCE + ", MPI_Comm comm, MPI_Request *request", "icoll:allreduce", "MPI_COLL_ALL2ALL"),
    ("Igather", GATHER + ", int root, MPI_Comm comm, MPI_Request *request", "icoll:gather", "MPI_COLL_ALL2ONE"),
    ("Igatherv", GATHERV + ", int root, MPI_Comm comm, MPI_Request *request", "icoll:gatherv", "MPI_COLL_ALL2ONE"),
    ("Iscatter", GATHER + ", int root, MPI_Comm comm, MPI_Request *request", "icoll:scatter", "MPI_COLL_ONE2ALL"),
    ("Iscatterv", SCATTERV + ", int root, MPI_Comm comm, MPI_Request *request", "icoll:scatterv", "MPI_COLL_ONE2ALL"),
    ("Iallgather", GATHER + ", MPI_Comm comm, MPI_Request *request", "icoll:allgather", "MPI_COLL_ALL2ALL"),
    ("Iallgatherv", GATHERV + ", MPI_Comm comm, MPI_Request *request", "icoll:allgatherv", "MPI_COLL_ALL2ALL"),
    ("Ialltoall", GATHER + ", MPI_Comm comm, MPI_Request *request", "icoll:alltoall", "MPI_COLL_ALL2ALL"),
    ("Ialltoallv", ALLTOALLV + ", MPI_Comm comm, MPI_Request *request", "icoll:alltoallv", "MPI_COLL_ALL2ALL"),
    ("Ireduce_scatter_block", REDUCE.replace("count", "recvcount") + ", MPI_Comm comm, MPI_Request *request",
     "icoll:reduce_scatter_block", "MPI_COLL_ALL2ALL"),
    ("Ireduce_scatter", "const void *sendbuf, void *recvbuf, COUNTS recvcounts, MPI_Datatype datatype, MPI_Op op, "
     "MPI_Comm comm, MPI_Request *request", "icoll:reduce_scatter", "MPI_COLL_ALL2ALL"),
    ("Iscan", REDUCE + ", MPI_Comm comm, MPI_Request *request", "icoll:scan", "MPI_COLL_OTHER"),
    ("Iexscan", REDUCE + ", MPI_Comm comm, MPI_Request *request", "icoll:exscan", "MPI_COLL_OTHER"),
    # MPI file I/O (Scalasca's MPI_IO categories: collective = the calls every process of the file's group makes)
    ("File_open", "MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh", "plain", FILE_IO),
    ("File_close", "MPI_File *fh", "plain", FILE_IO),
    ("File_delete", "const char *filename, MPI_Info info", "plain", FILE_IO),
    ("File_set_size", "MPI_File fh, MPI_Offset size", "plain", FILE_IO),
    ("File_preallocate", "MPI_File fh, MPI_Offset size", "plain", FILE_IO),
    ("File_set_view", "MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, "
     "const char *datarep, MPI_Info info", "plain", FILE_IO),
    ("File_sync", "MPI_File fh", "plain", FILE_IO),
    ("File_seek", "MPI_File fh, MPI_Offset offset, int whence", "plain", FILE_IO),
    ("File_seek_shared", "MPI_File fh, MPI_Offset offset, int whence", "plain", FILE_IO),
    ("File_read", FREAD, "io:READ", FILE_IO),
    ("File_write", FWRITE, "io:WRITE", FILE_IO),
    ("File_read_at", AT + FREAD.replace("MPI_File fh, ", ""), "io:READ", FILE_IO),
    ("File_write_at", AT + FWRITE.replace("MPI_File fh, ", ""), "io:WRITE", FILE_IO),
    ("File_read_shared", FREAD, "io:READ", FILE_IO),
    ("File_write_shared", FWRITE, "io:WRITE", FILE_IO),
    ("File_read_all", FREAD, "io:READ|COLLECTIVE", FILE_IO),
    ("File_write_all", FWRITE, "io:WRITE|COLLECTIVE", FILE_IO),
    ("File_read_at_all", AT + FREAD.replace("MPI_File fh, ", ""), "io:READ|COLLECTIVE", FILE_IO),
    ("File_write_at_all", AT + FWRITE.replace("MPI_File fh, ", ""), "io:WRITE|COLLECTIVE", FILE_IO),
    ("File_read_ordered", FREAD, "io:READ|COLLECTIVE", FILE_IO),
    ("File_write_ordered", FWRITE, "io:WRITE|COLLECTIVE", FILE_IO),
    ("File_iread", FIREAD, "io:READ|NONBLOCKING", FILE_IO),
    ("File_iwrite", FIWRITE, "io:WRITE|NONBLOCKING", FILE_IO),
    ("File_iread_at", AT + FIREAD.replace("MPI_File fh, ", ""), "io:READ|NONBLOCKING", FILE_IO),
    ("File_iwrite_at", AT + FIWRITE.replace("MPI_File fh, ", ""), "io:WRITE|NONBLOCKING", FILE_IO),
    # MPI one-sided (RMA, format 2.3): each call writes its MPI_RMA_* record (see the kinds above)
    ("Win_create", "void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win",
     "win:CREATE", RMA),
    ("Win_allocate", "MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win",
     "win:CREATE", RMA),
    ("Win_allocate_shared", "MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, "
     "MPI_Win *win", "win:CREATE", RMA),
    ("Win_create_dynamic", "MPI_Info info, MPI_Comm comm, MPI_Win *win", "win:CREATE", RMA),
    ("Win_attach", "MPI_Win win, void *base, MPI_Aint size", "plain", RMA),
    ("Win_detach", "MPI_Win win, const void *base", "plain", RMA),
    ("Win_free", "MPI_Win *win", "win:FREE", RMA),
    ("Win_fence", "int assert, MPI_Win win", "win:FENCE", RMA),
    ("Win_post", "MPI_Group group, int assert, MPI_Win win", "win:POST", RMA),
    ("Win_start", "MPI_Group group, int assert, MPI_Win win", "win:START", RMA),
    ("Win_complete", "MPI_Win win", "win:COMPLETE", RMA),
    ("Win_wait", "MPI_Win win", "win:WAIT", RMA),
    ("Win_test", "MPI_Win win, int *flag", "win:TEST", RMA),
    ("Win_lock", "int lock_type, int rank, int assert, MPI_Win win", "win:LOCK", RMA),
    ("Win_unlock", "int rank, MPI_Win win", "win:UNLOCK", RMA),
    ("Win_lock_all", "int assert, MPI_Win win", "win:LOCK_ALL", RMA),
    ("Win_unlock_all", "MPI_Win win", "win:UNLOCK_ALL", RMA),
    ("Win_flush", "int rank, MPI_Win win", "win:FLUSH", RMA),
    ("Win_flush_all", "MPI_Win win", "win:FLUSH_ALL", RMA),
    ("Win_flush_local", "int rank, MPI_Win win", "win:FLUSH_LOCAL", RMA),
    ("Win_flush_local_all", "MPI_Win win", "win:FLUSH_LOCAL_ALL", RMA),
    ("Win_sync", "MPI_Win win", "win:SYNC", RMA),
    ("Put", ORIGIN + TARGET + ", MPI_Win win", "rma:PUT", RMA),
    ("Get", GORIGIN + TARGET + ", MPI_Win win", "rma:GET", RMA),
    ("Accumulate", ORIGIN + TARGET + ", MPI_Op op, MPI_Win win", "rma:ACCUMULATE", RMA),
    ("Get_accumulate", ORIGIN + RESULT + TARGET + ", MPI_Op op, MPI_Win win", "rma:GET_ACCUMULATE", RMA),
    ("Fetch_and_op", "const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank, "
     "MPI_Aint target_disp, MPI_Op op, MPI_Win win", "rma:FETCH_AND_OP", RMA),
    ("Compare_and_swap", "const void *origin_addr, const void *compare_addr, void *result_addr, "
     "MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win", "rma:COMPARE_AND_SWAP", RMA),
    ("Rput", ORIGIN + TARGET + ", MPI_Win win, MPI_Request *request", "rma:PUT|NONBLOCKING", RMA),
    ("Rget", GORIGIN + TARGET + ", MPI_Win win, MPI_Request *request", "rma:GET|NONBLOCKING", RMA),
    ("Raccumulate", ORIGIN + TARGET + ", MPI_Op op, MPI_Win win, MPI_Request *request",
     "rma:ACCUMULATE|NONBLOCKING", RMA),
    ("Rget_accumulate", ORIGIN + RESULT + TARGET + ", MPI_Op op, MPI_Win win, MPI_Request *request",
     "rma:GET_ACCUMULATE|NONBLOCKING", RMA),
    # groups (communicator creation is hand-written)
    ("Comm_group", "MPI_Comm comm, MPI_Group *group", "plain", OTHER),
    ("Group_incl", "MPI_Group group, int n, const int ranks[], MPI_Group *newgroup", "plain", OTHER),
    ("Group_excl", "MPI_Group group, int n, const int ranks[], MPI_Group *newgroup", "plain", OTHER),
    ("Group_union", "MPI_Group group1, MPI_Group group2, MPI_Group *newgroup", "plain", OTHER),
    ("Group_intersection", "MPI_Group group1, MPI_Group group2, MPI_Group *newgroup", "plain", OTHER),
    ("Group_difference", "MPI_Group group1, MPI_Group group2, MPI_Group *newgroup", "plain", OTHER),
    ("Group_free", "MPI_Group *group", "plain", OTHER),
]
FUNCTIONS = [f for f in FUNCTIONS if f[1] is not None]
