/*
 * shm/machine.c -- the shared-memory backend: PEs multiplexed over worker threads in one
 * process.
 *
 * Workers.  P PEs run on W = min(P, online cores) worker threads (MPROF_WORKERS overrides W),
 * each worker hosting a contiguous block of PEs, so that neighbours in a pipeline or a grid
 * mostly share a worker.  A worker with one PE runs it on its own stack, exactly as a thread
 * per PE did.  A worker with several gives each PE a context of its own (ctx.h: a stack,
 * because pe_main may block in mp_block_until in the middle of its schedule loop) and runs
 * them cooperatively: a PE that runs out of work parks and switches back to its worker, which
 * resumes the next PE that has messages.  A hand-off between two PEs of one worker is thus a
 * queue push and two context switches, with no system call; PEs only cost the operating
 * system a futex sleep when their whole worker is idle.  A PE that keeps finding work yields
 * every MPR_MUX_YIELD_PERIODS communication periods (sched.c), so a busy PE cannot starve the
 * others of its worker.
 *
 * PE-local storage.  Programs keep per-PE state in _Thread_local variables (a PE was a
 * thread).  A worker keeps that true for the executable's TLS block: switching to a different
 * PE saves the block into the outgoing PE's copy and loads the incoming one's (only when the
 * PE changes, so a worker that polls parked PEs copies nothing).  The addresses of such
 * variables are the worker's, so they are only valid on the PE that owns them (as on MPI,
 * and as every remote access in this runtime is carried out by the owner).
 *
 * CPU time.  The thread's CPU clock is a system call, so a multiplexed PE is not given a clock
 * read per switch: the worker charges each PE the monotonic time (vDSO, no system call) of the
 * slices it ran, and when the worker ends scales these so that its PEs' CPU times add up to
 * the worker thread's CPU clock (one read per worker).  A PE's idle CPU time is the part of
 * its own slices spent in its idle loop, scaled alike; time a PE spends switched out is idle
 * (its fibers wait) but not its CPU time.
 *
 * Messages.  Each PE has an inbox, a lock-free stack that any PE pushes to and only the owner
 * empties (all at once, then reversed, which keeps every sender's messages in order).  Idle
 * workers sleep on a futex.  Termination uses one word: active PEs in the high half, physical
 * messages in flight in the low half; the PE that brings it to zero ends the run.  Neither
 * half is updated per message: a receiver reports what it processed when it goes idle, and a
 * sender takes SEND_CREDIT messages' worth of the count at a time and gives back what it did
 * not use when it goes idle.  The low half thus never counts fewer messages than are in
 * flight (a message is covered before it exists and uncovered only after it was processed), so
 * it reaches zero only once every PE is idle and every message processed; and the word, which
 * every PE's atomics would otherwise move between the cores once per message, moves once per
 * SEND_CREDIT messages and per idle period.
 * The functions are reached through the table mpr_machine_shm (machine.h).
 */
#define _GNU_SOURCE
#include "../mpr.h"
#include "ctx.h"

#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ONE_ACTIVE ((uint64_t)1 << 32)
/* Messages a PE may send on one increment of mpr_g.activity (see "Messages" above). */
#define SEND_CREDIT 256

typedef struct shm_worker shm_worker;

/* This backend's per-PE state (indexed by PE id), one cache line apart: senders touch inbox. */
typedef struct {
    _Alignas(64) _Atomic(mpr_msgbuf *) inbox;
    shm_worker *w;
    mpr_pe *pe;
    /* multiplexed PEs only (touched by their worker thread alone) */
    mpr_ctx ctx;
    void *stack_map; /* mmap'd guard page + stack */
    size_t stack_map_size;
    unsigned char *tls; /* this PE's copy of the executable's TLS block while switched out */
    uint64_t ran_ns;    /* monotonic time of its slices */
    bool parked;        /* in its idle loop, waiting for a message */
    bool finished;
    /* messages processed since the PE last went idle, not yet taken off mpr_g.activity, and
     * sends the PE has already added to it but not made (owner only; off the inbox's cache
     * line, which senders write) */
    _Alignas(64) uint64_t processed;
    uint64_t credit;
} shm_pe;

