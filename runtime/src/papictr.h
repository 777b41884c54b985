/*
 * papictr.h -- statistics bound to PAPI events (a .perf statistic's `papi EVENT`, docs/papi.md).
 *
 * The runtime reads the PE's PAPI counters when a fiber starts and ends and charges the
 * difference to the access category the fiber ran in; at the PE's end a bound statistic is
 * the sum over its module's access categories.  An event PAPI cannot count here (no PMU, a
 * disabled component) is reported once on stderr and the statistic is left out of the run
 * profile, listed under the record's "absent" with the reason.  The counting is papi.c, a
 * measurement service of observer.h; this header is what the profile writer asks.
 */
#ifndef MPR_PAPICTR_H
#define MPR_PAPICTR_H

#include "mpr.h"

#ifdef MPROF_HAVE_PAPI
/* why a bound statistic is absent from the profile, or NULL when it was counted */
const char *mpr_papi_absent(const mp_stat_field *field);
#else
static inline const char *mpr_papi_absent(const mp_stat_field *field)
{
    return field->papi_event ? "the runtime was built without PAPI (or MPROF_OBSERVERS=OFF)" : NULL;
}
#endif

#endif /* MPR_PAPICTR_H */
