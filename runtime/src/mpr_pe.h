/*
 * mpr_pe.h -- the PE: its state (scheduling, fiber storage, counters, idle and latency accounting,
 * communication, objects, statistics, time) and the calling thread's PE.  The fields are
 * ordered for the hot paths; keep them so.
 */
#ifndef MPR_PE_H
#define MPR_PE_H

#include "mpr_base.h"
#include "mpr_comm.h"
#include "mpr_counter.h"
#include "mpr_fiber.h"
#include "mpr_latency.h"
#include "mpr_obj.h"
#include "mpr_queue.h"
#include "mpr_sample.h"
#include "mpr_stats.h"
#include "rts_perf.h"

#include <stdatomic.h>

/* Module descriptions a PE remembers as checked (stats.c, mp_stats_new). */
#define MPR_CHECKED_MODULES 8

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
    /* stand-ins for preemptive fibers run straight from a message, one per nesting level:
     * pe->current while they run (sched.c, mpr_run_direct) */
    _Alignas(16) unsigned char direct_frames[MPR_PREEMPT_DEPTH][sizeof(mpr_fiber)];
    unsigned until_flush; /* fibers left before the next forced flush / poll */
    /* The FIFO batch must stop after the current fiber: an urgent fiber was enabled, the
     * awaited counter reached its target, or (written by another PE's thread, hence atomic;
     * relaxed loads and stores cost what plain ones do) an urgent message arrived, which the
     * schedule loop then polls for at once (comm.c, "message service"). */
    _Atomic(uint8_t) interrupt;
    uint64_t tag_pe; /* this PE's id in mpr_fiber_tag position (mpr_tag_make) */
    /* c_total (idle ns so far, latency accounting) and the tag of a small FIFO fiber the
     * executing code spawns, side by side as a fiber's idle_at_create and tag are: mp_spawn
     * copies them with one 16-byte load and store.  The tag's creator byte is the access
     * category the executing code declared: see mpr_cur_access. */
    uint64_t c_total;
    mpr_fiber_tag spawn_tag;
    uint64_t spawn_tag_unclassified; /* spawn_tag when a fiber starts (mpr_access_set 0) */

    /* fiber storage */
    mpr_fiber *free_slots[MPR_SLOT_CLASSES];
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
    mpr_agg *agg;  /* per destination (its aggregation group's: agg_grouped) */
    int *agg_open; /* destinations that may have an open buffer (MPR_AGG_OPEN_MAX) */
    int agg_nopen;
    bool urgent_out; /* an open buffer holds an urgent record (mpr_flush_urgent) */
    /* Two-hop routing (comm.c, "Routing"): the PEs as a grid of route_cols columns, or 0 when
     * every record goes straight to its destination */
    int route_cols;
    /* agg is an aggregation group's, shared with the other PEs of the thread (machine.h
     * group_agg): the backend sends and frees its buffers */
    bool agg_grouped;
    size_t bytes_out;        /* bytes of pooled buffers taken from the pools and not back
                              * (open or in flight: flow control, comm.c) */
    size_t bytes_high;       /* above this many, the PE waits at its next period */
    uint64_t flush_delay_ns; /* the longest a record waits for a busy receiver (mpr_flush_due) */
    uint8_t *agg_listed;     /* per destination: in agg_open */
    mpr_msgbuf *free_small;  /* pooled buffers of MPR_SMALL_CAP */
    mpr_msgbuf *free_agg;    /* pooled buffers of the aggregation capacity */
    struct mpr_buf_slab *buf_slabs;        /* where the small and aggregation buffers were cut */
    uintptr_t carve_next[2], carve_end[2]; /* the rest of the current slab, small and agg */
    mpr_msgbuf *free_large[MPR_LARGE_CLASSES]; /* pooled large buffers, by power of two */
    size_t large_cached;                       /* bytes held in free_large */
    size_t agg_cap;
    size_t small_below;             /* arguments below this many bytes go as fast messages */
    _Atomic(mpr_msgbuf *) returned; /* buffers given back by receivers (flow control) */
    mpr_msgbuf *rx_pending;         /* taken from the machine, records not yet polled */
    size_t rx_off;                  /* offset of the next record in rx_pending */
    bool carriers;                  /* carriers on: MPROF_CARRIERS and aggregation */

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

    /* The PE shares its thread with other PEs (machine.h shares_thread, asked when the PE
     * starts): it gives the thread away instead of spinning or sleeping (sched.c, comm.c). */
    bool shared_thread;
    uint64_t periods;        /* forced flushes so far, one per flush_fibers fibers: the
                              * watchdog's sign of progress (a FIFO batch counts down in a
                              * register, not in until_flush) */
    mpr_counter *blocked_on; /* mp_block_until in progress */
    uint64_t blocked_value;

    /* CPU time per access category (sample.c): what the thread is doing (MPR_AT_*), and the
     * samples and the CPU time they charged, by access category then MPR_SAMPLE_SCHED and
     * MPR_SAMPLE_IDLE, which only the sampler on the PE's own thread writes */
    uint8_t sample_at;
    uint64_t samples[MPR_SAMPLE_SLOTS];
    uint64_t sample_ns[MPR_SAMPLE_SLOTS];
    mpr_sampler *sampler; /* the PE's own thread's (NULL: none, or a multiplexing worker's) */

    /* statistics records, for mp_stats_new (stats.c), here rather than beside `records`: cold,
     * after the fields the hot paths use, whose places they would move */
    mpr_stats_rec **records_tail; /* where the next record links (NULL: &records) */
    /* the records' object ids, unique on a PE (stats.c ids_add) */
    uint64_t *record_ids;
    size_t record_ids_cap, nrecord_ids;
    bool record_id_max;
    /* module descriptions mp_stats_new has checked on this PE (stats.c) */
    const mp_stat_module *checked_modules[MPR_CHECKED_MODULES];
    unsigned next_checked_module;

    /* mp_at_pe_end's hooks, run last registered first when the PE is out of work (pe.c) */
    struct mpr_end_hook {
        void (*fn)(void *arg);
        void *arg;
    } * end_hooks;
    int n_end_hooks, cap_end_hooks;

    /* Counts the PE's entries into and exits from its idle loop (sched.c), so it is odd while
     * the PE waits for work.  Read by the PEs that hold aggregation records for it, at their
     * communication periods: each sends such a PE what it holds once per idle period
     * (comm.c, mpr_flush_due), rather than waiting for the buffer to fill or its delay to run
     * out.  Written by the PE alone; on a line of its own, since senders read it every period
     * and on the PE's hot lines those reads would make the PE's own stores miss. */
    _Alignas(64) _Atomic(uint32_t) idle_epoch;
} mpr_pe;

