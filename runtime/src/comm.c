/*
 * comm.c -- remote fiber invocation and the message layer (Wen 1995, section 3.3.3).
 *
 * Every remote operation is a record: a fiber to create on the destination, optionally
 * preceded by a payload copied to a destination address.  Records are classed by size:
 *   small  (arguments <= small_bytes, no payload; 0 disables): sent at once on their own;
 *   medium (record <= agg_bytes): appended to the destination's aggregation buffer, which is
 *          sent by the flush policy below;
 *   large  (anything bigger): sent at once.
 *
 * The flush policy.  A buffer per destination is sent
 *   - when the next record does not fit (full);
 *   - when the PE runs out of work, and on mp_flush();
 *   - at a communication period (every K = MPROF_FLUSH_FIBERS fibers) when it is at least half
 *     full, when its destination is idle (it waits for work: pe->idle_epoch) and was last fed
 *     by this PE MPROF_FEED_US ago or more, or when the buffer has been open for
 *     MPROF_FLUSH_DELAY_US (mpr_flush_due);
 *   - when the fiber that wrote an urgent record into it ends, if the record's destination is
 *     idle (mpr_flush_urgent).
 * The buffers that the PEs of one worker share (shm/group.h) follow the same rules at the end
 * of each round of the worker over its PEs, all of them going when a member ran out of work.
 * Each buffer has its own age, so aggregation does not fall with the number of destinations:
 * sending every buffer every K fibers, as the dissertation's runtime did, left a PE that
 * talks to 15 others about one record per buffer.  A buffer that fills by half within a period
 * (a PE that talks to few others) goes every period, as before: it has paid for its message
 * within a factor of two, and its receiver may be waiting on the records without being idle
 * yet (requests whose replies it needs; holding them back until the buffer filled or the
 * receiver went idle made Tripuzzle's two PEs take turns idling, twice as slow).  Records for
 * a PE that waits go within a period (MPROF_FEED_US, 20 us, after the last records sent to it for
 * that reason);
 * a buffer that fills slowly waits for the delay.  On MPI
 * the other ranks' PEs are not in this process: a PE that has waited for a moment tells the
 * ranks it exchanged messages with since it last told them (mpi/notice.c), and they treat it
 * as waiting until they send it something; buffers holding an urgent record for such a PE go
 * every period (starving).
 *
 * Message service.  Requests that another PE waits for (steals, barrier phases, bulk reads
 * and their replies) are invoked on the URGENT scheduler.  The arrival of a message holding
 * such a record sets the receiver's interrupt flag, which the receiver's dispatch loop tests
 * between fibers (and a carrier between its records, mpr_carrier.h): it polls then, so a request
 * waits for the fiber running when it arrived, not for up to K of them whatever they cost.  An
 * urgent record for a PE that is idle leaves at the end of the fiber that wrote it (with what else
 * its buffer holds, so a burst in one fiber still travels together); one for a busy PE goes by the
 * flush policy above, since URGENT also carries frequent bookkeeping that must merely run first (a
 * snapshot's completions: sent at once, they made a message of every one or two of Tripuzzle's
 * records).
 * Routing.  A PE with a thread of its own keeps at most MPR_AGG_OPEN_MAX (64) buffers open, so
 * that its aggregation memory is bounded; past 65 such PEs a PE that talks to all the others
 * round-robin would evict every buffer after a record (1.0 records per message at 96 and 128
 * PEs).  There, as in Conveyors' two-hop routing, the PEs form a grid of about sqrt(P) columns
 * and a record for a PE in another row and column goes first to the PE in the sender's row and
 * the destination's column, which forwards it down its column: a PE then sends to the PEs of
 * its row and of its column only, about 2 sqrt(P) of them, and every buffer fills.  A PE of
 * the last, short row whose destination's column has no PE in its row goes through the row
 * above.  All of one sender's records to one destination take the same path, whatever their
 * class, and a forwarder sends them on in the order they came, so invocations still arrive in
 * the order they were made.  A record on its first hop carries its destination in a 16-byte
 * route header (mpr_record_route); the forwarder writes it on as its sender would have, with
 * the sender's id and category, from its poll, without a fiber (RecordFwd counts them).  An
 * urgent record for a PE that waits makes its first hop go when the writing fiber ends, as
 * one sent straight would.  PEs that share a worker (shm) aggregate per worker and destination
 * without a bound on open buffers, and do not route.
 *
 * Buffers are pooled per PE (small, aggregation-sized, and large ones by power-of-two class up
 * to MPR_LARGE_MAX_LOG2); the receiver gives a pooled buffer back to its sender once its
 * records have become fibers or run from it (carriers: mpr_carrier.h; a flow-control
 * message).  Only messages bigger than the
 * largest class get a buffer of their own, which the receiver frees.  Small and aggregation
 * buffers, the ones a busy PE runs out of, are cut from slabs of their own (buf_carve).
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#include "mpr.h"
#include "observer.h"

#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SMALL_CAP 256
#ifndef MPR_POLL_BUDGET
#define MPR_POLL_BUDGET 64 /* fibers one poll creates at most (see mpr_poll) */
#endif
#define MAX_MESSAGE ((size_t)64 << 20) /* the largest payload (mp_max_message) */

static inline size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

_Static_assert(sizeof(mpr_record) == 16 && sizeof(mpr_record_payload) == 16,
               "records keep arguments and payloads 16-byte aligned");
_Static_assert(sizeof(mpr_record_route) == 16, "a route keeps the record's body 16-byte aligned");
_Static_assert(MP_FIBER_ARGS_MAX <= UINT16_MAX && MPR_MAX_ACCESS <= 256 &&
                   MP_SCHED_PREEMPT + 1 + MPR_MAX_SCHED <= MPR_RECORD_ROUTE,
               "record fields are wide enough");

/* The caller has checked payload_size <= MAX_MESSAGE, so this cannot wrap. */
static inline size_t record_size(size_t args_size, size_t payload_size)
{
    return sizeof(mpr_record) + align16(args_size) +
           (payload_size ? sizeof(mpr_record_payload) + align16(payload_size) : 0);
}

/* small_bytes = 0 turns fast messages off (rather than making zero-byte invocations fast):
 * pe->small_below is small_bytes + 1, or 0 when they are off. */
static inline bool is_small(const mpr_pe *pe, size_t args_size, size_t payload_size)
{
    return !payload_size && args_size < pe->small_below;
}

/* Copies the n <= MP_FIBER_ARGS_MAX bytes of an invocation's arguments with fixed-size moves
 * (the last one overlapping) instead of a memcpy call: the fast paths stay a few dozen
 * instructions for a few words, and cost the same per 16 bytes at any size, where a library
 * copy's cost steps at its own size thresholds. */
static inline void copy_args(unsigned char *dst, const unsigned char *src, size_t n)
{
    if (n >= 16 && n <= 32) { /* the common sizes: two moves, no loop */
        __builtin_memcpy(dst, src, 16);
        __builtin_memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n > 32) {
        size_t i = 0;
        for (; i + 16 <= n; i += 16)
            __builtin_memcpy(dst + i, src + i, 16);
        if (i < n)
            __builtin_memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        __builtin_memcpy(dst, src, 8);
        __builtin_memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        __builtin_memcpy(dst, src, 4);
        __builtin_memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    }
}

