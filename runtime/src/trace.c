/*
 * trace.c -- OTF2 traces of a run (MPROF_TRACE=DIR, docs/tracing.md): the `trace` measurement
 * service of observer.h.
 *
 * MPROF_TRACE=DIR writes the archive DIR/traces.otf2 (with its folder DIR/traces/):
 *   - one location per PE (location id = PE number), in one location group per process;
 *   - a root region per PE, named after the program, entered when the PE starts and left when
 *     it ends, so that every moment of a location lies in a region (tools that build call
 *     trees from traces, Vampir's and Score-P's, expect one): its own time is pe_main's code
 *     and the runtime between fibers;
 *   - a region for idle time and one per access category, inside the root; a fiber's execution is
 * Enter/Leave of the category it runs in.  A fiber starts in "unclassified" and usually declares
 * its category first thing, so its Enter is held back until it declares one or writes another
 * event: the time before a first declaration goes to the declared category (as the runtime charges
 * latency to the category declared last).  A later mp_access_declare switches region (Leave the
 * old, Enter the new), and preemptive fibers nest inside the fiber that enabled them;
 *   - a remote invocation is an MpiSend on the sender (when the invocation is made) and an
 *     MpiRecv on the receiver (when the record becomes a fiber), on one communicator of all
 *     PEs with tag 0: records from one PE to another arrive in the order they were made
 *     (comm.c), so readers pair them in order;
 *   - each module's statistics, summed over the PE's records, as one Metric event of the
 *     module's metric class (mode ACCUMULATED_START: the count since the PE started) every
 *     MPROF_TRACE_SAMPLE_MS milliseconds of the PE's time (default 10; 0: only at the end),
 *     checked when a fiber or an idle period ends, and at the PE's end;
 *   - the run's settings (its PE count and the run profile's settings, mpr_settings) as
 *     one Metric event of the class
 * "settings" (mode ABSOLUTE_POINT) at the PE's start. Each PE writes its own event writer, so the
 * archive uses OTF2's pthread locking callbacks; on the MPI backend the archive is opened
 * collectively over MPI_COMM_WORLD and rank 0 writes the global definitions.  The system tree has a
 * node per host under the machine, each process's location group under its host.  On the MPI
 * backend every rank also writes two clock offsets (at the trace's start and end: rank 0's clock
 * less its own, measured right after a collective), with which OTF2 readers map each rank's
 * timestamps onto rank 0's clock (ranks on several hosts have unrelated monotonic clocks).
 */
#define _GNU_SOURCE
#include "observer.h"

#include <errno.h>
#include <math.h>
#include <otf2/OTF2_Pthread_Locks.h>
#include <otf2/otf2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef MPROF_HAVE_MPI
#include <mpi.h>
#include <otf2/OTF2_MPI_Collectives.h>
#endif

/* region ids, dense and in definition order (readers such as otf2-print expect both) */
#define ROOT_REGION 0
#define IDLE_REGION 1
#define ACCESS_REGION(a) ((OTF2_RegionRef)(a) + 2)
#define TRACE_DEPTH (MPR_PREEMPT_DEPTH + 4)
#define MAX_MODULES 64
#define SETTINGS_METRIC ((OTF2_MetricRef)0)
#define MODULE_METRIC(m) ((OTF2_MetricRef)(m) + 1) /* metric class of module m */
#define NSETTINGS (1 + MPR_NSETTINGS)              /* the PE count, then mpr_settings */

static bool on; /* this run is traced (set before the PEs start) */

typedef struct {
    OTF2_EvtWriter *w;
    uint32_t stack[TRACE_DEPTH]; /* regions entered by running fibers, innermost last */
    int depth;
    int lost;             /* nesting deeper than TRACE_DEPTH: those fibers are not traced */
    bool pending;         /* the innermost fiber's Enter is not written yet */
    uint64_t started;     /* ... and happened at this time */
    uint64_t next_sample; /* the statistics are written again from this time on */
} trace_pe;

typedef struct {
    char *name;
    const mp_stat_module *desc;
} trace_module;

static OTF2_Archive *archive;

/* OTF2 prints every error (and each failure's consequences) on stderr, dozens of lines for one
 * unwritable folder.  Its errors are collected instead: the first one is kept and reported in
 * one line with the number of the others. */
