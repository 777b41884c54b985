/*
 * observer.c -- the table of measurement services built into the runtime, and the delivery of
 * each event to those that observe the run (observer.h).
 *
 * The order is the order of delivery: PAPI's pe_end stores its counts in the statistics
 * records before the trace's pe_end writes them as metrics, and a record joins the SDE
 * counters before PAPI adds its events.
 */
#include "observer.h"

#ifndef MPROF_NO_OBSERVERS
static const mpr_observer *const built_in[] = {
#ifdef MPROF_HAVE_SDE
    &mpr_observer_sde,
#endif
#ifdef MPROF_HAVE_PAPI
    &mpr_observer_papi,
#endif
#ifdef MPROF_HAVE_OTF2
    &mpr_observer_trace,
#endif
    NULL, /* keeps the array non-empty when none is built */
};
#define NBUILT (sizeof built_in / sizeof built_in[0] - 1)

bool mpr_obs_hot;
bool mpr_obs_every_fiber;
bool mpr_obs_bind;

/* The services that observe this run, in table order (set before the PEs start, read-only
 * while they run). */
static const mpr_observer *active[NBUILT + 1];
static unsigned nactive;

void mpr_observers_start(void)
{
    nactive = 0;
    mpr_obs_hot = mpr_obs_every_fiber = mpr_obs_bind = false;
    for (unsigned i = 0; i < NBUILT; i++) {
        unsigned flags = built_in[i]->start();
        if (!(flags & MPR_OBS_ON))
            continue;
        active[nactive++] = built_in[i];
        mpr_obs_hot |= (flags & MPR_OBS_HOT) != 0;
        mpr_obs_every_fiber |= (flags & MPR_OBS_EVERY_FIBER) != 0;
    }
    mpr_obs_bind = mpr_obs_hot || mpr_obs_every_fiber;
}

/* Each event: every active service subscribed to it, in table order. */
#define DELIVER(event, ...)                                                                        \
    for (unsigned i = 0; i < nactive; i++)                                                         \
        if (active[i]->event)                                                                      \
    active[i]->event(__VA_ARGS__)

/* The list stays: the statistics records retire after this, when the PEs are freed. */
void mpr_observers_finish(void)
{
    DELIVER(finish);
    mpr_obs_hot = mpr_obs_every_fiber = mpr_obs_bind = false;
}

void mpr_observe_pe_begin(mpr_pe *pe) { DELIVER(pe_begin, pe); }
void mpr_observe_pe_end(mpr_pe *pe) { DELIVER(pe_end, pe); }
void mpr_observe_record_add(mpr_pe *pe, mpr_stats_rec *r) { DELIVER(record_add, pe, r); }
void mpr_observe_record_retire(mpr_stats_rec *r) { DELIVER(record_retire, r); }
/* Around a fiber the table's order is the inside: counters (PAPI) start last and stop first,
 * so that they count the fiber and not the other services' work around it. */
void mpr_observe_fiber_begin(mpr_pe *pe)
{
    for (unsigned i = nactive; i-- > 0;)
        if (active[i]->fiber_begin)
            active[i]->fiber_begin(pe);
}
void mpr_observe_fiber_end(mpr_pe *pe) { DELIVER(fiber_end, pe); }
void mpr_observe_access(mpr_pe *pe, unsigned access) { DELIVER(access, pe, access); }
void mpr_observe_idle_begin(mpr_pe *pe) { DELIVER(idle_begin, pe); }
void mpr_observe_idle_end(mpr_pe *pe) { DELIVER(idle_end, pe); }
void mpr_observe_send(mpr_pe *pe, int dst, size_t bytes) { DELIVER(send, pe, dst, bytes); }
void mpr_observe_recv(mpr_pe *pe, int src, size_t bytes) { DELIVER(recv, pe, src, bytes); }
#endif /* MPROF_NO_OBSERVERS */
