/*
 * mpr_account.h -- what the executing code is accounted as: its access category (kept as the tag of
 * the fibers it spawns) and the PE's idle total, with the dispatch key derived from it.
 * The latency table itself: mpr_latency.h.
 */
#ifndef MPR_ACCOUNT_H
#define MPR_ACCOUNT_H

#include "mpr_base.h"
#include "mpr_pe.h"
#include "mpr_spawn.h"

/* Declares the category of the executing code.  The tag its spawned fibers get is kept
 * ready, which saves mp_spawn from assembling it (for a tiny slot, the class of mp_spawn's
 * fast path). */
static inline void mpr_access_set(mpr_pe *pe, unsigned access)
{
    pe->spawn_tag.word =
        mpr_tag_make(pe, MP_SCHED_FIFO, access, access, MPR_FIBER_ENABLED, MPR_SLOT_TINY);
}

static inline unsigned mpr_cur_access(const mpr_pe *pe) { return pe->spawn_tag.creator; }

/* The category that enabled the executing fiber, for a runtime fiber that runs on behalf of
 * a remote one and declares its category first (before any mp_continue, which rewrites the
 * tag). */
static inline unsigned mpr_cur_enabler(const mpr_pe *pe) { return pe->current->tag.enabler; }

/* Called whenever c_total or fiber_hooks changes: a fiber created before idle time must not
 * match the key, or dispatch would skip its latency. */
static inline void mpr_dispatch_key_update(mpr_pe *pe)
{
    pe->dispatch_key = pe->fiber_hooks ? UINT64_MAX : pe->c_total;
}

/* The PE was idle for `ns` more: the only way c_total grows. */
static inline void mpr_idle_add(mpr_pe *pe, uint64_t ns)
{
    pe->c_total += ns;
    mpr_dispatch_key_update(pe);
}

#endif /* MPR_ACCOUNT_H */