static _Atomic(unsigned) otf2_errors;
static char otf2_first[256];
static char trace_dir[4096];

static OTF2_ErrorCode on_otf2_error(void *u, const char *file, uint64_t line, const char *fn,
                                    OTF2_ErrorCode code, const char *fmt, va_list va)
{
    (void)u, (void)file, (void)line, (void)fn;
    if (atomic_fetch_add(&otf2_errors, 1) == 0) {
        char msg[192] = "";
        if (fmt)
            vsnprintf(msg, sizeof msg, fmt, va);
        snprintf(otf2_first, sizeof otf2_first, "%s%s%s", OTF2_Error_GetDescription(code),
                 *msg ? ": " : "", msg);
    }
    return code;
}

/* One line about the OTF2 errors of this run, if any. */
static void report_otf2_errors(const char *what)
{
    unsigned n = atomic_load(&otf2_errors);
    if (!n)
        return;
    fprintf(stderr, "mprof: MPROF_TRACE: %s %s: %s", what, trace_dir, otf2_first);
    if (n > 1)
        fprintf(stderr, " (and %u more OTF2 errors)", n - 1);
    fputc('\n', stderr);
    atomic_store(&otf2_errors, 0);
}
static trace_pe *tpes; /* indexed by PE number; only local PEs are used */
static uint64_t t_begin, t_end;
static int64_t offset_begin, offset_end; /* rank 0's clock less this process's (MPI) */
static bool is_mpi;
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static trace_module modules[MAX_MODULES];
static int nmodules;
static uint64_t sample_ns = 10000000; /* MPROF_TRACE_SAMPLE_MS; 0: statistics at the end only */

static inline uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A time of mp_wtime (the same clock, in seconds) as now() gives it: the profile's times of
 * a PE's start and end become the root region's, so the two agree to the nanosecond. */
static inline uint64_t wtime_ns(double s) { return (uint64_t)llround(s * 1e9); }

static OTF2_FlushType pre_flush(void *u, OTF2_FileType t, OTF2_LocationRef l, void *c, bool f)
{
    (void)u, (void)t, (void)l, (void)c, (void)f;
    return OTF2_FLUSH;
}
static OTF2_TimeStamp post_flush(void *u, OTF2_FileType t, OTF2_LocationRef l)
{
    (void)u, (void)t, (void)l;
    return now();
}
static OTF2_FlushCallbacks flush_callbacks = {.otf2_pre_flush = pre_flush,
                                              .otf2_post_flush = post_flush};

/* Rank 0's clock less this process's, as *at (local time) sees it: every rank reads its clock
 * right after the same collective, and the maximum of (rank 0's reading, 0 elsewhere) is rank
 * 0's.  Collective on the MPI backend; 0 otherwise. */
static int64_t clock_offset(uint64_t *at)
{
    if (!is_mpi) {
        *at = now();
        return 0;
    }
    mpr_machine_max_all(0.0);
    *at = now();
    double root = mpr_machine_max_all(mpr_g.local_first == 0 ? (double)*at : 0.0);
    return (int64_t)root - (int64_t)*at;
}

/* mkdir -p: the folder and any of its parents that are missing (MPI ranks may race to make
 * them: EEXIST is success).  0, or -1 with errno set. */
