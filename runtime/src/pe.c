/*
 * pe.c -- start-up, settings, the life of a PE, and the end of a run (quiescence, hang
 * diagnosis, run profile).
 */
#define _GNU_SOURCE
#include "mpr.h"
#include "mpr_json.h"
#include "observer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

_Thread_local mpr_pe *mpr_self_pe __attribute__((tls_model("initial-exec")));
__thread unsigned char *mpr_access_bytes __attribute__((tls_model("initial-exec")));

void mpr_pe_bind(mpr_pe *pe)
{
    mpr_self_pe = pe;
    mpr_access_bytes = pe ? &pe->spawn_tag.enabler : NULL;
    if (MPR_UNLIKELY(MPR_OBS_BIND_ON()) && pe) { /* switched to for every PE: one flag first */
        /* a service that observes access declarations gets them through mp_access_declare */
        if (MPR_OBS_HOT_ON())
            mpr_access_bytes = NULL;
        if (MPR_OBS_EVERY_FIBER_ON() && !pe->fiber_hooks) { /* every fiber is observed */
            pe->fiber_hooks = true;
            mpr_dispatch_key_update(pe);
        }
    }
}

mpr_run mpr_g;
const mpr_machine *mpr_m = &mpr_machine_shm;

/* The one place that picks the backend: MPROF_BACKEND=shm|mpi, else MPI when the program was
 * launched by mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE), else shm. */
static int mpi_requested(void)
{
    const char *b = getenv("MPROF_BACKEND");
    if (b && *b)
        return strcmp(b, "mpi") == 0 ? 1 : strcmp(b, "shm") == 0 ? 0 : -1;
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL;
}

/* Whether this process may write the run profile: on MPI only the rank hosting PE 0 does
 * (the others send it their PEs), so only it checks MPROF_OUT before the run.  The rank is
 * known only after MPI starts; Open MPI names it in the environment before. */
static bool may_write_profile(void)
{
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    return mpi_requested() != 1 || !rank || strcmp(rank, "0") == 0;
}

const char *mpr_machine_missing(const mpr_machine *m)
{
    /* the entries machine.h does not mark optional */
    const struct {
        const char *name;
        bool set;
    } required[] = {
        {"init", m->init},
        {"run", m->run},
        {"send", m->send},
        {"take", m->take},
        {"processed", m->processed},
        {"idle_enter", m->idle_enter},
        {"idle_leave", m->idle_leave},
        {"sleep", m->sleep},
        {"wake_all", m->wake_all},
        {"pending", m->pending},
    };
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!required[i].set)
            return required[i].name;
    /* optional entries that the others a backend sets make required (machine.h) */
    const struct {
        const char *name;
        bool set, needed;
    } implied[] = {
        {"yield", m->yield, m->shares_thread},
        {"group_open", m->group_open, m->group_agg},
        {"group_flush", m->group_flush, m->group_agg},
    };
    for (size_t i = 0; i < sizeof implied / sizeof *implied; i++)
        if (implied[i].needed && !implied[i].set)
            return implied[i].name;
    return NULL;
}

const mpr_machine *mpr_machine_select(void)
{
    switch (mpi_requested()) {
    case 0:
        return &mpr_machine_shm;
    case 1:
#ifdef MPROF_HAVE_MPI
        return &mpr_machine_mpi;
#else
        if (getenv("MPROF_BACKEND")) {
            fprintf(stderr,
                    "mprof: error: MPROF_BACKEND=mpi, but this runtime was built without "
                    "MPI (CMake did not find it; install libopenmpi-dev and reconfigure)\n");
            return NULL;
        }
        fprintf(stderr, "mprof: note: launched by mpirun, but this runtime was built without MPI: "
                        "every rank runs its own shared-memory machine\n");
        return &mpr_machine_shm;
#endif
    default:
        fprintf(stderr, "mprof: error: MPROF_BACKEND=%s (expected shm or mpi)\n",
                getenv("MPROF_BACKEND"));
        return NULL;
    }
}