struct shm_worker {
    _Alignas(64) _Atomic(uint32_t) wake_seq;
    _Atomic(int) sleeping;
    pthread_t thread;
    int first, count;     /* PEs [first, first + count) */
    mpr_ctx ctx;          /* the worker's scheduler (its thread's own stack) */
    shm_pe *running;      /* PE switched in, NULL in the scheduler */
    shm_pe *resident;     /* PE whose TLS image is in the block */
    mpr_agg_group *group; /* aggregation shared by its PEs (several PEs, aggregation on) */
    unsigned char *tls_block;
    size_t tls_size;
};

static struct {
    shm_pe *pes;
    shm_worker *workers;
    int nworkers;
    /* the executable's TLS segment: its initial image and size */
    const void *tls_image;
    size_t tls_filesz, tls_memsz;
    size_t stack_size;
} S;

static void futex_wait(_Atomic(uint32_t) *word, uint32_t expected, double timeout_s)
{
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (double)(time_t)timeout_s) * 1e9)};
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

static void futex_wake(_Atomic(uint32_t) *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void wake(shm_worker *w)
{
    atomic_fetch_add(&w->wake_seq, 1);
    futex_wake(&w->wake_seq);
}

static void shm_wake_all(void);

static void push(_Atomic(mpr_msgbuf *) *stack, mpr_msgbuf *b)
{
    mpr_msgbuf *head = atomic_load_explicit(stack, memory_order_relaxed);
    do
        b->next = head;
    while (!atomic_compare_exchange_weak_explicit(stack, &head, b, memory_order_seq_cst,
                                                  memory_order_relaxed));
}

/* Counts a message about to be sent by sp's PE in flight (its worker's thread only). */
static inline void count_in_flight(shm_pe *sp)
{
    if (MPR_UNLIKELY(sp->credit == 0)) {
        atomic_fetch_add(&mpr_g.activity, SEND_CREDIT);
        sp->credit = SEND_CREDIT;
    }
    sp->credit--;
}

static void shm_send(mpr_pe *from, int dst, mpr_msgbuf *b)
{
    shm_pe *to = &S.pes[dst];
    if (!b->counted) /* a group buffer was counted when it was opened */
        count_in_flight(&S.pes[from->id]);
    push(&to->inbox, b);
    /* seq_cst push then load pairs with the sleeper's store-then-check: no lost wake-up.
     * A PE of the sender's own worker is never asleep while the sender runs. */
    if (atomic_load(&to->w->sleeping)) {
        wake(to->w);
        RTS_INC(&from->rts, Wakes, 1);
    }
}

/* The group buffer open for a member PE (its worker's thread only). */
static inline mpr_msgbuf *group_open_for(const shm_pe *sp)
{
    mpr_agg_group *g = sp->w->group;
    return g ? g->agg[sp->pe->id].buf : NULL;
}

/* The inbox, oldest first, then the buffer the PE's worker group has open for it, which is
 * newer than any buffer of the group in the inbox (those were sent when full). */
static mpr_msgbuf *shm_take(mpr_pe *pe)
{
    shm_pe *sp = &S.pes[pe->id];
    mpr_msgbuf *fifo = NULL, **tailp = &fifo;
    if (atomic_load_explicit(&sp->inbox, memory_order_relaxed)) {
        mpr_msgbuf *b = atomic_exchange_explicit(&sp->inbox, NULL, memory_order_acquire);
        while (b) {
            mpr_msgbuf *n = b->next;
            b->next = fifo;
            if (!fifo)
                tailp = &b->next;
            fifo = b;
            b = n;
        }
    }
    if (sp->w->group && group_open_for(sp)) {
        mpr_msgbuf *own = mpr_agg_group_take(sp->w->group, pe->id);
        own->next = NULL;
        *tailp = own;
    }
    return fifo;
}

/* Has the PE a message: in its inbox, or open for it in its worker's group? */
static inline int inbox_pending(const shm_pe *sp)
{
    return atomic_load_explicit(&sp->inbox, memory_order_acquire) != NULL ||
           group_open_for(sp) != NULL;
}

static int shm_pending(mpr_pe *pe) { return inbox_pending(&S.pes[pe->id]); }

static void shm_processed(mpr_pe *pe, mpr_msgbuf *b)
{
    if (b->kind == MPR_BUF_POOLED) {
        /* give the buffer back to its sender: the flow-control message of this backend */
        push(&mpr_g.pes[b->src]->returned, b);
        RTS_INC(&pe->rts, FlowMsgSent, 1);
    } else {
        free(b);
    }
    /* Taken off the in-flight count when the PE goes idle, not one by one: the count cannot
     * reach zero while this PE is active anyway, and every atomic on mpr_g.activity moves its
     * cache line between the cores (one per message less). */
    S.pes[pe->id].processed++;
}

static int shm_idle_enter(mpr_pe *pe)
{
    shm_pe *sp = &S.pes[pe->id];
    uint64_t leaving = ONE_ACTIVE + sp->processed + sp->credit;
    sp->processed = 0;
    sp->credit = 0;
    if (atomic_fetch_sub(&mpr_g.activity, leaving) == leaving) {
        mpr_run_end(MPR_RUN_QUIESCENT);
        shm_wake_all();
        return 1;
    }
    return 0;
}

static void shm_idle_leave(mpr_pe *pe)
{
    (void)pe;
    atomic_fetch_add(&mpr_g.activity, ONE_ACTIVE);
}

static void shm_in_flight(mpr_pe *pe) { count_in_flight(&S.pes[pe->id]); }

/* Has any PE of the worker a message, or is the run over? */
static int worker_pending(const shm_worker *w)
{
    if (mpr_run_over())
        return 1;
    for (int i = w->first; i < w->first + w->count; i++)
        if (inbox_pending(&S.pes[i]))
            return 1;
    return 0;
}

static void worker_sleep(shm_worker *w, double timeout_s)
{
    uint32_t seq = atomic_load(&w->wake_seq);
    atomic_store(&w->sleeping, 1);
    if (!worker_pending(w))
        futex_wait(&w->wake_seq, seq, timeout_s);
    atomic_store(&w->sleeping, 0);
}

/* A PE that shares its worker switches back to the worker's scheduler. */
static void to_scheduler(shm_pe *sp) { mpr_ctx_switch(&sp->ctx, &sp->w->ctx); }

static void shm_sleep(mpr_pe *pe, double timeout_s)
{
    shm_pe *sp = &S.pes[pe->id];
    if (!pe->mux) {
        worker_sleep(sp->w, timeout_s);
        return;
    }
    sp->parked = true; /* resumed when a message arrives, the run ends, or after a nap */
    to_scheduler(sp);
}

static void shm_yield(mpr_pe *pe) { to_scheduler(&S.pes[pe->id]); }

static void shm_wake_all(void)
{
    for (int i = 0; i < S.nworkers; i++)
        wake(&S.workers[i]);
}

static inline uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------- */
/* Multiplexed PEs                                                                       */

/* Finds the executable's TLS segment (its initial image) and, per worker, the block. */
static int find_tls(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    shm_worker *w = ctx;
    if (info->dlpi_tls_modid != 1) /* module 1 is the executable */
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS) {
            if (w)
                w->tls_block = info->dlpi_tls_data;
            else {
                S.tls_image = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
                S.tls_filesz = info->dlpi_phdr[i].p_filesz;
                S.tls_memsz = info->dlpi_phdr[i].p_memsz;
            }
        }
    return 1;
}