static int make_folders(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* The least of the processes' values (v where the backend has one process). */
static double min_all(double v) { return -mpr_machine_max_all(-v); }

/* Whether this rank can write a trace in `dir` (made if missing); if not, `why` says so. */
static bool folder_usable(const char *dir, char *why, size_t n)
{
    struct stat st;
    if (make_folders(dir) != 0) {
        snprintf(why, n, "mprof: MPROF_TRACE: cannot create %s: %s. This run is not traced.\n", dir,
                 strerror(errno));
        return false;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
        int e = errno && !(stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) ? errno : ENOTDIR;
        snprintf(why, n,
                 "mprof: MPROF_TRACE: cannot write a trace in %s: %s. This run is not "
                 "traced.\n",
                 dir, strerror(e));
        return false;
    }
    return true;
}

static unsigned trace_start(void)
{
    const char *dir = getenv("MPROF_TRACE");
    bool want = dir && *dir;
    is_mpi = strcmp(mpr_m->name, "mpi") == 0;
    /* The archive's set-up is collective on MPI: every rank must take each decision below
     * the same way (MPROF_TRACE on some ranks only, or a folder one rank could not use, left
     * the others waiting in the archive's first collective for ever).  Whether every rank
     * traces is agreed at the run's start, before the observers (the backend's agree). */
    if (mpr_g.trace_partial) {
        if (mpr_g.local_first == 0)
            fprintf(stderr, "mprof: MPROF_TRACE is set on some ranks only (pass it to every "
                            "rank: mpirun -x MPROF_TRACE). This run is not traced.\n");
        return 0;
    }
    if (!want)
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/traces", dir);
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (is_mpi) /* every rank must take the same decision */
        exists = mpr_machine_max_all((double)exists) > 0;
    if (exists) {
        if (mpr_g.local_first == 0)
            fprintf(stderr,
                    "mprof: MPROF_TRACE: %s already exists (an earlier trace?); remove it or "
                    "choose another folder. This run is not traced.\n",
                    path);
        return 0;
    }
    char why[4200];
    bool usable = folder_usable(dir, why, sizeof why);
    if (min_all(usable) == 0) {
        /* every rank failed alike (one folder, one host; shm: the one process): rank 0 says
         * why; else each rank that failed says why, and rank 0 that the others cannot trace
         * without it */
        bool all_failed = mpr_machine_max_all(usable) == 0;
        if (!usable && (!all_failed || mpr_g.local_first == 0))
            fputs(why, stderr);
        if (usable && mpr_g.local_first == 0)
            fprintf(stderr, "mprof: MPROF_TRACE: another rank cannot write its trace (its line "
                            "above). This run is not traced.\n");
        return 0;
    }
    snprintf(trace_dir, sizeof trace_dir, "%s", dir);
    atomic_store(&otf2_errors, 0);
    OTF2_Error_RegisterCallback(on_otf2_error, NULL);
    sample_ns = (uint64_t)(mpr_env_number("MPROF_TRACE_SAMPLE_MS", 10, 0, 1e9, 0, 0) * 1e6);
    tpes = calloc((size_t)mpr_g.npes, sizeof *tpes);
    if (!tpes)
        return 0;
    archive = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 256 * 1024,
                                OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!archive) {
        if (atomic_load(&otf2_errors))
            report_otf2_errors("cannot open an archive in");
        else
            fprintf(stderr,
                    "mprof: MPROF_TRACE: OTF2 cannot open an archive in %s. This run is not "
                    "traced.\n",
                    dir);
        free(tpes);
        tpes = NULL;
        return 0;
    }
    OTF2_Archive_SetFlushCallbacks(archive, &flush_callbacks, NULL);
#ifdef MPROF_HAVE_MPI
    if (is_mpi)
        OTF2_MPI_Archive_SetCollectiveCallbacks(archive, MPI_COMM_WORLD, MPI_COMM_NULL);
    else
#endif
        OTF2_Archive_SetSerialCollectiveCallbacks(archive);
    OTF2_Pthread_Archive_SetLockingCallbacks(archive, NULL);
    OTF2_Archive_OpenEvtFiles(archive);
    offset_begin = clock_offset(&t_begin);
    /* One process: the trace begins with the run, where a PE that shares its worker thread
     * begins too (pe.c); under MPI each rank's PE begins after the ranks' common start. */
    if (!is_mpi && wtime_ns(mpr_g.t_start) < t_begin)
        t_begin = wtime_ns(mpr_g.t_start);
    on = true;
    return MPR_OBS_ON | MPR_OBS_EVERY_FIBER | MPR_OBS_HOT;
}

/* The "settings" metric class's members in order: the PE count, then the run profile's
 * settings (mpr_settings). */
static void settings_metric(OTF2_Type types[NSETTINGS], OTF2_MetricValue values[NSETTINGS],
                            const char *names[NSETTINGS])
{
    mpr_setting s[MPR_NSETTINGS];
    mpr_settings(s);
    types[0] = OTF2_TYPE_UINT64;
    names[0] = "npes";
    values[0].unsigned_int = (uint64_t)mpr_g.npes;
    for (int i = 0; i < MPR_NSETTINGS; i++) {
        types[i + 1] = s[i].is_double ? OTF2_TYPE_DOUBLE : OTF2_TYPE_UINT64;
        names[i + 1] = s[i].name;
        if (s[i].is_double)
            values[i + 1].floating_point = s[i].value.d;
        else
            values[i + 1].unsigned_int = s[i].value.u;
    }
}