/* Function pointers travel as offsets from a symbol of the runtime, which stays valid across
 * processes of the same executable even with address-space randomisation.  The difference of
 * two user-space addresses fits in 48 bits (sign-extended), which leaves a record's low 16
 * bits for its sender (mpr_record). */
uintptr_t mpr_fn_encode(mp_fiber_fn fn) { return (uintptr_t)fn - (uintptr_t)&mpr_fn_encode; }

static inline uint64_t fn_src_make(mp_fiber_fn fn, int src)
{
    return (uint64_t)mpr_fn_encode(fn) << 16 | (uint16_t)src;
}
static inline int src_of(uint64_t fn_src) { return (int)(fn_src & 0xffff); }

size_t mp_max_message(void) { return MAX_MESSAGE; }

void mpr_comm_init(mpr_pe *pe)
{
    mpr_agg *shared = mpr_machine_group_agg(pe);
    pe->agg_grouped = shared != NULL;
    if (shared) {
        pe->agg = shared; /* agg_open and agg_listed stay unused */
    } else {
        pe->agg = calloc((size_t)pe->npes, sizeof *pe->agg);
        pe->agg_open = malloc(MPR_AGG_OPEN_MAX * sizeof *pe->agg_open);
        pe->agg_listed = calloc((size_t)pe->npes, 1);
        if (!pe->agg || !pe->agg_open || !pe->agg_listed)
            mpr_fatal("out of memory");
    }
    pe->agg_nopen = 0;
    pe->urgent_out = false;
    pe->bytes_out = 0;
    /* Room for 16 aggregation buffers in flight to each of up to 64 destinations, as a ring
     * per pair would hold, and at least as much as a PE keeps of large buffers: what
     * receivers give back then always fits the pools, and a sender far ahead neither frees
     * returned buffers nor takes fresh ones for each message. */
    size_t dsts = pe->npes - 1 < MPR_AGG_OPEN_MAX ? (size_t)pe->npes - 1 : MPR_AGG_OPEN_MAX;
    size_t ring = dsts * 16 * mpr_g.cfg.agg_bytes;
    pe->bytes_high = ring > MPR_LARGE_CACHE_BYTES ? ring : MPR_LARGE_CACHE_BYTES;
    pe->flush_delay_ns = (uint64_t)(mpr_g.cfg.flush_delay_s * 1e9);
    pe->agg_cap = mpr_g.cfg.agg_bytes;
    pe->small_below = mpr_g.cfg.small_bytes ? mpr_g.cfg.small_bytes + 1 : 0;
    /* without aggregation a message holds one record, which a carrier would not save a fiber */
    pe->carriers = mpr_g.carriers && pe->agg_cap > 0;
    /* two hops when a PE of its own would talk to more PEs than it keeps buffers open for */
    pe->route_cols = 0;
    if (!pe->agg_grouped && pe->agg_cap > 0 && pe->npes - 1 > MPR_AGG_OPEN_MAX)
        while (pe->route_cols * pe->route_cols < pe->npes)
            pe->route_cols++;
    atomic_init(&pe->returned, NULL);
}

void mpr_msgbuf_free_list(mpr_msgbuf *b)
{
    while (b) {
        mpr_msgbuf *n = b->next;
        mpr_msgbuf_free(b);
        b = n;
    }
}

/* A slab of pooled buffers: this header, then the buffers, each on cache lines of its own (a
 * sender fills one while a receiver reads the next). */
typedef struct mpr_buf_slab {
    struct mpr_buf_slab *next;
    size_t bytes;
} mpr_buf_slab;

#define SLAB_HEAD 64                   /* the header's cache line */
#define SLAB_BYTES ((size_t)256 << 10) /* a slab, unless a buffer needs more */

/* The slabs of the PEs freed so far: buffers carved from them may still sit in other PEs'
 * lists and in the machine's channels, which are freed after the PEs (mpr_comm_slabs_free).
 * Touched only by the thread that ends the run. */
static mpr_buf_slab *retired_slabs;

void mpr_comm_slabs_free(void)
{
    for (mpr_buf_slab *s = retired_slabs, *n; s; s = n) {
        n = s->next;
        munmap(s, s->bytes);
    }
    retired_slabs = NULL;
}

void mpr_comm_fini(mpr_pe *pe)
{
    if (!pe->agg_grouped && pe->agg) { /* a group's buffers are the backend's */
        for (int i = 0; i < pe->npes; i++)
            mpr_msgbuf_free(pe->agg[i].buf);
        free(pe->agg);
    }
    free(pe->agg_open);
    free(pe->agg_listed);
    pe->agg = NULL;
    pe->agg_open = NULL;
    pe->agg_listed = NULL;
    mpr_msgbuf_free_list(pe->free_small);
    mpr_msgbuf_free_list(pe->free_agg);
    for (int c = 0; c < MPR_LARGE_CLASSES; c++) {
        mpr_msgbuf_free_list(pe->free_large[c]);
        pe->free_large[c] = NULL;
    }
    pe->large_cached = 0;
    mpr_msgbuf_free_list(atomic_exchange(&pe->returned, NULL));
    mpr_msgbuf_free_list(pe->rx_pending); /* only after an abnormal end (hang, timeout) */
    pe->rx_pending = NULL;
    pe->free_small = pe->free_agg = NULL;
    while (pe->buf_slabs) {
        mpr_buf_slab *s = pe->buf_slabs;
        pe->buf_slabs = s->next;
        s->next = retired_slabs;
        retired_slabs = s;
    }
    pe->carve_next[0] = pe->carve_next[1] = pe->carve_end[0] = pe->carve_end[1] = 0;
}

/* The class of a large buffer of `cap` bytes, or -1 when cap is not a class's capacity. */
static int large_class(size_t cap)
{
    if (cap < ((size_t)1 << MPR_LARGE_MIN_LOG2) || cap > ((size_t)1 << MPR_LARGE_MAX_LOG2) ||
        (cap & (cap - 1)))
        return -1;
    return __builtin_ctzll((unsigned long long)cap) - MPR_LARGE_MIN_LOG2;
}

/* The class capacity a large record of `need` bytes goes in, or 0 when none is big enough. */
static size_t large_cap(size_t need)
{
    size_t cap = (size_t)1 << MPR_LARGE_MIN_LOG2;
    while (cap < need && cap < ((size_t)1 << MPR_LARGE_MAX_LOG2))
        cap <<= 1;
    return cap >= need ? cap : 0;
}

/* Takes back the buffers receivers returned and sorts them into the free lists. */
static void reclaim(mpr_pe *pe)
{
    mpr_msgbuf *b = mpr_m->returned
                        ? mpr_m->returned(pe) /* the backend's own return path (shm: channels) */
                        : atomic_exchange_explicit(&pe->returned, NULL, memory_order_acquire);
    while (b) {
        mpr_msgbuf *n = b->next;
        int large;
        pe->bytes_out -= b->cap;
        if (b->cap == SMALL_CAP) {
            b->next = pe->free_small;
            pe->free_small = b;
        } else if (b->cap == pe->agg_cap) {
            b->next = pe->free_agg;
            pe->free_agg = b;
        } else if ((large = large_class(b->cap)) >= 0 &&
                   pe->large_cached + b->cap <= MPR_LARGE_CACHE_BYTES) {
            b->next = pe->free_large[large];
            pe->free_large[large] = b;
            pe->large_cached += b->cap;
        } else {
            mpr_msgbuf_free(b); /* (a carved buffer is of the first two classes) */
        }
        b = n;
    }
}

