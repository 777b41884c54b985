/*
 * mpr_carrier.h -- carriers: arrived FIFO records run from their message buffer.
 *
 * A poll used to turn every arrived FIFO record into a fiber: a slot taken, the arguments
 * copied, the header written and the fiber linked into the FIFO queue, then read back when it
 * ran (about 50 of the 90 instructions a remote operation cost its receiver).  Now the poll
 * enqueues one carrier per run of consecutive FIFO records of a buffer, after the run's first
 * record, which stays a fiber (a carrier costs about 60 instructions once and saves about 40 a
 * record, so a message of one record keeps its fiber; without aggregation, or with
 * MPROF_CARRIERS=0, the poll makes none): a fiber slot that holds the buffer and the range of
 * offsets.  Dispatch runs a carrier's records in order
 * (sched.c, run_carrier), each in a frame that is a real fiber slot: its arguments copied
 * there, its header that of the fiber the record would have become (scheduler, enabler,
 * creation stamp), so that a record may call mp_continue (the continuation keeps the frame,
 * and the carrier takes another), mp_self, mp_counter_wait or spawn as any fiber does, and is
 * accounted as one (latency table, ThreadDisp).  One frame serves all of a carrier's records
 * unless one of them hands it to a continuation.
 *
 * What stays as before: the order (a carrier sits in the FIFO queue where the record's
 * fibers sat, and between two records it counts down to the communication period and stops
 * on an interrupt, as the batch loop does between two fibers), the statistics (a record
 * counts as an arrived, allocated, enabled and dispatched thread), and the records that are
 * not plain FIFO ones (preemptive, urgent, custom schedulers, payloads, and every record while
 * receive hooks are on), which the poll handles as it did.
 *
 * What changes: a buffer goes back to its sender (the machine's `processed`) when its last
 * carrier has run and the poll has passed its end, not when it was polled.  Flow control
 * counts it in flight meanwhile; the poll's budget (MPR_POLL_BUDGET records) bounds what a
 * receiver holds that way to about a period's worth of records.
 */
#ifndef MPR_CARRIER_H
#define MPR_CARRIER_H

#include "mpr_base.h"
#include "mpr_comm.h"
#include "mpr_fiber.h"

/* A carrier's idle_at_create: never a dispatch key (mpr_account.h: c_total or UINT64_MAX), so
 * the dispatch loop's one comparison sends carriers off its plain path at no cost to it.  The
 * records' own creation stamp (C_total at the poll) is in the carrier's wait_value, which a
 * fiber uses only while it waits on a counter, and a carrier never does. */
#define MPR_CARRIER_STAMP (UINT64_MAX - 1)

/* The arguments of a carrier: 16 bytes, a tiny slot's. */
typedef struct {
    mpr_msgbuf *buf;
    uint32_t off; /* the next record to run */
    uint32_t end; /* the end of the run */
} mpr_carrier_args;
_Static_assert(sizeof(mpr_carrier_args) <= MPR_FIBER_TINY_ARGS, "a carrier fits a tiny slot");

/* A carrier's function, which is never called as one (dispatch tells carriers by it where the
 * stamp test does not apply, and a call is a fatal error); named in the watchdog's dumps. */
void mpr_carrier_fn(void *args);

/* A carrier of b has run its last record: b goes back to the machine if the poll is done with
 * it (comm.c). */
void mpr_carrier_done(mpr_pe *pe, mpr_msgbuf *b);

static inline bool mpr_is_carrier(const mpr_fiber *f) { return f->fn == mpr_carrier_fn; }

#endif /* MPR_CARRIER_H */