/* Limits of the settings: beyond them a value wraps or asks for absurd amounts of memory. */
#define SETTING_BYTES_MAX (1024.0 * 1024 * 1024) /* 1 GiB */
#define SETTING_COUNT_MAX 1e9
#define SETTING_SECONDS_MAX 1e9

static double env_double(const char *name, double dflt, double min, double max)
{
    return mpr_env_number(name, dflt, min, max, 0, 0);
}

static double env_whole(const char *name, double dflt, double min, double max)
{
    return mpr_env_number(name, dflt, min, max, 1, 0);
}

/* The category sampler's period, MPROF_SAMPLE_US: 0 (off) or at least SAMPLE_US_MIN.  Below
 * that the timer's signals come faster than a thread handles them and the run stops making
 * progress (at 20 us an 0.03 s run took 0.6 s, at 10 us 4.8 s, at 1 us it never ended). */
#define SAMPLE_US_DEFAULT 1000
#define SAMPLE_US_MIN 100
static double sample_period_s(void)
{
    double us = env_double("MPROF_SAMPLE_US", SAMPLE_US_DEFAULT, 0, SETTING_SECONDS_MAX * 1e6);
    if (us > 0 && us < SAMPLE_US_MIN) {
        fprintf(stderr,
                "mprof: ignoring MPROF_SAMPLE_US=%.15g (expected 0, sampling off, or a period of "
                "at least %d us), using the default %d\n",
                us, SAMPLE_US_MIN, SAMPLE_US_DEFAULT);
        us = SAMPLE_US_DEFAULT;
    }
    return us * 1e-6;
}

/* MPROF_IDLE_TIMEOUT: 0 (off) or at least IDLE_TIMEOUT_MIN_S.  Shorter, a machine idle only
 * while a message is on its way (a worker descheduled for a moment) is declared hung. */
#define IDLE_TIMEOUT_MIN_S 0.1
static double idle_timeout_s(void)
{
    double s = env_double("MPROF_IDLE_TIMEOUT", 30, 0, SETTING_SECONDS_MAX);
    if (s > 0 && s < IDLE_TIMEOUT_MIN_S) {
        fprintf(stderr,
                "mprof: ignoring MPROF_IDLE_TIMEOUT=%.15g (expected 0, off, or at least %g s), "
                "using the default 30\n",
                s, IDLE_TIMEOUT_MIN_S);
        s = 30;
    }
    return s;
}

void mp_config_init(mp_config *cfg)
{
    if (!cfg) {
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_config_init(NULL): no config to fill");
        return;
    }
    memset(cfg, 0, sizeof *cfg);
    cfg->npes = (int)env_whole("MPROF_PES", 1, 1, 4096);
    /* MPI: P is the number of ranks (mp_main enforces it; this is the launcher's figure) */
    const char *ranks = getenv("OMPI_COMM_WORLD_SIZE");
    if (mpi_requested() == 1 && ranks && atoi(ranks) > 0)
        cfg->npes = atoi(ranks);
    cfg->agg_bytes = (size_t)env_whole("MPROF_AGG_BYTES", 4096, 0, SETTING_BYTES_MAX);
    cfg->flush_fibers = (unsigned)env_whole("MPROF_FLUSH_FIBERS", 64, 1, SETTING_COUNT_MAX);
    cfg->flush_delay_s =
        env_double("MPROF_FLUSH_DELAY_US", 1000, 0, SETTING_SECONDS_MAX * 1e6) * 1e-6;
    cfg->small_bytes = (size_t)env_whole("MPROF_SMALL_BYTES", 0, 0, SETTING_BYTES_MAX);
    cfg->idle_timeout_s = idle_timeout_s();
    cfg->spin = (unsigned)env_whole("MPROF_SPIN", 2000, 0, SETTING_COUNT_MAX);
    cfg->progress_timeout_s = env_double("MPROF_PROGRESS_TIMEOUT", 300, 0, SETTING_SECONDS_MAX);
    cfg->sample_s = sample_period_s();
    const char *out = getenv("MPROF_OUT");
    cfg->profile_path = out && *out ? out : NULL;
}

double mp_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int mp_mype(void)
{
    mpr_pe *pe = mpr_pe_self();
    return pe ? pe->id : -1;
}