static void trace_pe_begin(mpr_pe *pe)
{
    trace_pe *tp = &tpes[pe->id];
    tp->w = OTF2_Archive_GetEvtWriter(archive, (OTF2_LocationRef)pe->id);
    /* The root region spans the profile's elapsed time.  A PE that shares its worker thread
     * began at the run's start and waited for its first slice, the only idle time it has had
     * yet, which the profile counts as idle (pe.c): so does the trace. */
    uint64_t t = wtime_ns(pe->t_start);
    OTF2_EvtWriter_Enter(tp->w, NULL, t, ROOT_REGION);
    OTF2_Type types[NSETTINGS];
    OTF2_MetricValue values[NSETTINGS];
    const char *names[NSETTINGS];
    settings_metric(types, values, names);
    OTF2_EvtWriter_Metric(tp->w, NULL, t, SETTINGS_METRIC, NSETTINGS, types, values);
    if (pe->c_total) {
        OTF2_EvtWriter_Enter(tp->w, NULL, t, IDLE_REGION);
        OTF2_EvtWriter_Leave(tp->w, NULL, t + pe->c_total, IDLE_REGION);
    }
    tp->next_sample = sample_ns ? now() + sample_ns : UINT64_MAX;
}

static int module_id(const mp_stat_module *desc)
{
    pthread_mutex_lock(&modules_lock);
    int id = -1;
    for (int i = 0; i < nmodules && id < 0; i++)
        if (strcmp(modules[i].name, desc->module) == 0)
            id = modules[i].desc->nfields == desc->nfields ? i : -2;
    if (id == -1 && nmodules < MAX_MODULES && desc->nfields <= 255) {
        modules[nmodules].name = strdup(desc->module);
        modules[nmodules].desc = desc;
        id = nmodules++;
    }
    pthread_mutex_unlock(&modules_lock);
    return id;
}

/* The PE's statistics, summed per module, as one Metric event per module. */
static void write_metrics(mpr_pe *pe, OTF2_EvtWriter *w, uint64_t t)
{
    for (mpr_stats_rec *r = pe->records; r; r = r->next) {
        int id = module_id(r->module);
        bool first = true; /* one event per module: the first of its records sums them all */
        for (mpr_stats_rec *q = pe->records; q != r && first; q = q->next)
            first = strcmp(q->module->module, r->module->module) != 0;
        if (id < 0 || !first)
            continue;
        unsigned n = r->module->nfields;
        OTF2_Type types[255];
        OTF2_MetricValue values[255];
        for (unsigned i = 0; i < n; i++) {
            mp_stat_type st = r->module->fields[i].type;
            types[i] = st == MP_STAT_F64   ? OTF2_TYPE_DOUBLE
                       : st == MP_STAT_I64 ? OTF2_TYPE_INT64
                                           : OTF2_TYPE_UINT64;
            uint64_t sum = 0; /* 0.0 as a double, too */
            for (mpr_stats_rec *q = r; q; q = q->next) {
                if (strcmp(q->module->module, r->module->module) != 0)
                    continue;
                uint64_t v = q->slots[i];
                if (q->derive) /* during the run: what the object derives from its state */
                    v = mpr_stat_add(st, v, mpr_stats_derived(q, i));
                sum = mpr_stat_add(st, sum, v);
            }
            values[i].unsigned_int = sum; /* the same 8 bytes for every type */
        }
        OTF2_EvtWriter_Metric(w, NULL, t, MODULE_METRIC(id), (uint8_t)n, types, values);
    }
}

/* The statistics again once the sampling period has passed (on the PE, between fibers). */
static inline void maybe_sample(mpr_pe *pe, trace_pe *tp, uint64_t t)
{
    if (t >= tp->next_sample) {
        write_metrics(pe, tp->w, t);
        tp->next_sample = t + sample_ns;
    }
}

/* A PE's last statistics and the root region's end, at the profile's end of the PE (now, if
 * the PE never finished), written when the archive is closed rather than at the PE's end: the
 * backend may still change a statistic then (the shared-memory backend divides a shared worker
 * thread's CPU time among its PEs, and scales their IdleCpuNs with it, once all of them are
 * done), and the trace's last values are the profile's. */
