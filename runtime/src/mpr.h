/*
 * mpr.h -- internal declarations shared by the runtime's source files.
 *
 * Everything here is PE-local unless marked otherwise: a PE's fibers, counters, queues and
 * statistics are only touched by the thread that runs that PE, so none of them need atomics.
 * The only shared state is the machine layer (message queues, termination word).
 */
#ifndef MPR_H
#define MPR_H

#include "mp.h"
#include "rts_perf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MPR_MAX_SCHED 16
#define MPR_MAX_ACCESS 64
#define MPR_PREEMPT_DEPTH 16    /* deeper preemptive enables are deferred to the urgent queue */
#define MPR_MUX_YIELD_PERIODS 4 /* a busy multiplexed PE yields every 4 * flush_fibers fibers */

/* Build switches (CMake options MPROF_STATS and MPROF_LATENCY):
 *   MPROF_DISABLE     statistics hooks compile away, the runtime's own included; the profile
 *                     then has no rts object;
 *   MPROF_NO_LATENCY  latency accounting compiles away: fibers do not note the idle total at
 *                     creation and dispatch skips the latency check; the profile's latency rows
 *                     keep their dispatch counts with zero latencies. */
#ifdef MPROF_NO_LATENCY
#define MPR_LATENCY 0
#else
#define MPR_LATENCY 1
#endif

#if defined(__GNUC__)
#define MPR_LIKELY(x) __builtin_expect(!!(x), 1)
#define MPR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MPR_COLD __attribute__((cold, noinline))
#if defined(__clang__)
#define MPR_NOIPA __attribute__((noinline))
#else
#define MPR_NOIPA __attribute__((noipa)) /* keeps the signature: no constprop or ISRA clone */
#endif
#else
#define MPR_NOIPA
#define MPR_LIKELY(x) (x)
#define MPR_UNLIKELY(x) (x)
#define MPR_COLD
#endif

/* ---------------------------------------------------------------------------------- */
/* Fibers                                                                               */

typedef enum {
    MPR_FIBER_FREE = 0,
    MPR_FIBER_CREATED,
    MPR_FIBER_ENABLED,
    MPR_FIBER_EXECUTING
} mpr_fiber_state;

/* Two storage classes keep the slab simple: most fibers carry a few words. */
#define MPR_FIBER_SMALL_ARGS 64
typedef enum { MPR_SLOT_SMALL = 0, MPR_SLOT_LARGE = 1 } mpr_slot_class;

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mpr_fiber_tag packs its fields assuming a little-endian machine"
#endif

/* The small fields of a fiber share one word, so that creating a fiber writes them with a
 * single store built from a per-PE template (mpr_tag_make). */
typedef union {
    struct {
        uint8_t sched;   /* scheduler id: built-ins plus at most MPR_MAX_SCHED custom */
        uint8_t enabler; /* access category of the fiber (or sender) that enabled it */
        uint8_t creator; /* access category of the creating fiber, for diagnosis */
        uint8_t state;   /* mpr_fiber_state */
        uint8_t slot;    /* mpr_slot_class of its storage */
        uint8_t reused;  /* storage handed to a continuation */
        uint16_t pe;
    };
    uint64_t word;
} mpr_fiber_tag;

/* 48 bytes.  waiting_on is NULL except while the fiber waits on a counter, and stays NULL in
 * free slots, so creating a fiber need not write it. */
struct mpr_fiber {
    struct mpr_fiber *next; /* scheduler queue, free list, or counter wait list */
    mp_fiber_fn fn;
    uint64_t idle_at_create; /* C_total (idle ns) when the fiber was created */
    mpr_fiber_tag tag;
    struct mpr_counter *waiting_on;
    uint64_t wait_value;
    _Alignas(16) unsigned char args[];
};
typedef struct mpr_fiber mpr_fiber;

/* ---------------------------------------------------------------------------------- */
/* Counters                                                                             */

struct mpr_counter {
    uint64_t value;
    mpr_fiber *waiters;              /* fibers waiting for value >= their wait_value */
    struct mpr_counter *prev, *next; /* PE's list of live counters, for hang diagnosis */
    uint16_t pe;
};
typedef struct mpr_counter mpr_counter;

