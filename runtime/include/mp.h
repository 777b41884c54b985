/*
 * mp.h -- the public interface of the mprof fiber runtime (the Multipol runtime layer).
 *
 * A program runs on P processing elements (PEs).  Every PE runs the same entry function
 * (SPMD), then schedules fibers until the whole machine is quiescent: no PE has work, no
 * message is in flight.  Fibers run to completion and never block; waiting is expressed
 * with counters and continuation fibers.
 *
 * Naming: public symbols start with mp_ / MP_, internal ones with mpr_.  Every call that
 * can fail returns an mp_err (or a handle that is NULL on failure) and must be checked;
 * mp_strerror() turns the code into text.  Misuse that cannot be reported to the caller
 * (for example a bad PE number inside a message handler) aborts the run with a message.
 */
#ifndef MP_H
#define MP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MP_VERSION_MAJOR 0
#define MP_VERSION_MINOR 1

/* ------------------------------------------------------------------------------------ */
/* Errors and split-phase status                                                          */

typedef enum {
    MP_SUCCESS = 0,
    MP_ERR_INVALID_ARG = 1,     /* NULL handle, zero size where data is required, ... */
    MP_ERR_INVALID_PE = 2,      /* PE number outside [0, P) */
    MP_ERR_TOO_LARGE = 3,       /* message or fiber arguments larger than the limit */
    MP_ERR_ALREADY_WAITING = 4, /* a fiber may wait on one counter only */
    MP_ERR_BAD_STATE = 5,       /* e.g. enabling a fiber that is already enabled */
    MP_ERR_NOT_IN_FIBER = 6,    /* call needs an executing fiber */
    MP_ERR_IN_FIBER = 7,        /* blocking call made from inside a fiber */
    MP_ERR_NO_MEMORY = 8,
    MP_ERR_LIMIT = 9,   /* too many schedulers, access categories, objects ... */
    MP_ERR_BACKEND = 10 /* the machine layer failed */
} mp_err;

const char *mp_strerror(mp_err err);

/* Result of a split-phase operation (Wen 1995, section 3.2.2). */
typedef enum {
    MP_OK = 0,   /* completed locally; the counter has already been incremented */
    MP_WAIT = 1, /* communication started; the counter is incremented on completion */
    MP_FAIL = 2  /* exception: the operation did not start */
} mp_status;

/* ------------------------------------------------------------------------------------ */
/* Start-up                                                                               */

/* Run settings.  mp_config_init() fills defaults and then applies the environment:
 *   MPROF_PES            number of PEs (shared-memory backend)
 *   MPROF_AGG_BYTES      aggregation threshold in bytes (0 disables aggregation)
 *   MPROF_FLUSH_FIBERS   communication period: every K fibers a PE polls and sends the
 *                        aggregation buffers whose destination is idle or whose delay ran out
 *   MPROF_FLUSH_DELAY_US the longest an aggregated record waits for a busy receiver (us);
 *                        0: every buffer goes every period
 *   MPROF_SMALL_BYTES    arguments up to this size travel as small (fast) messages; 0: none
 *   MPROF_IDLE_TIMEOUT   seconds the whole machine may stay idle with waiting fibers
 *   MPROF_SPIN           idle polls before a PE sleeps
 *   MPROF_PROGRESS_TIMEOUT  seconds a fiber (or pe_main) may run without returning to the
 *                        runtime before the run is reported as stuck and ended; 0: never
 *   MPROF_SAMPLE_US      time between two samples of the running access category (us,
 *                        default 1000): the profile's per-PE category times; 0: none
 *   MPROF_OUT            path of the run profile written at exit
 *   MPROF_BACKEND        "shm" or "mpi"; unset: "mpi" under mpirun, else "shm"            */
typedef struct {
    int npes;
    size_t agg_bytes;
    unsigned flush_fibers;
    double flush_delay_s;
    size_t small_bytes;
    double idle_timeout_s;
    unsigned spin;
    double progress_timeout_s;
    const char *profile_path; /* NULL: no profile */
    const char *program;      /* name recorded in the profile (default: argv[0] basename);
                               * not empty, UTF-8 */
    double sample_s;          /* seconds between samples of the access category; 0: off */
} mp_config;

