/*
 * sched.c -- the top-level scheduler, the built-in schedulers (urgent, FIFO, preemptive),
 * custom deposit/select schedulers, idle accounting and latency accounting.
 *
 * Latency (Wen 1995, section 4.5.3): C_total is the PE's idle time so far and C_charged the
 * part already charged on the critical path.  A fiber remembers C_total when created; on
 * dispatch the difference is its observed latency, and if that is non-zero it also takes
 * C_total - C_charged as critical-path latency.  Both are charged, when the fiber ends, to
 * the (declared access category, enabling category) pair.
 */
#define _GNU_SOURCE
#include "mpr.h"
#include "observer.h"

#include <stdlib.h>
#include <time.h>

void mpr_sched_init(mpr_pe *pe)
{
    mpr_queue_init(&pe->queue[MP_SCHED_URGENT]);
    mpr_queue_init(&pe->queue[MP_SCHED_FIFO]);
    pe->nsched = MP_SCHED_PREEMPT + 1;
    pe->rr = 0;
    pe->until_flush = mpr_g.cfg.flush_fibers;
}

static bool run(mpr_pe *pe, mpr_fiber *f);

/* A fiber has run: its storage goes back to the free list, unless it handed the storage to a
 * continuation, which owns it from now on. */
static inline void fiber_done(mpr_pe *pe, mpr_fiber *f)
{
    if (MPR_UNLIKELY(f->tag.reused))
        f->tag.reused = 0;
    else
        mpr_fiber_release(pe, f);
}

/* An urgent fiber interrupts the FIFO batch being run (run_ready). */
static void push_urgent(mpr_pe *pe, mpr_fiber *f)
{
    mpr_queue_push(&pe->queue[MP_SCHED_URGENT], f);
    mpr_interrupt_set(pe);
}

void mpr_enable_slow(mpr_pe *pe, mpr_fiber *f)
{
    if (f->tag.sched == MP_SCHED_URGENT) {
        push_urgent(pe, f);
        return;
    }
    if (f->tag.sched == MP_SCHED_PREEMPT) {
        /* Runs at once in the enabling context; bounded so recursion cannot starve others. */
        if (pe->preempt_depth >= MPR_PREEMPT_DEPTH) {
            push_urgent(pe, f);
            return;
        }
        mpr_fiber *outer = pe->current;
        mpr_fiber_tag outer_tag = pe->spawn_tag;
        uint64_t outer_observed = pe->cur_observed, outer_critical = pe->cur_critical;
        pe->preempt_depth++;
        run(pe, f);
        pe->preempt_depth--;
        pe->current = outer;
        pe->spawn_tag = outer_tag;
        pe->cur_observed = outer_observed;
        pe->cur_critical = outer_critical;
        return;
    }
    /* A custom scheduler is registered per PE: the sender checked the id against its own, and
     * a PE that never registered it cannot run the fiber (nor tell the sender). */
    if (MPR_UNLIKELY(f->tag.sched >= pe->nsched))
        mpr_fatal("a fiber arrived for scheduler %u, which this PE never registered (custom "
                  "schedulers are per PE: register it with mp_sched_register on every PE that "
                  "receives fibers for it)",
                  (unsigned)f->tag.sched);
    mpr_custom_sched *s = &pe->custom[f->tag.sched - (MP_SCHED_PREEMPT + 1)];
    s->held++;
    s->ops.deposit(s->state, f);
}

/* Runs a preemptive fiber that arrived in a message straight from the message buffer, in the
 * receiving PE's context (Wen 1995, section 3.2.4): no fiber is allocated, enabled or
 * dispatched, and its arguments are read where they arrived.  What it may do is what a
 * preemptive fiber may do anyway -- no continuation, no blocking -- and a stand-in header is
 * pe->current meanwhile, so that the calls that check (mp_continue, mp_block_until) refuse as
 * for any preemptive fiber, and the watchdog names its function.  Accounting as for a fiber
 * that ran at once: a dispatch of its (access, enabler) pair with no latency, counted apart as
 * ThreadDirect (the rts record takes it out of the three thread counts, stats.c). */