/* A fresh buffer: the pools were empty (receivers have not given enough back yet) or the
 * message is too big to pool.  Counted (MsgAlloc): fresh memory costs a malloc and page
 * faults, several times a pooled send, and how often it happens depends on how far the
 * receivers lag behind. */
static mpr_msgbuf *buf_new(mpr_pe *pe, size_t cap, uint32_t kind)
{
    RTS_INC(&pe->rts, MsgAlloc, 1);
    RTS_INC(&pe->rts, ByteAlloc, cap);
    mpr_msgbuf *b = malloc(sizeof *b + cap);
    if (!b)
        mpr_fatal("out of memory allocating a %zu-byte message", cap);
    b->cap = cap;
    b->kind = (uint16_t)kind;
    b->carved = 0;
    return b;
}

/* A fresh small or aggregation buffer, cut from the PE's current slab of its class (a new slab
 * when that one is used up).  A busy PE runs out of these while its receivers lag, thousands
 * of times in a run with many PEs.  One malloc each grew the worker thread's heap by a system
 * call per page or two (glibc grows a thread's arena a page at a time), under the lock that
 * the other PEs' page faults take: a cost that varied with the run's timing.  A slab is one
 * mapping of SLAB_BYTES (or the least power of two that holds a buffer), whose pages are
 * touched, and so faulted in, only as buffers are cut from it: a PE that sends little keeps
 * little.  Counted: MsgAlloc once a slab, ByteAlloc the capacity of every buffer cut. */
static MPR_COLD mpr_msgbuf *buf_carve(mpr_pe *pe, size_t cap, int cls)
{
    size_t stride = (sizeof(mpr_msgbuf) + cap + 63) & ~(size_t)63;
    if (pe->carve_end[cls] - pe->carve_next[cls] < stride) {
        size_t bytes = SLAB_BYTES;
        while (bytes < SLAB_HEAD + stride)
            bytes *= 2;
        void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            mpr_fatal("out of memory allocating %zu bytes of message buffers", bytes);
        mpr_buf_slab *s = mem;
        s->next = pe->buf_slabs;
        s->bytes = bytes;
        pe->buf_slabs = s;
        pe->carve_next[cls] = (uintptr_t)mem + SLAB_HEAD;
        pe->carve_end[cls] = (uintptr_t)mem + bytes;
        RTS_INC(&pe->rts, MsgAlloc, 1);
    }
    mpr_msgbuf *b = (mpr_msgbuf *)pe->carve_next[cls];
    pe->carve_next[cls] += stride;
    RTS_INC(&pe->rts, ByteAlloc, cap);
    b->cap = cap;
    b->kind = MPR_BUF_POOLED;
    b->carved = 1;
    return b;
}

static mpr_msgbuf *buf_get(mpr_pe *pe, size_t need)
{
    mpr_msgbuf **list = NULL;
    bool large = false;
    size_t cap;
    if (need <= SMALL_CAP) {
        list = &pe->free_small;
        cap = SMALL_CAP;
    } else if (need <= pe->agg_cap) {
        list = &pe->free_agg;
        cap = pe->agg_cap;
    } else if ((cap = large_cap(need)) != 0) {
        list = &pe->free_large[large_class(cap)];
        large = true;
    } else {
        cap = need;
    }
    mpr_msgbuf *b = NULL;
    if (list) {
        if (!*list)
            reclaim(pe);
        b = *list;
        if (b) {
            *list = b->next;
            if (large)
                pe->large_cached -= cap;
        } else if (!large) {
            b = buf_carve(pe, cap, list == &pe->free_agg);
        } else {
            b = buf_new(pe, cap, MPR_BUF_POOLED);
        }
        pe->bytes_out += cap; /* back in reclaim(), or in agg_flush() */
    } else {
        b = buf_new(pe, cap, MPR_BUF_OWNED);
    }
    b->len = 0;
    b->src = pe->id;
    b->counted = 0;
    return b;
}

/* ByteSent is not counted here: every remote record counts its bytes when it is written
 * (mpr_send_record, mp_invoke), which costs one add, where counting per buffer would cost a
 * walk over the records of a buffer that PEs of one worker share (see group_send). */
static void send_buf(mpr_pe *pe, int dst, mpr_msgbuf *b)
{
    b->dst = dst;
    mpr_machine_send(pe, dst, b);
}

/* An urgent record was sent to dst: interrupt dst's dispatch loop after its current fiber
 * (sched.c, run_ready), which then polls.  The release store follows the send, so the poll
 * that the flag causes finds the message.  PEs of other processes (MPI) are not in mpr_g.pes:
 * they serve it at their next communication period. */
static MPR_COLD void notify(int dst)
{
    mpr_pe *d = mpr_g.pes[dst];
    if (d)
        atomic_store_explicit(&d->interrupt, 1, memory_order_release);
}

/* Buffer `a` for dst has gone: if it held an urgent record, its arrival interrupts dst. */
static inline void agg_sent(mpr_agg *a, int dst)
{
    if (MPR_UNLIKELY(a->urgent)) {
        a->urgent = false;
        a->urgent_on = false;
        notify(dst);
    }
}

/* dst's idle epoch (odd while it waits for work).  A PE of another process (MPI) is not in
 * mpr_g.pes: its epoch is what it last told this process, odd until something is sent to it
 * (machine.h, peer_idle_epoch). */
static inline uint32_t idle_epoch_of(const mpr_pe *d, int dst)
{
    return d ? atomic_load_explicit(&d->idle_epoch, memory_order_relaxed)
             : mpr_machine_peer_idle_epoch(dst);
}

/* Is dst in its idle loop now?  (A PE of another process: has it said so since it was last
 * sent anything?) */
static inline bool waiting(int dst) { return idle_epoch_of(mpr_g.pes[dst], dst) & 1; }

/* Does dst wait for work (its idle loop), has it not been sent this sender's records since it
 * started waiting, and was it last fed by this sender MPROF_FEED_US ago or more?  One message per
 * sender and idle period: a PE that waits gets what every sender holds for it within a period,
 * while one that stays idle for long (asleep, or not given a core) does not draw a message of
 * a record or two from every sender every period.  The time bound is for a PE that runs what
 * it is fed in a moment and waits again, every period, while its senders are busy: without it
 * each sender sent it a message of one period's records every period (a fed message in 62 %
 * of a 2-PE rt_workload's, about 13 records each), and the busy senders paid for the messages.
 * It counts from the last feed, not from the buffer's opening: with periods longer than the
 * bound, every period may feed, as before, where a buffer opened just before a period would
 * otherwise wait for the next one.
 * A buffer with an urgent record for a PE of another process goes every period, as all of
 * them once did: that PE tells its idle state only after a moment of waiting (mpi/notice.c),
 * and may wait on a reply before it has nothing else to do. */
static inline bool starving(mpr_agg *a, int dst, uint64_t now)
{
    mpr_pe *d = mpr_g.pes[dst];
    if (MPR_UNLIKELY(!d) && a->urgent)
        return true;
    if (now - a->fed_ns < mpr_g.feed_ns && a->fed_ns)
        return false;
    uint32_t e = idle_epoch_of(d, dst);
    if (!(e & 1) || e == a->fed_epoch)
        return false;
    a->fed_epoch = e;
    a->fed_ns = now;
    return true;
}