void mp_config_init(mp_config *cfg);

/* Runs `pe_main(argc, argv)` on every PE, then schedules fibers until global quiescence,
 * writes the run profile and returns 0.  Returns non-zero (and prints a diagnosis) when the
 * run hangs: the machine is quiescent or idle past the timeout while fibers still wait on
 * counters (2), or an end hook started work (2, mp_at_pe_end).  pe_main is an ordinary
 * function, not a fiber: it may call the blocking helper mp_block_until(). */
typedef void (*mp_pe_main_fn)(int argc, char **argv);
int mp_main(const mp_config *cfg, mp_pe_main_fn pe_main, int argc, char **argv);

int mp_mype(void);     /* this PE's number */
int mp_npes(void);     /* P */
double mp_wtime(void); /* seconds on a monotonic clock */

/* Records a program parameter (e.g. PIPE's M, N, T) in the run profile's "params".  The name
 * is not empty and is UTF-8 (as every name the profile carries), the value finite: anything
 * else is reported and not recorded. */
void mp_param(const char *name, double value);

/* ------------------------------------------------------------------------------------ */
/* Fibers                                                                                 */

typedef struct mpr_fiber *mp_fiber_t; /* handle; NULL is "no fiber" */
typedef int mp_sched_t;               /* scheduler id; identical on every PE */
typedef void (*mp_fiber_fn)(void *args);

/* Built-in schedulers.  The top level always drains URGENT first, then round-robins over
 * FIFO and the custom schedulers.  PREEMPT fibers run at once inside the enabling context
 * (no continuation, no argument changes, bounded recursion). */
#define MP_SCHED_URGENT ((mp_sched_t)0)
#define MP_SCHED_FIFO ((mp_sched_t)1)
#define MP_SCHED_PREEMPT ((mp_sched_t)2)

#define MP_FIBER_ARGS_MAX 1024 /* bytes of arguments a fiber may carry */

/* Creates a fiber in the *created* state: it runs only after mp_fiber_enable() (directly or
 * through a counter).  The arguments are copied; the fiber sees a pointer to its copy. */
mp_fiber_t mp_fiber_create(mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched);
mp_err mp_fiber_enable(mp_fiber_t fiber);
/* create + enable */
mp_err mp_spawn(mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched);

/* Continuation of the executing fiber: a created fiber that will run `fn` on the *same*
 * argument block, reusing the finishing fiber's storage (no allocation, no copy).  The
 * executing fiber may update its arguments before it returns to pass state on. */
mp_fiber_t mp_continue(mp_fiber_fn fn, mp_sched_t sched);

mp_fiber_t mp_self(void);          /* the executing fiber, NULL outside fibers */
void *mp_fiber_args(mp_fiber_t f); /* its argument block */

/* ------------------------------------------------------------------------------------ */
/* Counters (PE-local; other PEs reach them through mp_counter_add_remote)                 */

typedef struct mpr_counter *mp_counter_t;

mp_counter_t mp_counter_new(uint64_t initial);
/* Refused (with a message) while fibers or mp_block_until wait on it, or while a bulk read
 * or write that will add to it is in flight. */
void mp_counter_free(mp_counter_t c);
/* The owner's view: 0 and a message on another PE, which would read it mid-update. */
uint64_t mp_counter_value(mp_counter_t c);
void mp_counter_add(mp_counter_t c, uint64_t n);
void mp_counter_set(mp_counter_t c, uint64_t value);
/* Enables `fiber` (which must be in the created state) once the counter is >= value;
 * at once if it already is.  A fiber waits on one counter at a time. */
mp_err mp_counter_wait(mp_counter_t c, uint64_t value, mp_fiber_t fiber);
/* Adds n to a counter owned by PE `pe` (a message when pe is remote). */
mp_err mp_counter_add_remote(int pe, mp_counter_t c, uint64_t n);

/* Drives the scheduler until the counter reaches value.  Only outside fibers (pe_main). */
mp_err mp_block_until(mp_counter_t c, uint64_t value);

/* ------------------------------------------------------------------------------------ */
/* Custom schedulers (deposit / select), registered on every PE in the same order          */