void mpr_run_direct(mpr_pe *pe, mp_fiber_fn fn, const void *args, unsigned access)
{
    mpr_fiber *outer = pe->current;
    mpr_fiber_tag outer_tag = pe->spawn_tag;
    mpr_fiber *frame = (mpr_fiber *)pe->direct_frames[pe->preempt_depth];
    frame->fn = fn;
    frame->idle_at_create = pe->c_total;
    frame->tag.word =
        mpr_tag_make(pe, MP_SCHED_PREEMPT, access, access, MPR_FIBER_ENABLED, MPR_SLOT_TINY);
    frame->waiting_on = NULL;
    pe->preempt_depth++;
    pe->current = frame;
    pe->spawn_tag.word = pe->spawn_tag_unclassified;
    mpr_latency *row = pe->latency[access];
    fn((void *)args);
    row[mpr_cur_access(pe)].count++; /* also the rts ThreadDisp count, less ThreadDirect */
    pe->preempt_depth--;
    pe->current = outer;
    pe->spawn_tag = outer_tag;
}

/* The idle time not yet charged to any fiber, of which a fiber that observed `observed` takes
 * what passed while it waited: idle time from before the fiber existed is not on its path (Wen
 * 1995, Fig 4.14: critical-path latency is a part of the observed latency), and charged to it,
 * a fiber created after an idle period that ended with the arrival of other work would take
 * that period too (PE 1 of a counter array at MPROF_WORKERS=1: 0.1 ms observed, 3.5 ms
 * critical).  The part before it stays uncharged. */
static inline uint64_t critical_of(const mpr_pe *pe, uint64_t observed)
{
    uint64_t uncharged = pe->c_total - pe->c_charged;
    return uncharged < observed ? uncharged : observed;
}

/* The fiber about to run waited while the PE was idle: it takes that idle time as its observed
 * latency and, if not yet charged to another fiber, as critical-path latency. */
static MPR_COLD void latency_start(mpr_pe *pe, uint64_t observed)
{
    pe->cur_observed = observed;
    pe->cur_critical = critical_of(pe, observed);
    pe->c_charged = pe->c_total;
}

static MPR_COLD void latency_charge(mpr_pe *pe, mpr_latency *l)
{
    l->observed_ns += pe->cur_observed;
    l->critical_ns += pe->cur_critical;
}

/* Runs one fiber with everything: latency accounting when it waited through idle time, the
 * tracing and PAPI hooks.  pe->current is left pointing at the finished fiber; the dispatch
 * loop clears it once when it stops, not after every fiber.  The caller releases it. */
static __attribute__((noinline)) void run_full(mpr_pe *pe, mpr_fiber *f)
{
    bool waited = MPR_LATENCY && pe->c_total != f->idle_at_create;
    if (MPR_UNLIKELY(waited))
        latency_start(pe, pe->c_total - f->idle_at_create);
    unsigned enabler = f->tag.enabler; /* a continuation may overwrite it while f runs */
    pe->current = f;
    mpr_access_set(pe, MP_ACCESS_UNCLASSIFIED);
    mpr_latency *row = pe->latency[enabler]; /* indexed before the call: fewer steps after */

    MPR_OBSERVE(fiber_begin, pe);
    f->fn(f->args);
    MPR_OBSERVE(fiber_end, pe);

    mpr_latency *l = &row[mpr_cur_access(pe)];
    l->count++; /* also the rts ThreadDisp count (mpr_rts_fold) */
    if (MPR_UNLIKELY(waited))
        latency_charge(pe, l);
}

#if MPR_LATENCY
/* Runs a fiber that waited through idle time while no hooks are on (the PE's C_total moved
 * since the fiber was created): run_full's latency accounting without its tests and calls.
 * Many fibers take it when PEs share a worker thread, where every switch to another PE is
 * idle time for this one; the observed and critical latencies are kept in locals, so a
 * preemptive fiber that runs inside this one cannot overwrite them.  Inline in the dispatch
 * loop, whose registers are saved once: as a call of its own it saved five per fiber, 6 of
 * the 30 instructions per item that latency accounting cost PIPE's communication command on
 * one worker (benchmarks/overhead/overhead.py); the plain path is unchanged. */
