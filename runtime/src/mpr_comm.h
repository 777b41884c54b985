/*
 * mpr_comm.h -- communication: message records, message buffers and their pools, aggregation per
 * destination, and comm.c.  (Aggregation shared by the PEs of a worker thread is the shm
 * backend's: shm/group.h, reached through machine.h.)
 */
#ifndef MPR_COMM_H
#define MPR_COMM_H

#include "mpr_base.h"

#include <stdlib.h>

/* Messages: a physical message carries records, each a fiber to create on arrival and
 * optionally a payload copied to a destination address first (bulk transfers).  A record is
 * a 16-byte header, then (bulk only) a 16-byte payload header, then the arguments and the
 * payload, each padded to 16 bytes.  The common invocation with a few words of arguments
 * thus costs 32 bytes of message. */

typedef struct {
    uint32_t total;     /* record size including headers, args and payload, 16-aligned */
    uint16_t args_size; /* <= MP_FIBER_ARGS_MAX */
    uint8_t sched;      /* the scheduler, | MPR_RECORD_PAYLOAD when a payload follows */
    uint8_t access;     /* category of the invoking fiber: the enabler on arrival */
    /* offset of the fiber function from a reference symbol, so it survives ASLR (MPI), in
     * the high 48 bits (signed); the sending PE in the low 16, because the buffers that the
     * PEs of one worker share carry records of several senders (shm) */
    uint64_t fn_src;
} mpr_record;

#define MPR_RECORD_PAYLOAD 0x80u /* in mpr_record.sched: the poll's common case tests one byte */
/* In mpr_record.sched: the record is on the first of two hops (comm.c, "Routing"); a
 * mpr_record_route follows the header, then the record's body as it will travel on. */
#define MPR_RECORD_ROUTE 0x40u

typedef struct {
    int32_t dst; /* the record's destination, which the PE it was sent to forwards it to */
    uint32_t pad[3];
} mpr_record_route;

typedef struct {
    uint64_t size;
    void *dst;
} mpr_record_payload; /* follows the header when the record carries a payload */

typedef enum { MPR_BUF_POOLED = 0, MPR_BUF_OWNED = 1 } mpr_buf_kind;

/* Large messages (bigger than the aggregation capacity) travel in buffers of a power-of-two
 * capacity from MPR_LARGE_MIN up to MPR_LARGE_MAX, pooled per sender like the others: a
 * malloc and a cross-thread free per message cost several times more than the copy and,
 * worse, vary with allocator contention from run to run.  Bigger ones are allocated. */
#define MPR_LARGE_MIN_LOG2 9
#define MPR_LARGE_MAX_LOG2 20
#define MPR_LARGE_CLASSES (MPR_LARGE_MAX_LOG2 - MPR_LARGE_MIN_LOG2 + 1)
#define MPR_LARGE_CACHE_BYTES ((size_t)4 << 20) /* per PE; beyond it returned ones are freed */

typedef struct mpr_msgbuf {
    struct mpr_msgbuf *next; /* inbox / free list link */
    int src;                 /* the PE whose pool it came from (and returns to) */
    int dst;
    uint16_t kind;    /* mpr_buf_kind */
    uint16_t carved;  /* made in one of its PE's slabs (comm.c buf_carve): never freed alone */
    uint32_t counted; /* already counted in flight when opened (a group buffer: machine.h) */
    size_t len;
    size_t cap;
    /* The receiver's, while it holds the buffer (mpr_carrier.h): carriers of its records not
     * yet run, and whether the poll has passed its end.  Set when the poll reaches it. */
    uint32_t carriers;
    uint32_t polled;
    _Alignas(16) unsigned char data[];
} mpr_msgbuf;

/* Per-destination aggregation state: the open buffer, if any, and what the flush policy needs
 * (comm.c, mpr_flush_due).  A PE keeps at most MPR_AGG_OPEN_MAX buffers open at once, so the
 * buffers a PE holds do not grow with the number of PEs it talks to; 64 lets a PE with a
 * thread of its own keep a buffer filling for every other PE up to 65 PEs (at 4 KiB, 256 KiB
 * per PE), where a smaller bound made round-robin traffic evict every buffer after a record.
 * Beyond 65 such PEs, records travel in two hops (comm.c, "Routing"), and a PE sends to about
 * 2 sqrt(P) others. */
typedef struct mpr_agg {
    mpr_msgbuf *buf;
    uint64_t since_ns;  /* when the buffer opened (monotonic ns; 0 with no delay set) */
    uint32_t fed_epoch; /* the destination's idle period last sent to (mpr_flush_due) */
    uint64_t fed_ns;    /* when it was last sent to because it waited (0: never) */
    bool urgent;        /* holds an urgent record: goes when the fiber that wrote it ends */
    /* ... even though this destination is busy: the urgent record is for a PE that waits, to
     * which this destination forwards it (comm.c, "Routing") */
    bool urgent_on;
} mpr_agg;
#define MPR_AGG_OPEN_MAX 64

