"""Generate the table-driven PMPI wrappers from mpi_table.py; prints C to stdout.

Without arguments: the C bindings (MPI_Xxx and MPI_Xxx_c), included by src/mpi.c; the helpers
they call (xt_mpi_begin, ...) are declared in src/mpi_internal.h.  With --fortran: the Fortran bindings (mpi_xxx_ and
its manglings), included by src/mpi_fortran.c.
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


def typed_params(sig):
    """[(C type, name)] of a (small-count) parameter list; arrays become pointers."""
    decl, names = params(sig, False)
    out = []
    for piece, name in zip(decl.split(","), names):
        piece = piece.strip()
        ctype = piece[: piece.rindex(name)].strip()
        if piece.endswith("[]"):
            ctype += " *"
        out.append((ctype, name))
    return out


#: bytes (sent, received) of an MPI_RMA_ATOMIC by its elg_rma_atomic op (format 2.3)
ATOMIC_BYTES = {
    "ACCUMULATE": ("(uint64_t)origin_count * xt_tsize(origin_datatype)", "0"),
    "GET_ACCUMULATE": ("(op == MPI_NO_OP ? 0 : (uint64_t)origin_count * xt_tsize(origin_datatype))",
                       "(uint64_t)result_count * xt_tsize(result_datatype)"),
    "FETCH_AND_OP": ("(op == MPI_NO_OP ? 0 : xt_tsize(datatype))", "xt_tsize(datatype)"),
    "COMPARE_AND_SWAP": ("2 * xt_tsize(datatype)", "xt_tsize(datatype)"),
}
#: win:<kind> -> (elg_rma_sync kind, target expression or None, flags expression)
WIN_SYNC = {
    "FENCE": ("FENCE", None, "0"), "POST": ("POST", None, "0"), "START": ("START", None, "0"),
    "COMPLETE": ("COMPLETE", None, "0"), "WAIT": ("WAIT", None, "0"), "TEST": ("TEST", None, "0"),
    "LOCK": ("LOCK", "rank", "(lock_type == MPI_LOCK_EXCLUSIVE ? ELG_RMA_SYNC_EXCLUSIVE : 0)"),
    "UNLOCK": ("UNLOCK", "rank", "0"), "LOCK_ALL": ("LOCK_ALL", None, "0"), "UNLOCK_ALL": ("UNLOCK_ALL", None, "0"),
    "FLUSH": ("FLUSH", "rank", "0"), "FLUSH_ALL": ("FLUSH", None, "0"),
    "FLUSH_LOCAL": ("FLUSH", "rank", "ELG_RMA_SYNC_LOCAL"), "FLUSH_LOCAL_ALL": ("FLUSH", None, "ELG_RMA_SYNC_LOCAL"),
    "SYNC": ("SYNC", None, "0"),
}


def rma_body(kind, call, win_out, flag):
    """rma:<op>[|NONBLOCKING] and win:<kind> (format 2.3): the call, then its MPI_RMA_* record."""
    out = []
    if kind.startswith("rma:"):
        op, _, nb = kind[4:].partition("|")
        flags = "ELG_RMA_NONBLOCKING" if nb else "0"
        out += call
        if op in ("PUT", "GET"):
            args = f"ELG_MPI_RMA_{op}, win, target_rank, 0, (uint64_t)origin_count * xt_tsize(origin_datatype), 0"
        else:
            sent, recvd = ATOMIC_BYTES[op]
            args = f"ELG_MPI_RMA_ATOMIC, win, target_rank, ELG_RMA_ATOMIC_{op}, {sent}, {recvd}"
        out.append(f"    if (rc == MPI_SUCCESS) xt_rma_transfer(t, {args}, {flags});")
        return out
    what = kind[4:]
    if what == "CREATE":
        out += call
        out.append(f"    if (rc == MPI_SUCCESS) xt_rma_sync_id(t, xt_win_created({win_out}, comm), ELG_RMA_SYNC_CREATE);")
        return out
    if what == "FREE":
        out.append(f"    uint32_t wid = xt_win_id({win_out});")
        out += call
        out.append("    if (rc == MPI_SUCCESS) xt_rma_sync_id(t, wid, ELG_RMA_SYNC_FREE);")
        return out
    sync, target, flags = WIN_SYNC[what]
    group = "group" if sync in ("POST", "START") else "MPI_GROUP_NULL"
    cond = f"rc == MPI_SUCCESS && {flag}" if sync == "TEST" else "rc == MPI_SUCCESS"  # an unfinished test: nothing
    out += call
    out.append(f"    if ({cond}) xt_rma_sync(t, win, ELG_RMA_SYNC_{sync}, {group}, {target or 'XT_ALL_TARGETS'}, "
               f"{flags});")
    return out


def body(idx, name, kind, call, req, status_pre=(), status_post=(), win_out="*win", flag="*flag"):
    """The recording logic shared by the C and the Fortran wrapper.

    call: C statements that make the real call and set `int rc`; req: an expression for the new
    request's C handle after the call; status_pre/post: lines that give `MPI_Status *status`;
    win_out: the window handle an MPI_Win_create* made (after the call) or MPI_Win_free frees (before);
    flag: MPI_Win_test's result.
    """
    out = []
    if kind in ("send", "isend"):
        flags = SEND_FLAGS.get(name, "0")
        if kind == "send":
            out.append(f"    xt_send_event(t, t0, comm, dest, tag, (uint64_t)count * xt_tsize(datatype), {flags}, 0);")
            out += call
        else:
            out += call
            out.append("    if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL) {")
            out.append(f"        uint64_t id = xt_request_new({req}, XT_REQ_SEND, comm, dest, tag, 0);")
            out.append(f"        xt_send_event(t, t0, comm, dest, tag, (uint64_t)count * xt_tsize(datatype), {flags}, id);")
            out.append("    }")
    elif kind == "recv":
        out += status_pre
        out += call
        out += status_post
        out.append("    if (rc == MPI_SUCCESS) xt_recv_event(t, xt_now(), comm, source, tag, status, 0);")
    elif kind == "irecv":
        out += call
        out.append("    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) {")
        out.append(f"        uint64_t id = xt_request_new({req}, XT_REQ_RECV, comm, source, tag, 0);")
        out.append("        xt_recv_request_event(t, t0, comm, source, tag, id);")
        out.append("    }")
    elif kind == "psend":
        flags = SEND_FLAGS.get(name.replace("_init", ""), "0")
        out += call
        out.append("    if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL)")
        out.append(f"        xt_request_persistent({req}, XT_REQ_SEND, comm, dest, tag, "
                   f"(uint64_t)count * xt_tsize(datatype), {flags});")
    elif kind == "precv":
        out += call
        out.append("    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL)")
        out.append(f"        xt_request_persistent({req}, XT_REQ_RECV, comm, source, tag, 0, 0);")
    elif kind.startswith("coll:") or kind.startswith("icoll:"):
        sent, recvd, root = RULES[kind.split(":")[1]]
        out += call
        out.append("    int n = 1, me = 0;")
        out.append("    xt_comm_geometry(comm, &n, &me);")
        if kind.startswith("coll:"):
            out.append(f"    xt_mpi_collend(t, H_COUNT + {idx}, comm, {root or 'MPI_PROC_NULL'}, {sent}, {recvd});")
            out.append("    return rc;")
            return out
        out.append("    if (rc == MPI_SUCCESS)")
        out.append(f"        xt_request_coll({req}, H_COUNT + {idx}, comm, {root or 'MPI_PROC_NULL'}, {sent}, {recvd});")
    elif kind.startswith(("rma:", "win:")):
        out += rma_body(kind, call, win_out, flag)
    elif kind.startswith("io:"):
        flags = " | ".join(f"ELG_FILE_IO_{f}" for f in kind[3:].split("|"))
        out += call
        out.append(f"    if (rc == MPI_SUCCESS) xt_file_io_event(t, {flags}, (uint64_t)count * xt_tsize(datatype));")
    else:
        out += call
    out.append(f"    xt_mpi_end(t, H_COUNT + {idx});")
    out.append("    return rc;")
    return out


def wrapper(idx, name, sig, kind, large):
    cname = f"MPI_{name}" + ("_c" if large else "")
    decl, names = params(sig, large)
    args = ", ".join(names)
    out = [f"int {cname}({decl})", "{"]
    out.append("    xt_thread *t;")
    out.append(f"    uint64_t t0 = xt_mpi_begin(H_COUNT + {idx}, &t);")
    out.append("    (void)t0;")
    out.append(f"    if (!t) return P{cname}({args});")
    status_pre = ["    MPI_Status own;", "    if (status == MPI_STATUS_IGNORE) status = &own;"]
    out += body(idx, name, kind, [f"    int rc = P{cname}({args});"], "*request", status_pre)
    out.append("}")
    return "\n".join(out)


# C types of parameters the recording code reads, and how a Fortran argument becomes one
F2C = {
    "int": "*f_{n}",
    "MPI_Datatype": "PMPI_Type_f2c(*f_{n})",
    "MPI_Comm": "PMPI_Comm_f2c(*f_{n})",
    "const void *": "xt_f_buffer(f_{n})",
    "void *": "xt_f_buffer(f_{n})",
    "const int *": "(const int *)f_{n}",
    "MPI_Win": "PMPI_Win_f2c(*f_{n})",
    "MPI_Group": "PMPI_Group_f2c(*f_{n})",
    "MPI_Op": "PMPI_Op_f2c(*f_{n})",
}


def fortran_wrapper(idx, name, sig, kind):
    """mpi_<name>_ (gfortran / Open MPI mpif.h and `use mpi`): record like the C wrapper, then call the
    library's own Fortran binding pmpi_<name>_, so Fortran-only details (MPI_IN_PLACE and
    MPI_STATUS_IGNORE sentinels, status layout, handle tables) stay the library's business."""
    tp = typed_params(sig)
    low = name.lower()
    fdecl = [("void *" if "void *" in ct else "MPI_Fint *") + f"f_{n}" for ct, n in tp] + ["MPI_Fint *ierr"]
    ftypes = ", ".join(d.rsplit("f_", 1)[0].strip() if "f_" in d else "MPI_Fint *" for d in fdecl)
    has_status = any(n == "status" for _, n in tp)
    fargs = ", ".join(("f_st" if n == "status" else f"f_{n}") for _, n in tp) + ", ierr"
    plain_args = ", ".join(f"f_{n}" for _, n in tp) + ", ierr"
    out = [f"void mpi_{low}_({', '.join(fdecl)})", "{"]
    out.append(f"    static void (*real)({ftypes});")
    out.append(f'    if (!real) real = (void (*)({ftypes}))xt_f_real("{low}");')
    out.append("    xt_thread *t;")
    out.append(f"    uint64_t t0 = xt_mpi_begin(H_COUNT + {idx}, &t);")
    out.append("    (void)t0;")
    out.append("    if (!t) {")
    out.append(f"        real({plain_args});")
    out.append("        return;")
    out.append("    }")
    for ct, n in tp:
        conv = F2C.get(ct)
        if conv:
            out.append(f"    {ct}{'' if ct.endswith('*') else ' '}{n} = {conv.format(n=n)};")
            out.append(f"    (void){n};")
    status_pre, status_post = [], []
    if has_status:
        out.append("    MPI_Fint f_own[XT_F_STATUS_MAX];")
        out.append("    MPI_Fint *f_st = xt_f_status_ignored(f_status) ? f_own : f_status;")
        status_post = ["    MPI_Status c_status, *status = &c_status;",
                       "    if (rc == MPI_SUCCESS) PMPI_Status_f2c(f_st, &c_status);"]
    call = [f"    real({fargs});", "    int rc = *ierr;", "    (void)rc;"]
    lines = body(idx, name, kind, call, "PMPI_Request_f2c(*f_request)", status_pre, status_post,
                 win_out="PMPI_Win_f2c(*(MPI_Fint *)f_win)", flag="*(MPI_Fint *)f_flag")
    lines = [ln.replace("return rc;", "return;") for ln in lines]
    out += lines
    out.append("}")
    out.append(f"XT_F_ALIASES(mpi_{low}_, mpi_{low}__, mpi_{low}, MPI_{name.upper()})")
    return "\n".join(out)


def main_fortran():
    print("/* Generated by runtime/tools/gen_mpi_wrappers.py --fortran from mpi_table.py: do not edit. */")
    for i, (name, sig, kind, _role) in enumerate(FUNCTIONS):
        if "char" in sig:  # hidden Fortran string lengths: see mpi_table.py
            continue
        print()
        print(fortran_wrapper(i, name, sig, kind))


def main():
    if sys.argv[1:] == ["--fortran"]:
        main_fortran()
        return
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