static inline __attribute__((always_inline)) void run_waited(mpr_pe *pe, mpr_fiber *f)
{
    uint64_t c_total = pe->c_total;
    uint64_t observed = c_total - f->idle_at_create;
    uint64_t critical = critical_of(pe, observed);
    pe->c_charged = c_total;
    unsigned enabler = f->tag.enabler; /* a continuation may overwrite it while f runs */
    pe->current = f;
    pe->spawn_tag.word = pe->spawn_tag_unclassified;
    mpr_latency *row = pe->latency[enabler];
    f->fn(f->args);
    mpr_latency *l = &row[mpr_cur_access(pe)];
    l->count++;
    l->observed_ns += observed;
    l->critical_ns += critical;
}
#endif

/* Whether f may take the short path (run_plain): it did not wait through idle time and no
 * hooks are on, which one comparison of its creation stamp with the dispatch key tells. */
static inline bool plain_path(const mpr_pe *pe, const mpr_fiber *f)
{
#if MPR_LATENCY
    return f->idle_at_create == pe->dispatch_key;
#else
    return !pe->fiber_hooks;
#endif
}

/* The short path: what run_full does minus its tests.  `enabler` is read by the caller
 * before the call (a continuation may overwrite f's tag while f runs). */
static inline void run_plain(mpr_pe *pe, mpr_fiber *f, unsigned enabler)
{
    pe->current = f;
    pe->spawn_tag.word = pe->spawn_tag_unclassified; /* mpr_access_set(pe, 0), one load less */
    mpr_latency *row = pe->latency[enabler];
    f->fn(f->args);
    row[mpr_cur_access(pe)].count++; /* also the rts ThreadDisp count (mpr_rts_fold) */
}

/* Runs one fiber and does its accounting; the caller releases it (fiber_done), or, for the
 * frame of a carried record, keeps it for the next record.  Most fibers did not wait through
 * idle time and run with no hooks on: they take run_plain.  Of the others, those that waited
 * while no hooks are on take run_waited.  A carrier's stamp never matches the key either: with
 * `carriers`, such a fiber is tested for being one (returns false, not run); a carried
 * record's frame never is. */
static inline bool run_fiber(mpr_pe *pe, mpr_fiber *f, bool carriers)
{
    bool plain = plain_path(pe, f);
#if !MPR_LATENCY
    plain = plain && !(carriers && mpr_is_carrier(f)); /* no stamp to tell a carrier by */
#endif
    if (MPR_UNLIKELY(!plain)) {
        if (carriers && mpr_is_carrier(f))
            return false;
#if MPR_LATENCY
        if (!pe->fiber_hooks) { /* then dispatch_key is c_total: the fiber waited */
            run_waited(pe, f);
            return true;
        }
#endif
        run_full(pe, f);
        return true;
    }
    run_plain(pe, f, f->tag.enabler);
    return true;
}

/* Runs a queue entry that is a fiber, with its accounting, and releases it; returns false,
 * running nothing, for a carrier (run_carrier's). */
static inline bool run(mpr_pe *pe, mpr_fiber *f)
{
    if (MPR_UNLIKELY(!run_fiber(pe, f, true)))
        return false;
    fiber_done(pe, f);
    return true;
}

/* The fibers a queue entry stands for: 1, or a carrier's records not yet run (the PE's own
 * thread only: the buffer is read). */
static uint64_t entry_fibers(const mpr_fiber *f)
{
    if (!mpr_is_carrier(f))
        return 1;
    const mpr_carrier_args *ca = (const mpr_carrier_args *)f->args;
    uint64_t n = 0;
    for (uint32_t off = ca->off; off < ca->end; n++)
        off += ((const mpr_record *)(ca->buf->data + off))->total;
    return n;
}