/* Starts a record of `total` bytes at the end of `b`; returns where its body goes. */
static inline unsigned char *put_header(mpr_msgbuf *b, uint64_t fn_src, size_t args_size,
                                        unsigned sched, unsigned access, size_t total)
{
    mpr_record *r = (mpr_record *)(b->data + b->len);
    r->total = (uint32_t)total;
    r->args_size = (uint16_t)args_size;
    r->sched = (uint8_t)sched;
    r->access = (uint8_t)access;
    r->fn_src = fn_src;
    b->len += total;
    return (unsigned char *)(r + 1);
}

/* Writes a record of `total` bytes (its route header included when `to` >= 0: the record's
 * destination, to which the buffer's destination forwards it). */
static void put_record(mpr_msgbuf *b, uint64_t fn_src, int to, const void *args, size_t args_size,
                       mp_sched_t sched, unsigned access, const void *payload, size_t payload_size,
                       void *payload_dst, size_t total)
{
    unsigned flags = (payload_size ? MPR_RECORD_PAYLOAD : 0) | (to >= 0 ? MPR_RECORD_ROUTE : 0);
    unsigned char *p = put_header(b, fn_src, args_size, (unsigned)sched | flags, access, total);
    if (to >= 0) {
        mpr_record_route *h = (mpr_record_route *)p;
        *h = (mpr_record_route){.dst = to};
        p += sizeof *h;
    }
    if (payload_size) {
        mpr_record_payload *h = (mpr_record_payload *)p;
        h->size = payload_size;
        h->dst = payload_dst;
        p += sizeof *h;
        memcpy(p + align16(args_size), payload, payload_size);
    }
    if (args_size)
        memcpy(p, args, args_size);
}

static void deliver_local(mpr_pe *pe, mp_fiber_fn fn, const void *args, size_t args_size,
                          mp_sched_t sched, const void *payload, size_t payload_size,
                          void *payload_dst)
{
    if (payload_size)
        memmove(payload_dst, payload, payload_size);
    RTS_INC(&pe->rts, LocalOp, 1);
    RTS_INC(&pe->rts, ByteCopy, payload_size + args_size);
    mpr_fiber_spawn(pe, fn, args, args_size, (unsigned)sched, mpr_cur_access(pe), false);
}

/* A group buffer (machine.h group_agg) leaves its group.  It was counted when opened (MsgSent,
 * on the PE that opened it: agg_open), and each record's bytes when written (ByteSent, on the
 * PE that wrote it, as with buffers of its own), so nothing is left to count here. */
static void group_send(mpr_msgbuf *b, int dst)
{
    b->dst = dst;
    mpr_machine_send(mpr_g.pes[b->src], dst, b);
}

/* Counted on the PE that opened it, as its MsgSent was. */
void mpr_agg_send_opened(mpr_agg *a, int dst, mpr_agg_why why)
{
    mpr_msgbuf *b = a->buf;
    a->buf = NULL;
    mpr_agg_count(mpr_g.pes[b->src], why);
    group_send(b, dst);
    agg_sent(a, dst);
}

/* Sends the destination's aggregation buffer if it holds records: when full, on flush, and
 * before a message sent at once, which must not overtake them (invocations from one PE to
 * another arrive in the order they were made). */
static inline void agg_send_pending(mpr_pe *pe, int dst, mpr_agg_why why)
{
    mpr_agg *a = &pe->agg[dst];
    mpr_msgbuf *b = a->buf;
    if (b && b->len) {
        a->buf = NULL;
        mpr_agg_count(b->counted ? mpr_g.pes[b->src] : pe, why); /* as MsgSent was counted */
        if (b->counted) {
            group_send(b, dst);
        } else {
            RTS_INC(&pe->rts, MsgSent, 1);
            send_buf(pe, dst, b);
        }
        agg_sent(a, dst);
    }
}

/* Sends a partly filled aggregation buffer on a flush.  With more destinations than a PE
 * keeps open, a buffer that holds little goes out as a copy in a small pooled buffer and the
 * aggregation buffer returns to the pool at once: most such flushes carry a few records, and
 * sending the whole buffer would keep agg_bytes in flight (and then in the pool) per (sender,
 * destination).  With few PEs that memory is small and the copy is not worth it. */
static void agg_flush(mpr_pe *pe, int dst, mpr_agg_why why)
{
    mpr_msgbuf *b = pe->agg[dst].buf;
    if (!b || !b->len)
        return;
    if (pe->npes > MPR_AGG_OPEN_MAX && b->len <= SMALL_CAP && pe->agg_cap > SMALL_CAP) {
        mpr_agg_count(pe, why);
        mpr_msgbuf *s = buf_get(pe, b->len);
        memcpy(s->data, b->data, b->len);
        s->len = b->len;
        b->next = pe->free_agg;
        pe->free_agg = b;
        pe->bytes_out -= b->cap;
        pe->agg[dst].buf = NULL;
        RTS_INC(&pe->rts, MsgSent, 1);
        send_buf(pe, dst, s);
        agg_sent(&pe->agg[dst], dst);
        return;
    }
    agg_send_pending(pe, dst, why);
}

/* Flushes every destination that may hold an open buffer. */
static void agg_flush_open(mpr_pe *pe)
{
    for (int i = 0; i < pe->agg_nopen; i++) {
        agg_flush(pe, pe->agg_open[i], MPR_AGG_DRAIN);
        pe->agg_listed[pe->agg_open[i]] = 0;
    }
    pe->agg_nopen = 0;
}

/* Opens an aggregation buffer for dst, first flushing the others when MPR_AGG_OPEN_MAX are
 * open: a PE's aggregation memory is bounded whatever the number of PEs. */
static MPR_COLD mpr_msgbuf *agg_open(mpr_pe *pe, int dst)
{
    if (pe->agg_grouped) {
        mpr_msgbuf *b = buf_get(pe, pe->agg_cap);
        b->counted = 1;
        mpr_machine_group_open(pe, dst); /* in flight from now on, sent by the backend */
        RTS_INC(&pe->rts, MsgSent, 1);   /* sent later by whichever PE of the worker flushes */
        pe->agg[dst].since_ns = pe->flush_delay_ns ? mpr_mono_ns() : 0; /* the group's age */
        return pe->agg[dst].buf = b;
    }
    if (!pe->agg_listed[dst]) { /* a listed one was sent when full and reopens */
        if (pe->agg_nopen == MPR_AGG_OPEN_MAX)
            agg_flush_open(pe);
        pe->agg_open[pe->agg_nopen++] = dst;
        pe->agg_listed[dst] = 1;
    }
    /* the clock is read here, once a message, not once a record */
    pe->agg[dst].since_ns = pe->flush_delay_ns ? mpr_mono_ns() : 0;
    return pe->agg[dst].buf = buf_get(pe, pe->agg_cap);
}

/* The PE that a record for dst goes to first (see "Routing"): the one in this PE's row and
 * dst's column (the row above when this, the last row, is too short), or dst itself. */
static inline int route_via(const mpr_pe *pe, int dst)
{
    int cols = pe->route_cols;
    if (MPR_LIKELY(!cols))
        return dst;
    int via = pe->id - pe->id % cols + dst % cols;
    if (via >= pe->npes)
        via -= cols;
    return via == pe->id ? dst : via;
}

