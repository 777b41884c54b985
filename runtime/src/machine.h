/*
 * machine.h -- the machine interface: the only part of the runtime that knows how PEs are
 * started and how bytes move between them.  Two backends implement it:
 *   shm (shm/machine.c)  PEs multiplexed over min(P, cores) threads of one process (the
 *                        default, always built);
 *   mpi (mpi/machine.c)  one PE per MPI rank (built when CMake finds MPI: MPROF_HAVE_MPI).
 * pe.c picks one at the start of mp_main (mpr_machine_select) and points mpr_m at its table;
 * the fiber and communication layers above call only the inline wrappers below.
 */
#ifndef MPR_MACHINE_H
#define MPR_MACHINE_H

#include <stddef.h>
#include <stdint.h>

struct mpr_pe;
struct mpr_msgbuf;
struct mpr_agg;

/* Required functions first; the optional ones (marked) may be NULL, and the wrappers below
 * then do what a backend whose PEs all live in this process would do. */
typedef struct mpr_machine {
    const char *name; /* "shm" or "mpi": the run profile's "backend" */
    /* Before the PEs exist: fixes P (*npes: requested on entry, actual on return) and the
     * PEs this process hosts, [*first, *first + *count).  Returns 0 or -1 (message printed). */
    int (*init)(int *npes, int *first, int *count);
    /* Starts every local PE; each runs mpr_pe_run().  Returns when they have all finished. */
    int (*run)(void);
    /* Optional (default: 0).  Once the run's settings are known (mpr_g.cfg) and before the
     * observers start: the processes agree on what they must share for this run (MPI: buffer
     * sizes, credits, who writes the profile, whether every process traces).  Returns 0, or
     * -1 (message printed): there is no run. */
    int (*agree)(void);
    /* Hands a filled buffer to PE dst.  Ownership moves to the backend. */
    void (*send)(struct mpr_pe *from, int dst, struct mpr_msgbuf *buf);
    /* All buffers that arrived at pe, oldest first (per sender), or NULL. */
    struct mpr_msgbuf *(*take)(struct mpr_pe *pe);
    /* A received buffer has been processed: its records turned into fibers or run (those that
     * carriers ran from the buffer, mpr_carrier.h). */
    void (*processed)(struct mpr_pe *pe, struct mpr_msgbuf *buf);
    /* The PE found nothing to do: returns true when the whole machine is quiescent. */
    int (*idle_enter)(struct mpr_pe *pe);
    /* The PE has work again (a message arrived). */
    void (*idle_leave)(struct mpr_pe *pe);
    /* Waits until a message may have arrived, the run ended, or timeout_s passed. */
    void (*sleep)(struct mpr_pe *pe, double timeout_s);
    /* Optional (NULL: never called; required with shares_thread).  A PE that shares its thread
     * gives it to the other PEs sharing it, and returns when it is resumed. */
    void (*yield)(struct mpr_pe *pe);
    /* Wakes every local PE (end of run). */
    void (*wake_all)(void);
    /* Does pe have unread messages?  (cheap, may be stale; the MPI backend progresses here) */
    int (*pending)(struct mpr_pe *pe);
    /* Optional (default: v).  After the run, outside the PEs: the maximum of v over all
     * processes (collective). */
    double (*max_all)(double v);
    /* Optional (default: a copy of buf, return 1).  After the run: collects `len` bytes from
     * every process in process (= PE) order.  On the process that writes the run profile
     * returns 1 with *out (malloc'd, owned by the caller) and *out_len set; elsewhere returns
     * 0; -1 on failure.  Collective. */
    int (*gather)(const char *buf, size_t len, char **out, size_t *out_len);
    /* Optional (default: nothing).  After the run, before mp_main returns: releases what
     * run() kept. */
    void (*fini)(void);
    /* Optional (default: false).  Are all of the machine's PEs idle?  The idle loop asks
     * before it declares an idle timeout; a backend that detects the timeout itself (MPI's
     * waves) leaves it NULL. */
    int (*all_idle)(void);
    /* Optional (default: the PE's `returned` stack, which the backend pushes to).  The pooled
     * buffers receivers have given back to pe since the last call, as a list (any order);
     * called by pe's own thread when its pool is empty. */
    struct mpr_msgbuf *(*returned)(struct mpr_pe *pe);
    /* Optional (default: 0).  For a PE of another process (not in mpr_g.pes): its idle epoch
     * (mpr_pe.idle_epoch) as this process last heard it, odd while that PE has said it waits
     * for work and nothing has been sent to it since.  comm.c's flush policy reads it where it
     * reads a local PE's idle_epoch; a backend without it lets such PEs' records wait for a
     * full buffer, the delay or the sender running out of work. */
    uint32_t (*peer_idle_epoch)(int pe);
    /* Optional (default: none).  The bursts on pe's channels so far (rts ChanNotify and
     * ChanDrain), for the rts record's derive function (stats.c), live and when the PE ends:
     * a backend that counts them where its channels keep their own state adds nothing to its
     * send and receive paths for the PE's record.  May be called by a statistics reader's
     * thread while pe runs. */
    void (*chan_counts)(const struct mpr_pe *pe, uint64_t *notified, uint64_t *drained);

    /* Multiplexing: PEs that share a thread (shm: a worker's, shm/mux.h). */
    /* Optional (default: false; with it `yield` is required).  Does pe share its thread with
     * other PEs?  Asked once, when the PE starts (pe.c caches it in pe->shared_thread).  Such
     * a PE does not spin while idle (its thread spins for all its PEs), never reads the
     * thread's CPU clock (that would charge it the others' time), has no sampler of its own
     * (the backend samples the thread for it, mpr_sample_switch), counts the time its `sleep`
     * and `yield` keep it switched out as idle but not as its CPU time, and gives its thread
     * away where one with a thread of its own would spin (flow control, comm.c). */
    int (*shares_thread)(struct mpr_pe *pe);
    /* Optional (default: never).  At each communication period of a busy PE that shares its
     * thread (sched.c): should it yield now, so that it cannot starve the others? */
    int (*period)(struct mpr_pe *pe);

    /* Aggregation groups: PEs of one thread appending to shared buffers (shm/group.h). */
    /* Optional (default: NULL, every PE aggregates into buffers of its own; with it
     * group_open and group_flush are required).  Called once, when the PE starts (comm.c):
     * the per-destination aggregation state pe shares with the other PEs of its group, or
     * NULL.  The buffers of a group are the backend's: it frees them, and pe leaves them open
     * at its own flushes (mpr_flush_all), for its members take theirs when they poll and the
     * backend sends the others after every member has had its slice. */
    struct mpr_agg *(*group_agg)(struct mpr_pe *pe);
    /* Optional (required with group_agg).  pe opened a group buffer for dst (comm.c
     * agg_open): count it as a message in flight now (it is sent later with `counted` set, so
     * that send() does not count it again) and note it for the group's flush. */
    void (*group_open)(struct mpr_pe *pe, int dst);
    /* Optional (required with group_agg).  Sends the open group buffers of pe's group for PEs
     * outside it (mp_flush(), and the end of a fiber that wrote urgent records,
     * mpr_flush_urgent).  `why` is an mpr_agg_why (mpr_comm.h), counted per buffer sent. */
    void (*group_flush)(struct mpr_pe *pe, int why);
} mpr_machine;