/* The fibers a queue holds, and in `*carried` how many more that makes than its slots. */
static uint64_t queue_fibers(const mpr_queue *q, uint64_t *carried)
{
    uint64_t n = 0;
    for (const mpr_fiber *f = q->head; f; f = f->next) {
        uint64_t k = entry_fibers(f);
        n += k;
        *carried += k - 1;
    }
    return n;
}

/* The fibers the PE has dispatched: the sum of the latency table's counts.  Also read by a
 * PAPI reader's thread (the rts record's derive function): one relaxed load per cell. */
uint64_t mpr_dispatched(const mpr_pe *pe)
{
    uint64_t dispatched = 0;
    int n = mpr_access_count(); /* categories never registered have no dispatches */
    for (int e = 0; e < n; e++)
        for (int a = 0; a < n; a++)
            dispatched += __atomic_load_n(&pe->latency[e][a].count, __ATOMIC_RELAXED);
    return dispatched;
}

/* Every allocated fiber (continuations included) is either dispatched once or still holds its
 * storage at the end, so the exact thread counts follow from the dispatch counts of the
 * latency table, the free lists and the queues, and no hot path spends an add on them:
 *   ThreadDisp   = dispatches
 *   ThreadAlloc  = dispatches + slots in use (created, waiting or enabled)
 *   ThreadEnable = dispatches + slots enabled and not yet dispatched
 * The dispatches are what the rts record derives (stats.c), live; at the end of the PE this
 * stores the rest, which only the PE can count (its lists), and the fold adds them up. */
void mpr_rts_fold(mpr_pe *pe)
{
    /* records still in queued carriers (a run that ended early) are allocated and enabled
     * threads, each, where their carrier holds one slot */
    uint64_t carried = 0;
    uint64_t enabled = queue_fibers(&pe->queue[MP_SCHED_URGENT], &carried) +
                       queue_fibers(&pe->queue[MP_SCHED_FIFO], &carried);
    uint64_t live = mpr_fiber_live(pe) + carried;
    for (int k = 0; k < pe->nsched - (MP_SCHED_PREEMPT + 1); k++)
        enabled += pe->custom[k].held;
    RTS_SET(&pe->rts, ThreadAlloc, live);
    RTS_SET(&pe->rts, ThreadEnable, enabled);
}

static mpr_fiber *select_round_robin(mpr_pe *pe)
{
    pe->current = NULL;                    /* custom select() is user code, outside any fiber */
    int n = pe->nsched - MP_SCHED_PREEMPT; /* FIFO plus the custom schedulers */
    for (int i = 0; i < n; i++) {
        int k = pe->rr;
        pe->rr = (pe->rr + 1) % n;
        mpr_fiber *f;
        if (k == 0) {
            f = mpr_queue_pop(&pe->queue[MP_SCHED_FIFO]);
        } else {
            mpr_custom_sched *s = &pe->custom[k - 1];
            if (!s->held)
                continue;
            f = s->ops.select(s->state);
            if (f) {
                /* a fiber the scheduler was not given would run twice, or not at all */
                if (MPR_UNLIKELY(f->tag.state != MPR_FIBER_ENABLED ||
                                 f->tag.sched != (unsigned)(k + MP_SCHED_PREEMPT)))
                    mpr_fatal("scheduler %s (id %d): select returned a fiber it was not given "
                              "(state %d, scheduler %u): select returns a fiber deposit handed "
                              "it, once",
                              s->ops.name ? s->ops.name : "(unnamed)", k + MP_SCHED_PREEMPT,
                              (int)f->tag.state, (unsigned)f->tag.sched);
                s->held--;
            }
        }
        if (f)
            return f;
    }
    return NULL;
}

/* Communication progress every K fibers (Wen 1995, section 3.3.3): sends the aggregation
 * buffers that are due (comm.c, mpr_flush_due) and polls. */