/* Sends a record of `total` bytes to PE dst by its class (see the top of this file): the
 * sender's own, or one this PE forwards (fn_src and access are its sender's).  `to` >= 0: the
 * record is on its first hop and dst forwards it to PE `to`. */
static mp_err send_to(mpr_pe *pe, int dst, int to, uint64_t fn_src, unsigned access,
                      mp_sched_t sched, const void *args, size_t args_size, const void *payload,
                      size_t payload_size, void *payload_dst, size_t total)
{
    if (is_small(pe, args_size, payload_size)) {
        /* small: a fast message of its own */
        agg_send_pending(pe, dst, MPR_AGG_ORDER);
        mpr_msgbuf *b = buf_get(pe, total);
        put_record(b, fn_src, to, args, args_size, sched, access, NULL, 0, NULL, total);
        RTS_INC(&pe->rts, FastMsgSent, 1);
        send_buf(pe, dst, b);
        if (sched == MP_SCHED_URGENT)
            notify(dst);
        return MP_SUCCESS;
    }
    if (total <= pe->agg_cap) {
        /* medium: aggregate per destination */
        mpr_agg *a = &pe->agg[dst];
        if (a->buf && a->buf->len + total > pe->agg_cap)
            agg_send_pending(pe, dst, MPR_AGG_FULL);
        if (!a->buf)
            agg_open(pe, dst);
        put_record(a->buf, fn_src, to, args, args_size, sched, access, payload, payload_size,
                   payload_dst, total);
        if (sched == MP_SCHED_URGENT) {
            a->urgent = true; /* its arrival interrupts dst */
            if (waiting(to >= 0 ? to : dst)) {
                a->urgent_on |= to >= 0; /* dst may be busy: mpr_flush_urgent sends it anyway */
                if (!pe->urgent_out) {
                    pe->urgent_out = true; /* it goes when the writing fiber ends */
                    mpr_interrupt_set(pe);
                }
            }
        }
        if (a->buf->len >= pe->agg_cap)
            agg_send_pending(pe, dst, MPR_AGG_FULL);
        return MP_SUCCESS;
    }
    /* large (or aggregation disabled): at once */
    agg_send_pending(pe, dst, MPR_AGG_ORDER);
    mpr_msgbuf *b = buf_get(pe, total);
    put_record(b, fn_src, to, args, args_size, sched, access, payload, payload_size, payload_dst,
               total);
    RTS_INC(&pe->rts, MsgSent, 1);
    send_buf(pe, dst, b);
    if (sched == MP_SCHED_URGENT)
        notify(dst);
    return MP_SUCCESS;
}

mp_err mpr_send_record(mpr_pe *pe, int dst, mp_fiber_fn fn, const void *args, size_t args_size,
                       mp_sched_t sched, const void *payload, size_t payload_size,
                       void *payload_dst)
{
    if (MPR_UNLIKELY(dst < 0 || dst >= pe->npes))
        return mpr_misuse(MP_ERR_INVALID_PE, "message to PE %d, but P = %d", dst, pe->npes);
    if (MPR_UNLIKELY(!fn || (args_size && !args) || (payload_size && !payload)))
        return mpr_misuse(MP_ERR_INVALID_ARG, "remote invocation with a NULL function or data");
    if (MPR_UNLIKELY(args_size > MP_FIBER_ARGS_MAX))
        return mpr_misuse(MP_ERR_TOO_LARGE, "fiber arguments of %zu bytes exceed %d", args_size,
                          MP_FIBER_ARGS_MAX);
    if (MPR_UNLIKELY(sched < 0 || sched >= pe->nsched))
        return mpr_misuse(MP_ERR_INVALID_ARG, "unknown scheduler id %d", sched);
    /* payload_size is checked before it is rounded up: align16 wraps for sizes near SIZE_MAX */
    if (MPR_UNLIKELY(payload_size > MAX_MESSAGE))
        return mpr_misuse(MP_ERR_TOO_LARGE, "payload of %zu bytes exceeds the %zu-byte limit",
                          payload_size, (size_t)MAX_MESSAGE);
    /* The limits are on the arguments and the payload, not on the record: a bulk operation
     * of exactly mp_max_message() bytes carries its headers and arguments beside them (counted
     * against the limit, such a write was refused and a read's reply could not be sent). */
    size_t total = record_size(args_size, payload_size);
    if (dst == pe->id) {
        deliver_local(pe, fn, args, args_size, sched, payload, payload_size, payload_dst);
        return MP_SUCCESS;
    }
    RTS_INC(&pe->rts, RemoteOp, 1);
    RTS_INC(&pe->rts, ByteSent, total);
    MPR_OBSERVE_HOT(send, pe, dst, total);
    uint64_t fn_src = fn_src_make(fn, pe->id);
    unsigned access = mpr_cur_access(pe);
    int via = route_via(pe, dst);
    if (MPR_UNLIKELY(via != dst))
        return send_to(pe, via, dst, fn_src, access, sched, args, args_size, payload, payload_size,
                       payload_dst, total + sizeof(mpr_record_route));
    return send_to(pe, dst, -1, fn_src, access, sched, args, args_size, payload, payload_size,
                   payload_dst, total);
}

/* A record on its first hop, in a message from PE src to this one: it goes on to its
 * destination as its sender wrote it, less the route (see "Routing"). */
static MPR_COLD void forward(mpr_pe *pe, const mpr_record *r)
{
    const mpr_record_route *h = (const mpr_record_route *)(r + 1);
    const unsigned char *p = (const unsigned char *)(h + 1);
    const void *payload = NULL;
    size_t payload_size = 0;
    void *payload_dst = NULL;
    if (r->sched & MPR_RECORD_PAYLOAD) {
        const mpr_record_payload *ph = (const mpr_record_payload *)p;
        payload_size = ph->size;
        payload_dst = ph->dst;
        p += sizeof *ph;
        payload = p + align16(r->args_size);
    }
    unsigned sched = r->sched & ~(MPR_RECORD_ROUTE | MPR_RECORD_PAYLOAD);
    RTS_INC(&pe->rts, RecordFwd, 1);
    send_to(pe, h->dst, -1, r->fn_src, r->access, (mp_sched_t)sched, p, r->args_size, payload,
            payload_size, payload_dst, r->total - sizeof *h);
}

/* mpr_send_record for invoke_general, apart: inlined there, its register saves made every
 * local invocation pay for them (43 instructions of invoke_general's own against 13). */
static MPR_NOIPA mp_err invoke_send(mpr_pe *pe, int pe_id, mp_fiber_fn fn, const void *args,
                                    size_t size, mp_sched_t sched)
{
    return mpr_send_record(pe, pe_id, fn, args, size, sched, NULL, 0, NULL);
}

/* Everything but mp_invoke's fast path, reached by a tail call so the fast path needs no
 * stack frame. */
