/*
 * counter.c -- counters: the synchronization object behind every split-phase operation.
 *
 * A counter belongs to the PE that created it.  Fibers wait for it to reach a value; a
 * fiber waits on at most one counter, so the wait list is a plain singly linked list that is
 * scanned on update.
 */
#include "mpr.h"

#include <inttypes.h>

#include <stdlib.h>

mp_counter_t mp_counter_new(uint64_t initial)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe) {
        mpr_misuse(MP_ERR_BAD_STATE, "counter created outside a running PE");
        return NULL;
    }
    mpr_counter *c = pe->free_counters;
    if (c)
        pe->free_counters = c->next;
    else if (!(c = malloc(sizeof *c)))
        mpr_fatal("out of memory allocating a counter");
    c->value = initial;
    c->waiters = NULL;
    c->pending = 0;
    c->pe = (uint16_t)pe->id;
    c->prev = NULL;
    c->next = pe->counters;
    if (pe->counters)
        pe->counters->prev = c;
    pe->counters = c;
    return c;
}

/* A freed counter's owner field holds this (PEs number at most 4096), so that freeing it
 * again, or using it, is reported instead of corrupting the free list. */
#define MPR_COUNTER_FREED UINT16_MAX

void mp_counter_free(mp_counter_t c)
{
    mpr_pe *pe = mpr_pe_self();
    if (!c)
        return;
    if (!pe) { /* after mp_main returned, the counter's memory went with its PE */
        mpr_misuse(MP_ERR_BAD_STATE, "mp_counter_free outside a running PE");
        return;
    }
    if (c->pe == MPR_COUNTER_FREED) {
        mpr_misuse(MP_ERR_BAD_STATE, "counter %p freed twice", (void *)c);
        return;
    }
    if (c->pe != pe->id) {
        mpr_misuse(MP_ERR_BAD_STATE, "freeing a counter of another PE");
        return;
    }
    if (c->waiters) {
        mpr_misuse(MP_ERR_BAD_STATE, "freeing a counter that fibers still wait on");
        return;
    }
    if (c->pending) { /* the reply would add to whatever counter took the memory */
        mpr_misuse(MP_ERR_BAD_STATE,
                   "freeing a counter that %u bulk transfer%s in flight will "
                   "still add to",
                   c->pending, c->pending == 1 ? "" : "s");
        return;
    }
    if (c == pe->blocked_on) { /* reused, it would end the wait with another counter's value */
        mpr_misuse(MP_ERR_BAD_STATE, "freeing the counter that mp_block_until waits on");
        return;
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        pe->counters = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = pe->free_counters;
    c->pe = MPR_COUNTER_FREED;
    pe->free_counters = c;
}

void mpr_counters_free(mpr_pe *pe)
{
    for (mpr_counter *c = pe->counters, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    for (mpr_counter *c = pe->free_counters, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    pe->counters = pe->free_counters = NULL;
}

uint64_t mp_counter_value(mp_counter_t c)
{
    if (MPR_UNLIKELY(!c)) {
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_counter_value of a NULL counter");
        return 0;
    }
    mpr_pe *pe = mpr_pe_self();
    if (MPR_UNLIKELY(!pe)) { /* its memory went with its PE */
        mpr_misuse(MP_ERR_BAD_STATE, "mp_counter_value outside a running PE");
        return 0;
    }
    if (MPR_UNLIKELY(c->pe == MPR_COUNTER_FREED)) { /* the value of a counter reused later */
        mpr_misuse(MP_ERR_BAD_STATE, "mp_counter_value of counter %p after mp_counter_free",
                   (void *)c);
        return 0;
    }
    if (MPR_UNLIKELY(c->pe != pe->id)) { /* its owner updates it without atomics */
        mpr_misuse(MP_ERR_BAD_STATE, "mp_counter_value of a counter of PE %d on PE %d", (int)c->pe,
                   pe->id);
        return 0;
    }
    return c->value;
}

static void wake_eligible(mpr_pe *pe, mpr_counter *c)
{
    /* Unlink every eligible waiter first and enable them afterwards: enabling may run a
     * preemptive fiber that updates or waits on this counter again, and walking the list
     * while that happens enabled some waiters twice. */
    mpr_fiber *ready = NULL, **tail = &ready;
    mpr_fiber **link = &c->waiters;
    while (*link) {
        mpr_fiber *f = *link;
        if (f->wait_value <= c->value) {
            *link = f->next;
            f->waiting_on = NULL;
            *tail = f;
            tail = &f->next;
        } else {
            link = &f->next;
        }
    }
    *tail = NULL;
    while (ready) {
        mpr_fiber *f = ready;
        ready = f->next;
        if (f->tag.state == MPR_FIBER_CREATED) /* not enabled meanwhile by a preemptive fiber */
            mpr_enable(pe, f, mpr_cur_access(pe));
    }
}

/* Reports why `c` cannot be used on this PE and returns the code that goes with the
 * message. */
static MPR_COLD mp_err not_owned(mpr_pe *pe, mpr_counter *c)
{
    if (!c)
        return mpr_misuse(MP_ERR_INVALID_ARG, "NULL counter");
    if (!pe)
        return mpr_misuse(MP_ERR_BAD_STATE, "counter used outside a running PE");
    if (c->pe == MPR_COUNTER_FREED)
        return mpr_misuse(MP_ERR_BAD_STATE, "counter %p used after mp_counter_free", (void *)c);
    return mpr_misuse(MP_ERR_BAD_STATE,
                      "counter of PE %d updated on another PE (use mp_counter_add_remote)", c->pe);
}

/* After a change of `c`'s value: enables the waiters it released, and interrupts the FIFO
 * batch if `c` reached the target of mp_block_until (the schedule loop compares its counter
 * with the target only when something interrupts the batch, not after every fiber).  Out of
 * line: most updates have neither to do, and the wait-list walk inlined gave mp_counter_add a
 * stack frame. */
static MPR_NOIPA void counter_changed(mpr_pe *pe, mpr_counter *c)
{
    if (c->waiters)
        wake_eligible(pe, c);
    if (c == pe->blocked_on && c->value >= pe->blocked_value)
        mpr_interrupt_set(pe);
}

mp_err mpr_counter_check(mpr_pe *pe, mpr_counter *c)
{
    return MPR_LIKELY(c && pe && c->pe == pe->id) ? MP_SUCCESS : not_owned(pe, c);
}

static inline int owned(mpr_pe *pe, mpr_counter *c)
{
    if (MPR_LIKELY(c && pe && c->pe == pe->id))
        return 1;
    not_owned(pe, c);
    return 0;
}

/* A counter only grows: an add past 2^64 - 1 would wrap it below the targets its waiters have
 * reached or not, so it is refused (the value stays), like an update by the wrong PE. */
static MPR_COLD void wrapped(const mpr_counter *c, uint64_t n)
{
    mpr_misuse(MP_ERR_INVALID_ARG,
               "counter %p: adding %" PRIu64 " to %" PRIu64 " would wrap past 2^64 - 1 (counters "
               "only grow; refused)",
               (const void *)c, n, c->value);
}

void mp_counter_add(mp_counter_t c, uint64_t n)
{
    mpr_pe *pe = mpr_pe_self();
    if (!owned(pe, c))
        return;
    uint64_t v;
    if (MPR_UNLIKELY(__builtin_add_overflow(c->value, n, &v))) {
        wrapped(c, n);
        return;
    }
    c->value = v;
    if (MPR_UNLIKELY(c->waiters || c == pe->blocked_on))
        counter_changed(pe, c);
}

void mp_counter_set(mp_counter_t c, uint64_t value)
{
    mpr_pe *pe = mpr_pe_self();
    if (!owned(pe, c))
        return;
    c->value = value;
    if (MPR_UNLIKELY(c->waiters || c == pe->blocked_on))
        counter_changed(pe, c);
}

mp_err mp_counter_wait(mp_counter_t c, uint64_t value, mp_fiber_t f)
{
    mpr_pe *pe = mpr_pe_self();
    if (!f)
        return mpr_misuse(MP_ERR_INVALID_ARG, "mp_counter_wait with a NULL fiber");
    if (MPR_UNLIKELY(!c || !pe || c->pe != pe->id))
        return not_owned(pe, c); /* the code agrees with the message */
    if (f->waiting_on)
        return mpr_misuse(MP_ERR_ALREADY_WAITING,
                          "fiber already waits on counter %p; a fiber may wait on one counter",
                          (void *)f->waiting_on);
    if (f->tag.state != MPR_FIBER_CREATED || f->tag.pe != pe->id)
        return mpr_misuse(MP_ERR_BAD_STATE, "only a created fiber of this PE can wait");
    if (c->value >= value) {
        mpr_enable(pe, f, mpr_cur_access(pe));
        return MP_SUCCESS;
    }
    f->waiting_on = c;
    f->wait_value = value;
    f->next = c->waiters;
    c->waiters = f;
    return MP_SUCCESS;
}

/* Runs on the counter's PE on behalf of the remote fiber that asked for it: it declares the
 * sender's category so the waiting fiber sees the real enabler. */
void mpr_counter_bump(void *p)
{
    mpr_bump_args *a = p;
    mpr_pe *pe = mpr_pe_self();
    mp_access_declare(mpr_cur_enabler(pe));
    mp_counter_add(a->c, a->n);
}

void mpr_counter_complete(void *p)
{
    mpr_bump_args *a = p;
    a->c->pending--; /* before the add: a fiber it enables may free the counter */
    mpr_counter_bump(p);
}

mp_err mp_counter_add_remote(int pe_id, mp_counter_t c, uint64_t n)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe)
        return mpr_misuse(MP_ERR_BAD_STATE, "counter update outside a running PE");
    if (!c) /* refused here, where the caller learns it, not on the PE it was sent to */
        return mpr_misuse(MP_ERR_INVALID_ARG, "NULL counter");
    if (pe_id == pe->id) {
        mp_err e = mpr_counter_check(pe, c); /* freed, or another PE's: the code too */
        if (e != MP_SUCCESS)
            return e;
        mp_counter_add(c, n);
        return MP_SUCCESS;
    }
    mpr_bump_args a = {c, n};
    return mpr_send_record(pe, pe_id, mpr_counter_bump, &a, sizeof a, MP_SCHED_URGENT, NULL, 0,
                           NULL);
}

mp_err mp_block_until(mp_counter_t c, uint64_t value)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe)
        return mpr_misuse(MP_ERR_BAD_STATE, "mp_block_until outside a running PE");
    if (pe->current)
        return mpr_misuse(MP_ERR_IN_FIBER,
                          "mp_block_until is a blocking call; inside a fiber wait with "
                          "mp_counter_wait and a continuation");
    if (MPR_UNLIKELY(!c || c->pe != pe->id))
        return not_owned(pe, c);
    pe->blocked_on = c;
    pe->blocked_value = value;
    mpr_schedule_loop(pe, c, value);
    if (c->value >= value) {
        pe->blocked_on = NULL;
        return MP_SUCCESS;
    }
    /* The run ended (quiescence or idle timeout) before the value was reached: keep the
     * record so that mp_main's hang report names this wait and the run fails. */
    return MP_ERR_BAD_STATE;
}