static void close_pe(mpr_pe *pe, trace_pe *tp)
{
    uint64_t t = pe->where == MPR_PE_FINISHED ? wtime_ns(pe->t_end) : now();
    write_metrics(pe, tp->w, t);
    OTF2_EvtWriter_Leave(tp->w, NULL, t, ROOT_REGION);
}

/* Writes the held-back Enter of the innermost fiber before any other event of the PE. */
static inline void settle(trace_pe *tp)
{
    if (tp->pending) {
        tp->pending = false;
        OTF2_EvtWriter_Enter(tp->w, NULL, tp->started, ACCESS_REGION(tp->stack[tp->depth - 1]));
    }
}

static void trace_fiber_begin(mpr_pe *pe)
{
    trace_pe *tp = &tpes[pe->id];
    if (tp->depth == TRACE_DEPTH) {
        tp->lost++;
        return;
    }
    settle(tp);
    tp->stack[tp->depth++] = MP_ACCESS_UNCLASSIFIED;
    tp->pending = true;
    tp->started = now();
}

static void trace_fiber_end(mpr_pe *pe)
{
    trace_pe *tp = &tpes[pe->id];
    if (tp->lost) {
        tp->lost--;
        return;
    }
    if (tp->depth > 0) {
        settle(tp);
        uint64_t t = now();
        OTF2_EvtWriter_Leave(tp->w, NULL, t, ACCESS_REGION(tp->stack[--tp->depth]));
        if (tp->depth == 0)
            maybe_sample(pe, tp, t);
    }
}

static void trace_access(mpr_pe *pe, unsigned access)
{
    trace_pe *tp = &tpes[pe->id];
    if (!tp->w || tp->depth == 0 || tp->lost || tp->stack[tp->depth - 1] == access)
        return; /* outside fibers (pe_main) the PE is in no region */
    if (tp->pending) {
        tp->stack[tp->depth - 1] = access; /* the held-back Enter names the new category */
        return;
    }
    uint64_t t = now();
    OTF2_EvtWriter_Leave(tp->w, NULL, t, ACCESS_REGION(tp->stack[tp->depth - 1]));
    OTF2_EvtWriter_Enter(tp->w, NULL, t, ACCESS_REGION(access));
    tp->stack[tp->depth - 1] = access;
}

static void trace_idle_begin(mpr_pe *pe)
{
    OTF2_EvtWriter_Enter(tpes[pe->id].w, NULL, now(), IDLE_REGION);
}

static void trace_idle_end(mpr_pe *pe)
{
    trace_pe *tp = &tpes[pe->id];
    uint64_t t = now();
    OTF2_EvtWriter_Leave(tp->w, NULL, t, IDLE_REGION);
    if (tp->depth == 0)
        maybe_sample(pe, tp, t);
}

static void trace_send(mpr_pe *pe, int dst, size_t bytes)
{
    trace_pe *tp = &tpes[pe->id];
    settle(tp);
    OTF2_EvtWriter_MpiSend(tp->w, NULL, now(), (uint32_t)dst, 0, 0, bytes);
}

static void trace_recv(mpr_pe *pe, int src, size_t bytes)
{
    trace_pe *tp = &tpes[pe->id];
    settle(tp);
    OTF2_EvtWriter_MpiRecv(tp->w, NULL, now(), (uint32_t)src, 0, 0, bytes);
}

/* ---------------------------------------------------------------------------------- */
/* Definitions                                                                          */

typedef struct {
    OTF2_GlobalDefWriter *w;
    uint32_t next;
} strings;

static uint32_t string(strings *s, const char *text)
{
    OTF2_GlobalDefWriter_WriteString(s->w, s->next, text);
    return s->next++;
}

/* What each process sends the one that writes the definitions, per local PE. */
typedef struct {
    uint64_t events;
    char host[64];
} pe_summary;

