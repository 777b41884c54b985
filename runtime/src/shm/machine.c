/*
 * shm/machine.c -- the shared-memory backend: PEs multiplexed over worker threads in one
 * process.
 *
 * Workers.  P PEs run on W = min(P, usable CPUs) worker threads (MPROF_WORKERS overrides W),
 * each worker hosting a contiguous block of PEs, so that neighbours in a pipeline or a grid
 * mostly share a worker.  A worker with one PE runs it on its own stack, exactly as a thread
 * per PE did.  A worker with several multiplexes them (mux.h, mux.c: a context per PE, run
 * cooperatively; a PE that runs out of work parks and switches back to its worker, which
 * resumes the next PE that has messages), and its PEs share aggregation buffers (group.h,
 * group.c).  A hand-off between two PEs of one worker is thus a queue push and two context
 * switches, with no system call; PEs only cost the operating system a futex sleep when their
 * whole worker is idle.  The backend's per-PE and per-worker state is in worker.h.
 *
 * Messages.  Every (sender worker, receiver PE) pair that talks gets a channel of its own: a
 * bounded single-producer single-consumer ring of buffer pointers (Lamport's queue).  The
 * producer's tail and the consumer's head lie on separate cache lines; the producer keeps a
 * copy of head and re-reads it only when its copy says the ring is full, and the consumer reads
 * the tail once per drain, so these lines move once per batch, not once per message, and no
 * word is written by every sender of a PE (the old inbox was one lock-free stack per PE that
 * every sender CAS'd).  A channel per (worker, PE) rather than per (PE, PE): the PEs of a
 * worker run one at a time on its thread, so the worker is a single producer for all of them,
 * and there are at most W * P channels instead of P * P (W = cores by default: 16 K at 1024 PEs
 * on 16 cores); with a thread per PE the two are the same.  Order per sender is kept: a PE's
 * records to one receiver all go through one channel, in order.
 * Channels are made by their producer on first use, carved from its 64 KB chunks; a ring has
 * 64 slots while W <= 64, fewer as W grows (4 at W >= 1024: 192 bytes a channel), and
 * MPROF_SHM_RING overrides it.  So P = 1024 PEs of which few pairs talk cost little; with a
 * thread per PE and each PE sending to 200-400 others (600 000 channels, both directions) the
 * channels add 145 MB, and all-to-all would need 2 M channels, 400 MB (too much with the
 * buffers: such programs want the default workers).
 * A full ring neither blocks nor drops: the producer holds what does not fit on a chain of its
 * own (linked through the buffers) and publishes the whole chain as one slot (its last buffer
 * in the slot's twin, so the consumer does not walk it) as soon as a slot is free: when it next
 * sends there, polls, idles or is about to sleep.  A consumer that frees slots of a ring whose
 * producer holds a chain wakes the producer's worker (the producer sets `blocked` then re-reads
 * head, the consumer stores head then reads `blocked`, seq_cst: one of them sees the other).
 * Receivers poll only channels with work: each PE has a bitmap of its producers; a producer
 * sets its bit only when the channel goes from idle to busy (the consumer set `idle` after
 * finding it empty), i.e. once per burst, and the consumer clears the bits it takes.  A
 * consumer that marks a channel idle then re-reads its tail (seq_cst), and a producer reads
 * `idle` after its tail store; the producer's read is plain on the fast path (a seq_cst store
 * per message waits for the tail's line, which the consumer keeps reading), so a channel
 * whose `idle` read 0 is listed and read again after one seq_cst fence at the producer's next
 * poll, idle or sleep (fence_check).  Either the producer sees `idle` and sets the bit, or the
 * consumer sees the tail and keeps the bit: no notification is lost, at worst delayed to the
 * producer's next poll.  The same store-then-check pairing guards sleep: a producer that sets
 * a bit (seq_cst) then reads the worker's `sleeping` flag, and a worker about to sleep sets
 * the flag and then reads its PEs' bitmaps.
 * Pooled buffers go back to their sender the same way, through a second set of channels
 * (receiver's worker -> sender PE, bitmap per sender) that the sender drains when its pool is
 * empty (comm.c reclaim, through the machine's `returned` entry); returns wake nobody.
 * Idle workers sleep on a futex.  Termination uses one word: active PEs in the high half,
 * physical messages in flight in the low half; the PE that brings it to zero ends the run.
 * Neither half is updated per message: a receiver reports what it processed when it goes idle,
 * and a sender takes SEND_CREDIT messages' worth of the count at a time and gives back what it
 * did not use when it goes idle.  The low half thus never counts fewer messages than are in
 * flight (a message is covered before it exists and uncovered only after it was processed), so
 * it reaches zero only once every PE is idle and every message processed (a held chain is
 * covered too); and the word, which every PE's atomics would otherwise move between the cores
 * once per message, moves once per SEND_CREDIT messages and per idle period.
 * The functions are reached through the table mpr_machine_shm (machine.h).
 */
#define _GNU_SOURCE
#include "affinity.h"
#include "mux.h"