static MPR_COLD void periodic(mpr_pe *pe)
{
    pe->current = NULL;
    pe->until_flush = mpr_g.cfg.flush_fibers;
    pe->periods++;
    mpr_flush_due(pe);
    mpr_poll(pe);
    if (MPR_UNLIKELY(pe->bytes_out > pe->bytes_high))
        mpr_flow_wait(pe);
    /* a PE sharing its thread lets the others run now and then, even when busy: when, the
     * backend says (shm/mux.c) */
    if (MPR_UNLIKELY(pe->shared_thread) && mpr_machine_period(pe))
        mpr_yield_busy(pe);
}

/* A busy PE that shares its thread hands it to the other PEs and returns when it is resumed;
 * the watchdog and SIGQUIT dump see it switched out meanwhile. */
void mpr_yield_busy(mpr_pe *pe)
{
    pe->where = MPR_PE_SWITCHED_OUT;
    mpr_machine_yield(pe);
    pe->where = MPR_PE_RUNNING;
}

void mpr_carrier_fn(void *args)
{
    (void)args;
    mpr_fatal("a carrier of arrived records was called as a fiber (the runtime's own bug)");
}

/* run_carrier's return when an interrupt stopped it before its last record. */
#define CARRIER_STOPPED 0x80000000u

/* A frame for the records of carrier c of at least `size` bytes of arguments, in place of
 * `old` (released; NULL: none yet): the header of the fiber a record would have become, the
 * records' own fields (function, categories) written per record. */
static MPR_COLD mpr_fiber *carrier_frame(mpr_pe *pe, const mpr_fiber *c, mpr_fiber *old,
                                         size_t size)
{
    mpr_slot_class cls = mpr_slot_class_of(size);
    if (old) {
        if (old->tag.slot >= cls)
            return old;
        mpr_fiber_release(pe, old);
    }
    mpr_fiber *f = mpr_slot_get(pe, cls);
    f->idle_at_create = c->wait_value; /* the poll's stamp: when the records arrived */
    f->tag.word = mpr_tag_make(pe, MP_SCHED_FIFO, 0, 0, MPR_FIBER_ENABLED, cls);
    return f;
}

/* A carried record that takes run_fiber's other paths (it waited through idle time, or hooks
 * are on), out of the carrier's loop. */
static MPR_COLD void run_carried_slow(mpr_pe *pe, mpr_fiber *f) { run_fiber(pe, f, false); }

/* Runs the records of carrier c (mpr_carrier.h) in order, each in a frame: a fiber slot with
 * the record's arguments and the header of the fiber it would have become (FIFO, its sender's
 * category as creator and enabler, the poll's creation stamp), run and accounted as that
 * fiber (run_fiber's plain path inline, the others out of line).  A record that hands the
 * frame to a continuation (mp_continue) leaves it to it, and the next record takes another.
 * Between two records it does what the batch loop does between two fibers: counts `left`
 * down to the communication period, and stops on an interrupt.  Returns the countdown left,
 * with CARRIER_STOPPED when it stopped early: then c stays enabled with its range advanced,
 * for the caller to run first once the interrupt is served.  The last record done, c is
 * released and the buffer goes back if the poll is done with it. */
