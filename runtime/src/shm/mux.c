/*
 * shm/mux.c -- PEs that share a worker thread (mux.h): their contexts and copies of the
 * executable's TLS block, the worker's scheduler over them, and when a busy one yields.
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
 */
#define _GNU_SOURCE
#include "mux.h"

#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
                mpr_shm.tls_image = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
                mpr_shm.tls_filesz = info->dlpi_phdr[i].p_filesz;
                mpr_shm.tls_memsz = info->dlpi_phdr[i].p_memsz;
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
    mpr_sample_switch(w->sampler, sp->pe, t0);
    mpr_ctx_switch(&w->ctx, &sp->ctx);
    sp->ran_ns += mono_ns() - t0;
    /* the worker's own scheduler is no PE's CPU time (mux_teardown), nor its samples */
    mpr_sample_switch(w->sampler, NULL, 0);
    w->running = NULL;
}

static int mux_setup(shm_worker *w)
{
    mpr_ctx_init_thread(&w->ctx);
    if (mpr_shm.tls_memsz) {
        dl_iterate_phdr(find_tls, w);
        w->tls_size = w->tls_block ? mpr_shm.tls_memsz : 0;
    }
    long page = sysconf(_SC_PAGESIZE);
    for (int i = w->first; i < w->first + w->count; i++) {
        shm_pe *sp = &mpr_shm.pes[i];
        sp->stack_map_size = mpr_shm.stack_size + (size_t)page;
        sp->stack_map = mmap(NULL, sp->stack_map_size, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (sp->stack_map == MAP_FAILED) {
            sp->stack_map = NULL;
            return -1;
        }
        mprotect(sp->stack_map, (size_t)page, PROT_NONE); /* guard page below the stack */
        mpr_ctx_make(&sp->ctx, (char *)sp->stack_map + page, mpr_shm.stack_size, pe_entry, sp);
        if (w->tls_size) {
            if (!(sp->tls = malloc(w->tls_size)))
                return -1;
            memcpy(sp->tls, mpr_shm.tls_image, mpr_shm.tls_filesz);
            memset(sp->tls + mpr_shm.tls_filesz, 0, w->tls_size - mpr_shm.tls_filesz);
        }
    }
    return 0;
}

static void mux_teardown(shm_worker *w)
{
    uint64_t charged = 0;
    for (int i = w->first; i < w->first + w->count; i++)
        charged += mpr_shm.pes[i].ran_ns;
    uint64_t cpu = mpr_thread_cpu_ns();
    double scale = charged ? (double)cpu / (double)charged : 0;
    for (int i = w->first; i < w->first + w->count; i++) {
        shm_pe *sp = &mpr_shm.pes[i];
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
            shm_pe *sp = &mpr_shm.pes[i];
            if (sp->finished || (sp->parked && !tick && !done && !mpr_shm_inbox_pending(sp)))
                continue;
            sp->parked = false;
            run_slice(w, sp);
            ran = true;
            if (sp->finished)
                live--;
        }
        /* every PE has had its slice: what they wrote for other workers' PEs goes when due,
         * all of it when none of them had work */
        if (w->group) {
            if (ran)
                mpr_shm_group_flush_due(w->group);
            else
                mpr_shm_group_flush(w->group, MPR_AGG_DRAIN);
        }
        mpr_shm_catch_up(w);
        tick = false;
        if (ran) {
            spins = 0;
            continue;
        }
        if (++spins < mpr_g.cfg.spin) {
            mpr_cpu_relax();
            continue;
        }
        spins = 0;
        mpr_sample_pause(w->sampler); /* not woken every sample period */
        mpr_shm_worker_sleep(w, 0.05);
        mpr_sample_resume(w->sampler);
        tick = true;
    }
}

void mpr_shm_mux_prepare(void) { dl_iterate_phdr(find_tls, NULL); }

void mpr_shm_mux_worker(shm_worker *w)
{
    if (mux_setup(w) != 0)
        mpr_fatal("cannot allocate the stacks of PEs %d-%d (MPROF_STACK_KB)", w->first,
                  w->first + w->count - 1);
    w->sampler = mpr_sample_start(NULL);
    mux_loop(w);
    mpr_sample_stop(w->sampler);
    w->sampler = NULL;
    mux_teardown(w);
    mpr_pe_bind(NULL);
}

/* A PE that shares its worker switches back to the worker's scheduler. */
static void to_scheduler(shm_pe *sp) { mpr_ctx_switch(&sp->ctx, &sp->w->ctx); }

void mpr_shm_mux_park(shm_pe *sp)
{
    sp->parked = true; /* resumed when a message arrives, the run ends, or after a nap */
    if (sp->w->group)
        sp->w->group->idled = true;
    to_scheduler(sp);
}

int mpr_shm_shares_thread(mpr_pe *pe) { return mpr_shm.pes[pe->id].mux; }

/* At a communication period of a busy multiplexed PE (sched.c): it yields every
 * SHM_MUX_YIELD_PERIODS periods, or now when it fed an idle member of its group. */
int mpr_shm_period(mpr_pe *pe)
{
    shm_pe *sp = &mpr_shm.pes[pe->id];
    shm_group *g = sp->w->group;
    if (--sp->mux_periods != 0 && !(g && g->idle_fed))
        return 0;
    sp->mux_periods = SHM_MUX_YIELD_PERIODS;
    if (g)
        g->idle_fed = false;
    return 1;
}

void mpr_shm_yield(mpr_pe *pe) { to_scheduler(&mpr_shm.pes[pe->id]); }