static void pe_entry(void *arg)
{
    shm_pe *sp = arg;
    mpr_pe_run(sp->pe);
    sp->finished = true;
    mpr_ctx_exit(&sp->ctx, &sp->w->ctx);
}

/* Switches to PE sp and back; brings its TLS image in first if another PE's is there. */
static void run_slice(shm_worker *w, shm_pe *sp)
{
    if (w->resident != sp && w->tls_size) {
        if (w->resident)
            memcpy(w->resident->tls, w->tls_block, w->tls_size);
        memcpy(w->tls_block, sp->tls, w->tls_size);
    }
    w->resident = sp;
    mpr_pe_bind(sp->pe);
    w->running = sp;
    uint64_t t0 = mono_ns();
    mpr_ctx_switch(&w->ctx, &sp->ctx);
    sp->ran_ns += mono_ns() - t0;
    w->running = NULL;
}

static int mux_setup(shm_worker *w)
{
    mpr_ctx_init_thread(&w->ctx);
    if (S.tls_memsz) {
        dl_iterate_phdr(find_tls, w);
        w->tls_size = w->tls_block ? S.tls_memsz : 0;
    }
    long page = sysconf(_SC_PAGESIZE);
    for (int i = w->first; i < w->first + w->count; i++) {
        shm_pe *sp = &S.pes[i];
        sp->stack_map_size = S.stack_size + (size_t)page;
        sp->stack_map = mmap(NULL, sp->stack_map_size, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (sp->stack_map == MAP_FAILED) {
            sp->stack_map = NULL;
            return -1;
        }
        mprotect(sp->stack_map, (size_t)page, PROT_NONE); /* guard page below the stack */
        mpr_ctx_make(&sp->ctx, (char *)sp->stack_map + page, S.stack_size, pe_entry, sp);
        if (w->tls_size) {
            if (!(sp->tls = malloc(w->tls_size)))
                return -1;
            memcpy(sp->tls, S.tls_image, S.tls_filesz);
            memset(sp->tls + S.tls_filesz, 0, w->tls_size - S.tls_filesz);
        }
    }
    return 0;
}

static void mux_teardown(shm_worker *w)
{
    uint64_t charged = 0;
    for (int i = w->first; i < w->first + w->count; i++)
        charged += S.pes[i].ran_ns;
    uint64_t cpu = mpr_thread_cpu_ns();
    double scale = charged ? (double)cpu / (double)charged : 0;
    for (int i = w->first; i < w->first + w->count; i++) {
        shm_pe *sp = &S.pes[i];
        mpr_pe *pe = sp->pe;
        pe->cpu_start_ns = 0;
        pe->cpu_end_ns = (uint64_t)((double)sp->ran_ns * scale);
        pe->idle_cpu_ns = (uint64_t)((double)pe->idle_cpu_ns * scale);
        if (pe->idle_cpu_ns > pe->cpu_end_ns)
            pe->idle_cpu_ns = pe->cpu_end_ns;
        RTS_SET(&pe->rts, IdleCpuNs, pe->idle_cpu_ns);
        mpr_ctx_destroy(&sp->ctx);
        if (sp->stack_map)
            munmap(sp->stack_map, sp->stack_map_size);
        free(sp->tls);
        sp->stack_map = NULL;
        sp->tls = NULL;
    }
}

/* The worker's scheduler: resumes, round-robin, every PE that is not parked or has a
 * message; when none is, spins a little and then sleeps, and after a sleep resumes every PE
 * once so that their idle loops see the time pass (idle timeout) and the end of the run. */
static void mux_loop(shm_worker *w)
{
    int live = w->count;
    bool tick = true;
    unsigned spins = 0;
    while (live) {
        bool ran = false;
        int done = mpr_run_over();
        for (int i = w->first; i < w->first + w->count; i++) {
            shm_pe *sp = &S.pes[i];
            if (sp->finished || (sp->parked && !tick && !done && !inbox_pending(sp)))
                continue;
            sp->parked = false;
            run_slice(w, sp);
            ran = true;
            if (sp->finished)
                live--;
        }
        /* every PE has had its slice: what they wrote for other workers' PEs goes now */
        if (w->group)
            mpr_agg_group_flush(w->group);
        tick = false;
        if (ran) {
            spins = 0;
            continue;
        }
        if (++spins < mpr_g.cfg.spin) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        spins = 0;
        worker_sleep(w, 0.05);
        tick = true;
    }
}

static void *worker_thread(void *arg)
{
    shm_worker *w = arg;
    if (w->count == 1) {
        mpr_pe_run(S.pes[w->first].pe);
        return NULL;
    }
    if (mux_setup(w) != 0)
        mpr_fatal("cannot allocate the stacks of PEs %d-%d (MPROF_STACK_KB)", w->first,
                  w->first + w->count - 1);
    mux_loop(w);
    mux_teardown(w);
    mpr_pe_bind(NULL);
    return NULL;
}

/* Online cores this process may use. */
static int online_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int env_int(const char *name, int dflt, int min)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < min) {
        fprintf(stderr, "mprof: ignoring %s=%s (expected an integer >= %d)\n", name, s, min);
        return dflt;
    }
    return (int)v;
}

