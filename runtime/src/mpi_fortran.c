/* mpi_fortran.c - Fortran MPI bindings (mpif.h and `use mpi`; gfortran's mpi_xxx_ and the other common
 * manglings) for MPI libraries whose Fortran layer calls PMPI_* directly, so that the C wrappers never
 * see a Fortran call (Open MPI).  Built into the Open MPI flavour only, with the generated Fortran
 * wrappers (build/mpi_fortran_wrappers.c), which it includes after its helpers.
 *
 * Each wrapper records what its C counterpart records, converting handles with PMPI_*_f2c, and then
 * calls the library's own Fortran binding (pmpi_xxx_, found with dlsym), so the Fortran-only details
 * (MPI_IN_PLACE / MPI_BOTTOM / MPI_STATUS_IGNORE sentinels, status layout, handle tables) stay the
 * library's business.  `use mpi_f08` bindings are separate symbols and are not wrapped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

#ifdef MPI_F_STATUS_SIZE
#define XT_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else /* Open MPI 4 lacks the MPI-3 constant; its Fortran status is the C struct as integers */
#define XT_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif
#define XT_F_STATUS_MAX 16
_Static_assert(sizeof(MPI_Status) <= XT_F_STATUS_MAX * sizeof(MPI_Fint), "raise XT_F_STATUS_MAX");

/* the other manglings compilers use for the same routine */
#define XT_F_ALIASES(main, a, b, c)                        \
    __typeof__(main) a __attribute__((alias(#main)));      \
    __typeof__(main) b __attribute__((alias(#main)));      \
    __typeof__(main) c __attribute__((alias(#main)));

/* the library's Fortran binding of `base` (e.g. "send"): pmpi_send_ or another mangling */
static void *xt_f_real(const char *base)
{
    char name[96], upper[96];
    size_t k = 0;
    for (; base[k] && k < sizeof upper - 1; k++) upper[k] = (char)(base[k] >= 'a' && base[k] <= 'z' ? base[k] - 32 : base[k]);
    upper[k] = 0;
    const char *forms[] = {"pmpi_%s_", "pmpi_%s__", "pmpi_%s", "PMPI_%s"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(name, sizeof name, forms[i], i == 3 ? upper : base);
        void *f = dlsym(RTLD_DEFAULT, name);
        if (f) return f;
    }
    xt_warn("the MPI library has no Fortran binding pmpi_%s_ (is this program linked with another MPI?)", base);
    abort();
}

/* Fortran MPI_IN_PLACE / MPI_BOTTOM are addresses of common blocks; the byte rules test the C constants */
static void *f_in_place, *f_bottom;
static int f_sentinels_ready;
static void *xt_f_buffer(void *p)
{
    if (!f_sentinels_ready) {
        f_in_place = dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_");
        f_bottom = dlsym(RTLD_DEFAULT, "mpi_fortran_bottom_");
        __atomic_store_n(&f_sentinels_ready, 1, __ATOMIC_RELEASE);
    }
    if (p && p == f_in_place) return MPI_IN_PLACE;
    if (p && p == f_bottom) return MPI_BOTTOM;
    return p;
}

static inline int xt_f_status_ignored(MPI_Fint *s) { return s == MPI_F_STATUS_IGNORE; }

#include "mpi_fortran_wrappers.c"

/* ---------------------------------------------------------------- init, finalize, abort */
void mpi_init_(MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *))xt_f_real("init");
    xt_thread *t = xt_self();
    uint64_t t0 = xt_now();
    real(ierr);
    if (*ierr == MPI_SUCCESS) xt_mpi_init_done(H_INIT, t, t0);
}
XT_F_ALIASES(mpi_init_, mpi_init__, mpi_init, MPI_INIT)

void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *))xt_f_real("init_thread");
    xt_thread *t = xt_self();
    uint64_t t0 = xt_now();
    real(required, provided, ierr);
    if (*ierr == MPI_SUCCESS) xt_mpi_init_done(H_INIT_THREAD, t, t0);
}
XT_F_ALIASES(mpi_init_thread_, mpi_init_thread__, mpi_init_thread, MPI_INIT_THREAD)

void mpi_finalize_(MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *))xt_f_real("finalize");
    xt_mpi_finalize_prepare();
    real(ierr);
}
XT_F_ALIASES(mpi_finalize_, mpi_finalize__, mpi_finalize, MPI_FINALIZE)

void mpi_abort_(MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *))xt_f_real("abort");
    xt_mpi_abort_prepare((int)*errorcode);
    real(comm, errorcode, ierr);
}
XT_F_ALIASES(mpi_abort_, mpi_abort__, mpi_abort, MPI_ABORT)

