/*
 * sde.h -- mprof statistics as PAPI software-defined events (docs/papi.md).
 *
 * Every statistic of every module is a PAPI SDE counter sde:::MPROF::<module>::<statistic>,
 * the sum over this process's PEs of every record of that module.  The counters are callbacks:
 * the hooks stay one plain add on PE-local memory and the sum is taken only when a PAPI user
 * reads the event (papi_sde_inc_counter takes a global lock, unsuitable for hot paths).
 * Records join when they are created and, when freed at the end of the run, leave their final
 * values behind, so a counter never goes backwards (sde.c, a measurement service of
 * observer.h).  This header is the lock that a record's derive function changes under.
 * Without libsde (MPROF_HAVE_SDE unset, or MPROF_OBSERVERS=OFF) it compiles to nothing.
 */
#ifndef MPR_SDE_H
#define MPR_SDE_H

#include "mpr.h"

#ifdef MPROF_HAVE_SDE
void mpr_sde_lock(void);
void mpr_sde_unlock(void);
/* Held while a record's derive function changes or is folded in: a counter's reader calls
 * it under the same lock. */
#define MPR_SDE_LOCK() mpr_sde_lock()
#define MPR_SDE_UNLOCK() mpr_sde_unlock()
#else
#define MPR_SDE_LOCK() ((void)0)
#define MPR_SDE_UNLOCK() ((void)0)
#endif

#endif /* MPR_SDE_H */