static MPR_NOIPA unsigned run_carrier(mpr_pe *pe, mpr_fiber *c, unsigned left)
{
    mpr_carrier_args *ca = (mpr_carrier_args *)c->args;
    const unsigned char *p = ca->buf->data + ca->off, *end = ca->buf->data + ca->end;
    mpr_fiber *frame = NULL;
    size_t room = 0; /* 1 + the argument bytes the frame holds; 0: no frame (one compare) */
    while (p < end) {
        const mpr_record *r = (const mpr_record *)p;
        p += r->total;
        size_t size = r->args_size;
        const unsigned char *args = (const unsigned char *)(r + 1);
        /* a frame of another class only when a record needs more room: arguments of every
         * size cost a 16-byte move per 16 bytes here, not a call to carrier_frame per record */
        if (MPR_UNLIKELY(size >= room)) {
            frame = carrier_frame(pe, c, frame, size);
            room = 1 + mpr_slot_args((mpr_slot_class)frame->tag.slot);
        }
        RTS_INC(&pe->rts, ThreadContext, size); /* counted here, not by the poll: size at hand */
        mpr_args_copy_padded(frame->args, args, size);
        unsigned access = r->access;
        frame->fn = mpr_record_fn(r->fn_src);
        frame->tag.enabler = (uint8_t)access; /* the sender's category is both */
        frame->tag.creator = (uint8_t)access;
        if (MPR_LIKELY(plain_path(pe, frame)))
            run_plain(pe, frame, access);
        else
            run_carried_slow(pe, frame);
        if (MPR_UNLIKELY(frame->tag.reused)) { /* the continuation owns the frame now */
            frame->tag.reused = 0;
            frame = NULL;
            room = 0;
        }
        if (MPR_UNLIKELY(--left == 0)) {
            ca->off = (uint32_t)(p - ca->buf->data);
            periodic(pe);
            left = pe->until_flush;
        }
        if (MPR_UNLIKELY(mpr_interrupted(pe)) && p < end) {
            if (frame)
                mpr_fiber_release(pe, frame);
            ca->off = (uint32_t)(p - ca->buf->data);
            return left | CARRIER_STOPPED;
        }
    }
    if (frame)
        mpr_fiber_release(pe, frame);
    mpr_carrier_done(pe, ca->buf);
    mpr_fiber_release(pe, c);
    return left;
}

/* Runs one queue entry outside the batch loop (urgent fibers, custom schedulers present). */
static inline void dispatch(mpr_pe *pe, mpr_fiber *f)
{
    if (MPR_UNLIKELY(!run(pe, f))) {
        unsigned left = run_carrier(pe, f, pe->until_flush);
        pe->until_flush = left & ~CARRIER_STOPPED;
        if (left & CARRIER_STOPPED)
            mpr_queue_push_front(&pe->queue[MP_SCHED_FIFO], f);
        return;
    }
    if (MPR_UNLIKELY(--pe->until_flush == 0))
        periodic(pe);
}

/* mpr_schedule_loop's `until` when it has none: never reaches UINT64_MAX, and the dispatch
 * loop compares without testing for NULL first. */
static const mpr_counter never_reached;

static inline bool reached(const mpr_counter *until, uint64_t value)
{
    return until->value >= value;
}

/* Whether no fiber waits to run: the queues are empty and no custom scheduler holds one. */
static inline bool out_of_work(const mpr_pe *pe)
{
    if (pe->queue[MP_SCHED_URGENT].head || pe->queue[MP_SCHED_FIFO].head)
        return false;
    for (int k = 0; k < pe->nsched - (MP_SCHED_PREEMPT + 1); k++)
        if (pe->custom[k].held)
            return false;
    return true;
}

bool mpr_sched_idle(const mpr_pe *pe) { return out_of_work(pe); }

/* Runs fibers until none is runnable (returns false) or `until` reaches `value` (true).
 *
 * Without custom schedulers the FIFO queue is taken whole and run from a local list.  Walking
 * that list is a load per fiber; popping the queue would also store its head each time,
 * putting a store-to-load round trip on the path from one fiber to the next.  Fibers enabled
 * meanwhile queue behind the batch, which is the FIFO order anyway.  Between any two fibers
 * the batch tests one flag, pe->interrupt, which enabling an urgent fiber sets, and so does a
 * change that brings mp_block_until's counter to its target (counter.c); what is left of the
 * batch then goes back to the front of the queue, and the loop looks at `until` and the urgent
 * queue.  The flush countdown is a local for the batch: counted down in memory, it put
 * another store-to-load round trip on every fiber's path (together with testing the urgent
 * queue and `until` after each fiber, about 6 % of a spawn and dispatch; docs/runtime.md). */