static void write_global_definitions(const pe_summary *pes)
{
    OTF2_GlobalDefWriter *w = OTF2_Archive_GetGlobalDefWriter(archive);
    strings s = {w, 0};
    uint32_t empty = string(&s, "");
    OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000u, t_begin, t_end - t_begin,
                                              OTF2_UNDEFINED_TIMESTAMP);
    OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, string(&s, mpr_g.cfg.program),
                                             string(&s, "machine"),
                                             OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    /* a node per host (in order of first appearance), under the machine */
    int *host_of = calloc((size_t)mpr_g.npes, sizeof *host_of); /* NULL: all under node 0 */
    int nhosts = 0;
    uint32_t node_class = string(&s, "node");
    for (int pe = 0; host_of && pe < mpr_g.npes; pe++) {
        int h = 0;
        while (h < pe && strcmp(pes[h].host, pes[pe].host) != 0)
            h++;
        host_of[pe] = h < pe ? host_of[h] : ++nhosts;
        if (h == pe)
            OTF2_GlobalDefWriter_WriteSystemTreeNode(w, (OTF2_SystemTreeNodeRef)nhosts,
                                                     string(&s, pes[pe].host), node_class, 0);
    }
    int nprocs = is_mpi ? mpr_g.npes : 1;
    for (int p = 0; p < nprocs; p++) {
        char name[64];
        snprintf(name, sizeof name, "process %d", p);
        OTF2_GlobalDefWriter_WriteLocationGroup(
            w, (OTF2_LocationGroupRef)p, string(&s, name), OTF2_LOCATION_GROUP_TYPE_PROCESS,
            (OTF2_SystemTreeNodeRef)(host_of ? host_of[p] : 0), OTF2_UNDEFINED_LOCATION_GROUP);
    }
    free(host_of);
    for (int pe = 0; pe < mpr_g.npes; pe++) {
        char name[64];
        snprintf(name, sizeof name, "PE %d", pe);
        OTF2_GlobalDefWriter_WriteLocation(w, (OTF2_LocationRef)pe, string(&s, name),
                                           OTF2_LOCATION_TYPE_CPU_THREAD, pes[pe].events,
                                           (OTF2_LocationGroupRef)(is_mpi ? pe : 0));
    }
    uint32_t program = string(&s, mpr_g.cfg.program);
    OTF2_GlobalDefWriter_WriteRegion(
        w, ROOT_REGION, program, program,
        string(&s, "the PE's run: pe_main's code and the runtime outside fibers and idle time"),
        OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, empty, 0, 0);
    uint32_t idle = string(&s, "idle");
    OTF2_GlobalDefWriter_WriteRegion(
        w, IDLE_REGION, idle, idle, string(&s, "no fiber runnable: the PE polls or sleeps"),
        OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, empty, 0, 0);
    uint32_t role_name = string(&s, "mprof access category");
    for (int a = 0; a < mpr_access_count(); a++) {
        uint32_t name = string(&s, mpr_access_name(a));
        OTF2_GlobalDefWriter_WriteRegion(w, ACCESS_REGION(a), name, name, role_name,
                                         OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
                                         OTF2_REGION_FLAG_NONE, empty, 0, 0);
    }
    /* remote invocations: one communicator of all PEs, rank = PE number */
    uint64_t *members = calloc((size_t)mpr_g.npes, sizeof *members);
    if (members) {
        for (int pe = 0; pe < mpr_g.npes; pe++)
            members[pe] = (uint64_t)pe;
        OTF2_GlobalDefWriter_WriteGroup(w, 0, string(&s, "PE locations"),
                                        OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, (uint32_t)mpr_g.npes, members);
        OTF2_GlobalDefWriter_WriteGroup(w, 1, empty, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, (uint32_t)mpr_g.npes, members);
        OTF2_GlobalDefWriter_WriteComm(w, 0, string(&s, "remote invocations"), 1,
                                       OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
        free(members);
    }
    uint32_t member = 0;
    /* settings: values, not counts (ABSOLUTE_POINT), written once at each PE's start */
    OTF2_MetricMemberRef setting_refs[NSETTINGS];
    OTF2_Type setting_types[NSETTINGS];
    OTF2_MetricValue setting_values[NSETTINGS]; /* the events' part */
    const char *setting_names[NSETTINGS];
    settings_metric(setting_types, setting_values, setting_names);
    uint32_t setting_desc = string(&s, "mprof runtime setting (docs/runtime.md)");
    for (int i = 0; i < NSETTINGS; i++) {
        char name[64];
        snprintf(name, sizeof name, "setting::%s", setting_names[i]);
        OTF2_GlobalDefWriter_WriteMetricMember(w, member, string(&s, name), setting_desc,
                                               OTF2_METRIC_TYPE_USER, OTF2_METRIC_ABSOLUTE_POINT,
                                               setting_types[i], OTF2_BASE_DECIMAL, 0, empty);
        setting_refs[i] = member++;
    }
    OTF2_GlobalDefWriter_WriteMetricClass(w, SETTINGS_METRIC, NSETTINGS, setting_refs,
                                          OTF2_METRIC_ASYNCHRONOUS, OTF2_RECORDER_KIND_ABSTRACT);
    /* statistics: a metric class per module, a member per statistic */
    for (int m = 0; m < nmodules; m++) {
        const mp_stat_module *d = modules[m].desc;
        OTF2_MetricMemberRef refs[255];
        for (unsigned i = 0; i < d->nfields; i++) {
            char name[256];
            snprintf(name, sizeof name, "%s::%s", d->module, d->fields[i].name);
            OTF2_Type type = d->fields[i].type == MP_STAT_F64   ? OTF2_TYPE_DOUBLE
                             : d->fields[i].type == MP_STAT_I64 ? OTF2_TYPE_INT64
                                                                : OTF2_TYPE_UINT64;
            OTF2_GlobalDefWriter_WriteMetricMember(
                w, member, string(&s, name),
                string(&s, "mprof statistic, summed over the PE's records"), OTF2_METRIC_TYPE_USER,
                OTF2_METRIC_ACCUMULATED_START, type, OTF2_BASE_DECIMAL, 0, empty);
            refs[i] = member++;
        }
        OTF2_GlobalDefWriter_WriteMetricClass(w, MODULE_METRIC(m), (uint8_t)d->nfields, refs,
                                              OTF2_METRIC_ASYNCHRONOUS,
                                              OTF2_RECORDER_KIND_ABSTRACT);
    }
    OTF2_Archive_CloseGlobalDefWriter(archive, w);
}