/* ---------------------------------------------------------------- completion */
void mpi_wait_(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *))xt_f_real("wait");
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_WAIT, &t);
    if (!t) {
        real(request, status, ierr);
        return;
    }
    MPI_Request r = PMPI_Request_f2c(*request);
    MPI_Fint own[XT_F_STATUS_MAX], *fs = xt_f_status_ignored(status) ? own : status;
    real(request, fs, ierr);
    MPI_Status cs;
    PMPI_Status_f2c(fs, &cs);
    if (*ierr == MPI_SUCCESS) xt_complete_set(t, t0, xt_now(), &r, NULL, 1, &cs, 0);
    xt_mpi_end(t, H_WAIT);
}
XT_F_ALIASES(mpi_wait_, mpi_wait__, mpi_wait, MPI_WAIT)

void mpi_test_(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))xt_f_real("test");
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_TEST, &t);
    if (!t) {
        real(request, flag, status, ierr);
        return;
    }
    MPI_Request r = PMPI_Request_f2c(*request);
    MPI_Fint own[XT_F_STATUS_MAX], *fs = xt_f_status_ignored(status) ? own : status;
    real(request, flag, fs, ierr);
    if (*ierr == MPI_SUCCESS && *flag) {
        MPI_Status cs;
        PMPI_Status_f2c(fs, &cs);
        xt_complete_set(t, t0, xt_now(), &r, NULL, 1, &cs, 0);
    }
    xt_mpi_end(t, H_TEST);
}
XT_F_ALIASES(mpi_test_, mpi_test__, mpi_test, MPI_TEST)

enum { F_WAITALL, F_TESTALL, F_WAITANY, F_TESTANY, F_WAITSOME, F_TESTSOME };
typedef void (*f_fn4)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*f_fn5)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*f_fn6)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);

/* the Fortran Wait/Test family: arrays of integer handles, 1-based indices, statuses of
 * XT_F_STATUS_SIZE integers each */
static void fmulti(int op, int idx, void *real, MPI_Fint *count, MPI_Fint *req, MPI_Fint *outcount,
                   MPI_Fint *indices, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr)
{
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(idx, &t);
    int n = *count > 0 ? *count : 0, single = op == F_WAITANY || op == F_TESTANY;
    MPI_Request *copy = NULL;
    MPI_Fint *st = statuses, *own = NULL;
    if (t) {
        copy = malloc((n ? n : 1) * sizeof *copy);
        for (int i = 0; i < n; i++) copy[i] = PMPI_Request_f2c(req[i]);
        if (single ? xt_f_status_ignored(statuses) : statuses == MPI_F_STATUSES_IGNORE)
            st = own = malloc((size_t)(n ? n : 1) * XT_F_STATUS_MAX * sizeof(MPI_Fint));
    }
    switch (op) {
    case F_WAITALL: ((f_fn4)real)(count, req, st, ierr); break;
    case F_TESTALL: ((f_fn5)real)(count, req, flag, st, ierr); break;
    case F_WAITANY: ((f_fn5)real)(count, req, index, st, ierr); break;
    case F_TESTANY: ((f_fn6)real)(count, req, index, flag, st, ierr); break;
    default: ((f_fn6)real)(count, req, outcount, indices, st, ierr); break;
    }
    if (!t) return;
    uint64_t now = xt_now();
    int done = 0, *which = malloc((n ? n : 1) * sizeof(int));
    if (*ierr == MPI_SUCCESS) {
        if (op == F_WAITALL || (op == F_TESTALL && *flag)) {
            done = n;
            for (int i = 0; i < n; i++) which[i] = i;
        } else if ((op == F_WAITANY || (op == F_TESTANY && *flag)) && *index != MPI_UNDEFINED) {
            done = 1;
            which[0] = *index - 1;
        } else if ((op == F_WAITSOME || op == F_TESTSOME) && *outcount != MPI_UNDEFINED) {
            done = *outcount;
            for (int i = 0; i < done; i++) which[i] = indices[i] - 1;
        }
    }
    if (done > 0) {
        MPI_Status *cs = malloc((size_t)done * sizeof *cs);
        for (int k = 0; k < done; k++) PMPI_Status_f2c(st + (size_t)k * XT_F_STATUS_SIZE, &cs[k]);
        xt_complete_set(t, t0, now, copy, which, done, cs, sizeof *cs);
        free(cs);
    }
    free(which), free(copy), free(own);
    xt_mpi_end(t, idx);
}