/* ---------------------------------------------------------------------------------- */
/* Schedulers                                                                           */

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

/* ---------------------------------------------------------------------------------- */
/* Messages: a physical message carries records, each a fiber to create on arrival and
 * optionally a payload copied to a destination address first (bulk transfers).  A record is
 * a 16-byte header, then (bulk only) a 16-byte payload header, then the arguments and the
 * payload, each padded to 16 bytes.  The common invocation with a few words of arguments
 * thus costs 32 bytes of message.                                                          */

typedef struct {
    uint32_t total;     /* record size including headers, args and payload, 16-aligned */
    uint16_t args_size; /* <= MP_FIBER_ARGS_MAX */
    uint8_t sched;
    uint8_t access; /* category of the invoking fiber: the enabler on arrival */
    /* offset of the fiber function from a reference symbol, so it survives ASLR (MPI), in
     * the high 48 bits (signed); the sending PE in the low 16, because the buffers that the
     * PEs of one worker share carry records of several senders (shm) */
    uint64_t fn_src;
} mpr_record;

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
    uint32_t kind;
    uint32_t counted; /* already counted in flight when opened (a group buffer, below) */
    size_t len;
    size_t cap;
    _Alignas(16) unsigned char data[];
} mpr_msgbuf;

/* Per-destination aggregation state: the open buffer, if any.  A PE keeps at most
 * MPR_AGG_OPEN_MAX of them open at once (comm.c), so the buffers a PE holds do not grow with
 * the number of PEs it talks to. */
typedef struct {
    mpr_msgbuf *buf;
} mpr_agg;
#define MPR_AGG_OPEN_MAX 32

/* Aggregation shared by the PEs of one worker thread (shm, multiplexed PEs; comm.c).  They
 * run one at a time on one thread, so they can append to one buffer per destination PE
 * without atomics, and a destination then receives one buffer per worker where it received
 * one per sending PE: with P PEs talking round-robin, per-(sender, destination) buffers hold
 * a record or two each, per-(worker, destination) ones many.  A group buffer counts as a
 * message in flight from the moment it is opened.  A destination in the group takes its
 * buffer itself when it polls (no send at all); one outside the group gets it when it fills,
 * when the worker ends a round over its PEs, and on mp_flush(). */
typedef struct mpr_agg_group {
    mpr_agg *agg;     /* per destination PE; every member's pe->agg */
    int *xopen;       /* destinations outside the group that may have an open buffer */
    uint8_t *xlisted; /* per destination: in xopen */
    int nxopen;
    int first, count; /* the member PEs, [first, first + count) */
    int npes;
    /* A member opened a buffer for a member that is idle: the writer yields at its next
     * communication period rather than after MPR_MUX_YIELD_PERIODS (sched.c), so that a
     * hand-off within a worker (a pipeline) waits one period, while PEs that all have work
     * of their own keep their longer slices. */
    bool idle_fed;
} mpr_agg_group;

/* ---------------------------------------------------------------------------------- */
/* Distributed objects                                                                  */

typedef struct {
    void *partition;
    /* global operation (barrier / reduction) in progress on this PE */
    mpr_counter *gop_done;
    double *gop_out;
    bool gop_busy;
    /* root side: arrivals of the current round */
    int gop_arrived;
    double gop_acc;
    int gop_op;
    bool rt_owned;   /* partition allocated by the runtime (snapshot): freed at exit */
    bool destroying; /* mp_obj_destroy: the current global operation ends the object */
    bool destroyed;
    void (*rt_fini)(void *partition); /* frees an rt_owned partition at mp_obj_destroy */
} mpr_obj;

/* ---------------------------------------------------------------------------------- */
/* Latency accounting (Wen 1995, section 4.5.3), per (access, enabler) pair               */

typedef struct {
    uint64_t count;
    uint64_t observed_ns;
    uint64_t critical_ns;
    uint64_t pad_; /* 32 bytes: indexing the per-PE table is a shift */
} mpr_latency;