static __attribute__((noinline)) mp_err invoke_general(int pe_id, mp_fiber_fn fn, const void *args,
                                                       size_t size, mp_sched_t sched)
{
    mpr_pe *pe = mpr_pe_self();
    if (MPR_UNLIKELY(!pe))
        return mpr_misuse(MP_ERR_BAD_STATE, "mp_invoke outside a running PE");
    /* An invocation on the PE itself is a spawn that also counts as a local operation
     * (deliver_local): mp_spawn's fast path takes it, not mpr_send_record's way to
     * deliver_local and the general spawn (175 instructions a FIFO invocation of 16 bytes, with
     * its dispatch, against 138).  Misuse still goes that way, for its messages. */
    if (pe_id == pe->id && fn && (args || !size) && size <= MP_FIBER_ARGS_MAX && sched >= 0 &&
        sched < pe->nsched) {
        RTS_INC(&pe->rts, LocalOp, 1);
        RTS_INC(&pe->rts, ByteCopy, size);
        return mp_spawn(fn, args, size, sched);
    }
    return invoke_send(pe, pe_id, fn, args, size, sched);
}

/* What follows a record written on mp_invoke's fast path when the send hooks are on or the
 * record filled its buffer: a tail call, so the fast path keeps no registers across a call and
 * needs no stack frame. */
static __attribute__((noinline)) mp_err invoke_after(mpr_pe *pe, int dst, size_t total)
{
    MPR_OBSERVE_HOT(send, pe, dst, total);
    if (pe->agg[dst].buf->len >= pe->agg_cap)
        agg_send_pending(pe, dst, MPR_AGG_FULL);
    return MP_SUCCESS;
}

/* A record's first word (mpr_record: total, args_size, sched, access), for one store. */
static inline uint64_t record_word(size_t total, size_t args_size, unsigned sched, unsigned access)
{
    return (uint64_t)(uint32_t)total | (uint64_t)args_size << 32 | (uint64_t)sched << 48 |
           (uint64_t)access << 56;
}

/* buf_get for an empty pool of small buffers (it refills the pool from the buffers given
 * back) or a record too big for one, out of line: called directly, it made invoke_at_once
 * save five registers on every send for it (63 instructions of its own against 56).  Not
 * cold: every unaggregated record of more than 240 bytes takes its buffer here. */
static MPR_NOIPA mpr_msgbuf *at_once_buf(mpr_pe *pe, size_t total) { return buf_get(pe, total); }

/* A record as mp_invoke's fast paths write it: the first word (size, argument size,
 * scheduler, sender's category) with one store, the arguments in fixed-size moves. */
static inline void put_fast(mpr_record *r, mpr_pe *pe, mp_fiber_fn fn, const void *args,
                            size_t size, mp_sched_t sched, size_t total)
{
    uint64_t word = record_word(total, size, (unsigned)sched, mpr_cur_access(pe));
    __builtin_memcpy(r, &word, sizeof word);
    r->fn_src = fn_src_make(fn, pe->id);
    copy_args((unsigned char *)(r + 1), args, size);
}

/* mp_invoke's second fast path: aggregation is off (MPROF_AGG_BYTES=0), so the record goes at
 * once in a pooled buffer, a small one up to SMALL_CAP bytes.  mpr_send_record's way for it,
 * less what mp_invoke has checked already and what cannot apply: no aggregation buffer can be
 * open to keep the order with, no payload, no fast-message setting, no send hook, no urgent
 * record.  An empty pool is buf_get's to refill from the buffers given back: where the
 * receiver keeps up, one or two buffers circulate and the pool is empty at most sends. */
static __attribute__((noinline)) mp_err
invoke_at_once(mpr_pe *pe, int dst, mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched)
{
    /* not passed: a seventh argument goes on the stack, and mp_invoke could not tail-call */
    size_t total = record_size(size, 0);
    mpr_msgbuf *b = pe->free_small;
    if (MPR_LIKELY(b != NULL && total <= SMALL_CAP)) {
        pe->free_small = b->next;
        pe->bytes_out += SMALL_CAP; /* back in reclaim(), as buf_get's */
    } else {
        b = at_once_buf(pe, total);
    }
    put_fast((mpr_record *)b->data, pe, fn, args, size, sched, total);
    b->len = total;
    b->src = pe->id;
    b->counted = 0;
    RTS_INC(&pe->rts, RemoteOp, 1);
    RTS_INC(&pe->rts, ByteSent, total);
    RTS_INC(&pe->rts, MsgSent, 1);
    send_buf(pe, dst, b);
    return MP_SUCCESS;
}

/* Fast path of the common case: an invocation that fits the destination's open aggregation
 * buffer, on a scheduler other than URGENT (whose records have a send to arrange:
 * mpr_send_record); with aggregation off, invoke_at_once.  Arguments of any size take it:
 * when only a few words did, an invocation of 65 bytes cost about 100 instructions more than
 * one of 64 (the general path and a memcpy call), a step in the cost of a byte that a linear
 * cost model cannot follow (docs/measurements/runtime-messaging.md, "Arguments of any size").
 * `sched - 1 < nsched - 1` tests both in one compare.  The destination must be another PE even
 * where a buffer is open for this one: a PE of the same worker opens the group's
 * (shm/group.c), and the own PE's invocations are local. */
_Static_assert(MP_SCHED_URGENT == 0, "mp_invoke's fast path tests sched - 1");
_Static_assert(offsetof(mpr_record, total) == 0 && offsetof(mpr_record, args_size) == 4 &&
                   offsetof(mpr_record, sched) == 6 && offsetof(mpr_record, access) == 7,
               "record_word is a record's first word");
mp_err mp_invoke(int pe_id, mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched)
{
    mpr_pe *pe = mpr_pe_self();
    size_t total = record_size(size, 0);
    mpr_msgbuf *b;
    if (MPR_UNLIKELY(!pe || (unsigned)pe_id >= (unsigned)pe->npes || pe_id == pe->id || !fn ||
                     size > MP_FIBER_ARGS_MAX || is_small(pe, size, 0) ||
                     (unsigned)sched - 1u >= (unsigned)pe->nsched - 1u))
        return invoke_general(pe_id, fn, args, size, sched);
    if (MPR_UNLIKELY(!args) && size) /* a test apart: folded in, it was five instructions */
        return invoke_general(pe_id, fn, args, size, sched);
    if (MPR_UNLIKELY(!(b = pe->agg[pe_id].buf) || b->len + total > pe->agg_cap)) {
        if (!pe->agg_cap && !MPR_OBS_HOT_ON())
            return invoke_at_once(pe, pe_id, fn, args, size, sched);
        return invoke_general(pe_id, fn, args, size, sched);
    }
    size_t len = b->len; /* read once: the stores below might alias it */
    put_fast((mpr_record *)(b->data + len), pe, fn, args, size, sched, total);
    len += total;
    b->len = len;
    RTS_INC(&pe->rts, RemoteOp, 1);
    RTS_INC(&pe->rts, ByteSent, total);
    if (MPR_UNLIKELY(MPR_OBS_HOT_ON() || len >= pe->agg_cap))
        return invoke_after(pe, pe_id, total);
    return MP_SUCCESS;
}

/* The periodic and the out-of-work flush.  A PE in a group leaves the group's buffers open:
 * its members take theirs when they poll, and the backend sends the others after every member
 * has had its slice (machine.h group_agg), so they fill across slices. */
void mpr_flush_all(mpr_pe *pe)
{
    if (!pe->agg_cap || pe->agg_grouped)
        return;
    agg_flush_open(pe);
}

/* One rule for a PE's own buffers and a worker group's (mpr_comm.h). */
mpr_agg_why mpr_agg_due(mpr_agg *a, int dst, size_t cap, uint64_t now, uint64_t delay_ns)
{
    if (a->buf->len >= cap / 2)
        return MPR_AGG_HALF;
    if (now - a->since_ns >= delay_ns)
        return MPR_AGG_AGED;
    return starving(a, dst, now) ? MPR_AGG_FED : MPR_AGG_KEPT;
}