static bool run_ready(mpr_pe *pe, const mpr_counter *until, uint64_t value)
{
    mpr_queue *urgent = &pe->queue[MP_SCHED_URGENT], *fifo = &pe->queue[MP_SCHED_FIFO];
    for (;;) {
        if (MPR_UNLIKELY(mpr_interrupted(pe))) {
            /* Cleared with an exchange, which orders the clearing before the poll: an urgent
             * message whose sender sets the flag after this finds it set again, one that
             * set it before is in the inbox.  Polled for every interrupt, local ones too: an
             * empty poll is a load, and an urgent message is then served after the fiber
             * that was running when it arrived, not after the rest of a communication period.
             * The urgent records this PE wrote leave now, at the end of the fiber that wrote
             * them (comm.c, "message service").  A PE with nothing left to run has run out of
             * work, and what it wrote goes before the poll brings more, as when the schedule
             * loop finds nothing to run: polled first, an answer that arrives while the PE
             * finishes its last fiber made that fiber's records wait for the work the answer
             * enables, which in a windowed stream merged every two windows' records into one
             * message and left the receiver idle in between (docs/runtime.md, "The flush
             * policy"). */
            atomic_exchange_explicit(&pe->interrupt, 0, memory_order_acquire);
            pe->current = NULL;
            if (out_of_work(pe))
                mpr_flush_all(pe);
            mpr_flush_urgent(pe);
            mpr_poll(pe);
        }
        if (reached(until, value))
            return true;
        mpr_fiber *f = mpr_queue_pop(urgent);
        if (f) {
            dispatch(pe, f);
            continue;
        }
        if (MPR_UNLIKELY(pe->nsched != MP_SCHED_PREEMPT + 1)) {
            if (!(f = select_round_robin(pe)))
                return false;
            dispatch(pe, f);
            continue;
        }
        mpr_fiber *batch = fifo->head, **batch_tailp = fifo->tailp;
        if (!batch)
            return false;
        mpr_queue_init(fifo);
        unsigned left = pe->until_flush;
        do {
            f = batch;
            batch = f->next; /* before f runs: its link is reused when it is released */
            if (MPR_LIKELY(run(pe, f))) {
                if (MPR_UNLIKELY(--left == 0)) {
                    periodic(pe);
                    left = pe->until_flush;
                }
            } else {
                left = run_carrier(pe, f, left);
                if (left & CARRIER_STOPPED) { /* f, still linked to the rest, goes first */
                    left &= ~CARRIER_STOPPED;
                    batch = f;
                }
            }
            if (!batch && (batch = fifo->head)) { /* the next batch (a continuation, say) */
                batch_tailp = fifo->tailp;
                mpr_queue_init(fifo);
            }
        } while (batch && !mpr_interrupted(pe));
        pe->until_flush = left;
        if (batch) {
            *batch_tailp = fifo->head;
            if (!fifo->head)
                fifo->tailp = batch_tailp;
            fifo->head = batch;
        }
    }
}

uint64_t mpr_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t mpr_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The idle loop reads the monotonic clock every IDLE_GAP_SPINS spins; a gap of more than
 * IDLE_GAP_NS between two readings is time the thread did not run (see idle()).  A spin (a
 * look at the inbox and a pause) takes about 0.1 us, so readings come every few
 * microseconds on a running thread, and an OS time slice given to another thread is a
 * millisecond or more. */
#define IDLE_GAP_SPINS 16
#define IDLE_GAP_NS 100000

static inline void mpr_idle_epoch_next(mpr_pe *pe)
{
    uint32_t e = atomic_load_explicit(&pe->idle_epoch, memory_order_relaxed);
    atomic_store_explicit(&pe->idle_epoch, e + 1, memory_order_relaxed);
}

/* No fiber is runnable: spin a little, then sleep until a message arrives.  Returns false
 * when the run is over (quiescence or hang).
 *
 * The idle period's CPU time (IdleCpuNs) is its wall time less the time its thread did not run:
 * the sleeps, timed around them, and the spins the OS preempted, seen as gaps between readings
 * of the monotonic clock (a vDSO call, no system call).  The thread's CPU clock is a system
 * call (about 1 us on a VM, more in a sandbox): read at the end of every period of more than a
 * few hundred spins, as it was, it came between the arrival that ended the period and the
 * poll that serves it, on the path of every answer to a PE that had waited a little.  A
 * preemption shorter than IDLE_GAP_NS goes unseen and counts as CPU time, and a gap that is
 * seen also drops the few spins around it; at the PE's end IdleCpuNs is capped at its cpu_s.
 * A PE that shares its thread (machine.h shares_thread) does not spin: "sleeping" gives the
 * thread to the others (shm: switches to the worker, which spins for all its PEs), and the
 * time switched out is idle but not this PE's CPU time. */