static void trace_finish(void)
{
    if (!on)
        return;
    on = false;
    offset_end = clock_offset(&t_end);
    /* event counts and host of the local PEs, gathered to the process that writes the
     * definitions */
    pe_summary local[mpr_g.local_count > 0 ? mpr_g.local_count : 1];
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    for (int i = 0; i < mpr_g.local_count; i++) {
        trace_pe *tp = &tpes[mpr_g.local_first + i];
        memset(&local[i], 0, sizeof local[i]);
        memcpy(local[i].host, host, sizeof host);
        if (tp->w) {
            close_pe(mpr_g.pes[mpr_g.local_first + i], tp); /* it began: it exists */
            OTF2_EvtWriter_GetNumberOfEvents(tp->w, &local[i].events);
            OTF2_Archive_CloseEvtWriter(archive, tp->w);
        }
    }
    OTF2_Archive_CloseEvtFiles(archive);
    OTF2_Archive_OpenDefFiles(archive);
    for (int i = 0; i < mpr_g.local_count; i++) {
        OTF2_DefWriter *dw =
            OTF2_Archive_GetDefWriter(archive, (OTF2_LocationRef)(mpr_g.local_first + i));
        if (is_mpi) {
            OTF2_DefWriter_WriteClockOffset(dw, t_begin, offset_begin, 0.0);
            OTF2_DefWriter_WriteClockOffset(dw, t_end, offset_end, 0.0);
        }
        OTF2_Archive_CloseDefWriter(archive, dw);
    }
    OTF2_Archive_CloseDefFiles(archive);
    char *all = NULL;
    size_t all_len = 0;
    int root = mpr_machine_gather((const char *)local,
                                  sizeof(pe_summary) * (size_t)mpr_g.local_count, &all, &all_len);
    if (root == 1 && all_len == sizeof(pe_summary) * (size_t)mpr_g.npes)
        write_global_definitions((const pe_summary *)all);
    free(all);
    OTF2_Archive_Close(archive);
    archive = NULL;
    free(tpes);
    tpes = NULL;
    report_otf2_errors("the trace is incomplete; writing");
}

const mpr_observer mpr_observer_trace = {
    .name = "trace",
    .start = trace_start,
    .finish = trace_finish,
    .pe_begin = trace_pe_begin,
    .fiber_begin = trace_fiber_begin,
    .fiber_end = trace_fiber_end,
    .access = trace_access,
    .idle_begin = trace_idle_begin,
    .idle_end = trace_idle_end,
    .send = trace_send,
    .recv = trace_recv,
};