int mpr_agg_sweep(mpr_agg *agg, int *open, int nopen, uint8_t *listed, size_t cap,
                  uint64_t delay_ns, mpr_agg_send_fn send, void *ctx)
{
    uint64_t now = delay_ns ? mpr_mono_ns() : 0;
    int kept = 0;
    for (int i = 0; i < nopen; i++) {
        int dst = open[i];
        mpr_agg *a = &agg[dst];
        if (a->buf) {
            mpr_agg_why why = mpr_agg_due(a, dst, cap, now, delay_ns);
            if (!why) {
                open[kept++] = dst;
                continue;
            }
            send(ctx, a, dst, why);
        }
        listed[dst] = 0; /* sent now, or when full: listed again when it reopens */
    }
    return kept;
}

static void flush_one(void *pe, mpr_agg *a, int dst, mpr_agg_why why)
{
    (void)a;
    agg_flush(pe, dst, why);
}

/* The communication period's flush (see "The flush policy" above): sends the buffers that are
 * half full, whose destination waits for work, or whose delay has run out, and keeps the
 * others filling.  A buffer's age counts from its opening, so a record waits at most the delay
 * plus one period.  The clock is read only when a buffer is open.  A PE in a group leaves the
 * group's buffers to the worker (mpr_flush_all). */
void mpr_flush_due(mpr_pe *pe)
{
    if (!pe->agg_nopen)
        return;
    pe->agg_nopen = mpr_agg_sweep(pe->agg, pe->agg_open, pe->agg_nopen, pe->agg_listed, pe->agg_cap,
                                  pe->flush_delay_ns, flush_one, pe);
}

/* The fiber that wrote urgent records for a PE that waits has ended (sched.c): their buffers
 * go now, with the records written before them.  In a group, the worker's buffers for other
 * workers' PEs all go (a member's urgent record for a PE of its own worker is taken when that
 * PE runs). */
void mpr_flush_urgent(mpr_pe *pe)
{
    if (!pe->urgent_out)
        return;
    pe->urgent_out = false;
    if (pe->agg_grouped) {
        mpr_machine_group_flush(pe, MPR_AGG_FED);
        return;
    }
    for (int i = 0; i < pe->agg_nopen; i++) {
        int dst = pe->agg_open[i];
        mpr_agg *a = &pe->agg[dst];
        if (a->urgent && (a->urgent_on || waiting(dst)))
            agg_flush(pe, dst, MPR_AGG_FED);
    }
}

/* Flow control, at a communication period (sched.c): the PE has more bytes of pooled buffers
 * open or in flight than bytes_high, so its receivers lag far behind.  Rather than run more
 * fibers and take fresh memory for what they send (a malloc and page faults per buffer for as
 * long as the lag grows, and beyond the large-buffer cache a free and a malloc per message:
 * MsgAlloc 1.6 k and 1.16 M in two repetitions of one configuration), the PE waits between two
 * fibers, serving its own messages, until receivers have given half of them back.  The bound
 * is well above the lag of two PEs that keep up with each other (a few hundred KB), which a
 * lower one (256 buffers) turned into thousands of waits per run.  Two PEs that
 * wait for each other both poll, so both give buffers back.  A PE that shares its worker hands
 * it to the others meanwhile (its receivers may be among them); one with a thread of its own
 * spins a little, then yields its core (there may be more PEs than cores).  A receiver that
 * does not poll (a long fiber) is waited for at most MPR_FLOW_WAIT_NS; the PE then goes on
 * and takes fresh buffers as before.
 *
 * The wait is counted (FlowWait) and its CPU time is the idle loop's (IdleCpuNs:
 * not the PE's busy time, so costs per operation stay what the operations cost).  It is not
 * idle time for latency accounting (IdleNs, C_total): fibers are runnable meanwhile, and
 * charging the wait to every queued fiber's observed latency would swamp the waits that
 * latency accounting is for (a PE with nothing to run). */
#define MPR_FLOW_WAIT_NS 20000000u
#define MPR_FLOW_SPINS 256
void mpr_flow_wait(mpr_pe *pe)
{
    uint64_t t0 = mpr_mono_ns(), now = t0, switched_out = 0;
    uint64_t c0 = pe->shared_thread ? 0 : mpr_thread_cpu_ns();
    unsigned spins = 0;
    pe->current = NULL;
    uint8_t at = pe->sample_at;
    pe->sample_at = MPR_AT_IDLE; /* its CPU time is idle_cpu_s's, so are its samples */
    while (pe->bytes_out > pe->bytes_high / 2 && !mpr_run_over() && now - t0 < MPR_FLOW_WAIT_NS) {
        reclaim(pe);
        mpr_poll(pe);
        if (pe->shared_thread) {
            uint64_t w0 = mpr_mono_ns();
            mpr_yield_busy(pe);
            now = mpr_mono_ns();
            switched_out += now - w0;
            continue;
        }
        if (++spins < MPR_FLOW_SPINS)
            mpr_cpu_relax();
        else
            sched_yield();
        now = mpr_mono_ns();
    }
    pe->sample_at = at;
    RTS_INC(&pe->rts, FlowWait, 1);
    pe->idle_cpu_ns += pe->shared_thread ? now - t0 - switched_out : mpr_thread_cpu_ns() - c0;
}

void mp_flush(void)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe)
        mpr_misuse(MP_ERR_BAD_STATE, "mp_flush outside a running PE (there is nothing to send)");
    else if (pe->agg_grouped)
        mpr_machine_group_flush(pe, MPR_AGG_DRAIN);
    else
        mpr_flush_all(pe);
}

/* Makes the fiber of an arrived FIFO record without a payload and links it after *tailp
 * (mpr_fiber_spawn's work, less the enqueue's test and its stores to the queue, which the poll
 * does once).  Arguments are padded to 16 bytes in the record and in the slot. */
static inline mpr_fiber **arrive_fifo(mpr_pe *pe, const mpr_record *r, mpr_fiber **tailp)
{
    size_t size = r->args_size;
    mpr_slot_class cls = mpr_slot_class_of(size);
    mpr_fiber *f = mpr_slot_get(pe, cls);
    const unsigned char *p = (const unsigned char *)(r + 1);
    mpr_args_copy_padded(f->args, p, size);
    RTS_INC(&pe->rts, ThreadContext, size); /* where the context is made, size at hand */
    /* the sender's category is both creator and enabler (mpr_tag_make's bytes 1 and 2) */
    uint64_t tag = mpr_tag_make(pe, MP_SCHED_FIFO, 0, 0, MPR_FIBER_ENABLED, cls) |
                   (uint64_t)r->access * 0x10100u;
    mpr_fiber_init(pe, f, mpr_record_fn(r->fn_src), tag);
    *tailp = f;
    return &f->next;
}

/* Opens a carrier (mpr_carrier.h) for the FIFO records of b from `off` on and links it after
 * *tailp; the poll writes its end when the run of such records ends. */
