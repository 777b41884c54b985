/*
 * sched.c -- the top-level scheduler, the built-in schedulers (urgent, FIFO, preemptive),
 * custom deposit/select schedulers, idle accounting and latency accounting.
 *
 * Latency (seed 003 section 4.5.3): C_total is the PE's idle time so far and C_charged the
 * part already charged on the critical path.  A fiber remembers C_total when created; on
 * dispatch the difference is its observed latency, and if that is non-zero it also takes
 * C_total - C_charged as critical-path latency.  Both are charged, when the fiber ends, to
 * the (declared access category, enabling category) pair.
 */
#define _GNU_SOURCE
#include "mpr.h"

#include <time.h>

static inline void queue_push(mpr_queue *q, mpr_fiber *f)
{
    f->next = NULL;
    if (q->tail)
        q->tail->next = f;
    else
        q->head = f;
    q->tail = f;
}

static inline mpr_fiber *queue_pop(mpr_queue *q)
{
    mpr_fiber *f = q->head;
    if (f) {
        q->head = f->next;
        if (!q->head)
            q->tail = NULL;
    }
    return f;
}

void mpr_sched_init(mpr_pe *pe)
{
    pe->nsched = MP_SCHED_PREEMPT + 1;
    pe->rr = 0;
    pe->until_flush = mpr_g.cfg.flush_fibers;
}

static void run(mpr_pe *pe, mpr_fiber *f);

void mpr_enable(mpr_pe *pe, mpr_fiber *f, uint16_t enabler)
{
    f->state = MPR_FIBER_ENABLED;
    f->enabler = enabler;
    RTS_INC(pe->rts, ThreadEnable, 1);
    switch (f->sched) {
    case MP_SCHED_FIFO: queue_push(&pe->fifo, f); break;
    case MP_SCHED_URGENT: queue_push(&pe->urgent, f); break;
    case MP_SCHED_PREEMPT:
        /* Runs at once in the enabling context; bounded so recursion cannot starve others. */
        if (pe->preempt_depth < MPR_PREEMPT_DEPTH) {
            pe->preempt_depth++;
            run(pe, f);
            pe->preempt_depth--;
        } else {
            queue_push(&pe->urgent, f);
        }
        break;
    default: {
        mpr_custom_sched *s = &pe->custom[f->sched - (MP_SCHED_PREEMPT + 1)];
        s->held++;
        s->ops.deposit(s->state, f);
    }
    }
}

static inline void charge(mpr_pe *pe, uint16_t enabler, uint64_t observed, uint64_t critical)
{
    mpr_latency *l = &pe->latency[pe->cur_access][enabler];
    l->count++;
    l->observed_ns += observed;
    l->critical_ns += critical;
}

static void run(mpr_pe *pe, mpr_fiber *f)
{
    /* Save the context of a fiber this one preempts (nothing, for a normal dispatch). */
    mpr_fiber *outer = pe->current;
    uint16_t outer_access = pe->cur_access, outer_enabler = pe->cur_enabler;

    uint64_t observed = pe->c_total - f->idle_at_create, critical = 0;
    if (observed) {
        critical = pe->c_total - pe->c_charged;
        pe->c_charged = pe->c_total;
    }
    uint16_t enabler = f->enabler;
    pe->current = f;
    pe->cur_access = MP_ACCESS_UNCLASSIFIED;
    pe->cur_enabler = enabler;
    f->state = MPR_FIBER_EXECUTING;
    RTS_INC(pe->rts, ThreadDisp, 1);

    f->fn(f->args);

    charge(pe, enabler, observed, critical);
    if (f->reused)
        f->reused = 0; /* the storage now belongs to the continuation */
    else
        mpr_fiber_release(pe, f);
    pe->current = outer;
    pe->cur_access = outer_access;
    pe->cur_enabler = outer_enabler;
}