static int shm_run(void)
{
    int npes = mpr_g.npes;
    int nw = env_int("MPROF_WORKERS", online_cores(), 1);
    if (nw > npes)
        nw = npes;
    /* a thread's default: mapped without reserve, only the pages a PE touches cost memory */
    S.stack_size = (size_t)env_int("MPROF_STACK_KB", 8192, 64) * 1024;
    S.pes = aligned_alloc(64, sizeof *S.pes * (size_t)npes);
    S.workers = aligned_alloc(64, sizeof *S.workers * (size_t)nw);
    if (!S.pes || !S.workers)
        return -1;
    memset(S.pes, 0, sizeof *S.pes * (size_t)npes);
    memset(S.workers, 0, sizeof *S.workers * (size_t)nw);
    S.nworkers = nw;
    S.tls_memsz = 0;
    if (nw < npes)
        dl_iterate_phdr(find_tls, NULL);
    for (int k = 0; k < nw; k++) {
        shm_worker *w = &S.workers[k];
        /* contiguous blocks, sizes differing by at most one */
        w->first = (int)((long)npes * k / nw);
        w->count = (int)((long)npes * (k + 1) / nw) - w->first;
        atomic_init(&w->wake_seq, 0);
        atomic_init(&w->sleeping, 0);
        for (int i = w->first; i < w->first + w->count; i++) {
            S.pes[i].w = w;
            S.pes[i].pe = mpr_g.pes[i];
            atomic_init(&S.pes[i].inbox, NULL);
            mpr_g.pes[i]->mux = w->count > 1;
        }
        if (w->count > 1 && mpr_g.cfg.agg_bytes > 0) {
            if (!(w->group = mpr_agg_group_new(w->first, w->count, npes)))
                return -1;
            for (int i = w->first; i < w->first + w->count; i++)
                mpr_g.pes[i]->group = w->group;
        }
    }
    int started = 0;
    for (; started < nw; started++)
        if (pthread_create(&S.workers[started].thread, NULL, worker_thread, &S.workers[started]) !=
            0) {
            /* the started PEs cannot finish without the others: end the process cleanly */
            mpr_fatal("could only start %d of %d worker threads", started, nw);
        }
    for (int i = 0; i < started; i++)
        pthread_join(S.workers[i].thread, NULL);
    return 0;
}

static int shm_init(int *npes, int *first, int *count)
{
    *first = 0;
    *count = *npes; /* every PE lives in this process */
    return 0;
}

/* Idle timeout: no PE is active (the high half of the termination word). */
static int shm_all_idle(void) { return (atomic_load(&mpr_g.activity) >> 32) == 0; }

static void shm_fini(void)
{
    for (int k = 0; k < S.nworkers; k++) {
        mpr_agg_group_free(S.workers[k].group);
        S.workers[k].group = NULL;
    }
    free(S.pes);
    free(S.workers);
    S.pes = NULL;
    S.workers = NULL;
    S.nworkers = 0;
}

const mpr_machine mpr_machine_shm = {
    .name = "shm",
    .init = shm_init,
    .run = shm_run,
    .send = shm_send,
    .take = shm_take,
    .processed = shm_processed,
    .idle_enter = shm_idle_enter,
    .idle_leave = shm_idle_leave,
    .sleep = shm_sleep,
    .yield = shm_yield,
    .wake_all = shm_wake_all,
    .pending = shm_pending,
    .fini = shm_fini,
    .all_idle = shm_all_idle,
    .in_flight = shm_in_flight,
};