int mp_npes(void) { return mpr_g.npes; }

int mpr_machine_gather(const char *buf, size_t len, char **out, size_t *out_len)
{
    if (mpr_m->gather)
        return mpr_m->gather(buf, len, out, out_len);
    char *copy = malloc(len + 1); /* every PE is in this process: the data is all there is */
    if (!copy)
        return -1;
    memcpy(copy, buf, len);
    copy[len] = 0;
    *out = copy;
    *out_len = len;
    return 1;
}

bool mpr_run_end(mpr_run_state why)
{
    int running = MPR_RUN_RUNNING;
    return atomic_compare_exchange_strong(&mpr_g.state, &running, (int)why);
}

static mpr_pe *pe_new(int id, int npes)
{
    /* Mapped, not malloc'd and cleared: most of a PE is its latency table, of which a run
     * touches the rows of the categories it uses, and untouched pages of a fresh mapping
     * cost no memory (with 1024 PEs, clearing the tables alone took 130 MB). */
    mpr_pe *pe =
        mmap(NULL, sizeof(mpr_pe), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pe == MAP_FAILED)
        mpr_fatal("out of memory allocating PE %d", id);
    pe->id = id;
    pe->npes = npes;
    return pe;
}

/* What a PE has invoked, here or on others: what an mp_at_pe_end hook must leave alone (built
 * without statistics, only the fibers it leaves enabled are seen). */
static uint64_t hook_ops(const mpr_pe *pe)
{
    return __atomic_load_n(&pe->rts.RemoteOp, __ATOMIC_RELAXED) +
           __atomic_load_n(&pe->rts.LocalOp, __ATOMIC_RELAXED);
}

/* An end hook communicated or enabled fibers after the PE ran out of work for good: nothing
 * will ever run them, and a call that succeeded would lose them without a word.  Found after
 * the hook rather than refused in the calls, which would put a test of the PE's state on the
 * paths of every spawn and invocation.  The run fails (mp_main's return code). */
static MPR_COLD void hook_started_work(void (*fn)(void *), bool invoked)
{
    char name[128];
    mpr_misuse(MP_ERR_BAD_STATE,
               "the mp_at_pe_end hook %s %s after the PE had ended: nothing will run it (a "
               "hook must neither communicate nor create work)",
               mpr_fn_name(fn, name, sizeof name),
               invoked ? "invoked a fiber or sent a message" : "enabled a fiber");
    atomic_store(&mpr_g.hook_misuse, true);
}

/* Run on each PE by the machine layer. */
void mpr_pe_run(mpr_pe *pe)
{
    /* asked once: the idle loop, flow control, the sampler, PAPI and the overflow handler
     * all depend on it (machine.h shares_thread) */
    pe->shared_thread = mpr_machine_shares_thread(pe);
    mpr_pe_bind(pe);
    mpr_overflow_guard(); /* this thread's alternate signal stack (overflow.c) */
    pe->where = MPR_PE_RUNNING;
    pe->tag_pe = (uint64_t)(uint16_t)pe->id << 48;
    mpr_access_set(pe, MP_ACCESS_UNCLASSIFIED);
    pe->spawn_tag_unclassified = pe->spawn_tag.word;
    pe->t_start = mp_wtime();
    if (pe->shared_thread) {
        /* it waited for its thread since the run started: idle, like a switched-out PE */
        uint64_t waited = (uint64_t)((pe->t_start - mpr_g.t_start) * 1e9);
        mpr_idle_add(pe, waited); /* also the rts IdleNs (stats.c) */
        pe->t_start = mpr_g.t_start;
    }
    pe->cpu_start_ns = mpr_thread_cpu_ns();
    /* a PE with a thread of its own samples it; the backend samples a shared thread */
    pe->sampler = pe->shared_thread ? NULL : mpr_sample_start(pe);
    mpr_sched_init(pe);
    mpr_comm_init(pe);
    mpr_objs_init(pe);
    mpr_stats_init(pe);
    MPR_OBSERVE(pe_begin, pe);
    mpr_g.pe_main(mpr_g.argc, mpr_g.argv);
    mpr_schedule_loop(pe, NULL, 0);
    while (pe->n_end_hooks > 0) { /* a hook may register another: it runs too */
        struct mpr_end_hook h = pe->end_hooks[--pe->n_end_hooks];
        uint64_t ops = hook_ops(pe);
        h.fn(h.arg);
        bool invoked = hook_ops(pe) != ops;
        if (MPR_UNLIKELY(invoked || !mpr_sched_idle(pe)))
            hook_started_work(h.fn, invoked);
    }
    pe->t_end = mp_wtime();
    pe->cpu_end_ns = mpr_thread_cpu_ns();
    /* A short idle period is timed by the wall clock (sched.c: reading the thread's CPU clock
     * costs a system call), which counts a spin the OS preempted as CPU time: on a loaded
     * machine the sum could pass the thread's whole CPU time, which it is a part of. */
    if (pe->idle_cpu_ns > pe->cpu_end_ns - pe->cpu_start_ns)
        pe->idle_cpu_ns = pe->cpu_end_ns - pe->cpu_start_ns;
    mpr_sample_stop(pe->sampler);
    pe->sampler = NULL;
    mpr_rts_fold(pe);
    mpr_stats_settle(pe);
    MPR_OBSERVE(pe_end, pe); /* PAPI-bound statistics get their counts (the trace closes the PE
                              * at the run's end, trace.c) */
    pe->where = MPR_PE_FINISHED;
}

