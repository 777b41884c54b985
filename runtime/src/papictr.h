/*
 * papictr.h -- statistics bound to PAPI events (a .perf statistic's `papi EVENT`, docs/papi.md).
 *
 * The runtime reads the PE's PAPI counters when a fiber starts and ends and charges the
 * difference to the access category the fiber ran in; at the PE's end a bound statistic is
 * the sum over its module's access categories.  An event PAPI cannot count here (no PMU, a
 * disabled component) is reported once on stderr and the statistic is left out of the run
 * profile, listed under the record's "absent" with the reason.  Hot paths reach this only
 * through MPR_PAPI(call): a load and a branch predicted not taken unless some statistic is
 * bound to an event that counts.
 */
#ifndef MPR_PAPICTR_H
#define MPR_PAPICTR_H

#include "mpr.h"

#ifdef MPROF_HAVE_PAPI
extern bool mpr_papi_on; /* some PE counts some event */
#define MPR_PAPI(call)                                                                             \
    do {                                                                                           \
        if (MPR_UNLIKELY(mpr_papi_on))                                                             \
            call;                                                                                  \
    } while (0)
/* a record was created on this PE (its thread): start counting its bound statistics' events */
void mpr_papi_record_add(mpr_pe *pe, mpr_stats_rec *r);
void mpr_papi_fiber_begin(mpr_pe *pe);
void mpr_papi_fiber_end(mpr_pe *pe);
/* the PE's end, in its thread: bound statistics get their counts; counting stops */
void mpr_papi_pe_end(mpr_pe *pe);
/* why a bound statistic is absent from the profile, or NULL when it was counted */
const char *mpr_papi_absent(const mp_stat_field *field);
#define MPR_PAPI_RECORD_ADD(pe, r) mpr_papi_record_add(pe, r)
#define MPR_PAPI_PE_END(pe) mpr_papi_pe_end(pe)
#else
#define MPR_PAPI(call) ((void)0)
#define MPR_PAPI_RECORD_ADD(pe, r) ((void)(pe), (void)(r))
#define MPR_PAPI_PE_END(pe) ((void)(pe))
static inline const char *mpr_papi_absent(const mp_stat_field *field)
{
    return field->papi_event ? "the runtime was built without PAPI" : NULL;
}
#endif

#endif /* MPR_PAPICTR_H */