extern const mpr_machine mpr_machine_shm;
#ifdef MPROF_HAVE_MPI
extern const mpr_machine mpr_machine_mpi;
#endif
extern const mpr_machine *mpr_m; /* the backend of the current run */

/* Chooses the backend from MPROF_BACKEND and the launcher's environment (pe.c): NULL with a
 * message on stderr when the requested backend is not available. */
const mpr_machine *mpr_machine_select(void);
/* The first required entry a table lacks, or NULL (pe.c; mp_main refuses such a backend).
 * Optional entries become required by the others a backend sets: `yield` with
 * `shares_thread` (its PEs may share a thread), `group_open` and `group_flush` with
 * `group_agg` (it may make aggregation groups). */
const char *mpr_machine_missing(const mpr_machine *m);

static inline int mpr_machine_run(void) { return mpr_m->run(); }
static inline void mpr_machine_send(struct mpr_pe *from, int dst, struct mpr_msgbuf *buf)
{
    mpr_m->send(from, dst, buf);
}
static inline struct mpr_msgbuf *mpr_machine_take(struct mpr_pe *pe) { return mpr_m->take(pe); }
static inline void mpr_machine_processed(struct mpr_pe *pe, struct mpr_msgbuf *buf)
{
    mpr_m->processed(pe, buf);
}
static inline int mpr_machine_idle_enter(struct mpr_pe *pe) { return mpr_m->idle_enter(pe); }
static inline void mpr_machine_idle_leave(struct mpr_pe *pe) { mpr_m->idle_leave(pe); }
static inline void mpr_machine_sleep(struct mpr_pe *pe, double timeout_s)
{
    mpr_m->sleep(pe, timeout_s);
}
static inline void mpr_machine_yield(struct mpr_pe *pe) { mpr_m->yield(pe); }
static inline void mpr_machine_wake_all(void) { mpr_m->wake_all(); }
static inline int mpr_machine_pending(struct mpr_pe *pe) { return mpr_m->pending(pe); }
static inline int mpr_machine_all_idle(void) { return mpr_m->all_idle && mpr_m->all_idle(); }
static inline void mpr_machine_chan_counts(const struct mpr_pe *pe, uint64_t *notified,
                                           uint64_t *drained)
{
    if (mpr_m->chan_counts) /* else none: *notified and *drained stay as they are */
        mpr_m->chan_counts(pe, notified, drained);
}
static inline uint32_t mpr_machine_peer_idle_epoch(int pe)
{
    return mpr_m->peer_idle_epoch ? mpr_m->peer_idle_epoch(pe) : 0;
}
static inline int mpr_machine_agree(void) { return mpr_m->agree ? mpr_m->agree() : 0; }
static inline double mpr_machine_max_all(double v)
{
    return mpr_m->max_all ? mpr_m->max_all(v) : v;
}
int mpr_machine_gather(const char *buf, size_t len, char **out, size_t *out_len); /* pe.c */
/* Cold paths only: the PE's start (pe.c), its periods when it shares its thread (sched.c
 * tests the cached pe->shared_thread first, so a PE with a thread of its own makes no call). */
static inline int mpr_machine_shares_thread(struct mpr_pe *pe)
{
    return mpr_m->shares_thread && mpr_m->shares_thread(pe);
}
static inline int mpr_machine_period(struct mpr_pe *pe)
{
    return mpr_m->period && mpr_m->period(pe);
}
static inline struct mpr_agg *mpr_machine_group_agg(struct mpr_pe *pe)
{
    return mpr_m->group_agg ? mpr_m->group_agg(pe) : NULL;
}
static inline void mpr_machine_group_open(struct mpr_pe *pe, int dst)
{
    mpr_m->group_open(pe, dst);
}
static inline void mpr_machine_group_flush(struct mpr_pe *pe, int why)
{
    mpr_m->group_flush(pe, why);
}
static inline void mpr_machine_fini(void)
{
    if (mpr_m->fini)
        mpr_m->fini();
}

/* Provided by the PE layer, run by the backend on each local PE. */
void mpr_pe_run(struct mpr_pe *pe);

#endif