void mpr_settings(mpr_setting out[MPR_NSETTINGS])
{
    const mp_config *cfg = &mpr_g.cfg;
    const mpr_setting s[MPR_NSETTINGS] = {
        {"agg_bytes", false, {.u = cfg->agg_bytes}},
        {"flush_fibers", false, {.u = cfg->flush_fibers}},
        {"flush_delay_us", true, {.d = cfg->flush_delay_s * 1e6}},
        {"feed_us", true, {.d = (double)mpr_g.feed_ns * 1e-3}},
        {"small_bytes", false, {.u = cfg->small_bytes}},
        {"spin", false, {.u = cfg->spin}},
        {"pinned_workers", false, {.u = (uint64_t)mpr_g.pinned_workers}},
        {"carriers", false, {.u = mpr_g.carriers}},
        {"sample_us", true, {.d = cfg->sample_s * 1e6}},
        {"workers", false, {.u = (uint64_t)mpr_workers()}},
        {"shm_ring", false, {.u = (uint64_t)mpr_g.shm_ring}},
    };
    memcpy(out, s, sizeof s);
}

mp_err mp_at_pe_end(void (*fn)(void *arg), void *arg)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe)
        return mpr_misuse(MP_ERR_BAD_STATE, "mp_at_pe_end outside a running PE");
    if (!fn)
        return mpr_misuse(MP_ERR_INVALID_ARG, "mp_at_pe_end: NULL function");
    if (pe->n_end_hooks == pe->cap_end_hooks) {
        int cap = pe->cap_end_hooks ? 2 * pe->cap_end_hooks : 8;
        struct mpr_end_hook *h = realloc(pe->end_hooks, (size_t)cap * sizeof *h);
        if (!h)
            return MP_ERR_NO_MEMORY;
        pe->end_hooks = h;
        pe->cap_end_hooks = cap;
    }
    pe->end_hooks[pe->n_end_hooks++] = (struct mpr_end_hook){fn, arg};
    return MP_SUCCESS;
}

static void pe_free(mpr_pe *pe)
{
    free(pe->end_hooks);
    mpr_comm_fini(pe);
    mpr_objs_fini(pe);
    mpr_fiber_slabs_free(pe);
    mpr_counters_free(pe);
    mpr_stats_fini(pe);
    munmap(pe, sizeof(mpr_pe));
}

static const char *basename_of(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    const char *base = slash ? slash + 1 : path;
    return base && *base ? base : "program"; /* a profile's program is never empty */
}

/* A config set field by field, not by mp_config_init from the environment, gets the same
 * limits as the environment's values (which mpr_env_number checks): beyond them a buffer
 * size wraps, a period never ends or the sampler's signals outrun the thread. */
