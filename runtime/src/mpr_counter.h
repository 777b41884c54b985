/*
 * mpr_counter.h -- counters: the record fibers wait on, and counter.c.
 */
#ifndef MPR_COUNTER_H
#define MPR_COUNTER_H

#include "mpr_base.h"
#include "mpr_fiber.h"

struct mpr_counter {
    uint64_t value;
    mpr_fiber *waiters;              /* fibers waiting for value >= their wait_value */
    struct mpr_counter *prev, *next; /* PE's list of live counters, for hang diagnosis */
    uint16_t pe;
    uint32_t pending; /* bulk reads and writes in flight that will add to it (bulk.c) */
};
typedef struct mpr_counter mpr_counter;

/* counter.c */
typedef struct {
    mpr_counter *c;
    uint64_t n;
} mpr_bump_args;
void mpr_counter_bump(void *args); /* fiber: adds n to a counter of this PE for a remote sender */
/* fiber: a bulk transfer of this PE is done: adds n to its counter, one transfer less pending */
void mpr_counter_complete(void *args);
void mpr_counters_free(mpr_pe *pe);
/* MP_SUCCESS when `c` is a live counter of `pe`; else reports why (freed, another PE's, NULL)
 * and returns the code that goes with the message. */
mp_err mpr_counter_check(mpr_pe *pe, mpr_counter *c);

#endif /* MPR_COUNTER_H */