static bool idle(mpr_pe *pe)
{
    uint64_t t0 = mpr_mono_ns(), t_seen = t0, not_running = 0;
    bool more = true;
    const bool shared = pe->shared_thread;
    pe->where = MPR_PE_IDLE;
    pe->sample_at = MPR_AT_IDLE;
    mpr_idle_epoch_next(pe); /* odd: senders flush to it (comm.c) */
    MPR_OBSERVE_HOT(idle_begin, pe);
    if (mpr_machine_idle_enter(pe)) {
        more = false;
    } else {
        unsigned spins = 0, spin = shared ? 0 : mpr_g.cfg.spin;
        double since = mp_wtime();
        for (;;) {
            if (mpr_run_over()) {
                more = false;
                break;
            }
            if (mpr_machine_pending(pe)) {
                mpr_machine_idle_leave(pe);
                break;
            }
            RTS_INC(&pe->rts, IdleCycle, 1);
            spins++;
            if (spins < spin) {
                if (spins % IDLE_GAP_SPINS == 0) {
                    uint64_t t = mpr_mono_ns();
                    if (t - t_seen > IDLE_GAP_NS)
                        not_running += t - t_seen;
                    t_seen = t;
                }
                mpr_cpu_relax();
                continue;
            }
            uint64_t w0 = mpr_mono_ns();
            mpr_sample_pause(pe->sampler); /* not woken every sample period */
            mpr_machine_sleep(pe, 0.05);
            mpr_sample_resume(pe->sampler);
            t_seen = mpr_mono_ns();
            not_running += t_seen - w0;
            if (mpr_g.cfg.idle_timeout_s > 0 && mp_wtime() - since > mpr_g.cfg.idle_timeout_s &&
                mpr_machine_all_idle()) {
                if (mpr_run_end(MPR_RUN_IDLE_TIMEOUT))
                    mpr_machine_wake_all();
            }
        }
    }
    MPR_OBSERVE_HOT(idle_end, pe);
    mpr_idle_epoch_next(pe);
    pe->where = MPR_PE_RUNNING;
    pe->sample_at = MPR_AT_SCHED;
    uint64_t t_end = mpr_mono_ns(), idle_ns = t_end - t0;
    if (t_end - t_seen > IDLE_GAP_NS) /* preempted since the last reading */
        not_running += t_end - t_seen;
    mpr_idle_add(pe, idle_ns);                /* also the rts IdleNs (stats.c) */
    pe->idle_cpu_ns += idle_ns - not_running; /* also the rts IdleCpuNs (stats.c) */
    return more;
}

void mpr_schedule_loop(mpr_pe *pe, mpr_counter *until_counter, uint64_t value)
{
    const mpr_counter *until = until_counter;
    if (!until) {
        until = &never_reached;
        value = UINT64_MAX;
    }
    pe->sample_at = MPR_AT_SCHED; /* the loop is entered from pe_main's code, never nested */
    for (;;) {
        bool done = run_ready(pe, until, value);
        pe->current = NULL;
        if (done)
            break;
        mpr_flush_all(pe);
        if (mpr_poll(pe))
            continue;
        if (!idle(pe))
            break;
        mpr_poll(pe);
    }
    pe->sample_at = MPR_AT_USER;
}

int mp_sched_known(mp_sched_t id)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe) /* before mp_main no PE has registered one */
        return id >= MP_SCHED_URGENT && id <= MP_SCHED_PREEMPT;
    return id >= 0 && id < pe->nsched;
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
    RTS_INC(&pe->rts, Sched, 1);
    return MP_SUCCESS;
}
