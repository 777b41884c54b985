/*
 * shm/mux.h -- multiplexing: PEs that share a worker thread (shm backend; mux.c).
 *
 * A worker with several PEs gives each a context of its own (ctx.h: a stack, because pe_main
 * may block in mp_block_until in the middle of its schedule loop) and runs them cooperatively:
 * a PE that runs out of work parks and switches back to its worker, which resumes the next PE
 * that has messages.  A PE that keeps finding work yields every SHM_MUX_YIELD_PERIODS
 * communication periods, or at the next one when it fed an idle member of its aggregation
 * group (group.h), so a busy PE cannot starve the others of its worker.  The generic layer
 * reaches this through the machine table (machine.h shares_thread, period, yield, sleep): its
 * schedule and idle loops decide when to ask, this file what it means.
 */
#ifndef MPR_SHM_MUX_H
#define MPR_SHM_MUX_H

#include "worker.h"

/* A busy multiplexed PE yields every 4 * flush_fibers fibers. */
#define SHM_MUX_YIELD_PERIODS 4

/* Before the workers start, when some worker hosts several PEs: finds the executable's TLS
 * segment, which each PE of such a worker keeps a copy of. */
void mpr_shm_mux_prepare(void);
/* The thread of a worker with several PEs: runs them until every one has finished. */
void mpr_shm_mux_worker(shm_worker *w);
/* The idle loop's sleep of a multiplexed PE: parks it and switches to the worker, which
 * resumes it when a message arrives, the run ends, or after a nap. */
void mpr_shm_mux_park(shm_pe *sp);

/* machine.h entries */
int mpr_shm_shares_thread(mpr_pe *pe);
int mpr_shm_period(mpr_pe *pe);
void mpr_shm_yield(mpr_pe *pe);

#endif