typedef struct {
    void (*deposit)(void *state, mp_fiber_t fiber); /* store an enabled fiber */
    mp_fiber_t (*select)(void *state);              /* remove and return one, or NULL */
    const char *name;
} mp_sched_ops;

/* Returns the new scheduler id in *id.  Ids are per PE: a fiber invoked on another PE with a
 * custom scheduler needs one registered there under the same id (register them in the same
 * order on every PE); a fiber that arrives for an id its PE never registered ends the run
 * with a message. */
mp_err mp_sched_register(const mp_sched_ops *ops, void *state, mp_sched_t *id);
/* Whether `id` names a scheduler of the calling PE: a built-in one, or one it registered (a
 * library that takes a scheduler id checks it before it counts on sending with it). */
int mp_sched_known(mp_sched_t id);

/* ------------------------------------------------------------------------------------ */
/* Communication                                                                          */

/* Remote fiber invocation: copies the arguments into a message; the fiber is created and
 * enabled on `pe` when it arrives.  Messages are small (<= small_bytes, sent at once),
 * medium (aggregated per destination up to agg_bytes), or large (sent at once). */
mp_err mp_invoke(int pe, mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched);

/* Sends out every aggregation buffer of this PE now. */
void mp_flush(void);
size_t mp_max_message(void); /* the largest payload mp_invoke / bulk operations accept */

/* Bulk transfers between address spaces.  Addresses are valid on the PE that owns them. */
/* read n bytes at remote_src on pe into local_dst; counter += 1 on arrival */
mp_status mp_bulk_read(int pe, const void *remote_src, void *local_dst, size_t n,
                       mp_counter_t done);
/* write n bytes from src to remote_dst on pe; counter += 1 once the remote copy is done */
mp_status mp_bulk_write(int pe, void *remote_dst, const void *src, size_t n, mp_counter_t done);
/* store: counter += 1 once src may be reused; on arrival `on_arrival(args)` runs on pe with
 * args = {void *dst; size_t n; user bytes...} (mp_store_arrival); user_size is at most
 * MP_FIBER_ARGS_MAX - sizeof(mp_store_arrival) and src_free may be NULL.
 * Misuse of the three (outside a PE, a NULL counter, NULL buffers for n > 0 bytes, a NULL
 * on_arrival or user pointer, an invalid PE, too many bytes) returns MP_FAIL and prints the
 * reason and its code (MP_ERR_INVALID_ARG, MP_ERR_INVALID_PE, MP_ERR_TOO_LARGE) on stderr. */
typedef struct {
    void *dst;
    size_t n;
    int from;
    unsigned char user[]; /* the `user` bytes passed to mp_bulk_store */
} mp_store_arrival;
mp_status mp_bulk_store(int pe, void *remote_dst, const void *src, size_t n, mp_counter_t src_free,
                        mp_fiber_fn on_arrival, const void *user, size_t user_size);

/* ------------------------------------------------------------------------------------ */
/* Distributed object manager: one partition per PE, collective creation                  */

typedef uint32_t mp_obj_t;
#define MP_OBJ_RTS ((mp_obj_t)0)              /* the runtime itself */
#define MP_OBJ_USER_FIRST ((mp_obj_t)1)       /* ids below this are reserved */
#define MP_OBJ_DYNAMIC_FIRST ((mp_obj_t)1024) /* ids below are for direct allocation */

/* Collective: every PE calls it in the same order and gets the same id.  local_partition may
 * be NULL (an object used only for its barriers and reductions).  MP_ERR_LIMIT once 2^32 - 1
 * ids were handed out. */
mp_err mp_obj_create(void *local_partition, mp_obj_t *id);
/* Direct allocation of a reserved name in [MP_OBJ_USER_FIRST, MP_OBJ_DYNAMIC_FIRST), on every
 * PE that uses it (NULL partition allowed, as above).  MP_ERR_INVALID_ARG for a name outside
 * the range, MP_ERR_BAD_STATE for a name in use on this PE (destroy it before reusing it). */
mp_err mp_obj_create_named(mp_obj_t id, void *local_partition);
void *mp_obj_local(mp_obj_t id);