/* ---------------------------------------------------------------------------------- */
/* Statistics records created by generated hooks                                       */

typedef struct mpr_stats_rec {
    struct mpr_stats_rec *next;
    const mp_stat_module *module;
    uint64_t object_id;
    uint64_t *slots; /* the record's fields: owned storage follows, or embedded elsewhere */
    _Alignas(16) uint64_t storage[];
} mpr_stats_rec;

/* ---------------------------------------------------------------------------------- */
/* The PE                                                                               */

/* Where a PE is, for the progress watchdog and the SIGQUIT dump (watchdog.c).  Written by
 * the PE on cold paths only (start, idle, yield, end); read by the watchdog without locks. */
typedef enum {
    MPR_PE_STARTING = 0, /* pe_main not entered yet */
    MPR_PE_RUNNING,      /* pe_main or a fiber */
    MPR_PE_IDLE,         /* in the idle loop (parked, when it shares a worker) */
    MPR_PE_SWITCHED_OUT, /* busy, but gave its worker thread to another PE */
    MPR_PE_FINISHED
} mpr_pe_where;

typedef struct mpr_pe {
    int id;
    int npes;
    uint8_t where; /* mpr_pe_where */

    /* scheduling */
    mpr_fiber *current;
    mpr_queue queue[2]; /* built-in queues, indexed by MP_SCHED_URGENT / MP_SCHED_FIFO */
    mpr_custom_sched custom[MPR_MAX_SCHED];
    int nsched; /* ids in use: built-ins plus custom */
    int rr;     /* round-robin position among FIFO and custom schedulers */
    int preempt_depth;
    unsigned until_flush; /* fibers left before the next forced flush / poll */
    uint64_t tag_pe;      /* this PE's id in mpr_fiber_tag position (mpr_tag_make) */
    /* c_total (idle ns so far, latency accounting) and the tag of a small FIFO fiber the
     * executing code spawns, side by side as a fiber's idle_at_create and tag are: mp_spawn
     * copies them with one 16-byte load and store.  The tag's creator byte is the access
     * category the executing code declared: see mpr_cur_access. */
    uint64_t c_total;
    mpr_fiber_tag spawn_tag;
    uint64_t spawn_tag_unclassified; /* spawn_tag when a fiber starts (mpr_access_set 0) */

    /* fiber storage */
    mpr_fiber *free_slots[2];
    void *slabs; /* list of slab chunks, freed at exit */

    /* counters */
    mpr_counter *counters; /* live counters (for diagnosis) */
    mpr_counter *free_counters;

    /* idle and latency accounting (c_total: beside spawn_tag, above) */
    /* Dispatch runs a fiber on its short path when the fiber's idle_at_create equals this:
     * c_total (the fiber did not wait through idle time, so it has no latency to account),
     * or ~0, which no fiber notes, while fiber_hooks is set (mpr_dispatch_key_update). */
    uint64_t dispatch_key;
    bool fiber_hooks; /* tracing, or PAPI counting on this PE: every fiber takes the full path */
    uint64_t idle_cpu_ns;  /* CPU ns of the idle loop so far */
    uint64_t c_charged;    /* idle ns already charged on the critical path */
    uint64_t cur_observed; /* latency of the executing fiber, when it is not zero */
    uint64_t cur_critical;
    mpr_latency latency[MPR_MAX_ACCESS][MPR_MAX_ACCESS]; /* [enabler][access] */

    /* communication */
    mpr_agg *agg;         /* per destination (the group's, when the PE is in one) */
    mpr_agg_group *group; /* set by the machine layer before the PE starts, or NULL */
    int *agg_open;        /* destinations that may have an open buffer (MPR_AGG_OPEN_MAX) */
    int agg_nopen;
    uint8_t *agg_listed;                       /* per destination: in agg_open */
    mpr_msgbuf *free_small;                    /* pooled buffers of MPR_SMALL_CAP */
    mpr_msgbuf *free_agg;                      /* pooled buffers of the aggregation capacity */
    mpr_msgbuf *free_large[MPR_LARGE_CLASSES]; /* pooled large buffers, by power of two */
    size_t large_cached;                       /* bytes held in free_large */
    size_t agg_cap;
    size_t small_below;             /* arguments below this many bytes go as fast messages */
    _Atomic(mpr_msgbuf *) returned; /* buffers given back by receivers (flow control) */
    mpr_msgbuf *rx_pending;         /* taken from the machine, not yet turned into fibers (FIFO) */
    size_t rx_off;                  /* offset of the next record in rx_pending */

    /* objects */
    mpr_obj *objs;
    uint32_t nobjs_cap;
    uint32_t next_dynamic_obj;

    /* statistics */
    rts_stats_t rts; /* this PE's rts record, embedded to keep hooks one add */
    mpr_stats_rec *records;

    /* time: wall clock, and this PE's thread CPU clock (the run profile's cpu_s) */
    double t_start;
    double t_end;
    uint64_t cpu_start_ns;
    uint64_t cpu_end_ns;

    /* Set by the machine layer before the PE starts: the PE shares its worker thread with
     * other PEs (shm), so it yields instead of spinning or sleeping (sched.c). */
    bool mux;
    unsigned mux_periods;    /* communication periods left before a busy PE yields */
    mpr_counter *blocked_on; /* mp_block_until in progress */
    uint64_t blocked_value;
} mpr_pe;

