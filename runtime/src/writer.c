/* writer.c - unify the definitions of all processes and write one .elg file (layout: tracefmt/layout.py).
 * Also used from a signal handler: memory comes from xt_mem_* (sigsafe.c), output goes through write(2). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xt.h"

/* ---------------------------------------------------------------- CRC-32 (IEEE 802.3, as zlib) */
/* Every flushed buffer is checksummed on the recording thread (spool.c), so speed matters: libdeflate's
 * crc32 (carry-less multiplication, about 10x the tables below) where the system has it, found at
 * start-up (xt_crc_init; never loaded on the crash path), else slicing-by-8 tables. */
static uint32_t crc_table[8][256];
static uint32_t (*fast_crc)(uint32_t crc, const void *data, size_t len);
static void crc_init(void)
{
    if (crc_table[0][1]) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int s = 1; s < 8; s++) crc_table[s][i] = (crc_table[s - 1][i] >> 8) ^ crc_table[0][crc_table[s - 1][i] & 0xff];
}

void xt_crc_init(void)
{
    crc_init();
    void *h = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h) fast_crc = (uint32_t(*)(uint32_t, const void *, size_t))dlsym(h, "libdeflate_crc32");
}

static uint32_t crc32_update(uint32_t crc, const void *data, size_t len)
{
    if (fast_crc) return fast_crc(crc, data, len);
    const uint8_t *p = data;
    crc = ~crc;
    while (len >= 8) { /* slicing-by-8 */
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= crc;
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
              crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
              crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ---------------------------------------------------------------- growable byte buffer */
typedef struct {
    char *p;
    size_t len, cap;
} buf_t;
static void put(buf_t *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 4096;
        b->p = xt_mem_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}
static void put_u32(buf_t *b, uint32_t v) { put(b, &v, 4); }

/* ---------------------------------------------------------------- string -> id map */
typedef struct {
    char **keys;
    uint32_t *vals;
    size_t cap, n;
} strmap;
static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}
/* returns existing value or inserts `val`; *inserted tells which */
static uint32_t strmap_get(strmap *m, const char *key, uint32_t val, int *inserted)
{
    if (m->n * 2 >= m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 1024;
        char **nk = xt_mem_calloc(ncap, sizeof *nk);
        uint32_t *nv = xt_mem_calloc(ncap, sizeof *nv);
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t j = fnv(m->keys[i], strlen(m->keys[i])) & (ncap - 1);
            while (nk[j]) j = (j + 1) & (ncap - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        xt_mem_free(m->keys);
        xt_mem_free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    size_t j = fnv(key, strlen(key)) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            if (inserted) *inserted = 0;
            return m->vals[j];
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = xt_mem_strdup(key);
    m->vals[j] = val;
    m->n++;
    if (inserted) *inserted = 1;
    return val;
}
static void strmap_free(strmap *m)
{
    for (size_t i = 0; i < m->cap; i++) xt_mem_free(m->keys[i]);
    xt_mem_free(m->keys);
    xt_mem_free(m->vals);
}

/* ---------------------------------------------------------------- deserialised process description */
typedef struct {
    char *name, *file;
    uint32_t line, end_line;
    uint8_t paradigm, role;
} reg_t;
typedef struct {
    uint32_t leader, seq, parent, size;
    uint32_t *members;
    char *name;
} comm_t;
typedef struct {
    uint8_t kind;
    char *name;
} lock_t;
typedef struct {
    uint32_t rank, nthreads;
    uint32_t nmetric;
    char **metric;       /* metric names; COUNTER events carry positions in this list */
    uint32_t *metric_map; /* position -> unified metric id */
    double tps;
    uint64_t origin;
    uint32_t noff;
    double ot[2], ov[2];
    char *host, *mpilib, *clock;
    uint32_t nreg, ncomm, nlock;
    reg_t *reg;
    comm_t *comm;
    lock_t *lock;
    uint64_t *nev;
    uint32_t *reg_map, *comm_map, *lock_map;
    uint32_t loc_base;
    uint32_t nwin, ngroup;  /* RMA windows (comm, seq) and the groups their synchronisations name (2.3) */
    uint32_t *win;          /* 2 per window: local comm id, creation count on it */
    comm_t *group;          /* members only */
    uint32_t *win_map, *group_map;
} proc_t;

typedef struct {
    const char *p, *end;
    int bad;
} rd_t;
static void get(rd_t *r, void *out, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
}
static uint32_t get_u32(rd_t *r)
{
    uint32_t v;
    get(r, &v, 4);
    return v;
}
static uint64_t get_u64(rd_t *r)
{
    uint64_t v;
    get(r, &v, 8);
    return v;
}
static double get_f64(rd_t *r)
{
    double v;
    get(r, &v, 8);
    return v;
}
static char *get_str(rd_t *r)
{
    uint32_t n = get_u32(r);
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return xt_mem_strdup("");
    }
    char *s = xt_mem_alloc(n + 1);
    memcpy(s, r->p, n);
    s[n] = 0;
    r->p += n;
    return s;
}

static int deserialize(proc_t *pr, const void *data, size_t len)
{
    rd_t r = {data, (const char *)data + len, 0};
    memset(pr, 0, sizeof *pr);
    if (get_u32(&r) != 0x31535458u) return -1;
    pr->rank = get_u32(&r);
    pr->nthreads = get_u32(&r);
    pr->tps = get_f64(&r);
    pr->origin = get_u64(&r);
    pr->noff = get_u32(&r);
    for (int i = 0; i < 2; i++) {
        pr->ot[i] = get_f64(&r);
        pr->ov[i] = get_f64(&r);
    }
    pr->host = get_str(&r);
    pr->mpilib = get_str(&r);
    pr->clock = get_str(&r);
    pr->nreg = get_u32(&r);
    if (r.bad) return -1;
    pr->reg = xt_mem_calloc(pr->nreg + 1, sizeof *pr->reg);
    for (uint32_t i = 0; i < pr->nreg && !r.bad; i++) {
        pr->reg[i].name = get_str(&r);
        pr->reg[i].file = get_str(&r);
        pr->reg[i].line = get_u32(&r);
        pr->reg[i].end_line = get_u32(&r);
        get(&r, &pr->reg[i].paradigm, 1);
        get(&r, &pr->reg[i].role, 1);
    }
    pr->ncomm = get_u32(&r);
    if (r.bad) return -1;
    pr->comm = xt_mem_calloc(pr->ncomm + 1, sizeof *pr->comm);
    for (uint32_t i = 0; i < pr->ncomm && !r.bad; i++) {
        comm_t *c = &pr->comm[i];
        c->leader = get_u32(&r);
        c->seq = get_u32(&r);
        c->parent = get_u32(&r);
        c->size = get_u32(&r);
        if (r.bad || (size_t)(r.end - r.p) < (size_t)c->size * 4) return -1;
        c->members = xt_mem_alloc((c->size + 1) * 4);
        get(&r, c->members, (size_t)c->size * 4);
        c->name = get_str(&r);
    }
    pr->nlock = get_u32(&r);
    if (r.bad) return -1;
    pr->lock = xt_mem_calloc(pr->nlock + 1, sizeof *pr->lock);
    for (uint32_t i = 0; i < pr->nlock && !r.bad; i++) {
        get(&r, &pr->lock[i].kind, 1);
        pr->lock[i].name = get_str(&r);
    }
    pr->nmetric = get_u32(&r);
    if (r.bad || pr->nmetric > 4096) return -1;
    pr->metric = xt_mem_calloc(pr->nmetric + 1, sizeof *pr->metric);
    for (uint32_t i = 0; i < pr->nmetric && !r.bad; i++) pr->metric[i] = get_str(&r);
    pr->nev = xt_mem_calloc(pr->nthreads + 1, sizeof *pr->nev);
    for (uint32_t i = 0; i < pr->nthreads; i++) pr->nev[i] = get_u64(&r);
    pr->nwin = get_u32(&r);
    if (r.bad || (size_t)(r.end - r.p) / 8 < pr->nwin) return -1;
    pr->win = xt_mem_alloc(((size_t)pr->nwin + 1) * 8);
    get(&r, pr->win, (size_t)pr->nwin * 8);
    pr->ngroup = get_u32(&r);
    if (r.bad || (size_t)(r.end - r.p) / 4 < pr->ngroup) return -1;
    pr->group = xt_mem_calloc(pr->ngroup + 1, sizeof *pr->group);
    for (uint32_t i = 0; i < pr->ngroup && !r.bad; i++) {
        comm_t *g = &pr->group[i];
        g->size = get_u32(&r);
        if (r.bad || (size_t)(r.end - r.p) / 4 < g->size) return -1;
        g->members = xt_mem_alloc(((size_t)g->size + 1) * 4);
        get(&r, g->members, (size_t)g->size * 4);
    }
    return r.bad ? -1 : 0;
}

static void proc_free(proc_t *pr)
{
    for (uint32_t i = 0; i < pr->nreg; i++) xt_mem_free(pr->reg[i].name), xt_mem_free(pr->reg[i].file);
    for (uint32_t i = 0; i < pr->ncomm; i++) xt_mem_free(pr->comm[i].members), xt_mem_free(pr->comm[i].name);
    for (uint32_t i = 0; i < pr->nlock; i++) xt_mem_free(pr->lock[i].name);
    for (uint32_t i = 0; i < pr->nmetric; i++) xt_mem_free(pr->metric[i]);
    for (uint32_t i = 0; i < pr->ngroup; i++) xt_mem_free(pr->group[i].members);
    xt_mem_free(pr->win), xt_mem_free(pr->group), xt_mem_free(pr->win_map), xt_mem_free(pr->group_map);
    xt_mem_free(pr->metric), xt_mem_free(pr->metric_map);
    xt_mem_free(pr->reg), xt_mem_free(pr->comm), xt_mem_free(pr->lock), xt_mem_free(pr->nev);
    xt_mem_free(pr->reg_map), xt_mem_free(pr->comm_map), xt_mem_free(pr->lock_map);
    xt_mem_free(pr->host), xt_mem_free(pr->mpilib), xt_mem_free(pr->clock);
}

/* ---------------------------------------------------------------- definition records */
typedef struct {
    buf_t b;
    uint32_t count;
    strmap strings;
    uint32_t n_strings;
} defs_t;

static void def_record(defs_t *d, uint16_t type, const void *body, uint32_t len)
{
    uint16_t hdr16[2] = {type, 0};
    put(&d->b, hdr16, 4);
    put_u32(&d->b, len);
    put(&d->b, body, len);
    d->count++;
}

static uint32_t def_string(defs_t *d, const char *s)
{
    int ins;
    uint32_t id = strmap_get(&d->strings, s, d->n_strings, &ins);
    if (ins) {
        d->n_strings++;
        size_t n = strlen(s);
        char *body = xt_mem_alloc(4 + n);
        memcpy(body, &id, 4);
        memcpy(body + 4, s, n);
        def_record(d, ELG_DEF_STRING, body, (uint32_t)(4 + n));
        xt_mem_free(body);
    }
    return id;
}

#pragma pack(push, 1)
typedef struct {
    uint32_t id, name, file, begin, end;
    uint8_t paradigm, role;
    uint16_t reserved;
} region_body;
typedef struct {
    uint32_t id;
    uint8_t kind, r0, r1, r2;
    uint32_t name;
} lock_body;
typedef struct {
    uint32_t process, reserved;
    double tps;
    uint64_t origin;
} clock_body;
typedef struct {
    uint32_t process, reserved;
    double time, offset;
} offset_body;
#pragma pack(pop)

/* ---------------------------------------------------------------- output file */
typedef struct {
    int fd;
    char *wb; /* write buffer (plain write(2), no stdio: this also runs in a signal handler) */
    size_t wn;
    uint64_t pos;
    int err;
    /* index entries */
    buf_t index;
    uint32_t n_index;
} out_t;
#define OUT_BUFFER (1u << 22)

static void out_flush(out_t *o)
{
    const char *c = o->wb;
    size_t len = o->wn;
    while (len && !o->err) {
        ssize_t k = write(o->fd, c, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) o->err = k < 0 ? errno : EIO;
        else c += k, len -= (size_t)k;
    }
    o->wn = 0;
}

static void out_write(out_t *o, const void *p, size_t n)
{
    o->pos += n;
    const char *c = p;
    while (n && !o->err) {
        size_t room = OUT_BUFFER - o->wn, k = n < room ? n : room;
        memcpy(o->wb + o->wn, c, k);
        o->wn += k, c += k, n -= k;
        if (o->wn == OUT_BUFFER) out_flush(o);
    }
}

void xt_elg_block_header(unsigned char h[ELG_BLOCK_HEADER_SIZE], uint16_t kind, uint32_t location,
                         const void *payload, uint64_t len, uint32_t count)
{
    crc_init();
    uint32_t pcrc = crc32_update(0, payload, len);
    uint16_t zero16 = 0;
    memcpy(h, ELG_BLOCK_MAGIC, 4);
    memcpy(h + 4, &kind, 2);
    memcpy(h + 6, &zero16, 2);
    memcpy(h + 8, &location, 4);
    memcpy(h + 12, &pcrc, 4);
    memcpy(h + 16, &len, 8);
    memcpy(h + 24, &count, 4);
    uint32_t hcrc = crc32_update(0, h, 28);
    memcpy(h + 28, &hcrc, 4);
}

/* a trace may be written under a temporary name and renamed to `path`: nothing is there, or a regular file
 * (renaming over a device such as /dev/null, or over a symbolic link, would replace it) */
int xt_path_replaceable(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT;
    return S_ISREG(st.st_mode);
}

void xt_elg_file_header(unsigned char hdr[ELG_FILE_HEADER_SIZE], int finished)
{
    crc_init();
    memset(hdr, 0, ELG_FILE_HEADER_SIZE);
    memcpy(hdr, ELG_MAGIC, 8);
    hdr[8] = ELG_BYTE_ORDER_LITTLE;
    hdr[9] = finished ? ELG_FLAG_FINISHED : 0;
    uint16_t v16[3] = {ELG_VERSION_MAJOR, ELG_VERSION_MINOR, ELG_FILE_HEADER_SIZE};
    memcpy(hdr + 10, v16, 6);
    snprintf((char *)hdr + 16, ELG_CREATOR_SIZE, "expert-run 0.1");
    uint32_t header_crc = crc32_update(0, hdr, ELG_HEADER_CRC_OFFSET);
    memcpy(hdr + ELG_HEADER_CRC_OFFSET, &header_crc, 4);
}

/* the command line, arguments separated by spaces, as the bytes the program was given */
void xt_command_line(char *cmd, size_t n)
{
    int cf = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t got = cf >= 0 ? read(cf, cmd, n - 1) : 0;
    if (cf >= 0) close(cf);
    size_t k = got > 0 ? (size_t)got : 0;
    cmd[k] = 0;
    for (size_t i = 0; i + 1 < k; i++)
        if (!cmd[i]) cmd[i] = ' ';
}

static void write_block(out_t *o, uint16_t kind, uint32_t location, const void *payload, uint64_t len, uint32_t count,
                        uint64_t first, uint64_t last, int indexed)
{
    unsigned char h[ELG_BLOCK_HEADER_SIZE];
    xt_elg_block_header(h, kind, location, payload, len, count);
    uint64_t at = o->pos;
    out_write(o, h, sizeof h);
    out_write(o, payload, len);
    static const char pad[8] = {0};
    if (len % ELG_BLOCK_ALIGN) out_write(o, pad, ELG_BLOCK_ALIGN - len % ELG_BLOCK_ALIGN);
    if (indexed) {
        uint16_t k16[2] = {kind, 0};
        put(&o->index, k16, 4);
        put_u32(&o->index, location);
        uint64_t v[5] = {at, len, count, first, last};
        put(&o->index, v, sizeof v);
        o->n_index++;
    }
}

static void remap_events(elg_event *ev, uint64_t n, const proc_t *pr)
{
    for (uint64_t i = 0; i < n; i++) {
        elg_event *e = &ev[i];
        switch (e->type) {
        case ELG_ENTER:
        case ELG_EXIT:
        case ELG_OMP_COLLEXIT:
        case ELG_OMP_TASK_CREATE:
        case ELG_OMP_TASK_BEGIN:
        case ELG_OMP_TASK_END:
            e->a = e->a < pr->nreg ? pr->reg_map[e->a] : ELG_NO_ID;
            break;
        case ELG_MPI_COLLEXIT:
            e->a = e->a < pr->nreg ? pr->reg_map[e->a] : ELG_NO_ID;
            e->b = e->b < pr->ncomm ? pr->comm_map[e->b] : ELG_NO_ID;
            break;
        case ELG_MPI_SEND:
        case ELG_MPI_RECV:
        case ELG_MPI_RECV_REQUEST:
            e->b = e->b < pr->ncomm ? pr->comm_map[e->b] : ELG_NO_ID;
            break;
        case ELG_OMP_ACQUIRE_LOCK:
        case ELG_OMP_RELEASE_LOCK:
            e->a = e->a < pr->nlock ? pr->lock_map[e->a] : ELG_NO_ID;
            break;
        case ELG_COUNTER:
            e->a = e->a < pr->nmetric ? pr->metric_map[e->a] : ELG_NO_ID;
            break;
        case ELG_MPI_RMA_SYNC:
            if (e->c >= ELG_RMA_SYNC_POST && e->c <= ELG_RMA_SYNC_TEST && e->b != ELG_NO_ID)
                e->b = e->b - XT_RMA_GROUP_BASE < pr->ngroup ? pr->group_map[e->b - XT_RMA_GROUP_BASE] : ELG_NO_ID;
            /* FALLTHROUGH: the window */
            __attribute__((fallthrough));
        case ELG_MPI_RMA_PUT:
        case ELG_MPI_RMA_GET:
        case ELG_MPI_RMA_ATOMIC:
            e->a = e->a < pr->nwin ? pr->win_map[e->a] : ELG_NO_ID;
            break;
        default:
            break;
        }
    }
}

static uint64_t fetch_local(void *ctx, int proc, int thread, elg_event *out, uint64_t max)
{
    (void)proc;
    uint64_t *pos = ctx;
    uint64_t got = xt_local_events(thread, *pos, out, max);
    *pos += got;
    return got;
}


int xt_write_trace(const char *path, int nprocs, void *const *serialized, const size_t *lens, xt_fetch_fn fetch,
                   void *ctx, int finished)
{
    crc_init();
    proc_t *procs = xt_mem_calloc((size_t)nprocs, sizeof *procs);
    for (int p = 0; p < nprocs; p++) {
        if (deserialize(&procs[p], serialized[p], lens[p]) != 0) {
            xt_warn("internal error: definitions of process %d are corrupt; no trace written", p);
            return -1;
        }
    }
    defs_t d = {0};
    def_string(&d, ""); /* string 0 is the empty string */

    /* source files and regions: unified by (name, file, line, paradigm, role) */
    strmap files = {0}, regs = {0}, comm_keys = {0}, groups = {0};
    uint32_t n_files = 0, n_regs = 0, n_comms = 0, n_groups = 0, n_locks = 0, loc = 0;
    for (int p = 0; p < nprocs; p++) {
        proc_t *pr = &procs[p];
        pr->reg_map = xt_mem_alloc((pr->nreg + 1) * 4);
        for (uint32_t i = 0; i < pr->nreg; i++) {
            reg_t *r = &pr->reg[i];
            uint32_t file_id = ELG_NO_ID;
            if (r->file[0]) {
                int ins;
                file_id = strmap_get(&files, r->file, n_files, &ins);
                if (ins) {
                    n_files++;
                    uint32_t body[2] = {file_id, def_string(&d, r->file)};
                    def_record(&d, ELG_DEF_SOURCE_FILE, body, 8);
                }
            }
            char key[8192];
            snprintf(key, sizeof key, "%s\x1f%s\x1f%u\x1f%u\x1f%u", r->name, r->file, r->line, r->paradigm, r->role);
            int ins;
            uint32_t gid = strmap_get(&regs, key, n_regs, &ins);
            if (ins) {
                n_regs++;
                region_body rb = {gid, def_string(&d, r->name), file_id, r->line, r->end_line, r->paradigm, r->role, 0};
                def_record(&d, ELG_DEF_REGION, &rb, sizeof rb);
            }
            pr->reg_map[i] = gid;
        }
    }
    /* system tree: one machine, a node per host name, a process per rank, a location per thread */
    {
        uint32_t body[2] = {0, def_string(&d, "machine")};
        def_record(&d, ELG_DEF_MACHINE, body, 8);
    }
    strmap nodes = {0};
    uint32_t n_nodes = 0;
    for (int p = 0; p < nprocs; p++) {
        proc_t *pr = &procs[p];
        int ins;
        uint32_t node = strmap_get(&nodes, pr->host, n_nodes, &ins);
        if (ins) {
            n_nodes++;
            uint32_t body[3] = {node, 0, def_string(&d, pr->host)};
            def_record(&d, ELG_DEF_NODE, body, 12);
        }
        char name[64];
        snprintf(name, sizeof name, "rank %u", pr->rank);
        uint32_t pb[3] = {pr->rank, node, def_string(&d, name)};
        def_record(&d, ELG_DEF_PROCESS, pb, 12);
        pr->loc_base = loc;
        for (uint32_t t = 0; t < pr->nthreads; t++) {
            snprintf(name, sizeof name, "thread %u", t);
            uint32_t lb[4] = {loc++, pr->rank, t, def_string(&d, name)};
            def_record(&d, ELG_DEF_LOCATION, lb, 16);
        }
    }
    /* communicators: unified by their creation key; groups by member list */
    for (int p = 0; p < nprocs; p++) {
        proc_t *pr = &procs[p];
        pr->comm_map = xt_mem_alloc((pr->ncomm + 1) * 4);
        for (uint32_t i = 0; i < pr->ncomm; i++) {
            comm_t *c = &pr->comm[i];
            char key[64];
            snprintf(key, sizeof key, "%u:%u", c->leader, c->seq);
            int ins;
            uint32_t gid = strmap_get(&comm_keys, key, n_comms, &ins);
            pr->comm_map[i] = gid;
            if (!ins) continue;
            n_comms++;
            buf_t gk = {0};
            for (uint32_t m = 0; m < c->size; m++) {
                char num[16];
                int k = snprintf(num, sizeof num, "%u,", c->members[m]);
                put(&gk, num, (size_t)k);
            }
            put(&gk, "", 1);
            uint32_t gid_group = strmap_get(&groups, gk.p, n_groups, &ins);
            xt_mem_free(gk.p);
            if (ins) {
                n_groups++;
                buf_t gb = {0};
                put_u32(&gb, gid_group);
                put_u32(&gb, c->size);
                put(&gb, c->members, (size_t)c->size * 4);
                def_record(&d, ELG_DEF_GROUP, gb.p, (uint32_t)gb.len);
                xt_mem_free(gb.p);
            }
            uint32_t parent = c->parent < i ? pr->comm_map[c->parent] : ELG_NO_ID;
            uint32_t cb[4] = {gid, gid_group, def_string(&d, c->name), parent};
            def_record(&d, ELG_DEF_COMM, cb, 16);
        }
    }
    /* RMA windows (2.3): unified by (communicator, creation count on it); a window on a communicator that is
       not known is this process's own.  Their synchronisations' groups: unified with the others by members. */
    strmap win_keys = {0};
    uint32_t n_wins = 0;
    for (int p = 0; p < nprocs; p++) {
        proc_t *pr = &procs[p];
        pr->win_map = xt_mem_alloc(((size_t)pr->nwin + 1) * 4);
        for (uint32_t i = 0; i < pr->nwin; i++) {
            uint32_t lcomm = pr->win[2 * i], seq = pr->win[2 * i + 1];
            uint32_t comm = lcomm < pr->ncomm ? pr->comm_map[lcomm] : ELG_NO_ID;
            char key[64];
            if (comm != ELG_NO_ID) snprintf(key, sizeof key, "%u:%u", comm, seq);
            else snprintf(key, sizeof key, "rank %u:%u", pr->rank, i);
            int ins;
            uint32_t gid = strmap_get(&win_keys, key, n_wins, &ins);
            pr->win_map[i] = gid;
            if (!ins) continue;
            n_wins++;
            uint32_t wb[3] = {gid, comm, ELG_NO_ID};
            def_record(&d, ELG_DEF_WINDOW, wb, 12);
        }
        pr->group_map = xt_mem_alloc(((size_t)pr->ngroup + 1) * 4);
        for (uint32_t i = 0; i < pr->ngroup; i++) {
            comm_t *g = &pr->group[i];
            buf_t gk = {0};
            for (uint32_t m = 0; m < g->size; m++) {
                char num[16];
                int k = snprintf(num, sizeof num, "%u,", g->members[m]);
                put(&gk, num, (size_t)k);
            }
            put(&gk, "", 1);
            int ins;
            uint32_t gid_group = strmap_get(&groups, gk.p, n_groups, &ins);
            xt_mem_free(gk.p);
            pr->group_map[i] = gid_group;
            if (ins) {
                n_groups++;
                buf_t gb = {0};
                put_u32(&gb, gid_group);
                put_u32(&gb, g->size);
                put(&gb, g->members, (size_t)g->size * 4);
                def_record(&d, ELG_DEF_GROUP, gb.p, (uint32_t)gb.len);
                xt_mem_free(gb.p);
            }
        }
    }
    strmap_free(&win_keys);
    /* locks belong to one process each */
    for (int p = 0; p < nprocs; p++) {
        proc_t *pr = &procs[p];
        pr->lock_map = xt_mem_alloc((pr->nlock + 1) * 4);
        for (uint32_t i = 0; i < pr->nlock; i++) {
            char name[128];
            if (nprocs > 1) snprintf(name, sizeof name, "%s (rank %u)", pr->lock[i].name, pr->rank);
            else snprintf(name, sizeof name, "%s", pr->lock[i].name);
            lock_body lb = {n_locks, pr->lock[i].kind, 0, 0, 0, def_string(&d, name)};
            def_record(&d, ELG_DEF_LOCK, &lb, sizeof lb);
            pr->lock_map[i] = n_locks++;
        }
    }
    /* clocks and offsets */
    for (int p = 0; p < nprocs; p++) {
        proc_t *pr = &procs[p];
        clock_body cb = {pr->rank, 0, pr->tps, pr->origin};
        def_record(&d, ELG_DEF_CLOCK, &cb, sizeof cb);
        for (uint32_t i = 0; i < pr->noff && i < 2; i++) {
            offset_body ob = {pr->rank, 0, pr->ot[i], pr->ov[i]};
            def_record(&d, ELG_DEF_OFFSET, &ob, sizeof ob);
        }
    }
    /* hardware-counter metrics (papi.c): unified by name across processes, in order of first appearance
       (a process whose counters could not start defines none) */
    strmap metrics = {0};
    uint32_t n_metrics = 0;
    for (int p = 0; p < nprocs; p++) {
        proc_t *pr = &procs[p];
        pr->metric_map = xt_mem_alloc((pr->nmetric + 1) * 4);
        for (uint32_t i = 0; i < pr->nmetric; i++) {
            int ins;
            uint32_t gid = strmap_get(&metrics, pr->metric[i], n_metrics, &ins);
            pr->metric_map[i] = gid;
            if (!ins) continue;
            n_metrics++;
            uint32_t mb[4] = {gid, def_string(&d, pr->metric[i]), def_string(&d, "occ"), 0}; /* UINT64, ACCUMULATED */
            def_record(&d, ELG_DEF_METRIC, mb, sizeof mb);
        }
    }
    /* attributes: facts about the run */
    {
        char val[256];
        uint32_t ab[2];
        ab[0] = def_string(&d, "creator");
        ab[1] = def_string(&d, "expert-run (C tracing runtime)");
        def_record(&d, ELG_DEF_ATTRIBUTE, ab, 8);
        ab[0] = def_string(&d, "clock");
        ab[1] = def_string(&d, procs[0].clock);
        def_record(&d, ELG_DEF_ATTRIBUTE, ab, 8);
        if (procs[0].mpilib[0]) {
            ab[0] = def_string(&d, "mpi_library");
            ab[1] = def_string(&d, procs[0].mpilib);
            def_record(&d, ELG_DEF_ATTRIBUTE, ab, 8);
        }
        snprintf(val, sizeof val, "%s", finished ? "yes" : "no (the program ended abnormally)");
        ab[0] = def_string(&d, "complete");
        ab[1] = def_string(&d, val);
        def_record(&d, ELG_DEF_ATTRIBUTE, ab, 8);
        char cmd[4096];
        xt_command_line(cmd, sizeof cmd);
        ab[0] = def_string(&d, "command");
        ab[1] = def_string(&d, cmd);
        def_record(&d, ELG_DEF_ATTRIBUTE, ab, 8);
        char omp[512];
        if (xt_openmp_runtime(omp, sizeof omp)) { /* this process's (every rank runs the same program) */
            ab[0] = def_string(&d, "openmp_runtime");
            ab[1] = def_string(&d, omp);
            def_record(&d, ELG_DEF_ATTRIBUTE, ab, 8);
        }
    }

    /* written under a temporary name and renamed at the end: the spool file at `path` (spool.c), or an
       earlier trace there, stays whole until the new trace is */
    out_t o = {0};
    char tmp[4300];
    int via_tmp = xt_path_replaceable(path); /* a device (-o /dev/null) or a link is written through, as it is */
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    o.fd = open(via_tmp ? tmp : path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o.fd < 0 && via_tmp) { /* a directory we may not create files in, holding a file we may write */
        via_tmp = 0;
        o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    o.wb = xt_mem_alloc(OUT_BUFFER);
    if (o.fd < 0 || !o.wb) {
        xt_warn("cannot write the trace %s: %s (choose a writable path with -o or EXPERT_TRACE_FILE)", path,
                strerror(o.fd < 0 ? errno : ENOMEM));
        if (o.fd >= 0) close(o.fd);
        if (fetch) { /* the other ranks are sending their events: receive them, or they wait forever */
            elg_event *chunk = xt_mem_alloc((size_t)XT_CHUNK_EVENTS * sizeof(elg_event));
            for (int p = 0; chunk && p < nprocs; p++)
                for (uint32_t t = 0; t < procs[p].nthreads; t++)
                    for (uint64_t left = procs[p].nev[t], got; left > 0; left -= got) {
                        got = fetch(ctx, p, (int)t, chunk, left < XT_CHUNK_EVENTS ? left : XT_CHUNK_EVENTS);
                        if (!got) break;
                    }
            xt_mem_free(chunk);
        }
        xt_trace_written(path, 0, nprocs, 0, finished);
        return -1;
    }
    unsigned char hdr[ELG_FILE_HEADER_SIZE];
    xt_elg_file_header(hdr, 0); /* FINISHED is set only after the last byte is written */
    out_write(&o, hdr, sizeof hdr);
    write_block(&o, ELG_BLOCK_DEFINITIONS, ELG_NO_ID, d.b.p, d.b.len, d.count, 0, 0, 1);

    elg_event *chunk = xt_mem_alloc((size_t)XT_CHUNK_EVENTS * sizeof(elg_event));
    uint64_t total = 0;
    for (int p = 0; p < nprocs; p++) {
        proc_t *pr = &procs[p];
        for (uint32_t t = 0; t < pr->nthreads; t++) {
            uint64_t left = pr->nev[t], local_pos = 0;
            while (left > 0) {
                uint64_t want = left < XT_CHUNK_EVENTS ? left : XT_CHUNK_EVENTS;
                uint64_t got = fetch ? fetch(ctx, p, (int)t, chunk, want) : fetch_local(&local_pos, p, (int)t, chunk, want);
                if (got == 0) break;
                remap_events(chunk, got, pr);
                write_block(&o, ELG_BLOCK_EVENTS, pr->loc_base + t, chunk, got * sizeof(elg_event), (uint32_t)got,
                            chunk[0].time, chunk[got - 1].time, 1);
                left -= got;
                total += got;
            }
            if (left && fetch) { /* keep the transfer protocol in step: drain what was announced */
                while (left) {
                    uint64_t want = left < XT_CHUNK_EVENTS ? left : XT_CHUNK_EVENTS;
                    uint64_t got = fetch(ctx, p, (int)t, chunk, want);
                    if (!got) break;
                    left -= got;
                }
            }
        }
    }
    xt_mem_free(chunk);
    uint64_t index_at = o.pos;
    write_block(&o, ELG_BLOCK_INDEX, ELG_NO_ID, o.index.p, o.index.len, o.n_index, 0, 0, 0);
    out_write(&o, &index_at, 8);
    out_write(&o, ELG_TRAILER_MAGIC, 8);
    out_flush(&o);
    if (finished && !o.err) { /* set FINISHED and re-checksum the header, now that the last byte is out */
        xt_elg_file_header(hdr, 1);
        if (pwrite(o.fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr) o.err = errno ? errno : EIO;
    }
    if (close(o.fd) != 0 && !o.err) o.err = errno;
    if (via_tmp) {
        if (!o.err && rename(tmp, path) != 0) o.err = errno;
        if (o.err) unlink(tmp);
        else xt_spool_replaced(path);
    }
    xt_mem_free(o.wb);
    if (o.err) xt_warn("writing the trace %s failed: %s", path, strerror(o.err));
    else if (xt_cfg.verbose)
        xt_warn("wrote %s: %d process(es), %u location(s), %llu events%s", path, nprocs, loc,
                (unsigned long long)total, finished ? "" : " (incomplete)");
    xt_trace_written(path, !o.err, nprocs, total, finished);
    xt_mem_free(o.index.p);
    xt_mem_free(d.b.p);
    strmap_free(&d.strings), strmap_free(&files), strmap_free(&regs), strmap_free(&comm_keys);
    strmap_free(&groups), strmap_free(&nodes), strmap_free(&metrics);
    for (int p = 0; p < nprocs; p++) proc_free(&procs[p]);
    xt_mem_free(procs);
    return o.err ? -1 : 0;
}