#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ONE_ACTIVE ((uint64_t)1 << 32)
/* A channel slot holding a chain of buffers rather than one (buffers are 16-byte aligned). */
#define CHAIN ((uintptr_t)1)
/* Memory a worker takes at a time for the channels it creates. */
#define CHAN_CHUNK ((size_t)64 << 10)
/* Messages a PE may send on one increment of `activity` (see "Messages" above). */
#define SEND_CREDIT 256
/* One more burst on a channel's own count (ChanNotify, ChanDrain: shm_chan_counts), a relaxed
 * store because a statistics reader may sum it meanwhile; gone with the statistics. */
#ifndef MPROF_DISABLE
#define CHAN_COUNT(field) __atomic_store_n(&(field), (field) + 1, __ATOMIC_RELAXED)
#else
#define CHAN_COUNT(field) ((void)0)
#endif

typedef struct shm_net shm_net;

/* A channel from one worker (producer) to one PE (consumer); see "Messages" above. */
struct shm_chan {
    /* the producer's line: written per message by the producer, read by the consumer once
     * per drain (tail, blocked) and written by it once per burst (idle) */
    _Alignas(64) _Atomic(uint64_t) tail; /* slots published */
    uint64_t head_seen;                  /* the producer's copy of head */
    mpr_msgbuf *held, *held_last;        /* chain waiting for a free slot (ring full) */
    struct shm_chan *backlog_next;       /* in the producer worker's backlog list */
    struct shm_chan *unfenced_next;      /* in the producer worker's unfenced list */
    /* Found empty by the consumer: the next publish notifies.  Read by the producer per
     * message, so on its own line: the consumer's rare write costs no more than its tail read
     * per drain, whereas on the head's line every drain's head store first took the line back
     * from the producer's core (33 % of net_take's samples in rt_micro's unaggregated stream). */
    _Atomic(int) idle;
    _Atomic(uint8_t) blocked; /* a chain is held: the consumer wakes the producer */
    bool unfenced;            /* published since the worker's last fence_check */
    bool in_backlog;
    /* Notifications made (rts ChanNotify, summed by shm_chan_counts): kept here, on the line
     * the notification's exchange of `idle` has just taken, rather than in the sending PE's
     * record, which cost a walk to the PE the worker runs (0.1-0.2 % of PIPE's instructions) */
    uint64_t notified;
    /* the consumer's line: written once per drain, read by the producer only when its copy
     * of head says the ring is full; the constants are read by the producer once per burst */
    _Alignas(64) _Atomic(uint64_t) head; /* slots consumed */
    int dst;                             /* consumer PE */
    int producer;                        /* producer worker */
    shm_net *net;                        /* messages or returns */
    uint64_t drained; /* taken by its bit (rts ChanDrain, summed by shm_chan_counts) */
    /* N.ring slots: a buffer, or the first of a chain with CHAIN set, then N.ring more: the last
     * buffer of the chain in the slot (so that taking a chain does not walk it) */
    _Alignas(64) uintptr_t slot[];
};
_Static_assert(offsetof(shm_chan, head) == 64 && offsetof(shm_chan, slot) == 128,
               "a channel is two lines and its slots");

/* One direction of traffic: messages (to be processed) or returned pooled buffers. */
struct shm_net {
    /* per consumer PE, `stride` words a cache line apart: bit k = worker k's channel has work */
    _Atomic(uint64_t) *ready;
    /* [consumer * nworkers + producer]: the consumer's view of the channels (set by the
     * producer when it creates one, published to the consumer by the bit) */
    shm_chan **in;
    size_t words, stride;
    bool wakes; /* a notification wakes a sleeping consumer (messages, not returns) */
};

shm_state mpr_shm;

/* The channels of the run (see "Messages" above). */
static struct {
    shm_net msg, ret;
    uint64_t ring; /* slots per channel, a power of two */
} N;

/* The termination word (see "Messages" above): active PEs << 32 | physical messages in flight.
 * Written on every idle period and every SEND_CREDIT messages, so on a cache line of its own:
 * sharing one with read-mostly state made every read of that state miss on the PE that had not
 * written last.  Only this backend uses it (MPI detects termination with waves). */
static _Alignas(64) _Atomic(uint64_t) activity;
static char activity_line[64 - sizeof(uint64_t)] __attribute__((unused));

static void futex_wait(_Atomic(uint32_t) *word, uint32_t expected, double timeout_s)
{
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (double)(time_t)timeout_s) * 1e9)};
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

