/*
 * mpr_queue.h -- scheduler queues: the built-in FIFO list threaded through fibers, and the slot of
 * a custom scheduler.  Enabling and dispatch: mpr_sched.h.
 */
#ifndef MPR_QUEUE_H
#define MPR_QUEUE_H

#include "mpr_base.h"
#include "mpr_fiber.h"

/* A built-in scheduler queue: a FIFO list threaded through the fibers' next links.  Pushing
 * writes the previous tail fiber, which was just created and is still in cache; the list
 * never fills, so enabling has no capacity check. */
typedef struct {
    mpr_fiber *head;
    mpr_fiber **tailp; /* &head when empty, else &last->next */
} mpr_queue;

typedef struct {
    mp_sched_ops ops;
    void *state;
    uint64_t held; /* fibers deposited and not yet selected */
} mpr_custom_sched;

static inline void mpr_queue_init(mpr_queue *q)
{
    q->head = NULL;
    q->tailp = &q->head;
}

static inline void mpr_queue_push(mpr_queue *q, mpr_fiber *f)
{
    f->next = NULL;
    *q->tailp = f;
    q->tailp = &f->next;
}

/* Puts f back before the others (a carrier that an interrupt stopped: sched.c). */
static inline void mpr_queue_push_front(mpr_queue *q, mpr_fiber *f)
{
    if (!(f->next = q->head))
        q->tailp = &f->next;
    q->head = f;
}

static inline mpr_fiber *mpr_queue_pop(mpr_queue *q)
{
    mpr_fiber *f = q->head;
    if (f && !(q->head = f->next))
        q->tailp = &q->head;
    return f;
}

#endif /* MPR_QUEUE_H */
