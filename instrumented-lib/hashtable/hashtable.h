/*
 * hashtable.h -- a distributed hash table on the mprof runtime (Wen 1995, section 2.2.2).
 *
 * A table is a distributed object: its bins are spread over the PEs by a hash function
 * (bin = hash(key) mod (bins_per_pe * P), owner = bin mod P), and every PE holds the bins it
 * owns.  Keys and values are fixed-size byte strings chosen at creation.
 *
 * Operations are split-phase (Wen 1995, section 3.2.2) and return
 *   MP_OK    the bin is local: the operation is done, the counter was already incremented;
 *   MP_WAIT  the bin is remote (or a sync is freezing the table): the counter is incremented
 *            once the operation has taken effect at the owner and the results are written;
 *   MP_FAIL  invalid arguments (reported on stderr: a NULL argument, a handle that is not a
 *            live hash table on this PE); nothing happened.
 * Inserts and deletes come acknowledged (with a counter and results) or unacknowledged
 * (fire and forget: they take effect eventually; ht_sync forces them).  Inserts and deletes
 * are the mutators of the table's snapshot object, so a sync waits for every insert and
 * delete issued before it on any PE.  Lookups are not mutators.
 *
 * Results (existed, found, value) are written on the issuing PE just before the counter is
 * incremented: they must stay valid until then.
 *
 * Collective calls (ht_create, ht_sync, ht_destroy) must be made by every PE in the same
 * order.  Create tables in pe_main before any fiber can touch them (before the first
 * mp_block_until).
 */
#ifndef MPROF_HASHTABLE_H
#define MPROF_HASHTABLE_H

#include "mp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef mp_obj_t ht_t; /* the table's object id: the same on every PE */

/* Called on the owner when an insert finds its key already present: `stored` is the value
 * in the table (may be modified in place), `incoming` the value being inserted. */
typedef void (*ht_dup_fn)(void *stored, const void *incoming, size_t value_size, void *ctx);
/* Hash of a key; the default is 64-bit FNV-1a over the key bytes. */
typedef uint64_t (*ht_hash_fn)(const void *key, size_t key_size);

typedef struct {
    size_t key_size;        /* bytes, >= 1; the same on every PE */
    size_t value_size;      /* bytes, may be 0 (a set); the same on every PE */
    unsigned bins_per_pe;   /* default 1024 */
    ht_hash_fn hash;        /* NULL: FNV-1a */
    ht_dup_fn on_duplicate; /* NULL: keep the stored value */
    void *dup_ctx;          /* passed to on_duplicate (per PE: each PE passes its own) */
    mp_snapshot_t snapshot; /* share another object's snapshot (0: the table makes its own) */
    /* Scheduler of the fibers that apply requests at the owner and deliver replies
     * (default MP_SCHED_FIFO).  MP_SCHED_PREEMPT runs them as soon as the message is polled,
     * between two fibers of the owner, without queueing (Wen 1995, section 5.1.2); the
     * duplicate handler then runs preemptively too and must not suspend. */
    mp_sched_t sched;
} ht_options;

#define HT_MAX_ITEM 768 /* key_size + value_size limit (they travel as fiber arguments) */

void ht_options_init(ht_options *o, size_t key_size, size_t value_size);

/* Collective: creates the table (and, unless o->snapshot is set, its snapshot object).
 * MP_ERR_INVALID_ARG (reported on stderr, nothing created): NULL o or out, key_size 0,
 * key_size + value_size above HT_MAX_ITEM, bins_per_pe 0, or a scheduler that is neither a
 * built-in one nor registered on this PE.  MP_ERR_NO_MEMORY: the bins could not be allocated. */
mp_err ht_create(const ht_options *o, ht_t *out);
/* Collective, split-phase (MP_WAIT): frees the table, and its snapshot unless it shares
 * another object's.  Call it when the table is quiescent on every PE: after a sync with no
 * operation issued since, and after the counters of the acknowledged operations have moved.
 * The statistics stay in the run profile. */
mp_status ht_destroy(ht_t h, mp_counter_t done);

/* Owner PE of a key. */
int ht_owner(ht_t h, const void *key);

/* Acknowledged insert.  *existed (optional) is set to 1 if the key was already present (the
 * duplicate handler ran), else 0. */
mp_status ht_insert(ht_t h, const void *key, const void *value, int *existed, mp_counter_t done);
/* Unacknowledged insert: OK when applied locally, WAIT when it is on its way. */
mp_status ht_insert_unack(ht_t h, const void *key, const void *value);

/* Acknowledged delete.  *found (optional) tells whether the key was present; `old_value`
 * (optional) receives its value. */
mp_status ht_delete(ht_t h, const void *key, void *old_value, int *found, mp_counter_t done);
mp_status ht_delete_unack(ht_t h, const void *key);

/* Lookup: *found (required) tells whether the key is present; `value` (optional) receives
 * its value. */
mp_status ht_lookup(ht_t h, const void *key, void *value, int *found, mp_counter_t done);

/* Collective, split-phase: `done` is incremented once every insert and delete issued on any
 * PE before its sync call has taken effect.  Always MP_WAIT (or MP_FAIL). */
mp_status ht_sync(ht_t h, mp_counter_t done);

/* Per-partition access (local bins only; no communication).  These and ht_owner cannot return
 * an error: a handle that is not a live hash table on this PE ends the run with a message. */
size_t ht_local_count(ht_t h);
void ht_clear_local(ht_t h);

typedef struct {
    void *part_;
    ht_t id_;
    size_t bin_;
    void *entry_;
    uint64_t removals_;
} ht_iter;
/* Iterates over the entries of this PE's partition.  Do not insert or delete locally while
 * iterating (remote operations only take effect in other fibers, so they are safe within one
 * fiber).  ht_iter_next ends the run with a message when entries of the partition were
 * deleted (or cleared) since ht_iter_init, as the iterator may hold one of them. */
void ht_iter_init(ht_t h, ht_iter *it);
bool ht_iter_next(ht_iter *it, const void **key, void **value);

#ifdef __cplusplus
}
#endif
#endif
