/*
 * hang.c -- diagnosis of a run that cannot finish: the machine is quiescent (or idle past the
 * timeout) but fibers still wait.  Names every waiting fiber with its function, the category
 * that created it, the counter and the awaited value.
 */
#include "mpr.h"

#include <inttypes.h>
#include <stdio.h>

/* Prints the report's first line before its first entry; returns true (something waits). */
static bool hang_header(FILE *out, bool waiting, const char *where)
{
    if (!waiting)
        fprintf(out, "mprof: hang: no PE can make progress; waiting fibers%s:\n", where);
    return true;
}

bool mpr_hang_report(FILE *out)
{
    bool waiting = false;
    char name[128], where[48] = "";
    if (mpr_g.local_count < mpr_g.npes) /* this process hosts some of the PEs */
        snprintf(where, sizeof where, " (%s rank %d of %d)", mpr_m->name, mpr_g.local_first,
                 mpr_g.npes);
    /* only this process's PEs (MPI: one rank each reports its own PE) */
    for (int i = mpr_g.local_first; i < mpr_g.local_first + mpr_g.local_count; i++) {
        mpr_pe *pe = mpr_g.pes[i];
        for (mpr_counter *c = pe->counters; c; c = c->next)
            for (mpr_fiber *f = c->waiters; f; f = f->next) {
                waiting = hang_header(out, waiting, where);
                fprintf(out,
                        "  PE %d: fiber %s (created by %s) waits on counter %p for value %" PRIu64
                        ", counter is %" PRIu64 "\n",
                        pe->id, mpr_fn_name(f->fn, name, sizeof name),
                        mpr_access_name(f->tag.creator), (void *)c, f->wait_value, c->value);
            }
        if (pe->blocked_on && pe->blocked_on->value < pe->blocked_value) {
            waiting = hang_header(out, waiting, where);
            fprintf(out,
                    "  PE %d: pe_main blocked in mp_block_until on counter %p for value %" PRIu64
                    ", counter is %" PRIu64 "\n",
                    pe->id, (void *)pe->blocked_on, pe->blocked_value, pe->blocked_on->value);
        }
        /* a barrier or reduction that not every PE called: its lines follow the header */
        if (mpr_objs_report_unfinished(pe, NULL)) {
            waiting = hang_header(out, waiting, where);
            mpr_objs_report_unfinished(pe, out);
        }
        for (int k = 0; k + MP_SCHED_PREEMPT + 1 < pe->nsched; k++)
            if (pe->custom[k].held) {
                waiting = hang_header(out, waiting, where);
                fprintf(out, "  PE %d: %" PRIu64 " enabled fibers held by scheduler %s (id %d)\n",
                        pe->id, pe->custom[k].held,
                        pe->custom[k].ops.name ? pe->custom[k].ops.name : "(unnamed)",
                        k + MP_SCHED_PREEMPT + 1);
            }
    }
    return waiting;
}
