/*
 * mpi/notice.c -- idle notices: a PE that waits for work tells the ranks that may hold records
 * for it, so that their flush policy (comm.c, starving) sends it what they hold at their next
 * communication period instead of when a buffer fills or its delay runs out.
 *
 * On shm a sender reads its destination's idle epoch (mpr_pe.idle_epoch) in memory.  A PE of
 * another process cannot be read, and treating it as always waiting (as the backend did)
 * sent every open buffer every period: records to a busy PE left in messages of a record or
 * two.  Instead an idle PE, once it has polled NOTICE_POLLS times without work (a few
 * microseconds: a PE waiting a moment for an answer already on its way sends nothing), sends
 * its idle epoch (odd) in a small control message (TAG_IDLE) to its partners: the ranks it
 * sent a message of comm.c to or received one from since it last told them.  They are the
 * ones likely to hold records for it (a stream's sender, the PE it asked for something); any
 * other sender's records still go within the delay bound (MPROF_FLUSH_DELAY_US), when its
 * buffer is half full, or when it runs out of work.  A partner keeps the epoch as the PE's
 * (mpr_mpi_peer_idle_epoch) and clears its odd bit as soon as it sends the PE anything or
 * hears from it (mpr_mpi_partner): one message per sender and idle spell, as on shm.
 *
 * Cost: at most one notice per idle spell and partner, only after NOTICE_POLLS idle polls, and
 * only to ranks that exchanged messages with the PE since its last notice: a PE idle for good
 * sends nothing more, so termination waves (wave.c) still find the counts settled.
 */
#define _GNU_SOURCE
#include "mpi_internal.h"

#include <stdlib.h>

void mpr_mpi_notice_init(void)
{
    mpr_mpi.peer_epoch = calloc((size_t)mpr_mpi.size, sizeof *mpr_mpi.peer_epoch);
    mpr_mpi.partner = calloc((size_t)mpr_mpi.size, 1);
    mpr_mpi.partners = malloc((size_t)mpr_mpi.size * sizeof *mpr_mpi.partners);
    if (!mpr_mpi.peer_epoch || !mpr_mpi.partner || !mpr_mpi.partners)
        mpr_fatal("out of memory");
    mpr_mpi.npartners = 0;
    mpr_mpi.told = false;
}

void mpr_mpi_notice_fini(void)
{
    free(mpr_mpi.peer_epoch);
    free(mpr_mpi.partner);
    free(mpr_mpi.partners);
    mpr_mpi.peer_epoch = NULL;
    mpr_mpi.partner = NULL;
    mpr_mpi.partners = NULL;
    mpr_mpi.npartners = 0;
}

uint32_t mpr_mpi_peer_idle_epoch(int pe) { return mpr_mpi.peer_epoch[pe]; }

/* Called at every idle poll: once per idle spell, after NOTICE_POLLS of them (wave.c counts
 * them), tells the partners that this PE waits. */
void mpr_mpi_notice_progress(mpr_pe *pe)
{
    if (mpr_mpi.told || !mpr_mpi.idle || mpr_mpi.idle_polls < NOTICE_POLLS)
        return;
    mpr_mpi.told = true;
    uint32_t epoch = atomic_load_explicit(&pe->idle_epoch, memory_order_relaxed);
    for (int i = 0; i < mpr_mpi.npartners; i++) {
        int r = mpr_mpi.partners[i];
        mpr_mpi.partner[r] = 0;
        mpr_mpi_send_control(r, TAG_IDLE, &epoch, sizeof epoch);
    }
    mpr_mpi.npartners = 0;
}