static bool seconds_ok(double s) { return isfinite(s) && s >= 0 && s <= SETTING_SECONDS_MAX; }
static const char *config_problem(const mp_config *c)
{
    if (c->agg_bytes > SETTING_BYTES_MAX)
        return "agg_bytes is over 1 GiB";
    if (c->small_bytes > SETTING_BYTES_MAX)
        return "small_bytes is over 1 GiB";
    if (c->flush_fibers > SETTING_COUNT_MAX || c->spin > SETTING_COUNT_MAX)
        return "flush_fibers or spin is over 10^9";
    if (!seconds_ok(c->flush_delay_s) || !seconds_ok(c->idle_timeout_s) ||
        !seconds_ok(c->progress_timeout_s))
        return "flush_delay_s, idle_timeout_s or progress_timeout_s is not a time in [0, 10^9] s";
    if (c->idle_timeout_s > 0 && c->idle_timeout_s < IDLE_TIMEOUT_MIN_S)
        return "idle_timeout_s is neither 0 (off) nor at least 0.1 s";
    if (!seconds_ok(c->sample_s) || (c->sample_s > 0 && c->sample_s < SAMPLE_US_MIN * 1e-6))
        return "sample_s is neither 0 (off) nor a period of at least 100 us";
    if (c->program && (!*c->program || !mpr_utf8_valid(c->program)))
        return "program is empty or not UTF-8 (NULL names the run after argv[0])";
    return NULL;
}

static int run_main(const mp_config *cfg, mp_pe_main_fn pe_main, int argc, char **argv);

/* The run's state is the process's (mpr_g): a second mp_main from another thread while one
 * runs would share it, so it is refused rather than left to hang both. */
static atomic_int main_running;

int mp_main(const mp_config *cfg, mp_pe_main_fn pe_main, int argc, char **argv)
{
    if (mpr_pe_self())
        return mpr_misuse(MP_ERR_IN_FIBER, "mp_main called from inside a running PE");
    if (atomic_exchange(&main_running, 1))
        return mpr_misuse(MP_ERR_BAD_STATE, "mp_main called while another thread's mp_main "
                                            "runs (a process runs one machine at a time)");
    int rc = run_main(cfg, pe_main, argc, argv);
    atomic_store(&main_running, 0);
    return rc;
}