#define F_MULTI(low, UP, H, OP, PARAMS, ...)                                                  \
    void mpi_##low##_ PARAMS                                                                  \
    {                                                                                         \
        static void *real;                                                                    \
        if (!real) real = xt_f_real(#low);                                                    \
        fmulti(OP, H, real, __VA_ARGS__);                                                     \
    }                                                                                         \
    XT_F_ALIASES(mpi_##low##_, mpi_##low##__, mpi_##low, MPI_##UP)

F_MULTI(waitall, WAITALL, H_WAITALL, F_WAITALL, (MPI_Fint * n, MPI_Fint * r, MPI_Fint * st, MPI_Fint * ierr), n, r,
        NULL, NULL, NULL, NULL, st, ierr)
F_MULTI(testall, TESTALL, H_TESTALL, F_TESTALL,
        (MPI_Fint * n, MPI_Fint * r, MPI_Fint * flag, MPI_Fint * st, MPI_Fint * ierr), n, r, NULL, NULL, NULL, flag,
        st, ierr)
F_MULTI(waitany, WAITANY, H_WAITANY, F_WAITANY,
        (MPI_Fint * n, MPI_Fint * r, MPI_Fint * index, MPI_Fint * st, MPI_Fint * ierr), n, r, NULL, NULL, index,
        NULL, st, ierr)
F_MULTI(testany, TESTANY, H_TESTANY, F_TESTANY,
        (MPI_Fint * n, MPI_Fint * r, MPI_Fint * index, MPI_Fint * flag, MPI_Fint * st, MPI_Fint * ierr), n, r, NULL,
        NULL, index, flag, st, ierr)
F_MULTI(waitsome, WAITSOME, H_WAITSOME, F_WAITSOME,
        (MPI_Fint * n, MPI_Fint * r, MPI_Fint * outcount, MPI_Fint * indices, MPI_Fint * st, MPI_Fint * ierr), n, r,
        outcount, indices, NULL, NULL, st, ierr)
F_MULTI(testsome, TESTSOME, H_TESTSOME, F_TESTSOME,
        (MPI_Fint * n, MPI_Fint * r, MPI_Fint * outcount, MPI_Fint * indices, MPI_Fint * st, MPI_Fint * ierr), n, r,
        outcount, indices, NULL, NULL, st, ierr)

/* ---------------------------------------------------------------- requests */
void mpi_cancel_(MPI_Fint *request, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *))xt_f_real("cancel");
    xt_thread *t;
    xt_mpi_begin(H_CANCEL, &t);
    real(request, ierr);
    if (t) xt_mpi_end(t, H_CANCEL);
}
XT_F_ALIASES(mpi_cancel_, mpi_cancel__, mpi_cancel, MPI_CANCEL)

void mpi_request_free_(MPI_Fint *request, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *))xt_f_real("request_free");
    xt_thread *t;
    xt_mpi_begin(H_REQUEST_FREE, &t);
    MPI_Request r = PMPI_Request_f2c(*request);
    real(request, ierr);
    if (*ierr == MPI_SUCCESS && r != MPI_REQUEST_NULL) xt_request_forget(r);
    if (t) xt_mpi_end(t, H_REQUEST_FREE);
}
XT_F_ALIASES(mpi_request_free_, mpi_request_free__, mpi_request_free, MPI_REQUEST_FREE)

void mpi_start_(MPI_Fint *request, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *))xt_f_real("start");
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_START, &t);
    real(request, ierr);
    if (t) {
        if (*ierr == MPI_SUCCESS) xt_request_start(t, t0, PMPI_Request_f2c(*request));
        xt_mpi_end(t, H_START);
    }
}
XT_F_ALIASES(mpi_start_, mpi_start__, mpi_start, MPI_START)

void mpi_startall_(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *))xt_f_real("startall");
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_STARTALL, &t);
    real(count, requests, ierr);
    if (t) {
        if (*ierr == MPI_SUCCESS)
            for (int i = 0; i < *count; i++) xt_request_start(t, t0, PMPI_Request_f2c(requests[i]));
        xt_mpi_end(t, H_STARTALL);
    }
}
XT_F_ALIASES(mpi_startall_, mpi_startall__, mpi_startall, MPI_STARTALL)

/* ---------------------------------------------------------------- send-receive */
void mpi_sendrecv_(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, MPI_Fint *dest, MPI_Fint *sendtag,
                   void *recvbuf, MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *source, MPI_Fint *recvtag,
                   MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr)
{
    typedef void (*fn)(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *,
                       MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
    static fn real;
    if (!real) real = (fn)xt_f_real("sendrecv");
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_SENDRECV, &t);
    if (!t) {
        real(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status,
             ierr);
        return;
    }
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Fint own[XT_F_STATUS_MAX], *fs = xt_f_status_ignored(status) ? own : status;
    xt_send_event(t, t0, c, *dest, *sendtag, (uint64_t)*sendcount * xt_tsize(PMPI_Type_f2c(*sendtype)), 0, 0);
    real(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, fs, ierr);
    if (*ierr == MPI_SUCCESS) {
        MPI_Status cs;
        PMPI_Status_f2c(fs, &cs);
        xt_recv_event(t, xt_now(), c, *source, *recvtag, &cs, 0);
    }
    xt_mpi_end(t, H_SENDRECV);
}
XT_F_ALIASES(mpi_sendrecv_, mpi_sendrecv__, mpi_sendrecv, MPI_SENDRECV)