/* comm.c */
void mpr_comm_init(mpr_pe *pe);
void mpr_comm_fini(mpr_pe *pe);
/* Frees every buffer of a list linked through `next` (at the end of a run). */
void mpr_msgbuf_free_list(mpr_msgbuf *b);
/* Frees a buffer (NULL: nothing, as free) unless it was carved from a slab (those go with
 * their slabs at the end). */
static inline void mpr_msgbuf_free(mpr_msgbuf *b)
{
    if (b && !b->carved)
        free(b);
}
/* Unmaps the slabs of every PE freed so far (after the machine has let go of its buffers). */
void mpr_comm_slabs_free(void);
mp_err mpr_send_record(mpr_pe *pe, int dst, mp_fiber_fn fn, const void *args, size_t args_size,
                       mp_sched_t sched, const void *payload, size_t payload_size,
                       void *payload_dst);
bool mpr_poll(mpr_pe *pe);
void mpr_flush_all(mpr_pe *pe);
void mpr_flush_due(mpr_pe *pe);
/* Why an aggregation buffer was sent; each reason is a statistic of the rts record (AggFull ..
 * AggTaken), so that a run says what kept its messages small.  MPR_AGG_KEPT: not sent. */
typedef enum {
    MPR_AGG_KEPT = 0,
    MPR_AGG_FULL,  /* the next record did not fit, or the last one filled it */
    MPR_AGG_HALF,  /* half full at a communication period */
    MPR_AGG_AGED,  /* open for the flush delay at a communication period */
    MPR_AGG_FED,   /* its destination waits for work, or for an urgent record in it */
    MPR_AGG_DRAIN, /* with all others: out of work, mp_flush, more than MPR_AGG_OPEN_MAX open */
    MPR_AGG_ORDER, /* ahead of a message sent at once, which must not overtake it */
    MPR_AGG_TAKEN, /* a buffer of a worker's group, taken by its destination on that worker */
} mpr_agg_why;
/* mpr_agg_count (mpr_pe.h) counts a buffer sent for `why`. */
/* Is an open buffer for dst due at a communication period, and why: half full, open for
 * delay_ns (`now` and its opening time are 0 with no delay set), or its destination waiting
 * for work (and not yet fed in this idle period)?  MPR_AGG_KEPT if none.  Asked by
 * mpr_agg_sweep for a PE's buffers and for the shm backend's aggregation groups alike, so both
 * follow one policy. */
mpr_agg_why mpr_agg_due(mpr_agg *a, int dst, size_t cap, uint64_t now, uint64_t delay_ns);
/* Sends a buffer that mpr_agg_due found due (ctx: the caller's). */
typedef void (*mpr_agg_send_fn)(void *ctx, mpr_agg *a, int dst, mpr_agg_why why);
/* A communication period over a list of destinations that may have an open buffer (a PE's, or
 * a worker group's for other workers' PEs): each buffer mpr_agg_due finds due goes by send and
 * leaves the list, as does a destination whose buffer went when full; the others stay, in
 * order.  Clears listed[dst] for each one that leaves; returns how many stay. */
int mpr_agg_sweep(mpr_agg *agg, int *open, int nopen, uint8_t *listed, size_t cap,
                  uint64_t delay_ns, mpr_agg_send_fn send, void *ctx);
void mpr_flush_urgent(mpr_pe *pe);
void mpr_flow_wait(mpr_pe *pe);
/* Sends the buffer open in `a` for dst, which was counted in flight when a PE of an
 * aggregation group opened it (machine.h group_open), as from that PE; its arrival interrupts
 * dst if it holds an urgent record.  For the backend's group flush (shm/group.c). */
void mpr_agg_send_opened(mpr_agg *a, int dst, mpr_agg_why why);
uintptr_t mpr_fn_encode(mp_fiber_fn fn);
static inline mp_fiber_fn mpr_fn_decode(uintptr_t off)
{
    return (mp_fiber_fn)(off + (uintptr_t)&mpr_fn_encode);
}
/* A record's function from its fn_src (the high 48 bits: mpr_fn_encode's offset), inline for
 * the poll and the carriers that run records (arithmetic shift: GCC, Clang). */
static inline mp_fiber_fn mpr_record_fn(uint64_t fn_src)
{
    return mpr_fn_decode((uintptr_t)((int64_t)fn_src >> 16));
}

#endif /* MPR_COMM_H */
