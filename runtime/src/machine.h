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

/* Required functions first; the optional ones (marked) may be NULL, and the wrappers below
 * then do what a backend whose PEs all live in this process would do. */
typedef struct mpr_machine {
    const char *name; /* "shm" or "mpi": the run profile's "backend" */
    /* Before the PEs exist: fixes P (*npes: requested on entry, actual on return) and the
     * PEs this process hosts, [*first, *first + *count).  Returns 0 or -1 (message printed). */
    int (*init)(int *npes, int *first, int *count);
    /* Starts every local PE; each runs mpr_pe_run().  Returns when they have all finished. */
    int (*run)(void);
    /* Hands a filled buffer to PE dst.  Ownership moves to the backend. */
    void (*send)(struct mpr_pe *from, int dst, struct mpr_msgbuf *buf);
    /* All buffers that arrived at pe, oldest first (per sender), or NULL. */
    struct mpr_msgbuf *(*take)(struct mpr_pe *pe);
    /* A received buffer has been processed (its records turned into fibers). */
    void (*processed)(struct mpr_pe *pe, struct mpr_msgbuf *buf);
    /* The PE found nothing to do: returns true when the whole machine is quiescent. */
    int (*idle_enter)(struct mpr_pe *pe);
    /* The PE has work again (a message arrived). */
    void (*idle_leave)(struct mpr_pe *pe);
    /* Waits until a message may have arrived, the run ended, or timeout_s passed. */
    void (*sleep)(struct mpr_pe *pe, double timeout_s);
    /* Optional (NULL: never called).  A PE whose `mux` flag the backend set gives its
     * thread to the other PEs sharing it, and returns when it is resumed. */
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
    /* Optional (only a backend that makes aggregation groups, mpr_comm.h, calls it and must set
     * it).  Counts one message in flight that is not sent yet: an opened group buffer, sent
     * later with `counted` set so that send() does not count it again. */
    void (*in_flight)(struct mpr_pe *pe);
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
 * Two optional entries become required by what the backend does: `yield` when it sets a
 * PE's `mux` flag, `in_flight` when it makes aggregation groups. */
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
static inline void mpr_machine_in_flight(struct mpr_pe *pe) { mpr_m->in_flight(pe); }
static inline int mpr_machine_pending(struct mpr_pe *pe) { return mpr_m->pending(pe); }
static inline int mpr_machine_all_idle(void) { return mpr_m->all_idle && mpr_m->all_idle(); }
static inline uint32_t mpr_machine_peer_idle_epoch(int pe)
{
    return mpr_m->peer_idle_epoch ? mpr_m->peer_idle_epoch(pe) : 0;
}
static inline double mpr_machine_max_all(double v)
{
    return mpr_m->max_all ? mpr_m->max_all(v) : v;
}
int mpr_machine_gather(const char *buf, size_t len, char **out, size_t *out_len); /* pe.c */
static inline void mpr_machine_fini(void)
{
    if (mpr_m->fini)
        mpr_m->fini();
}

/* Provided by the PE layer, run by the backend on each local PE. */
void mpr_pe_run(struct mpr_pe *pe);

#endif