extern _Thread_local mpr_pe *mpr_self_pe __attribute__((tls_model("initial-exec")));

/* How the run stands.  pe.c owns the transitions: a backend or the idle loop reports the end
 * with mpr_run_end(), and the first report wins. */
typedef enum {
    MPR_RUN_RUNNING = 0,
    MPR_RUN_QUIESCENT,    /* nothing runnable anywhere, nothing in flight (waiters: a hang) */
    MPR_RUN_IDLE_TIMEOUT, /* every PE idle past MPROF_IDLE_TIMEOUT without quiescence: a hang */
} mpr_run_state;

/* global run state (shared, read-mostly) */
typedef struct {
    mp_config cfg;
    mpr_pe **pes; /* indexed by PE; only this process's PEs are non-NULL (MPI: one) */
    int npes;
    int local_first; /* this process hosts PEs [local_first, local_first + local_count) */
    int local_count;
    mp_pe_main_fn pe_main;
    int argc;
    char **argv;
    /* Written on every message of the shared-memory backend, so on a cache line of its own:
     * sharing one with the read-mostly fields (npes, cfg, pes, state, read in the hot paths)
     * made every such read miss on the PE that had not written last, and the cost of a fiber
     * or a record grew three-fold with the message rate (false sharing). */
    _Alignas(64) _Atomic(uint64_t) activity; /* active PEs << 32 | physical messages in flight */
    char activity_line[64 - sizeof(uint64_t)];
    _Atomic(int) state; /* mpr_run_state */
    double t_start;
    char started_at[32];
} mpr_run;

extern mpr_run mpr_g;

static inline mpr_pe *mpr_pe_self(void) { return mpr_self_pe; }
/* pe.c: the calling thread runs `pe` from now on (NULL: no PE); also points mp.h's inline
 * mp_access_declare_registered at it (mpr_access_bytes). */
void mpr_pe_bind(mpr_pe *pe);

/* pe.c: ends the run for the reason given unless it has ended already; returns whether this
 * call ended it.  The caller wakes the PEs (machine layer). */
bool mpr_run_end(mpr_run_state why);
static inline bool mpr_run_over(void)
{
    return atomic_load_explicit(&mpr_g.state, memory_order_acquire) != MPR_RUN_RUNNING;
}

/* error.c */
mp_err mpr_misuse(mp_err code, const char *fmt, ...) MPR_COLD;
void mpr_fatal(const char *fmt, ...) MPR_COLD __attribute__((noreturn));