void mpi_sendrecv_replace_(void *buf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *dest, MPI_Fint *sendtag,
                           MPI_Fint *source, MPI_Fint *recvtag, MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr)
{
    typedef void (*fn)(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                       MPI_Fint *, MPI_Fint *);
    static fn real;
    if (!real) real = (fn)xt_f_real("sendrecv_replace");
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_SENDRECV_REPLACE, &t);
    if (!t) {
        real(buf, count, datatype, dest, sendtag, source, recvtag, comm, status, ierr);
        return;
    }
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Fint own[XT_F_STATUS_MAX], *fs = xt_f_status_ignored(status) ? own : status;
    xt_send_event(t, t0, c, *dest, *sendtag, (uint64_t)*count * xt_tsize(PMPI_Type_f2c(*datatype)), 0, 0);
    real(buf, count, datatype, dest, sendtag, source, recvtag, comm, fs, ierr);
    if (*ierr == MPI_SUCCESS) {
        MPI_Status cs;
        PMPI_Status_f2c(fs, &cs);
        xt_recv_event(t, xt_now(), c, *source, *recvtag, &cs, 0);
    }
    xt_mpi_end(t, H_SENDRECV_REPLACE);
}
XT_F_ALIASES(mpi_sendrecv_replace_, mpi_sendrecv_replace__, mpi_sendrecv_replace, MPI_SENDRECV_REPLACE)

/* ---------------------------------------------------------------- communicators */
#define F_COMM_WRAP(low, UP, IDX, NAME, PARAMS, ARGS, FCOMM, FNEW)                              \
    void mpi_##low##_ PARAMS                                                                    \
    {                                                                                           \
        static void *real;                                                                      \
        if (!real) real = xt_f_real(#low);                                                      \
        xt_thread *t;                                                                           \
        xt_mpi_begin(IDX, &t);                                                                  \
        ((void (*) PARAMS)real) ARGS;                                                           \
        if (*ierr == MPI_SUCCESS && xt_comm_keyval != MPI_KEYVAL_INVALID) {                        \
            if (t) t->in_mpi = 1;                                                               \
            xt_comm_register(PMPI_Comm_f2c(*(FNEW)), PMPI_Comm_f2c(*(FCOMM)), NAME, 1);            \
        }                                                                                       \
        if (t) xt_mpi_end(t, IDX);                                                              \
    }                                                                                           \
    XT_F_ALIASES(mpi_##low##_, mpi_##low##__, mpi_##low, MPI_##UP)

F_COMM_WRAP(comm_dup, COMM_DUP, H_COMM_DUP, "MPI_Comm_dup", (MPI_Fint * comm, MPI_Fint * newcomm, MPI_Fint * ierr),
            (comm, newcomm, ierr), comm, newcomm)
F_COMM_WRAP(comm_split, COMM_SPLIT, H_COMM_SPLIT, "MPI_Comm_split",
            (MPI_Fint * comm, MPI_Fint * color, MPI_Fint * key, MPI_Fint * newcomm, MPI_Fint * ierr),
            (comm, color, key, newcomm, ierr), comm, newcomm)
F_COMM_WRAP(comm_create, COMM_CREATE, H_COMM_CREATE, "MPI_Comm_create",
            (MPI_Fint * comm, MPI_Fint * group, MPI_Fint * newcomm, MPI_Fint * ierr), (comm, group, newcomm, ierr),
            comm, newcomm)
F_COMM_WRAP(comm_split_type, COMM_SPLIT_TYPE, H_COMM_SPLIT_TYPE, "MPI_Comm_split_type",
            (MPI_Fint * comm, MPI_Fint * split_type, MPI_Fint * key, MPI_Fint * info, MPI_Fint * newcomm,
             MPI_Fint * ierr),
            (comm, split_type, key, info, newcomm, ierr), comm, newcomm)

void mpi_comm_free_(MPI_Fint *comm, MPI_Fint *ierr)
{
    static void (*real)(MPI_Fint *, MPI_Fint *);
    if (!real) real = (void (*)(MPI_Fint *, MPI_Fint *))xt_f_real("comm_free");
    xt_thread *t;
    xt_mpi_begin(H_COMM_FREE, &t);
    real(comm, ierr);
    if (t) xt_mpi_end(t, H_COMM_FREE);
}
XT_F_ALIASES(mpi_comm_free_, mpi_comm_free__, mpi_comm_free, MPI_COMM_FREE)