static inline mpr_carrier_args *carrier_open(mpr_pe *pe, mpr_msgbuf *b, size_t off,
                                             mpr_fiber ***tailp)
{
    mpr_fiber *c = mpr_slot_get(pe, MPR_SLOT_TINY);
    c->fn = mpr_carrier_fn;
    c->idle_at_create = MPR_CARRIER_STAMP;
    c->wait_value = pe->c_total; /* the records' creation stamp */
    c->tag.word = mpr_tag_make(pe, MP_SCHED_FIFO, 0, 0, MPR_FIBER_ENABLED, MPR_SLOT_TINY);
    mpr_carrier_args *ca = (mpr_carrier_args *)c->args;
    ca->buf = b;
    ca->off = (uint32_t)off;
    b->carriers++;
    **tailp = c;
    *tailp = &c->next;
    return ca;
}

/* The poll is done with b: it goes back to the machine now, or when its last carrier has run
 * (mpr_carrier_done). */
static inline void buf_polled(mpr_pe *pe, mpr_msgbuf *b, bool carry)
{
    RTS_INC(&pe->rts, ByteRecv, b->len);
    if (carry && b->carriers)
        b->polled = 1;
    else
        mpr_machine_processed(pe, b);
}

void mpr_carrier_done(mpr_pe *pe, mpr_msgbuf *b)
{
    if (--b->carriers == 0 && b->polled)
        mpr_machine_processed(pe, b);
}

/* Turns arrived records into runnable work; returns whether anything arrived.  A poll takes
 * at most MPR_POLL_BUDGET records and keeps the rest, down to the record, for the next one.
 * The dispatch loop polls every K fibers, so a sender far ahead would otherwise grow the
 * receiver's queues by a buffer per poll, and the work would spill out of cache long before
 * it ran.
 *
 * The common record, FIFO without a payload, is told apart by one compare of its scheduler
 * byte (a payload sets MPR_RECORD_PAYLOAD there; while the receive hooks are on, no byte
 * matches and every record takes the general way).  The first of a run of such records in a
 * buffer becomes a fiber (arrive_fifo), the others one carrier (mpr_carrier.h): a carrier
 * saves about 40 instructions a record over a fiber and costs about 60 once, so a message of
 * one record (no aggregation) stays a fiber.  Both are linked to a chain the poll appends to
 * the FIFO queue; the chain is closed before any other record, whose function may run now (a
 * preemptive one) and enable FIFO fibers itself.  Their argument bytes count in ThreadContext
 * where they are copied into a context (arrive_fifo, the carrier's frame: sched.c), where the
 * size is in a register anyway: summed here, each record's size cost a load and an add (0.17 %
 * of PIPE's instructions, a sixth of what its statistics cost).
 *
 * Specialised twice (mpr_poll below): `carry` is the PE's setting (pe->carriers: on when
 * MPROF_CARRIERS is and records are aggregated), and without it the poll is what it was before
 * carriers, with none of their bookkeeping (about 16 instructions a message, which a message
 * of one record paid for nothing). */
static inline __attribute__((always_inline)) bool poll_records(mpr_pe *pe, const bool carry)
{
    mpr_msgbuf *b = pe->rx_pending;
    size_t off = pe->rx_off;
    if (!b) {
        if (!(b = mpr_machine_take(pe)))
            return false;
        off = 0;
    }
    unsigned made = 0, direct = 0; /* records taken; of them, run from the buffer */
    unsigned fwd = 0;              /* of them, forwarded to their destination */
    unsigned carried = 0;          /* of them, in carriers */
    const unsigned fast = MPR_OBS_HOT_ON() ? 256u : MP_SCHED_FIFO; /* 256: no record's */
    mpr_queue *fifo = &pe->queue[MP_SCHED_FIFO];
    mpr_fiber **tailp = fifo->tailp;
    mpr_carrier_args *run = NULL; /* the open carrier */
    bool lone = true;             /* no FIFO record just before this one in this buffer */
    while (b) {
        if (carry && !off) {
            b->carriers = 0;
            b->polled = 0;
        }
        while (off < b->len) {
            if (made == MPR_POLL_BUDGET)
                goto out;
            const mpr_record *r = (const mpr_record *)(b->data + off);
            if (MPR_LIKELY(r->sched == fast)) {
                if (!run) {
                    if (!carry || lone) {
                        /* the first of a run, perhaps the only one: a fiber (every record
                         * without carriers) */
                        lone = false;
                        tailp = arrive_fifo(pe, r, tailp);
                        off += r->total;
                        made++;
                        continue;
                    }
                    run = carrier_open(pe, b, off, &tailp);
                }
                /* The rest of the run, which its carrier runs: only the headers read here,
                 * in a loop of its own that counts `carried` from `made` once.  Taken one at
                 * a time by the record loop, with its tests for the other cases, a carried
                 * record cost 18 instructions; here about 9 (its argument bytes count in the
                 * carrier that runs it). */
                unsigned from = made;
                do {
                    off += r->total;
                    made++;
                    if (off >= b->len || made == MPR_POLL_BUDGET)
                        break;
                    r = (const mpr_record *)(b->data + off);
                } while (r->sched == fast);
                carried += made - from;
                continue;
            }
            lone = true;
            if (run) {
                run->end = (uint32_t)off;
                run = NULL;
            }
            off += r->total;
            made++;
            *tailp = NULL; /* the chain so far is the queue's */
            fifo->tailp = tailp;
            if (MPR_UNLIKELY(r->sched & MPR_RECORD_ROUTE)) {
                forward(pe, r);
                fwd++;
                continue;
            }
            const unsigned char *p = (const unsigned char *)(r + 1);
            unsigned sched = r->sched & ~MPR_RECORD_PAYLOAD;
            if (MPR_UNLIKELY(r->sched & MPR_RECORD_PAYLOAD)) {
                const mpr_record_payload *h = (const mpr_record_payload *)p;
                p += sizeof *h;
                mpr_transfer =
                    (mpr_transfer_note){"write or store to", src_of(r->fn_src), h->dst, h->size};
                memcpy(h->dst, p + align16(r->args_size), h->size);
                mpr_transfer.what = NULL;
            }
            MPR_OBSERVE_HOT(recv, pe, src_of(r->fn_src), r->total);
            if (MPR_UNLIKELY(sched == MP_SCHED_PREEMPT) && mpr_direct_ok(pe)) {
                /* straight from the buffer: the arguments stay where they arrived */
                mpr_run_direct(pe, mpr_record_fn(r->fn_src), p, r->access);
                direct++;
            } else {
                mpr_fiber_spawn(pe, mpr_record_fn(r->fn_src), p, r->args_size, sched, r->access,
                                true);
            }
            tailp = fifo->tailp;
        }
        if (run) {
            run->end = (uint32_t)off;
            run = NULL;
        }
        lone = true;
        mpr_msgbuf *next = b->next;
        buf_polled(pe, b, carry);
        b = next;
        off = 0;
    }
out:
    if (run)
        run->end = (uint32_t)off;
    *tailp = NULL;
    fifo->tailp = tailp;
    RTS_INC(&pe->rts, ThreadArrived, made - direct - fwd); /* once per poll, not per record */
    if (carry)
        RTS_INC(&pe->rts, ThreadCarried, carried);
    if (MPR_UNLIKELY(direct))
        RTS_INC(&pe->rts, ThreadDirect, direct);
    pe->rx_pending = b;
    pe->rx_off = off;
    return true;
}

bool mpr_poll(mpr_pe *pe)
{
    return pe->carriers ? poll_records(pe, true) : poll_records(pe, false);
}
