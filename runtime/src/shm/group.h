/*
 * shm/group.h -- aggregation groups: the aggregation that the PEs of one worker thread share
 * (shm backend, multiplexed PEs; group.c).
 *
 * They run one at a time on one thread, so they can append to one buffer per destination PE
 * without atomics, and a destination then receives one buffer per worker where it received
 * one per sending PE: with P PEs talking round-robin, per-(sender, destination) buffers hold
 * a record or two each, per-(worker, destination) ones many.  A group buffer counts as a
 * message in flight from the moment it is opened.  A destination in the group takes its
 * buffer itself when it polls (no send at all); one outside the group gets it when it fills,
 * at the end of a round of the worker over its PEs when it is due (mpr_shm_group_flush_due),
 * when a member ran out of work, and on mp_flush().  The generic layer sees a
 * group through the machine table (machine.h group_agg, group_open, group_flush): its
 * members' pe->agg is the group's array, and comm.c's flush policy leaves the group's buffers
 * to the backend.
 */
#ifndef MPR_SHM_GROUP_H
#define MPR_SHM_GROUP_H

#include "../mpr.h"

typedef struct shm_group {
    mpr_agg *agg;     /* per destination PE; every member's pe->agg */
    int *xopen;       /* destinations outside the group that may have an open buffer */
    uint8_t *xlisted; /* per destination: in xopen */
    int nxopen;
    int first, count; /* the member PEs, [first, first + count) */
    int npes;
    /* A member opened a buffer for a member that is idle: the writer yields at its next
     * communication period rather than after SHM_MUX_YIELD_PERIODS (mux.c), so that a
     * hand-off within a worker (a pipeline) waits one period, while PEs that all have work
     * of their own keep their longer slices. */
    bool idle_fed;
    /* A member parked since the last flush (it ran out of work): the next round's end sends
     * every buffer, as a PE of its own sends its buffers when it runs out of work. */
    bool idled;
} shm_group;

shm_group *mpr_shm_group_new(int first, int count, int npes);
void mpr_shm_group_free(shm_group *g);
/* A member opened the group's buffer for dst (machine.h group_open): a destination outside
 * the group is listed for the flush, an idle member makes the writer yield soon. */
void mpr_shm_group_opened(shm_group *g, int dst);
/* Sends the open buffers of destinations outside the group, counted as sent for `why`.
 * Called when the worker's PEs all ran out of work, on urgent records for a waiting PE and by
 * mp_flush(). */
void mpr_shm_group_flush(shm_group *g, mpr_agg_why why);
/* The end of a round over the members' slices: sends every buffer when a member parked since
 * the last flush, else those due by the communication period's rules (comm.c mpr_agg_due:
 * half full, open for the flush delay, or for a PE that waits), and keeps the others filling
 * across rounds.  Sending every buffer every round made a message of one or two records when
 * each worker ran two PEs that talk to 30 others (a round is a few hundred fibers). */
void mpr_shm_group_flush_due(shm_group *g);
/* Takes the group's open buffer for member dst, or NULL (called by dst's own thread); it
 * counts as sent then, like a group buffer sent to another worker's PE. */
mpr_msgbuf *mpr_shm_group_take(shm_group *g, int dst);

/* The buffer open for member dst, or NULL (its worker's thread only). */
static inline mpr_msgbuf *mpr_shm_group_open_for(const shm_group *g, int dst)
{
    return g ? g->agg[dst].buf : NULL;
}

#endif
