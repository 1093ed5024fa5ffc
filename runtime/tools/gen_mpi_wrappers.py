"""Generate the table-driven PMPI wrappers (C) from mpi_table.py; prints C to stdout.

The output is included by src/mpi.c, which provides the helpers it calls (xt_mpi_begin, ...).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_table import FUNCTIONS, SEND_FLAGS  # noqa: E402

# EPIK byte conventions (epilog-1.9-and-scalasca-conventions.md 1.9): sent, received, root
RULES = {
    "barrier": ("0", "0", None),
    "bcast": ("(me == root ? (uint64_t)n * count * xt_tsize(datatype) : 0)", "(uint64_t)count * xt_tsize(datatype)",
              "root"),
    "reduce": ("(sendbuf == MPI_IN_PLACE ? 0 : (uint64_t)count * xt_tsize(datatype))",
               "(me == root ? (uint64_t)(sendbuf == MPI_IN_PLACE ? n - 1 : n) * count * xt_tsize(datatype) : 0)",
               "root"),
    "allreduce": ("(uint64_t)n * count * xt_tsize(datatype)", "(uint64_t)n * count * xt_tsize(datatype)", None),
    "gather": ("(sendbuf == MPI_IN_PLACE ? 0 : (uint64_t)sendcount * xt_tsize(sendtype))",
               "(me == root ? (uint64_t)n * recvcount * xt_tsize(recvtype) : 0)", "root"),
    "gatherv": ("(sendbuf == MPI_IN_PLACE ? 0 : (uint64_t)sendcount * xt_tsize(sendtype))",
                "(me == root ? xt_sum(recvcounts, n) * xt_tsize(recvtype) : 0)", "root"),
    "scatter": ("(me == root ? (uint64_t)n * sendcount * xt_tsize(sendtype) : 0)",
                "(recvbuf == MPI_IN_PLACE ? 0 : (uint64_t)recvcount * xt_tsize(recvtype))", "root"),
    "scatterv": ("(me == root ? xt_sum(sendcounts, n) * xt_tsize(sendtype) : 0)",
                 "(recvbuf == MPI_IN_PLACE ? 0 : (uint64_t)recvcount * xt_tsize(recvtype))", "root"),
    "allgather": ("(uint64_t)n * sendcount * xt_tsize(sendtype)", "(uint64_t)n * recvcount * xt_tsize(recvtype)", None),
    "allgatherv": ("(uint64_t)n * sendcount * xt_tsize(sendtype)", "xt_sum(recvcounts, n) * xt_tsize(recvtype)", None),
    "alltoall": ("(uint64_t)n * sendcount * xt_tsize(sendtype)", "(uint64_t)n * recvcount * xt_tsize(recvtype)", None),
    "alltoallv": ("xt_sum(sendcounts, n) * xt_tsize(sendtype)", "xt_sum(recvcounts, n) * xt_tsize(recvtype)", None),
    "reduce_scatter": ("xt_sum(recvcounts, n) * xt_tsize(datatype)",
                       "(uint64_t)n * recvcounts[me] * xt_tsize(datatype)", None),
    "reduce_scatter_block": ("(uint64_t)n * recvcount * xt_tsize(datatype)",
                             "(uint64_t)n * recvcount * xt_tsize(datatype)", None),
    "scan": ("(uint64_t)(n - me) * count * xt_tsize(datatype)", "(uint64_t)(me + 1) * count * xt_tsize(datatype)",
             None),
    "exscan": ("(uint64_t)(n - me - 1) * count * xt_tsize(datatype)", "(uint64_t)me * count * xt_tsize(datatype)",
               None),
}


def params(sig, large):
    sig = sig.replace("COUNTS", "const MPI_Count *" if large else "const int *")
    sig = sig.replace("DISPLS", "const MPI_Aint *" if large else "const int *")
    sig = sig.replace("COUNT", "MPI_Count" if large else "int")
    names = [re.split(r"[\s*]+", p.strip().replace("[]", ""))[-1] for p in sig.split(",")]
    return sig, names


def wrapper(idx, name, sig, kind, large):
    cname = f"MPI_{name}" + ("_c" if large else "")
    decl, names = params(sig, large)
    args = ", ".join(names)
    out = [f"int {cname}({decl})", "{"]
    out.append("    xt_thread *t;")
    out.append(f"    uint64_t t0 = xt_mpi_begin(H_COUNT + {idx}, &t);")
    out.append("    (void)t0;")
    out.append(f"    if (!t) return P{cname}({args});")
    if kind in ("send", "isend"):
        flags = SEND_FLAGS.get(name, "0")
        if kind == "send":
            out.append(f"    xt_send_event(t, t0, comm, dest, tag, (uint64_t)count * xt_tsize(datatype), {flags}, 0);")
            out.append(f"    int rc = P{cname}({args});")
        else:
            out.append(f"    int rc = P{cname}({args});")
            out.append("    if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL) {")
            out.append("        uint64_t id = xt_request_new(*request, XT_REQ_SEND, comm, dest, tag, 0);")
            out.append(f"        xt_send_event(t, t0, comm, dest, tag, (uint64_t)count * xt_tsize(datatype), {flags}, id);")
            out.append("    }")
    elif kind == "recv":
        out.append("    MPI_Status own;")
        out.append("    if (status == MPI_STATUS_IGNORE) status = &own;")
        out.append(f"    int rc = P{cname}({args});")
        out.append("    if (rc == MPI_SUCCESS) xt_recv_event(t, xt_now(), comm, source, tag, status, 0);")
    elif kind == "irecv":
        out.append(f"    int rc = P{cname}({args});")
        out.append("    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) {")
        out.append("        uint64_t id = xt_request_new(*request, XT_REQ_RECV, comm, source, tag, 0);")
        out.append("        xt_recv_request_event(t, t0, comm, source, tag, id);")
        out.append("    }")
    elif kind.startswith("coll:"):
        sent, recvd, root = RULES[kind[5:]]
        out.append(f"    int rc = P{cname}({args});")
        out.append("    int n = 1, me = 0;")
        out.append("    xt_comm_geometry(comm, &n, &me);")
        out.append(f"    xt_mpi_collend(t, H_COUNT + {idx}, comm, {root or 'MPI_PROC_NULL'}, {sent}, {recvd});")
        out.append("    return rc;")
        out.append("}")
        return "\n".join(out)
    else:
        out.append(f"    int rc = P{cname}({args});")
    out.append(f"    xt_mpi_end(t, H_COUNT + {idx});")
    out.append("    return rc;")
    out.append("}")
    return "\n".join(out)


def main():
    print("/* Generated by runtime/tools/gen_mpi_wrappers.py from mpi_table.py: do not edit. */")
    print(f"#define XT_GEN_COUNT {len(FUNCTIONS)}")
    names = ", ".join(f'"MPI_{f[0]}"' for f in FUNCTIONS)
    roles = ", ".join(f"ELG_ROLE_{f[3]}" for f in FUNCTIONS)
    print(f"static const char *const xt_gen_names[XT_GEN_COUNT] = {{{names}}};")
    print(f"static const uint8_t xt_gen_roles[XT_GEN_COUNT] = {{{roles}}};")
    for i, (name, sig, kind, _role) in enumerate(FUNCTIONS):
        print()
        print(wrapper(i, name, sig, kind, False))
    print("\n#if MPI_VERSION >= 4 /* large-count variants */")
    for i, (name, sig, kind, _role) in enumerate(FUNCTIONS):
        if "COUNT" in sig:
            print()
            print(wrapper(i, name, sig, kind, True))
    print("#endif")


if __name__ == "__main__":
    main()
