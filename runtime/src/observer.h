/*
 * observer.h -- measurement services that observe a run, behind one table of runtime events
 * (as Caliper's services subscribe to its event table).  Three ship with the runtime, each
 * built when CMake finds its library:
 *   trace  OTF2 traces (MPROF_TRACE=DIR; trace.c, docs/tracing.md);
 *   papi   statistics bound to PAPI events (a .perf statistic's `papi EVENT`; papi.c);
 *   sde    every statistic as a PAPI software-defined event (sde.c, docs/papi.md).
 * observer.c lists the services built in and delivers each event to the ones that observe
 * the run.  The runtime's files raise events only through the MPR_OBSERVE macros below.
 *
 * Events come in three kinds, by how often they happen:
 *   cold   once per run, PE or statistics record (start, finish, pe_begin, pe_end,
 *          record_add, record_retire): always delivered, a call and a short loop;
 *   fiber  fiber_begin and fiber_end, around every fiber of a PE whose `fiber_hooks` is set
 *          (the dispatch loop's full path, sched.c): a service that returns
 *          MPR_OBS_EVERY_FIBER from start() has it set on every PE; one that counts on some
 *          PEs only sets it itself (PAPI, on PEs with counting events);
 *   hot    access, idle_begin, idle_end, send and recv, on paths of every fiber, message and
 *          idle period: tested against one flag (mpr_obs_hot), set when some service returned
 *          MPR_OBS_HOT from start(), so that a run without such a service pays a load and a
 *          branch predicted not taken.
 * One compile switch: the CMake option MPROF_OBSERVERS=OFF defines MPROF_NO_OBSERVERS, builds
 * none of the services and compiles every event away.
 */
#ifndef MPR_OBSERVER_H
#define MPR_OBSERVER_H

#include "mpr.h"

/* What a service's start() returns: it observes this run (its cold events are delivered), and
 * what else it takes. */
#define MPR_OBS_ON 1u
#define MPR_OBS_EVERY_FIBER 2u /* fiber events of every PE */
#define MPR_OBS_HOT 4u         /* the hot events */

typedef struct mpr_observer {
    const char *name;
    /* Required.  In mp_main before the PEs start (collective on MPI): whether the service
     * observes this run, as MPR_OBS_* flags (0: not at all, no event reaches it). */
    unsigned (*start)(void);
    /* Optional (NULL: not subscribed). */
    void (*finish)(void); /* after the PEs ended, before the profile (collective on MPI) */
    void (*pe_begin)(mpr_pe *pe);
    void (*pe_end)(mpr_pe *pe); /* the PE's thread, after its statistics settled */
    void (*record_add)(mpr_pe *pe, mpr_stats_rec *r);
    void (*record_retire)(mpr_stats_rec *r); /* freed at the end of the run */
    void (*fiber_begin)(mpr_pe *pe);
    void (*fiber_end)(mpr_pe *pe);
    void (*access)(mpr_pe *pe, unsigned access); /* the code declared an access category */
    void (*idle_begin)(mpr_pe *pe);
    void (*idle_end)(mpr_pe *pe);
    void (*send)(mpr_pe *pe, int dst, size_t bytes); /* a remote invocation is made */
    void (*recv)(mpr_pe *pe, int src, size_t bytes); /* an arrived record becomes a fiber */
} mpr_observer;

#ifdef MPROF_HAVE_OTF2
extern const mpr_observer mpr_observer_trace;
#endif
#ifdef MPROF_HAVE_PAPI
extern const mpr_observer mpr_observer_papi;
#endif
#ifdef MPROF_HAVE_SDE
extern const mpr_observer mpr_observer_sde;
#endif

#ifndef MPROF_NO_OBSERVERS
extern bool mpr_obs_hot;         /* some service takes the hot events (set before PEs start) */
extern bool mpr_obs_every_fiber; /* some service takes every PE's fiber events */
extern bool mpr_obs_bind;        /* either of the two: binding a PE must look (pe.c) */

void mpr_observers_start(void);
void mpr_observers_finish(void);
void mpr_observe_pe_begin(mpr_pe *pe);
void mpr_observe_pe_end(mpr_pe *pe);
void mpr_observe_record_add(mpr_pe *pe, mpr_stats_rec *r);
void mpr_observe_record_retire(mpr_stats_rec *r);
void mpr_observe_fiber_begin(mpr_pe *pe);
void mpr_observe_fiber_end(mpr_pe *pe);
void mpr_observe_access(mpr_pe *pe, unsigned access);
void mpr_observe_idle_begin(mpr_pe *pe);
void mpr_observe_idle_end(mpr_pe *pe);
void mpr_observe_send(mpr_pe *pe, int dst, size_t bytes);
void mpr_observe_recv(mpr_pe *pe, int src, size_t bytes);

#define MPR_OBSERVE(event, ...) mpr_observe_##event(__VA_ARGS__)
#define MPR_OBSERVE_HOT(event, ...)                                                                \
    do {                                                                                           \
        if (MPR_UNLIKELY(mpr_obs_hot))                                                             \
            mpr_observe_##event(__VA_ARGS__);                                                      \
    } while (0)
#define MPR_OBSERVERS_START() mpr_observers_start()
#define MPR_OBSERVERS_FINISH() mpr_observers_finish()
#define MPR_OBS_HOT_ON() mpr_obs_hot
#define MPR_OBS_EVERY_FIBER_ON() mpr_obs_every_fiber
#define MPR_OBS_BIND_ON() mpr_obs_bind
#else
#define MPR_OBSERVE(event, ...) ((void)0)
#define MPR_OBSERVE_HOT(event, ...) ((void)0)
#define MPR_OBSERVERS_START() ((void)0)
#define MPR_OBSERVERS_FINISH() ((void)0)
#define MPR_OBS_HOT_ON() false
#define MPR_OBS_EVERY_FIBER_ON() false
#define MPR_OBS_BIND_ON() false
#endif

#endif /* MPR_OBSERVER_H */