static void futex_wake(_Atomic(uint32_t) *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void wake(shm_worker *w)
{
    atomic_fetch_add(&w->wake_seq, 1);
    futex_wake(&w->wake_seq);
}

static void shm_wake_all(void);

/* ---------------------------------------------------------------------------------- */
/* Channels                                                                              */

static inline _Atomic(uint64_t) *ready_of(const shm_net *net, int pe)
{
    return net->ready + (size_t)pe * net->stride;
}

static int net_init(shm_net *net, int npes, int nw, bool wakes)
{
    net->words = ((size_t)nw + 63) / 64;
    net->stride = (net->words + 7) & ~(size_t)7; /* whole cache lines per PE */
    net->wakes = wakes;
    /* calloc: the tables of a large machine are mostly untouched zero pages */
    net->ready = aligned_alloc(64, net->stride * (size_t)npes * sizeof *net->ready);
    net->in = calloc((size_t)npes * (size_t)nw, sizeof *net->in);
    if (!net->ready || !net->in)
        return -1;
    for (size_t i = 0; i < net->stride * (size_t)npes; i++)
        atomic_init(&net->ready[i], 0);
    return 0;
}

static shm_chan *chan_new(shm_net *net, shm_worker *w, int dst)
{
    /* carved out of the producer's chunks: with a thread per PE there may be hundreds of
     * thousands of channels, and malloc's header and alignment padding would add a third */
    size_t size = (sizeof(shm_chan) + 2 * N.ring * sizeof(uintptr_t) + 63) & ~(size_t)63;
    if (w->chunk_left < size) {
        /* a ring of more than 2032 slots (MPROF_SHM_RING) does not fit a chunk: such a
         * channel gets a chunk of its own size */
        size_t bytes = size + 64 > CHAN_CHUNK ? size + 64 : CHAN_CHUNK;
        unsigned char *chunk = aligned_alloc(64, bytes);
        if (!chunk)
            mpr_fatal("out of memory allocating a channel to PE %d", dst);
        *(void **)chunk = w->chunks; /* the first line links the worker's chunks */
        w->chunks = chunk;
        w->chunk_next = chunk + 64;
        w->chunk_left = bytes - 64;
    }
    shm_chan *ch = (shm_chan *)w->chunk_next;
    w->chunk_next += size;
    w->chunk_left -= size;
    memset(ch, 0, size);
    atomic_init(&ch->tail, 0);
    atomic_init(&ch->head, 0);
    atomic_init(&ch->blocked, 0);
    atomic_init(&ch->idle, 1); /* nothing published yet: the first publish notifies */
    ch->dst = dst;
    ch->producer = w->id;
    ch->net = net;
    /* the consumer reads this entry only after the bit the first publish sets (release) */
    __atomic_store_n(&net->in[(size_t)dst * (size_t)mpr_shm.nworkers + (size_t)w->id], ch,
                     __ATOMIC_RELEASE); /* (also walked by shm_chan_counts) */
    return ch;
}

/* Tells the consumer that the channel has work: sets its bit and wakes its worker if asleep,
 * unless the consumer has not marked the channel idle (it still polls it) or the producer's
 * notification was taken already.  Returns whether a sleeping worker was woken. */
static bool signal(shm_chan *ch)
{
    if (!atomic_exchange(&ch->idle, 0))
        return false;
    shm_net *net = ch->net;
    atomic_fetch_or(&ready_of(net, ch->dst)[ch->producer / 64], (uint64_t)1 << (ch->producer % 64));
    CHAN_COUNT(ch->notified);
    /* seq_cst bit then load pairs with the sleeper's store-then-check: no lost wake-up.  A PE
     * of the producer's own worker is never asleep while the producer runs. */
    shm_worker *to = mpr_shm.pes[ch->dst].w;
    if (net->wakes && to->id != ch->producer && atomic_load(&to->sleeping)) {
        wake(to);
        return true;
    }
    return false;
}

/* After a publish (a release store of tail): notifies the consumer if it marked the channel
 * idle, once per burst.  The load of `idle` is plain: a seq_cst store of the tail per message
 * (a locked instruction that waits for the tail's cache line, which the consumer read) cost
 * more than the rest of the send.  A stale 0 read here would lose the notification if the
 * consumer is marking the channel idle at the same moment (chan_settle), so the channel is
 * listed and fence_check, at the producer's next poll and before it idles or sleeps, reads
 * `idle` again after a seq_cst fence: one fence per poll instead of one per message. */
static inline bool notify(shm_worker *w, shm_chan *ch)
{
    if (atomic_load_explicit(&ch->idle, memory_order_relaxed))
        return signal(ch);
    if (!ch->unfenced) {
        ch->unfenced = true;
        ch->unfenced_next = w->unfenced;
        w->unfenced = ch;
    }
    return false;
}

/* The fenced second look at the channels published to since the last one (see notify; the
 * worker's thread only).  Returns the sleeping workers woken. */
static int fence_check(shm_worker *w)
{
    if (!w->unfenced)
        return 0;
    /* pairs with chan_settle's seq_cst idle store then tail load: either this sees `idle` or
     * the consumer sees the tail */
    atomic_thread_fence(memory_order_seq_cst);
    int woken = 0;
    for (shm_chan *ch = w->unfenced; ch; ch = ch->unfenced_next) {
        ch->unfenced = false;
        if (atomic_load_explicit(&ch->idle, memory_order_relaxed))
            woken += signal(ch);
    }
    w->unfenced = NULL;
    return woken;
}

/* Publishes the held chain as one slot if the ring has room (producer only). */
static bool chan_release(shm_worker *w, shm_chan *ch)
{
    if (!ch->held) /* published already (a send found room), still listed in the backlog */
        return true;
    uint64_t t = atomic_load_explicit(&ch->tail, memory_order_relaxed);
    if (t - ch->head_seen == N.ring) {
        /* seq_cst: after the producer's `blocked` store (chan_hold), pairs with the consumer's
         * head store then `blocked` load (chan_drain) */
        ch->head_seen = atomic_load(&ch->head);
        if (t - ch->head_seen == N.ring)
            return false;
    }
    ch->slot[t & (N.ring - 1)] = (uintptr_t)ch->held | (ch->held != ch->held_last ? CHAIN : 0);
    ch->slot[N.ring + (t & (N.ring - 1))] = (uintptr_t)ch->held_last;
    ch->held = ch->held_last = NULL;
    atomic_store_explicit(&ch->blocked, 0, memory_order_relaxed);
    atomic_store_explicit(&ch->tail, t + 1, memory_order_release);
    notify(w, ch);
    return true;
}

/* The ring is full: b waits on the channel's held chain, and the channel in the producer
 * worker's backlog, until a slot is free. */
static void chan_hold(shm_worker *w, shm_chan *ch, mpr_msgbuf *b)
{
    if (ch->held)
        ch->held_last->next = b;
    else
        ch->held = b;
    ch->held_last = b;
    if (!ch->in_backlog) {
        ch->in_backlog = true;
        ch->backlog_next = w->backlog;
        w->backlog = ch;
    }
    if (!atomic_load_explicit(&ch->blocked, memory_order_relaxed)) /* the producer's own word */
        atomic_store(&ch->blocked, 1);
}

/* Publishes the chains of the worker's full channels that have room now (its thread only). */
static void backlog_flush(shm_worker *w)
{
    shm_chan **link = &w->backlog;
    while (*link) {
        shm_chan *ch = *link;
        if (chan_release(w, ch)) {
            ch->in_backlog = false;
            *link = ch->backlog_next;
        } else {
            link = &ch->backlog_next;
        }
    }
}

/* The producer's deferred work, at each poll, before it idles and before it sleeps: held
 * chains that fit now, and the fenced look at `idle` (the worker's thread only).  Returns the
 * sleeping workers woken. */
static inline int catch_up(shm_worker *w)
{
    if (MPR_UNLIKELY(w->backlog != NULL))
        backlog_flush(w);
    return fence_check(w);
}

void mpr_shm_catch_up(shm_worker *w) { catch_up(w); }

/* catch_up on pe's behalf, its wake-ups counted.  Not written as RTS_INC(..., catch_up(w)):
 * built without statistics (MPROF_DISABLE) the hook does not evaluate its argument, and held
 * chains would never go out nor notifications be re-checked. */
static inline void catch_up_counted(mpr_pe *pe, shm_worker *w)
{
    int woken = catch_up(w);
    if (MPR_UNLIKELY(woken)) /* seldom: most catch-ups wake nobody */
        RTS_INC(&pe->rts, Wakes, woken);
}

/* Can a held chain of the worker be published now (its thread only)? */
static bool backlog_ready(const shm_worker *w)
{
    for (const shm_chan *ch = w->backlog; ch; ch = ch->backlog_next)
        if (atomic_load(&ch->tail) - atomic_load(&ch->head) < N.ring)
            return true;
    return false;
}

/* Sends b from worker w to PE dst on `net` (w's thread only).  Returns whether a sleeping
 * worker was woken. */
static bool chan_put(shm_net *net, shm_chan **out, shm_worker *w, int dst, mpr_msgbuf *b)
{
    shm_chan *ch = out[dst];
    if (MPR_UNLIKELY(!ch)) {
        ch = chan_new(net, w, dst);
        __atomic_store_n(&out[dst], ch, __ATOMIC_RELEASE); /* shm_chan_counts may walk out[] */
    }
    b->next = NULL;
    if (MPR_UNLIKELY(ch->held != NULL)) { /* behind the held chain: order per sender */
        chan_hold(w, ch, b);
        chan_release(w, ch);
        return false;
    }
    uint64_t t = atomic_load_explicit(&ch->tail, memory_order_relaxed);
    if (MPR_UNLIKELY(t - ch->head_seen == N.ring)) {
        ch->head_seen = atomic_load_explicit(&ch->head, memory_order_acquire);
        if (t - ch->head_seen == N.ring) {
            chan_hold(w, ch, b);
            chan_release(w, ch); /* re-check after `blocked` is set (the consumer may have gone) */
            return false;
        }
    }
    ch->slot[t & (N.ring - 1)] = (uintptr_t)b;
    atomic_store_explicit(&ch->tail, t + 1, memory_order_release); /* the slot before it */
    return notify(w, ch);
}

/* Appends every published chain of ch to *tailp (consumer only); returns the new tail link. */
static mpr_msgbuf **chan_drain(shm_chan *ch, mpr_msgbuf **tailp)
{
    uint64_t h = atomic_load_explicit(&ch->head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&ch->tail, memory_order_acquire);
    if (h == t)
        return tailp;
    for (; h != t; h++) {
        uintptr_t v = ch->slot[h & (N.ring - 1)];
        mpr_msgbuf *b = (mpr_msgbuf *)(v & ~CHAIN);
        *tailp = b;
        /* a lone buffer's next is NULL already, a chain's last is in the slot's twin: reading
         * next here would wait for each buffer's cache line, which the sender's core holds */
        if (MPR_UNLIKELY(v & CHAIN))
            b = (mpr_msgbuf *)ch->slot[N.ring + (h & (N.ring - 1))];
        tailp = &b->next;
    }
    /* seq_cst store then load of `blocked` pairs with the producer's blocked store then head
     * load: a producer holding a chain either sees the freed slots or is woken */
    atomic_store(&ch->head, t);
    if (MPR_UNLIKELY(atomic_load(&ch->blocked))) {
        shm_worker *pw = &mpr_shm.workers[ch->producer];
        if (pw != mpr_shm.pes[ch->dst].w && atomic_load(&pw->sleeping))
            wake(pw);
    }
    return tailp;
}

/* After a drain: marks ch idle unless it has work again.  Returns false when the consumer must
 * keep its bit (something arrived and the producer will not set the bit).  The idle store then
 * tail load (seq_cst) pairs with the producer's tail store, fence, idle load (fence_check):
 * either the producer sees `idle` and notifies, or this sees the new tail. */
static bool chan_settle(shm_chan *ch)
{
    atomic_store(&ch->idle, 1);
    if (atomic_load(&ch->tail) == atomic_load_explicit(&ch->head, memory_order_relaxed))
        return true;
    /* work arrived: whoever takes `idle` back owns the notification */
    return !atomic_exchange(&ch->idle, 0);
}

/* Drains every channel of `net` into PE `pe` that has work, oldest first per channel, onto
 * *tailp; returns the new tail link (the PE's worker's thread only).  Each channel taken by
 * its bit counts as a drain (ChanDrain), whether or not it still holds buffers: a
 * notification made at the producer's fenced second look may announce buffers that an earlier
 * drain took already, and the drain and settle it costs are paid all the same. */
static mpr_msgbuf **net_take(shm_net *net, int pe, mpr_msgbuf **tailp)
{
    _Atomic(uint64_t) *ready = ready_of(net, pe);
    shm_chan **in = net->in + (size_t)pe * (size_t)mpr_shm.nworkers;
    for (size_t i = 0; i < net->words; i++) {
        if (!atomic_load_explicit(&ready[i], memory_order_relaxed))
            continue;
        uint64_t bits = atomic_exchange_explicit(&ready[i], 0, memory_order_acquire);
        uint64_t keep = 0;
        while (bits) {
            int k = __builtin_ctzll(bits);
            bits &= bits - 1;
            shm_chan *ch = in[i * 64 + (size_t)k];
            /* counted on the channel's consumer line, which chan_drain's head store takes
             * anyway: a count carried through this loop for the PE's record made the loop
             * spill registers (0.2 % of PIPE's instructions) */
            CHAN_COUNT(ch->drained);
            tailp = chan_drain(ch, tailp);
            if (!chan_settle(ch))
                keep |= (uint64_t)1 << k;
        }
        if (keep)
            atomic_fetch_or(&ready[i], keep);
    }
    return tailp;
}

/* Has any channel of `net` into PE `pe` work?  (seq_cst: the sleeper's check) */
static bool net_ready(const shm_net *net, int pe)
{
    _Atomic(uint64_t) *ready = ready_of(net, pe);
    for (size_t i = 0; i < net->words; i++)
        if (atomic_load(&ready[i]))
            return true;
    return false;
}

/* After the run: frees the channels and whatever they still hold (returned buffers nobody
 * reclaimed; messages only after an abnormal end). */
static void net_free(shm_net *net, int npes)
{
    if (net->in)
        for (size_t i = 0; i < (size_t)npes * (size_t)mpr_shm.nworkers; i++) {
            shm_chan *ch = net->in[i];
            if (!ch)
                continue;
            uint64_t t = atomic_load(&ch->tail);
            for (uint64_t h = atomic_load(&ch->head); h != t; h++)
                mpr_msgbuf_free_list((mpr_msgbuf *)(ch->slot[h & (N.ring - 1)] & ~CHAIN));
            mpr_msgbuf_free_list(ch->held); /* the channel is its producer's chunk */
        }
    free(net->in);
    free(net->ready);
    net->in = NULL;
    net->ready = NULL;
}

/* ---------------------------------------------------------------------------------- */
/* The machine's messages                                                                */

/* Counts a message about to be sent by sp's PE in flight (its worker's thread only). */
static inline void count_in_flight(shm_pe *sp)
{
    if (MPR_UNLIKELY(sp->credit == 0)) {
        atomic_fetch_add(&activity, SEND_CREDIT);
        sp->credit = SEND_CREDIT;
    }
    sp->credit--;
}

static void shm_send(mpr_pe *from, int dst, mpr_msgbuf *b)
{
    shm_pe *sp = &mpr_shm.pes[from->id];
    if (!b->counted) /* a group buffer was counted when it was opened */
        count_in_flight(sp);
    if (chan_put(&N.msg, sp->w->out_msg, sp->w, dst, b))
        RTS_INC(&from->rts, Wakes, 1);
}

/* The channels' buffers, oldest first per sender, then the buffer the PE's worker group has
 * open for it, which is newer than any buffer of the group in the channel from its own worker
 * (those were sent when full). */
static mpr_msgbuf *shm_take(mpr_pe *pe)
{
    shm_pe *sp = &mpr_shm.pes[pe->id];
    mpr_msgbuf *fifo = NULL, **tailp = &fifo;
    if (sp->w->backlog || sp->w->unfenced)
        catch_up_counted(pe, sp->w);
    tailp = net_take(&N.msg, pe->id, tailp);
    /* A chain the PE's own worker holds for it (the ring filled while the producer ran, on
     * this very thread) is older than the group buffer below: it fits now, the ring is empty. */
    shm_chan *own = sp->w->out_msg[pe->id];
    if (MPR_UNLIKELY(own && own->held)) {
        backlog_flush(sp->w);
        tailp = net_take(&N.msg, pe->id, tailp);
    }
    if (mpr_shm_group_open_for(sp->w->group, pe->id)) {
        mpr_msgbuf *open = mpr_shm_group_take(sp->w->group, pe->id);
        mpr_agg_count(mpr_g.pes[open->src], MPR_AGG_TAKEN);
        open->next = NULL;
        *tailp = open;
    }
    return fifo;
}

/* Has the PE a message: on a channel, or open for it in its worker's group? */
static inline int inbox_pending(const shm_pe *sp)
{
    return net_ready(&N.msg, sp->pe->id) ||
           mpr_shm_group_open_for(sp->w->group, sp->pe->id) != NULL;
}

bool mpr_shm_inbox_pending(const shm_pe *sp) { return inbox_pending(sp); }

static int shm_pending(mpr_pe *pe)
{
    shm_pe *sp = &mpr_shm.pes[pe->id];
    if (sp->w->backlog || sp->w->unfenced) /* the idle loop polls here */
        catch_up_counted(pe, sp->w);
    return inbox_pending(sp);
}

static void shm_processed(mpr_pe *pe, mpr_msgbuf *b)
{
    if (b->kind == MPR_BUF_POOLED) {
        /* give the buffer back to its sender: the flow-control message of this backend */
        shm_worker *w = mpr_shm.pes[pe->id].w;
        chan_put(&N.ret, w->out_ret, w, b->src, b);
        RTS_INC(&pe->rts, FlowMsgSent, 1);
    } else {
        mpr_msgbuf_free(b);
    }
    /* Taken off the in-flight count when the PE goes idle, not one by one: the count cannot
     * reach zero while this PE is active anyway, and every atomic on `activity` moves its
     * cache line between the cores (one per message less). */
    mpr_shm.pes[pe->id].processed++;
}

/* The buffers receivers gave back to the PE (comm.c reclaim; its worker's thread only). */
static mpr_msgbuf *shm_returned(mpr_pe *pe)
{
    mpr_msgbuf *list = NULL;
    net_take(&N.ret, pe->id, &list);
    return list;
}

static int shm_idle_enter(mpr_pe *pe)
{
    shm_pe *sp = &mpr_shm.pes[pe->id];
    catch_up_counted(pe, sp->w); /* what this PE sent is seen before it idles */
    uint64_t leaving = ONE_ACTIVE + sp->processed + sp->credit;
    sp->processed = 0;
    sp->credit = 0;
    if (atomic_fetch_sub(&activity, leaving) == leaving) {
        mpr_run_end(MPR_RUN_QUIESCENT);
        shm_wake_all();
        return 1;
    }
    return 0;
}

static void shm_idle_leave(mpr_pe *pe)
{
    (void)pe;
    atomic_fetch_add(&activity, ONE_ACTIVE);
}

/* machine.h group_agg: the PE's worker's group's aggregation, if it has a group */
static mpr_agg *shm_pe_group_agg(mpr_pe *pe)
{
    shm_group *g = mpr_shm.pes[pe->id].w->group;
    return g ? g->agg : NULL;
}

/* machine.h group_open: the group buffer counts as a message in flight from now on */
static void shm_pe_group_open(mpr_pe *pe, int dst)
{
    shm_pe *sp = &mpr_shm.pes[pe->id];
    count_in_flight(sp);
    mpr_shm_group_opened(sp->w->group, dst);
}

static void shm_pe_group_flush(mpr_pe *pe, int why)
{
    mpr_shm_group_flush(mpr_shm.pes[pe->id].w->group, (mpr_agg_why)why);
}

/* Has any PE of the worker a message, can it publish a held chain, or is the run over? */
static int worker_pending(const shm_worker *w)
{
    if (mpr_run_over() || backlog_ready(w))
        return 1;
    for (int i = w->first; i < w->first + w->count; i++)
        if (inbox_pending(&mpr_shm.pes[i]))
            return 1;
    return 0;
}

void mpr_shm_worker_sleep(shm_worker *w, double timeout_s)
{
    catch_up(w);
    uint32_t seq = atomic_load(&w->wake_seq);
    atomic_store(&w->sleeping, 1);
    if (!worker_pending(w))
        futex_wait(&w->wake_seq, seq, timeout_s);
    atomic_store(&w->sleeping, 0);
}

static void shm_sleep(mpr_pe *pe, double timeout_s)
{
    shm_pe *sp = &mpr_shm.pes[pe->id];
    if (!sp->mux) {
        mpr_shm_worker_sleep(sp->w, timeout_s);
        return;
    }
    mpr_shm_mux_park(sp);
}

static void shm_wake_all(void)
{
    for (int i = 0; i < mpr_shm.nworkers; i++)
        wake(&mpr_shm.workers[i]);
}

static void *worker_thread(void *arg)
{
    shm_worker *w = arg;
    if (w->cpu >= 0)
        mpr_shm_affinity_bind(w->cpu);
    if (w->count == 1) {
        mpr_pe_run(mpr_shm.pes[w->first].pe);
        return NULL;
    }
    mpr_shm_mux_worker(w);
    return NULL;
}

/* Online cores this process may use. */
static int online_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int env_int(const char *name, int dflt, int min, int max)
{
    return (int)mpr_env_number(name, dflt, min, max, 1, 0);
}

static int shm_run(void)
{
    int npes = mpr_g.npes;
    atomic_store(&activity, (uint64_t)npes << 32); /* every PE active, nothing in flight */
    int nw = env_int("MPROF_WORKERS", online_cores(), 1, 4096);
    if (nw > npes)
        nw = npes;
    /* a thread's default: mapped without reserve, only the pages a PE touches cost memory */
    mpr_shm.stack_size = (size_t)env_int("MPROF_STACK_KB", 8192, 64, 4 * 1024 * 1024) * 1024;
    mpr_shm.pes = aligned_alloc(64, sizeof *mpr_shm.pes * (size_t)npes);
    mpr_shm.workers = aligned_alloc(64, sizeof *mpr_shm.workers * (size_t)nw);
    if (!mpr_shm.pes || !mpr_shm.workers)
        return -1;
    memset(mpr_shm.pes, 0, sizeof *mpr_shm.pes * (size_t)npes);
    memset(mpr_shm.workers, 0, sizeof *mpr_shm.workers * (size_t)nw);
    mpr_shm.nworkers = nw;
    mpr_g.workers = nw;
    mpr_shm.tls_memsz = 0;
    /* Slots per channel: 64 while the workers are few (a burst of unaggregated sends fits),
     * fewer as W * P channels may exist (4 at W >= 1024: 192 bytes a channel); a full ring
     * only makes the producer hold a chain, published as one slot (see "Messages"). */
    int ring = 64;
    while (ring > 4 && (long)ring * nw > 4096)
        ring /= 2;
    int ring_default = ring;
    ring = env_int("MPROF_SHM_RING", ring, 1, 1 << 16);
    if (ring & (ring - 1)) {
        fprintf(stderr,
                "mprof: ignoring MPROF_SHM_RING=%d (expected a power of two), using the default "
                "%d\n",
                ring, ring_default);
        ring = ring_default;
    }
    N.ring = (uint64_t)ring;
    mpr_g.shm_ring = ring;
    if (net_init(&N.msg, npes, nw, true) != 0 || net_init(&N.ret, npes, nw, false) != 0)
        return -1;
    if (nw < npes)
        mpr_shm_mux_prepare();
    for (int k = 0; k < nw; k++) {
        shm_worker *w = &mpr_shm.workers[k];
        /* contiguous blocks, sizes differing by at most one */
        w->first = (int)((long)npes * k / nw);
        w->count = (int)((long)npes * (k + 1) / nw) - w->first;
        atomic_init(&w->wake_seq, 0);
        atomic_init(&w->sleeping, 0);
        w->id = k;
        w->out_msg = calloc((size_t)npes, sizeof *w->out_msg);
        w->out_ret = calloc((size_t)npes, sizeof *w->out_ret);
        if (!w->out_msg || !w->out_ret)
            return -1;
        for (int i = w->first; i < w->first + w->count; i++) {
            mpr_shm.pes[i].w = w;
            mpr_shm.pes[i].pe = mpr_g.pes[i];
            mpr_shm.pes[i].mux = w->count > 1;
            mpr_shm.pes[i].mux_periods = SHM_MUX_YIELD_PERIODS;
        }
        if (w->count > 1 && mpr_g.cfg.agg_bytes > 0 &&
            !(w->group = mpr_shm_group_new(w->first, w->count, npes)))
            return -1;
    }
    int *cpu_of = malloc(sizeof *cpu_of * (size_t)nw);
    if (!cpu_of)
        return -1;
    mpr_g.pinned_workers = mpr_shm_affinity_plan(nw, cpu_of);
    for (int k = 0; k < nw; k++)
        mpr_shm.workers[k].cpu = mpr_g.pinned_workers ? cpu_of[k] : -1;
    free(cpu_of);
    int started = 0;
    for (; started < nw; started++)
        if (pthread_create(&mpr_shm.workers[started].thread, NULL, worker_thread,
                           &mpr_shm.workers[started]) != 0) {
            /* the started PEs cannot finish without the others: end the process cleanly */
            mpr_fatal("could only start %d of %d worker threads", started, nw);
        }
    for (int i = 0; i < started; i++)
        pthread_join(mpr_shm.workers[i].thread, NULL);
    return 0;
}

static int shm_init(int *npes, int *first, int *count)
{
    *first = 0;
    *count = *npes; /* every PE lives in this process */
    return 0;
}

/* Idle timeout: no PE is active (the high half of the termination word). */
static int shm_all_idle(void) { return (atomic_load(&activity) >> 32) == 0; }

static void shm_fini(void)
{
    for (int k = 0; k < mpr_shm.nworkers; k++) {
        mpr_shm_group_free(mpr_shm.workers[k].group);
        mpr_shm.workers[k].group = NULL;
        free(mpr_shm.workers[k].out_msg);
        free(mpr_shm.workers[k].out_ret);
    }
    net_free(&N.msg, mpr_g.npes);
    net_free(&N.ret, mpr_g.npes);
    for (int k = 0; k < mpr_shm.nworkers; k++)
        while (mpr_shm.workers[k].chunks) {
            void *next = *(void **)mpr_shm.workers[k].chunks;
            free(mpr_shm.workers[k].chunks);
            mpr_shm.workers[k].chunks = next;
        }
    free(mpr_shm.pes);
    free(mpr_shm.workers);
    mpr_shm.pes = NULL;
    mpr_shm.workers = NULL;
    mpr_shm.nworkers = 0;
}

/* machine.h chan_counts: the bursts on pe's channels, summed from the channels' own counts.
 * Drains are those of the channels into pe, of both nets.  Notifications are a producer's,
 * that is a worker's: with a thread per PE they are its PE's, and a worker that runs several
 * charges them all to its first PE (per-PE figures approximate there, their sum exact, as with
 * a group buffer's MsgSent).  Called on pe's thread or by a statistics reader (PAPI), which
 * may run while producers add channels: every pointer and count is read atomically. */
static void shm_chan_counts(const mpr_pe *pe, uint64_t *notified, uint64_t *drained)
{
    const shm_net *nets[2] = {&N.msg, &N.ret};
    const shm_pe *sp = &mpr_shm.pes[pe->id];
    size_t nw = (size_t)mpr_shm.nworkers, npes = (size_t)mpr_g.npes;
    uint64_t n = 0, d = 0;
    for (int k = 0; k < 2; k++) {
        if (!nets[k]->in)
            continue;
        for (size_t w = 0; w < nw; w++) {
            shm_chan *ch = __atomic_load_n(&nets[k]->in[(size_t)pe->id * nw + w], __ATOMIC_ACQUIRE);
            if (ch)
                d += __atomic_load_n(&ch->drained, __ATOMIC_RELAXED);
        }
    }
    if (sp->w && sp->w->first == pe->id) {
        shm_chan **outs[2] = {sp->w->out_msg, sp->w->out_ret};
        for (int k = 0; k < 2; k++)
            for (size_t dst = 0; outs[k] && dst < npes; dst++) {
                shm_chan *ch = __atomic_load_n(&outs[k][dst], __ATOMIC_ACQUIRE);
                if (ch)
                    n += __atomic_load_n(&ch->notified, __ATOMIC_RELAXED);
            }
    }
    *notified = n;
    *drained = d;
}

const mpr_machine mpr_machine_shm = {
    .name = "shm",
    .init = shm_init,
    .run = shm_run,
    .send = shm_send,
    .take = shm_take,
    .processed = shm_processed,
    .idle_enter = shm_idle_enter,
    .idle_leave = shm_idle_leave,
    .sleep = shm_sleep,
    .yield = mpr_shm_yield,
    .wake_all = shm_wake_all,
    .pending = shm_pending,
    .fini = shm_fini,
    .all_idle = shm_all_idle,
    .returned = shm_returned,
    .shares_thread = mpr_shm_shares_thread,
    .period = mpr_shm_period,
    .group_agg = shm_pe_group_agg,
    .group_open = shm_pe_group_open,
    .group_flush = shm_pe_group_flush,
    .chan_counts = shm_chan_counts,
};