/* fiber.c */
mpr_fiber *mpr_slot_refill(mpr_pe *pe, mpr_slot_class cls) MPR_COLD;
static inline mpr_slot_class mpr_slot_class_of(size_t args_size)
{
    return args_size > MPR_FIBER_SMALL_ARGS ? MPR_SLOT_LARGE : MPR_SLOT_SMALL;
}
static inline mpr_fiber *mpr_slot_get(mpr_pe *pe, mpr_slot_class cls)
{
    mpr_fiber *f = pe->free_slots[cls];
    if (MPR_UNLIKELY(!f))
        f = mpr_slot_refill(pe, cls);
    pe->free_slots[cls] = f->next;
    return f;
}
/* The tag keeps its last state: a stale handle is still refused as "not created". */
static inline void mpr_fiber_release(mpr_pe *pe, mpr_fiber *f)
{
    f->next = pe->free_slots[f->tag.slot];
    pe->free_slots[f->tag.slot] = f;
}

static inline uint64_t mpr_tag_make(const mpr_pe *pe, unsigned sched, unsigned creator,
                                    unsigned enabler, mpr_fiber_state state, mpr_slot_class slot)
{
    return pe->tag_pe | sched | (uint64_t)enabler << 8 | (uint64_t)creator << 16 |
           (uint64_t)state << 24 | (uint64_t)slot << 32;
}
void mpr_fiber_slabs_free(mpr_pe *pe);
uint64_t mpr_fiber_live(const mpr_pe *pe);
const char *mpr_fn_name(mp_fiber_fn fn, char *buf, size_t len);

/* sched.c */
void mpr_enable_slow(mpr_pe *pe, mpr_fiber *f); /* preemptive and custom schedulers */
void mpr_schedule_loop(mpr_pe *pe, mpr_counter *until, uint64_t value);
void mpr_sched_init(mpr_pe *pe);

/* counter.c */
typedef struct {
    mpr_counter *c;
    uint64_t n;
} mpr_bump_args;
void mpr_counter_bump(void *args); /* fiber: adds n to a counter of this PE for a remote sender */
void mpr_counters_free(mpr_pe *pe);

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

static inline mpr_fiber *mpr_queue_pop(mpr_queue *q)
{
    mpr_fiber *f = q->head;
    if (f && !(q->head = f->next))
        q->tailp = &q->head;
    return f;
}

/* Hands an enabled fiber to its scheduler.  Inline: this is half of every fiber's life. */
static inline void mpr_enable(mpr_pe *pe, mpr_fiber *f, uint16_t enabler)
{
    f->tag.state = MPR_FIBER_ENABLED;
    f->tag.enabler = (uint8_t)enabler;
    if (MPR_LIKELY(f->tag.sched <= MP_SCHED_FIFO))
        mpr_queue_push(&pe->queue[f->tag.sched], f);
    else
        mpr_enable_slow(pe, f);
}

/* Declares the category of the executing code.  The tag its spawned fibers get is kept
 * ready, which saves mp_spawn from assembling it. */