/* Calls fn(arg) on this PE once it has run out of work for good: after its last fiber, before
 * its statistics go into the run profile.  For a library to say what the program left undone
 * (a task stealer that still holds tasks nobody removed) or to settle a statistic.  fn runs
 * outside any fiber and must neither wait nor communicate (nothing runs after it): a hook that
 * invokes, or enables a fiber, is named on stderr and mp_main returns 2.  Hooks run last
 * registered first.  MP_ERR_BAD_STATE outside a running PE, MP_ERR_INVALID_ARG for a NULL fn,
 * MP_ERR_NO_MEMORY. */
mp_err mp_at_pe_end(void (*fn)(void *arg), void *arg);

/* Collective and split-phase like mp_obj_barrier: ends the object.  Every PE calls it once
 * the object is quiescent here (no operation of it in flight to or from this PE, no global
 * operation of it in progress).  `done` is incremented once every PE has called it; from
 * then on mp_obj_local(id) is NULL on this PE and the caller may free its partition (a
 * partition the runtime allocated, such as a snapshot's, is freed by the runtime).  Dynamic
 * ids are not reused; statistics records of the object stay in the run profile. */
mp_status mp_obj_destroy(mp_obj_t id, mp_counter_t done);

typedef enum { MP_REDUCE_SUM, MP_REDUCE_MIN, MP_REDUCE_MAX } mp_reduce_op;
/* Split-phase, per object; several objects may have global operations in flight at once.
 * The id is MP_OBJ_RTS or an object this PE created (messages of other PEs for an object may
 * arrive before it does, that is fine).  MP_FAIL, with the reason on stderr, outside a PE, for
 * a NULL counter, an unknown op or an id never created on this PE (MP_ERR_INVALID_ARG), a
 * destroyed object or one with a global operation in progress (MP_ERR_BAD_STATE); the same
 * for mp_obj_destroy, which also refuses MP_OBJ_RTS. */
mp_status mp_obj_barrier(mp_obj_t id, mp_counter_t done);
mp_status mp_obj_reduce(mp_obj_t id, mp_reduce_op op, double in, double *out, mp_counter_t done);

/* ------------------------------------------------------------------------------------ */
/* Snapshot data structure (Wen 1995, section 3.4.2)                                        */

/* A snapshot is a distributed object: its handle is the object id, valid on every PE. */
typedef mp_obj_t mp_snapshot_t;

/* Collective: creates the snapshot object on every PE (in the same order everywhere).
 * The calls below take only handles from it: outside a running PE, on an object that does
 * not exist on this PE or is not a snapshot, query / freeze / sync return MP_FAIL and
 * suspend MP_ERR_INVALID_ARG (the reason on stderr); execute, complete and unfreeze, which
 * return nothing, end the run with "mprof: fatal: ..." (exit 3). */
mp_err mp_snapshot_new(mp_snapshot_t *snap);
/* Mutator protocol: query; on MP_OK call execute and later complete (possibly on another
 * PE, naming the PE that executed); on MP_WAIT suspend a continuation that re-queries. */
mp_status mp_snapshot_query(mp_snapshot_t s);
void mp_snapshot_execute(mp_snapshot_t s);
void mp_snapshot_complete(mp_snapshot_t s, int executing_pe);
mp_err mp_snapshot_suspend(mp_snapshot_t s, mp_fiber_t continuation);
/* Client side: freeze (split-phase, collective; done when every mutator executed on any PE
 * before it has completed), read the state, unfreeze.  sync is freeze + unfreeze: it waits for
 * every mutator started before it. */
mp_status mp_snapshot_freeze(mp_snapshot_t s, mp_counter_t done);
void mp_snapshot_unfreeze(mp_snapshot_t s);
mp_status mp_snapshot_sync(mp_snapshot_t s, mp_counter_t done);

/* ------------------------------------------------------------------------------------ */
/* Statistics records and access categories (targets of the generated hooks)             */

