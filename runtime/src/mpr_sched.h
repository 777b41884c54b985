/*
 * mpr_sched.h -- scheduling on a PE: enabling fibers (inline: half of every fiber's life), the
 * schedule loop and the rest of sched.c.
 */
#ifndef MPR_SCHED_H
#define MPR_SCHED_H

#include "mpr_base.h"
#include "mpr_counter.h"
#include "mpr_fiber.h"
#include "mpr_pe.h"
#include "mpr_queue.h"

/* sched.c */
void mpr_enable_slow(mpr_pe *pe, mpr_fiber *f); /* preemptive and custom schedulers */
/* A preemptive fiber that arrived in a message runs from the message buffer, without a fiber
 * of its own (sched.c): when the PE's fiber hooks are off and preemption is not nested too
 * deep (then it becomes a fiber, as a local preemptive enable would). */
static inline bool mpr_direct_ok(const mpr_pe *pe)
{
    return pe->preempt_depth < MPR_PREEMPT_DEPTH && !pe->fiber_hooks;
}
void mpr_run_direct(mpr_pe *pe, mp_fiber_fn fn, const void *args, unsigned access);
void mpr_schedule_loop(mpr_pe *pe, mpr_counter *until, uint64_t value);
void mpr_sched_init(mpr_pe *pe);
/* No fiber waits to run on pe: its queues are empty and no custom scheduler holds one. */
bool mpr_sched_idle(const mpr_pe *pe);

/* Hands a fiber that is enabled to scheduler `sched` (its tag's).  Inline: this is half of
 * every fiber's life.  Only FIFO fibers stay inline: an urgent one must also interrupt the
 * running batch (sched.c). */
static inline void mpr_fiber_enqueue(mpr_pe *pe, mpr_fiber *f, unsigned sched)
{
    if (MPR_LIKELY(sched == MP_SCHED_FIFO))
        mpr_queue_push(&pe->queue[MP_SCHED_FIFO], f);
    else
        mpr_enable_slow(pe, f);
}

/* Enables a created fiber (directly, or through a counter it waited on). */
static inline void mpr_enable(mpr_pe *pe, mpr_fiber *f, uint16_t enabler)
{
    f->tag.state = MPR_FIBER_ENABLED;
    f->tag.enabler = (uint8_t)enabler;
    mpr_fiber_enqueue(pe, f, f->tag.sched);
}

/* Sets the rts thread counts, which no hot path keeps (sched.c); called once the PE's
 * schedule loop has ended, before the record is read. */
void mpr_rts_fold(mpr_pe *pe);
uint64_t mpr_dispatched(const mpr_pe *pe);
/* The calling thread's CPU time in ns (a system call: never on a hot path). */
uint64_t mpr_thread_cpu_ns(void);
void mpr_yield_busy(mpr_pe *pe);

#endif /* MPR_SCHED_H */
