/*
 * mpr_sample.h -- measured CPU time per access category, by sampling (sample.c).
 *
 * Each thread that runs PEs has a timer that fires every MPROF_SAMPLE_US microseconds while the
 * thread is not asleep (default 1000; 0 turns sampling off).  The signal handler charges the
 * thread's CPU time since the previous sample to the PE the thread runs at that moment, in
 * one of
 *   - the access category of the fiber it is running (or of pe_main's code, outside fibers);
 *   - MPR_SAMPLE_SCHED: the runtime between fibers (polls, flushes, flow control);
 *   - MPR_SAMPLE_IDLE: the idle loop.
 * The run profile scales a PE's charged times so that its categories add up to the PE's cpu_s
 * exactly (profile.c).  Why sampling and not a clock read around
 * every fiber: the fiber path is about 66 instructions, and a clock read, a subtraction and an
 * add per fiber would cost the latency accounting most of its 2 % budget; a sample costs a
 * signal and a clock read (a few microseconds) per millisecond, and nothing on the fiber path.
 */
#ifndef MPR_SAMPLE_H
#define MPR_SAMPLE_H

#include "mpr_base.h"

/* Sample slots of a PE beyond its access categories (mpr_pe.samples). */
#define MPR_SAMPLE_SCHED MPR_MAX_ACCESS
#define MPR_SAMPLE_IDLE (MPR_MAX_ACCESS + 1)
#define MPR_SAMPLE_SLOTS (MPR_MAX_ACCESS + 2)

/* What a PE's thread is doing, for the sampler (mpr_pe.sample_at): its own code (pe_main, or
 * a fiber, whatever the value while a fiber runs), the runtime's schedule loop between fibers,
 * or waiting (the idle loop, and flow-control waits, whose CPU time the profile's idle_cpu_s
 * counts too).  Written on cold paths: the schedule loop's entry and exit, idle periods. */
enum { MPR_AT_USER = 0, MPR_AT_SCHED, MPR_AT_IDLE };

typedef struct mpr_sampler mpr_sampler;

#if MPR_LATENCY
/* Once per process, before the PEs start: installs the signal handler (unless sampling is off
 * or the program handles the signal itself, which a warning then says). */
void mpr_sample_setup(void);
/* On a thread about to run PEs: starts its timer.  `pe` is the PE the thread runs, or NULL for
 * a worker that multiplexes several (it says which with mpr_sample_switch).  NULL when
 * sampling is off or the timer could not be made. */
mpr_sampler *mpr_sample_start(mpr_pe *pe);
/* The PE the thread runs from now on (NULL: none, the worker's own scheduler), from the
 * monotonic time `now_ns` (the caller reads it for its own accounting of the slice). */
void mpr_sample_switch_on(mpr_sampler *s, mpr_pe *pe, uint64_t now_ns);
/* Around a wait in which the thread sleeps (on that thread): the timer stops, so that a
 * sleeping thread is not woken every period, and starts again. */
void mpr_sample_pause_on(mpr_sampler *s);
void mpr_sample_resume_on(mpr_sampler *s);
/* The calls above as a multiplexing worker makes them, per slice and per sleep: inline, so
 * that a thread without a sampler (sampling off) pays a test, not a call. */
static inline void mpr_sample_switch(mpr_sampler *s, mpr_pe *pe, uint64_t now_ns)
{
    if (s)
        mpr_sample_switch_on(s, pe, now_ns);
}
static inline void mpr_sample_pause(mpr_sampler *s)
{
    if (s)
        mpr_sample_pause_on(s);
}
static inline void mpr_sample_resume(mpr_sampler *s)
{
    if (s)
        mpr_sample_resume_on(s);
}
/* Stops and frees the thread's timer (on that thread). */
void mpr_sample_stop(mpr_sampler *s);
#else
static inline void mpr_sample_setup(void) {}
static inline mpr_sampler *mpr_sample_start(mpr_pe *pe)
{
    (void)pe;
    return NULL;
}
static inline void mpr_sample_switch(mpr_sampler *s, mpr_pe *pe, uint64_t now_ns)
{
    (void)s;
    (void)pe;
    (void)now_ns;
}
static inline void mpr_sample_pause(mpr_sampler *s) { (void)s; }
static inline void mpr_sample_resume(mpr_sampler *s) { (void)s; }
static inline void mpr_sample_stop(mpr_sampler *s) { (void)s; }
#endif

#endif /* MPR_SAMPLE_H */