typedef enum { MP_STAT_U64 = 0, MP_STAT_I64 = 1, MP_STAT_F64 = 2 } mp_stat_type;
typedef struct {
    const char *name;
    mp_stat_type type;
    /* NULL, or the PAPI event the runtime counts for this statistic around every fiber of the
     * module's access categories (a `.perf` statistic's `papi EVENT`, docs/papi.md) */
    const char *papi_event;
} mp_stat_field;
typedef struct {
    const char *module;
    unsigned nfields;
    const mp_stat_field *fields;
    /* The interface's terms, which the generated hooks fill in (0 and NULL elsewhere): their
     * names, and a function that computes every term's value of one record (its nfields
     * slots) into out[0..nterms-1].  The runtime prices records with them when MPROF_MODEL
     * names a model file (docs/reports.md, "The program's own report"). */
    unsigned nterms;
    const char *const *term_names;
    void (*term_values)(const void *record, double *out);
    /* SHA-256 (hex) of the interface's .perf text, which the run profile names beside the
     * module (`interfaces`, docs/run-profile.md) so that a reader finds that very interface
     * (mprof.iface.registry); NULL in hooks generated before it was recorded */
    const char *digest;
} mp_stat_module;

/* Allocates a zeroed record of nfields 8-byte slots on the calling PE for object `id`.  It
 * is PE-local memory, updated without atomics, and written to the run profile at exit.  The
 * profile names records by object id, so an id has one record per PE (0 is the runtime's); the
 * module and statistic names are UTF-8 and a module's statistic names distinct.  NULL (and a
 * message) otherwise. */
void *mp_stats_new(const mp_stat_module *module, uint64_t object_id);

/* Statistics an object derives from its own state instead of counting them per event (a count
 * its data structure keeps anyway, bytes that are a count times a fixed size).  From now on
 * every reader of `record` (from mp_stats_new) -- the run profile, the PAPI SDE counters,
 * PAPI-bound statistics -- sees each field as its stored value plus what fn(ctx, add) puts in
 * add[field] (add: one zeroed slot per field; for an f64 field the bits of a double).  fn may
 * run in a reader's thread while the owning PE runs: it must only read words of ctx and take
 * no locks.  A function already set is folded in first (its additions are stored in the
 * record); fn NULL folds and stops, which an object does before ctx goes away.  The runtime
 * folds what is left when the PE ends.  Call it on the PE that created the record; anything
 * else is MP_ERR_INVALID_ARG. */
typedef void (*mp_stats_derive_fn)(const void *ctx, uint64_t *add);
mp_err mp_stats_derive(void *record, mp_stats_derive_fn fn, const void *ctx);

/* Access categories are process-wide names "module:NAME"; register them before mp_main (or
 * from any PE: registration is thread-safe and idempotent).  Returns the id, or -1: names that
 * are empty, not UTF-8 or together longer than 255 bytes, a module name with a ':'. */
int mp_access_register(const char *module, const char *name);
/* Declares the access category of the executing fiber (latency is charged to it). */
void mp_access_declare(int access_id);
/* The access category the executing code declared last (to restore it after a library call
 * that declares its own). */
int mp_access_current(void);
#define MP_ACCESS_UNCLASSIFIED 0

/* mp_access_declare inline, for the generated MODULE_ACCESS hooks: mp_access_word(id) of an id
 * mp_access_register returned (or 0), computed once, makes a declaration one store instead of
 * a call.  mp_access_word checks the id (an unregistered one is misuse: the word of
 * MP_ACCESS_UNCLASSIFIED is returned), so the store needs no check: use only its words.
 * Internal: while a PE runs without tracing, mpr_access_bytes points at its two bytes that
 * hold the declared category (as creator and enabler of the fibers it spawns); it is NULL
 * outside a PE and while tracing (which records every declaration), and the call then does
 * the work and reports misuse. */
uint16_t mp_access_word(int access_id);
#if defined(__GNUC__)
extern __thread unsigned char *mpr_access_bytes __attribute__((tls_model("initial-exec")));
static inline void mp_access_declare_word(uint16_t word)
{
    unsigned char *b = mpr_access_bytes;
    if (__builtin_expect(b != NULL, 1))
        __builtin_memcpy(b, &word, sizeof word);
    else
        mp_access_declare(word & 0xff);
}
#else
static inline void mp_access_declare_word(uint16_t word) { mp_access_declare(word & 0xff); }
#endif

#ifdef __cplusplus
}
#endif
#endif /* MP_H */