static int run_main(const mp_config *cfg, mp_pe_main_fn pe_main, int argc, char **argv)
{
    const char *bad = cfg ? config_problem(cfg) : NULL;
    if (bad)
        return mpr_misuse(MP_ERR_INVALID_ARG, "mp_main: the config's %s", bad);
    if (!cfg || !pe_main || cfg->npes < 1 || cfg->npes > 4096)
        return mpr_misuse(MP_ERR_INVALID_ARG, "mp_main needs a config with 1..4096 PEs and an "
                                              "entry function");
    if (argc < 0 || (argc > 0 && !argv))
        return mpr_misuse(MP_ERR_INVALID_ARG, "mp_main: argc %d with %s argv", argc,
                          argv ? "an" : "a NULL");
    /* A profile that cannot be written is found now, not after the run (MPROF_OUT); on MPI
     * by the rank that writes it: another rank's host may lack the folder (a rank that
     * returned here left the others waiting in MPI_Init) */
    char why[512];
    if (cfg->profile_path && may_write_profile() &&
        mpr_profile_check(cfg->profile_path, why, sizeof why) != 0)
        return mpr_misuse(MP_ERR_INVALID_ARG, "cannot write the run profile to %s: %s",
                          cfg->profile_path, why);
    const mpr_machine *m = mpr_machine_select();
    if (!m)
        return mpr_misuse(MP_ERR_BACKEND, "no usable backend (see MPROF_BACKEND)");
    const char *missing = mpr_machine_missing(m);
    if (missing)
        return mpr_misuse(MP_ERR_BACKEND, "the %s backend lacks its required entry %s", m->name,
                          missing);
    mpr_m = m;
    int npes = cfg->npes, first = 0, count = 0;
    if (m->init(&npes, &first, &count) != 0)
        return mpr_misuse(MP_ERR_BACKEND, "the %s backend failed to start", m->name);
    memset(&mpr_g, 0, sizeof mpr_g);
    mpr_g.cfg = *cfg;
    mpr_g.cfg.npes = npes;
    mpr_g.local_first = first;
    mpr_g.local_count = count;
    if (!mpr_g.cfg.program)
        mpr_g.cfg.program = basename_of(argc > 0 ? argv[0] : NULL);
    if (mpr_g.cfg.flush_fibers == 0)
        mpr_g.cfg.flush_fibers = 1;
    /* a measuring switch (the same binary with and without, interleaved): not in mp_config */
    mpr_g.carriers = mpr_env_number("MPROF_CARRIERS", 1, 0, 1, 1, 0) != 0;
    /* likewise: how often a busy sender feeds a PE that waits (comm.c, starving) */
    mpr_g.feed_ns =
        (uint64_t)(mpr_env_number("MPROF_FEED_US", 20, 0, SETTING_SECONDS_MAX * 1e6, 0, 0) * 1e3);
    mpr_g.npes = npes;
    mpr_g.pe_main = pe_main;
    mpr_g.argc = argc;
    mpr_g.argv = argv;
    mpr_g.t_start = mp_wtime();
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(mpr_g.started_at, sizeof mpr_g.started_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    atomic_init(&mpr_g.state, MPR_RUN_RUNNING);
    mpr_g.pes = calloc((size_t)npes, sizeof *mpr_g.pes);
    if (!mpr_g.pes)
        mpr_fatal("out of memory");
    for (int i = first; i < first + count; i++)
        mpr_g.pes[i] = pe_new(i, npes);
    /* before the observers: a trace's set-up is collective where the processes agree on it */
    if (mpr_machine_agree() != 0)
        return mpr_misuse(MP_ERR_BACKEND,
                          "the %s backend's processes did not start the run "
                          "together",
                          m->name);
    MPR_OBSERVERS_START(); /* e.g. opens the trace archive when MPROF_TRACE is set */
    mpr_sample_setup();

    mpr_watchdog_start();
    int run_rc = mpr_machine_run();
    mpr_watchdog_stop();
    if (run_rc != 0)
        return mpr_misuse(MP_ERR_BACKEND, "the machine layer failed to start the PEs");

    int rc = atomic_load(&mpr_g.hook_misuse) ? 2 : 0; /* reported by the PE (hook_started_work) */
    bool waiting = mpr_hang_report(stderr);
    if (waiting) {
        rc = 2;
        if (atomic_load(&mpr_g.state) == MPR_RUN_IDLE_TIMEOUT)
            fprintf(stderr,
                    "mprof: hang: whole machine idle for more than %g s "
                    "(MPROF_IDLE_TIMEOUT)\n",
                    mpr_g.cfg.idle_timeout_s);
    } else if (atomic_load(&mpr_g.state) == MPR_RUN_IDLE_TIMEOUT) {
        fprintf(stderr,
                "mprof: hang: whole machine idle for more than %g s with messages "
                "in flight\n",
                mpr_g.cfg.idle_timeout_s);
        rc = 2;
    }
    /* a hang anywhere fails the run everywhere (MPI: on every rank) */
    if (mpr_machine_max_all((double)rc) > rc) {
        rc = 2;
        fprintf(stderr,
                "mprof: hang: PE %d: nothing waits here; another PE's report names the "
                "waiting fibers\n",
                mpr_g.local_first);
    }
    MPR_OBSERVERS_FINISH();
    if (mpr_g.cfg.profile_path && mpr_profile_write(mpr_g.cfg.profile_path) != 0 && rc == 0)
        rc = 1;
    mpr_self_report();
    for (int i = 0; i < npes; i++)
        if (mpr_g.pes[i])
            pe_free(mpr_g.pes[i]);
    free(mpr_g.pes);
    mpr_g.pes = NULL;
    mpr_machine_fini();
    mpr_comm_slabs_free(); /* the machine's channels held buffers of the PEs' slabs */
    return rc;
}