/* Counts a buffer sent for `why` on pe (the PE that sends it, or that opened a group's).
 * Inline: most callers pass a constant reason, which leaves one increment (none when the
 * statistics are compiled out), where a call per message cost a switch and a call. */
static inline void mpr_agg_count(mpr_pe *pe, mpr_agg_why why)
{
    switch (why) {
    case MPR_AGG_FULL:
        RTS_INC(&pe->rts, AggFull, 1);
        break;
    case MPR_AGG_HALF:
        RTS_INC(&pe->rts, AggHalf, 1);
        break;
    case MPR_AGG_AGED:
        RTS_INC(&pe->rts, AggAged, 1);
        break;
    case MPR_AGG_FED:
        RTS_INC(&pe->rts, AggFed, 1);
        break;
    case MPR_AGG_DRAIN:
        RTS_INC(&pe->rts, AggDrain, 1);
        break;
    case MPR_AGG_ORDER:
        RTS_INC(&pe->rts, AggOrder, 1);
        break;
    case MPR_AGG_TAKEN:
        RTS_INC(&pe->rts, AggTaken, 1);
        break;
    case MPR_AGG_KEPT:
        break;
    }
}

static inline void mpr_interrupt_set(mpr_pe *pe)
{
    atomic_store_explicit(&pe->interrupt, 1, memory_order_relaxed);
}
static inline bool mpr_interrupted(const mpr_pe *pe)
{
    return atomic_load_explicit(&pe->interrupt, memory_order_relaxed);
}

extern _Thread_local mpr_pe *mpr_self_pe __attribute__((tls_model("initial-exec")));

static inline mpr_pe *mpr_pe_self(void) { return mpr_self_pe; }
/* pe.c: the calling thread runs `pe` from now on (NULL: no PE); also points mp.h's inline
 * mp_access_declare_registered at it (mpr_access_bytes). */
void mpr_pe_bind(mpr_pe *pe);

#endif /* MPR_PE_H */