static mpr_fiber *select_round_robin(mpr_pe *pe)
{
    int n = pe->nsched - MP_SCHED_PREEMPT; /* FIFO plus the custom schedulers */
    for (int i = 0; i < n; i++) {
        int k = pe->rr;
        pe->rr = (pe->rr + 1) % n;
        mpr_fiber *f;
        if (k == 0) {
            f = queue_pop(&pe->fifo);
        } else {
            mpr_custom_sched *s = &pe->custom[k - 1];
            if (!s->held)
                continue;
            f = s->ops.select(s->state);
            if (f)
                s->held--;
        }
        if (f)
            return f;
    }
    return NULL;
}

/* Communication progress: forced flush and poll every K fibers (seed 003 section 3.3.3). */
static MPR_COLD void periodic(mpr_pe *pe)
{
    pe->until_flush = mpr_g.cfg.flush_fibers;
    mpr_flush_all(pe);
    mpr_poll(pe);
}

bool mpr_dispatch_one(mpr_pe *pe)
{
    mpr_fiber *f = queue_pop(&pe->urgent);
    if (!f) {
        if (MPR_LIKELY(pe->nsched == MP_SCHED_PREEMPT + 1))
            f = queue_pop(&pe->fifo);
        else
            f = select_round_robin(pe);
        if (!f)
            return false;
    }
    run(pe, f);
    if (MPR_UNLIKELY(--pe->until_flush == 0))
        periodic(pe);
    return true;
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* No fiber is runnable: spin a little, then sleep until a message arrives.  Returns false
 * when the run is over (quiescence or hang). */
static bool idle(mpr_pe *pe)
{
    uint64_t t0 = now_ns();
    bool more = true;
    if (mpr_machine_idle_enter(pe)) {
        more = false;
    } else {
        unsigned spins = 0;
        double since = mp_wtime();
        for (;;) {
            if (atomic_load_explicit(&mpr_g.done, memory_order_acquire)) {
                more = false;
                break;
            }
            if (mpr_machine_pending(pe)) {
                mpr_machine_idle_leave(pe);
                break;
            }
            RTS_INC(pe->rts, IdleCycle, 1);
            if (++spins < mpr_g.cfg.spin) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
                continue;
            }
            mpr_machine_sleep(pe, 0.05);
            if (mpr_g.cfg.idle_timeout_s > 0 && mp_wtime() - since > mpr_g.cfg.idle_timeout_s &&
                (atomic_load(&mpr_g.activity) >> 32) == 0) {
                int expected = 0;
                atomic_compare_exchange_strong(&mpr_g.hang, &expected, 2);
                atomic_store(&mpr_g.done, 1);
                mpr_machine_wake_all();
            }
        }
    }
    uint64_t idle_ns = now_ns() - t0;
    pe->c_total += idle_ns;
    RTS_INC(pe->rts, IdleNs, idle_ns);
    return more;
}

void mpr_schedule_loop(mpr_pe *pe, mpr_counter *until, uint64_t value)
{
    for (;;) {
        if (until && until->value >= value)
            return;
        if (mpr_dispatch_one(pe))
            continue;
        mpr_flush_all(pe);
        if (mpr_poll(pe))
            continue;
        if (!idle(pe))
            return;
        mpr_poll(pe);
    }
}

mp_err mp_sched_register(const mp_sched_ops *ops, void *state, mp_sched_t *id)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe)
        return mpr_misuse(MP_ERR_BAD_STATE, "scheduler registered outside a running PE");
    if (!ops || !ops->deposit || !ops->select || !id)
        return mpr_misuse(MP_ERR_INVALID_ARG, "a custom scheduler needs deposit and select");
    int k = pe->nsched - (MP_SCHED_PREEMPT + 1);
    if (k >= MPR_MAX_SCHED)
        return mpr_misuse(MP_ERR_LIMIT, "more than %d custom schedulers", MPR_MAX_SCHED);
    pe->custom[k].ops = *ops;
    pe->custom[k].state = state;
    pe->custom[k].held = 0;
    *id = pe->nsched++;
    RTS_INC(pe->rts, Sched, 1);
    return MP_SUCCESS;
}
