/*
 * mpr_latency.h -- latency accounting (Wen 1995, section 4.5.3): one cell of a PE's (enabler,
 * access) table.  What the executing code is accounted as (access category, idle total, dispatch
 * key): mpr_account.h.
 */
#ifndef MPR_LATENCY_H
#define MPR_LATENCY_H

#include "mpr_base.h"

typedef struct {
    uint64_t count;
    uint64_t observed_ns;
    uint64_t critical_ns;
    uint64_t pad_; /* 32 bytes: indexing the per-PE table is a shift */
} mpr_latency;

#endif /* MPR_LATENCY_H */