static inline void mpr_access_set(mpr_pe *pe, unsigned access)
{
    pe->spawn_tag.word =
        mpr_tag_make(pe, MP_SCHED_FIFO, access, access, MPR_FIBER_ENABLED, MPR_SLOT_SMALL);
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

/* Writes the header of a new fiber (or of a continuation reusing one); `tag` holds its
 * scheduler, categories, state and slot class. */
static inline void mpr_fiber_init(mpr_pe *pe, mpr_fiber *f, mp_fiber_fn fn, uint64_t tag)
{
    f->fn = fn;
    if (MPR_LATENCY)
        f->idle_at_create = pe->c_total;
    f->tag.word = tag;
}

/* Hands a fiber that was created enabled to scheduler `sched` (its tag's). */
static inline void mpr_fiber_enqueue(mpr_pe *pe, mpr_fiber *f, unsigned sched)
{
    if (MPR_LIKELY(sched <= MP_SCHED_FIFO))
        mpr_queue_push(&pe->queue[sched], f);
    else
        mpr_enable_slow(pe, f);
}

/* Takes a slot for `size` bytes of arguments, copies them and writes the header.  Arguments
 * that arrived in a record are padded to 16 bytes and copied in 16-byte chunks rather than
 * through a memcpy call (the slot always has room for the padding). */
static inline mpr_fiber *mpr_fiber_make(mpr_pe *pe, mp_fiber_fn fn, const void *args, size_t size,
                                        unsigned sched, unsigned creator, unsigned enabler,
                                        mpr_fiber_state state, bool padded)
{
    mpr_slot_class cls = mpr_slot_class_of(size);
    mpr_fiber *f = mpr_slot_get(pe, cls);
    if (size) {
        if (padded)
            for (size_t i = 0; i < size; i += 16)
                __builtin_memcpy(f->args + i, (const unsigned char *)args + i, 16);
        else
            __builtin_memcpy(f->args, args, size);
        RTS_INC(&pe->rts, ThreadContext, size);
    }
    mpr_fiber_init(pe, f, fn, mpr_tag_make(pe, sched, creator, enabler, state, cls));
    return f;
}

/* Makes and enables the fiber of an invocation: a local one (spawn_general, mp_invoke to the
 * own PE) or a record that arrived. */
static inline void mpr_fiber_spawn(mpr_pe *pe, mp_fiber_fn fn, const void *args, size_t size,
                                   unsigned sched, unsigned access, bool padded)
{
    mpr_fiber *f =
        mpr_fiber_make(pe, fn, args, size, sched, access, access, MPR_FIBER_ENABLED, padded);
    mpr_fiber_enqueue(pe, f, sched); /* after the copy: a preemptive fiber runs now */
}

/* Sets the rts thread counts, which no hot path keeps (sched.c); called once the PE's
 * schedule loop has ended, before the record is read. */
void mpr_rts_fold(mpr_pe *pe);
/* The calling thread's CPU time in ns (a system call: never on a hot path). */
uint64_t mpr_thread_cpu_ns(void);

/* comm.c */
void mpr_comm_init(mpr_pe *pe);
void mpr_comm_fini(mpr_pe *pe);
mp_err mpr_send_record(mpr_pe *pe, int dst, mp_fiber_fn fn, const void *args, size_t args_size,
                       mp_sched_t sched, const void *payload, size_t payload_size,
                       void *payload_dst);
bool mpr_poll(mpr_pe *pe);
void mpr_flush_all(mpr_pe *pe);
mpr_agg_group *mpr_agg_group_new(int first, int count, int npes);
void mpr_agg_group_free(mpr_agg_group *g);
void mpr_agg_group_flush(mpr_agg_group *g);
/* Takes the group's open buffer for member dst, or NULL (called by dst's own thread); it
 * counts as sent then, like a group buffer sent to another worker's PE. */
mpr_msgbuf *mpr_agg_group_take(mpr_agg_group *g, int dst);
uintptr_t mpr_fn_encode(mp_fiber_fn fn);
mp_fiber_fn mpr_fn_decode(uintptr_t off);

/* object.c */
void mpr_objs_init(mpr_pe *pe);
void mpr_objs_fini(mpr_pe *pe);
mpr_obj *mpr_obj_get(mpr_pe *pe, mp_obj_t id);

/* stats.c */
const char *mpr_access_name(int id);
int mpr_access_count(void);
void mpr_stats_init(mpr_pe *pe);
void mpr_stats_attach(mpr_pe *pe, const mp_stat_module *module, uint64_t object_id,
                      uint64_t *slots);
void mpr_stats_fini(mpr_pe *pe);
void mpr_params_for_each(void (*fn)(const char *name, double value, void *ctx), void *ctx);

/* profile.c */
int mpr_profile_write(const char *path);
int mpr_profile_check(const char *path, char *why, size_t why_size);

/* hang.c */
bool mpr_hang_report(FILE *out);

/* watchdog.c: the progress watchdog (MPROF_PROGRESS_TIMEOUT) and the SIGQUIT state dump run
 * in a helper thread of each process for the duration of the PEs' run. */
void mpr_watchdog_start(void);
void mpr_watchdog_stop(void);

/* the machine layer: backend table and wrappers (machine.h) */
#include "machine.h"

#endif /* MPR_H */
