/*
 * hashtable.c -- the distributed hash table (Wen 1995, section 2.2.2).
 *
 * Every PE holds the bins it owns as arrays of chained entries.  A remote operation is one
 * request fiber invoked on the owner, which applies it atomically (a fiber runs to
 * completion, so no locks) and, when acknowledged, invokes a reply fiber on the issuing PE
 * that writes the results and increments the caller's counter.
 *
 * Inserts and deletes are the mutators of the table's snapshot object: the issuing PE
 * queries and executes before the operation leaves, and the operation completes where it
 * took effect (unacknowledged: at the owner, where the runtime counts it without a message;
 * acknowledged: when the reply arrives).  A query answered WAIT (a sync is freezing the
 * table) parks the operation in a fiber suspended on the snapshot, which re-issues it after
 * the unfreeze.  ht_sync is the snapshot's sync.
 */
#include "hashtable.h"

#include "hashtable_perf.h"

#include <string.h>

#define LIB_MODULE "hashtable"
#include "lib_internal.h"

/* Tags a table's partition: a handle is a bare object id, and an id of another kind of object
 * (the table's snapshot, a task stealer) must be refused before its partition is read as a
 * table's (it would jump through whatever lies where the hash function pointer is). */
#define HT_MAGIC 0x4854424cu /* "HTBL" */

enum { OP_INSERT = 0, OP_DELETE = 1, OP_LOOKUP = 2 };

typedef struct ht_entry {
    struct ht_entry *next;
    uint64_t hash;
    _Alignas(16) unsigned char data[]; /* key, then value */
} ht_entry;

/* Entries come from chunks of the partition's own: an entry has the table's fixed size, and a
 * Tripuzzle level inserts millions of them and clears them all.  Taken one by one from malloc,
 * every page of entries grew a thread's heap by a system call of its own (glibc grows a
 * thread's arena a page at a time) under the lock that the other PEs' page faults take, and a
 * cleared level gave its pages back to be faulted in again by the next. */
typedef struct ht_chunk {
    struct ht_chunk *next;
    size_t cap, used; /* entries */
    _Alignas(16) unsigned char mem[];
} ht_chunk;

enum {
    CHUNK_FIRST = 32,         /* entries in a partition's first chunk */
    CHUNK_MAX_BYTES = 1 << 18 /* each further chunk doubles up to this */
};

typedef struct {
    uint32_t magic; /* HT_MAGIC while the partition lives */
    mp_obj_t id;
    ht_options o;
    mp_snapshot_t snap;
    bool own_snap; /* created by the table (destroyed with it) */
    uint64_t total_bins;
    size_t nbins;
    ht_entry **bins;
    /* a bit per bin, set while the bin holds an entry: iterating and clearing a partition
     * visit the occupied bins (in bin order) and not all of them -- the bins per PE are fixed,
     * so a scan of every bin would cost each PE as much at 16 PEs as at 1 */
    uint64_t *occupied;
    size_t count;
    size_t entry_size;      /* an entry with its key and value, a multiple of 16 bytes */
    ht_chunk *chunks, *cur; /* cur: the chunk being filled; the ones after it are empty */
    ht_entry *spare;        /* deleted entries, linked by next, taken before the chunks */
    /* entries freed so far: an iterator that sees it move may hold a freed entry (see
     * ht_iter_next) */
    uint64_t removals;
    hashtable_stats_t *st;
} ht_part;

/* A request travels as fiber arguments: header, then key, then value (inserts). */
_Static_assert(HT_MAX_ITEM <= UINT16_MAX, "a request carries its sizes in 16 bits");

typedef struct {
    ht_t h;
    int from;
    uint8_t op;
    uint8_t acked;
    /* the issuer's sizes, which the owner's must equal (ht_create is collective with one
     * key and value size: the owner reads the key and value, and the issuer its reply, with
     * their own) */
    uint16_t key_size, value_size;
    uint64_t hash;
    mp_counter_t done;
    int *flag_out;   /* existed (insert) / found (delete, lookup) */
    void *value_out; /* old value (delete) / value (lookup) */
    _Alignas(16) unsigned char data[];
} ht_req;

typedef struct {
    ht_t h;
    uint8_t op;
    uint8_t mutator;
    int flag;
    uint32_t nval;
    mp_counter_t done;
    int *flag_out;
    void *value_out;
    _Alignas(16) unsigned char value[];
} ht_reply;

/* The partition of table `h` on this PE, or NULL after a report naming `fn` when `h` is no live
 * hash table here (for the calls that can return MP_FAIL). */
static ht_part *table_or_null(ht_t h, const char *fn)
{
    return lib_part_checked(h, HT_MAGIC, "hash table", fn);
}

/* The same for the calls that cannot return an error, and the library's own fibers: misuse
 * ends the run. */
static ht_part *part_of(ht_t h) { return lib_part_of_kind(h, HT_MAGIC, "hash table"); }

static size_t occupied_words(size_t nbins) { return (nbins + 63) / 64; }

/* The first occupied bin at or after `b`, or nbins. */
static size_t next_occupied(const ht_part *p, size_t b)
{
    size_t w = b / 64, nw = occupied_words(p->nbins);
    if (w >= nw)
        return p->nbins;
    uint64_t bits = p->occupied[w] & (~0ull << (b % 64));
    while (!bits) {
        if (++w == nw)
            return p->nbins;
        bits = p->occupied[w];
    }
    return w * 64 + (size_t)__builtin_ctzll(bits);
}

/* A new entry's storage: a deleted entry's, or the next of the chunks. */
static ht_entry *entry_new(ht_part *p)
{
    ht_entry *e = p->spare;
    if (e) {
        p->spare = e->next;
        return e;
    }
    ht_chunk *c = p->cur;
    if (!c || c->used == c->cap) {
        if (c && c->next) {
            c = c->next;
        } else {
            size_t cap = c ? 2 * c->cap : CHUNK_FIRST;
            if (c && cap * p->entry_size > CHUNK_MAX_BYTES)
                cap = c->cap; /* (the first chunk is at most 25 KB: entries are small) */
            ht_chunk *n = lib_malloc(sizeof *n + cap * p->entry_size);
            n->next = NULL;
            n->cap = cap;
            n->used = 0;
            if (c)
                c->next = n;
            else
                p->chunks = n;
            c = n;
        }
        p->cur = c;
    }
    return (ht_entry *)(c->mem + c->used++ * p->entry_size);
}

/* Every entry's storage is free again; the chunks stay for the next entries. */
static void entries_reset(ht_part *p)
{
    for (ht_chunk *c = p->chunks; c; c = c->next)
        c->used = 0;
    p->cur = p->chunks;
    p->spare = NULL;
}

static void chunks_free(ht_part *p)
{
    for (ht_chunk *c = p->chunks, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    p->chunks = p->cur = NULL;
    p->spare = NULL;
}

static uint64_t fnv1a(const void *key, size_t n)
{
    const unsigned char *k = key;
    uint64_t x = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        x ^= k[i];
        x *= 1099511628211ull;
    }
    /* FNV's low bits are weak for short keys: finish with a 64-bit mixer */
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

void ht_options_init(ht_options *o, size_t key_size, size_t value_size)
{
    memset(o, 0, sizeof *o);
    o->key_size = key_size;
    o->value_size = value_size;
    o->bins_per_pe = 1024;
    o->sched = MP_SCHED_FIFO;
}

/* MP_SUCCESS, or MP_ERR_INVALID_ARG after a report of what is wrong with the options. */
static mp_err check_options(const ht_options *o, const ht_t *out)
{
    if (!o || !out) {
        lib_misuse("ht_create: NULL %s", o ? "out" : "options");
        return MP_ERR_INVALID_ARG;
    }
    /* each size is checked alone first: their sum may wrap around (SIZE_MAX + 2 is 1) */
    if (o->key_size == 0 || o->key_size > HT_MAX_ITEM ||
        o->value_size > HT_MAX_ITEM - o->key_size) {
        lib_misuse(
            "ht_create: key_size %zu and value_size %zu: the key needs 1 byte or more, and key "
            "and value together at most HT_MAX_ITEM (%d) bytes, as they travel in messages",
            o->key_size, o->value_size, HT_MAX_ITEM);
        return MP_ERR_INVALID_ARG;
    }
    if (o->bins_per_pe == 0) {
        lib_misuse("ht_create: bins_per_pe is 0");
        return MP_ERR_INVALID_ARG;
    }
    /* refused here: an operation that failed to send after the snapshot counted it would leave
     * the next ht_sync waiting for ever */
    if (!mp_sched_known(o->sched)) {
        lib_misuse("ht_create: scheduler %d is neither a built-in one (MP_SCHED_*) nor registered "
                   "with mp_sched_register on this PE",
                   o->sched);
        return MP_ERR_INVALID_ARG;
    }
    /* a shared snapshot must be one (mp_snapshot_query reports what else it is): the first
     * insert would end the run otherwise */
    if (o->snapshot && mp_snapshot_query(o->snapshot) == MP_FAIL) {
        lib_misuse("ht_create: snapshot %u is not a snapshot of this PE (mp_snapshot_new)",
                   o->snapshot);
        return MP_ERR_INVALID_ARG;
    }
    return MP_SUCCESS;
}

mp_err ht_create(const ht_options *o, ht_t *out)
{
    mp_err e = check_options(o, out);
    if (e != MP_SUCCESS)
        return e;
    LIB_PERF_INIT(hashtable_perf_init);
    ht_part *p = calloc(1, sizeof *p);
    if (!p)
        return MP_ERR_NO_MEMORY;
    p->magic = HT_MAGIC;
    p->o = *o;
    if (!p->o.hash)
        p->o.hash = fnv1a;
    p->nbins = o->bins_per_pe;
    p->entry_size = (sizeof(ht_entry) + o->key_size + o->value_size + 15) & ~(size_t)15;
    p->total_bins = (uint64_t)o->bins_per_pe * (uint64_t)mp_npes();
    p->bins = lib_zeroed(p->nbins, sizeof *p->bins);
    p->occupied = lib_zeroed(occupied_words(p->nbins), sizeof *p->occupied);
    if (!p->bins || !p->occupied) {
        free(p->bins);
        free(p->occupied);
        free(p);
        return MP_ERR_NO_MEMORY;
    }
    if (o->snapshot) {
        p->snap = o->snapshot;
    } else if ((e = mp_snapshot_new(&p->snap)) != MP_SUCCESS) {
        free(p->bins);
        free(p->occupied);
        free(p);
        return e;
    } else {
        p->own_snap = true;
    }
    if ((e = mp_obj_create(p, &p->id)) != MP_SUCCESS) {
        free(p->bins);
        free(p->occupied);
        free(p);
        return e;
    }
    p->st = hashtable_stats_create(p->id);
    HASHTABLE_SET(p->st, P, 1);
    HASHTABLE_SET(p->st, Bins, p->nbins);
    *out = p->id;
    return MP_SUCCESS;
}

static void drop_entries(ht_part *p)
{
    for (size_t b = next_occupied(p, 0); b < p->nbins; b = next_occupied(p, b + 1))
        p->bins[b] = NULL;
    entries_reset(p);
    p->removals += p->count;
    memset(p->occupied, 0, occupied_words(p->nbins) * sizeof *p->occupied);
    p->count = 0;
}

static void free_entries(ht_part *p)
{
    drop_entries(p);
    HASHTABLE_SET(p->st, Entry, 0);
}

static void part_free(void *arg)
{
    ht_part *p = arg;
    drop_entries(p); /* (Entry keeps the count at destruction) */
    chunks_free(p);
    free(p->bins);
    free(p->occupied);
    p->magic = 0;
    free(p);
}

mp_status ht_destroy(ht_t h, mp_counter_t done)
{
    ht_part *p = table_or_null(h, "ht_destroy");
    if (!p)
        return MP_FAIL;
    if (!done) {
        lib_misuse("ht_destroy: NULL done counter");
        return MP_FAIL;
    }
    return lib_destroy(h, p->own_snap ? p->snap : 0, part_free, p, done);
}

static inline uint64_t bin_of(const ht_part *p, uint64_t hash) { return hash % p->total_bins; }

int ht_owner(ht_t h, const void *key)
{
    ht_part *p = part_of(h);
    if (!key)
        lib_die("ht_owner: NULL key");
    return (int)(bin_of(p, p->o.hash(key, p->o.key_size)) % (uint64_t)mp_npes());
}

/* Applies an operation to the local bin; returns the flag (existed / found) and copies the
 * value for lookups and deletes into value_out (if any). */
static int apply(ht_part *p, int op, uint64_t hash, const unsigned char *key,
                 const unsigned char *value, void *value_out)
{
    size_t ks = p->o.key_size, vs = p->o.value_size;
    size_t b = (size_t)(bin_of(p, hash) / (uint64_t)mp_npes());
    ht_entry **head = &p->bins[b];
    ht_entry **link = head;
    while (*link && !((*link)->hash == hash && memcmp((*link)->data, key, ks) == 0))
        link = &(*link)->next;
    ht_entry *e = *link;
    HASHTABLE_INC(p->st, NApply, 1);
    switch (op) {
    case OP_INSERT:
        if (e) {
            HASHTABLE_INC(p->st, Duplicates, 1);
            if (p->o.on_duplicate)
                p->o.on_duplicate(e->data + ks, value, vs, p->o.dup_ctx);
            return 1;
        }
        if (*head)
            HASHTABLE_INC(p->st, Collisions, 1);
        e = entry_new(p);
        e->hash = hash;
        memcpy(e->data, key, ks);
        if (vs)
            memcpy(e->data + ks, value, vs);
        e->next = *head;
        *head = e;
        p->occupied[b / 64] |= 1ull << (b % 64);
        p->count++;
        HASHTABLE_SET(p->st, Entry, p->count);
        return 0;
    case OP_DELETE:
        if (!e)
            return 0;
        if (value_out && vs)
            memcpy(value_out, e->data + ks, vs);
        *link = e->next;
        e->next = p->spare;
        p->spare = e;
        p->removals++;
        if (!*head)
            p->occupied[b / 64] &= ~(1ull << (b % 64));
        p->count--;
        HASHTABLE_SET(p->st, Entry, p->count);
        return 1;
    default: /* OP_LOOKUP */
        if (!e)
            return 0;
        if (value_out && vs)
            memcpy(value_out, e->data + ks, vs);
        return 1;
    }
}

static void declare(int op)
{
    if (op == OP_INSERT)
        HASHTABLE_ACCESS(INSERT);
    else if (op == OP_DELETE)
        HASHTABLE_ACCESS(DELETE);
    else
        HASHTABLE_ACCESS(LOOKUP);
}

static size_t req_data_size(const ht_part *p, int op)
{
    return p->o.key_size + (op == OP_INSERT ? p->o.value_size : 0);
}

/* On the issuing PE: the owner's answer to an acknowledged operation. */
static void ht_reply_fiber(void *args)
{
    ht_reply *r = args;
    declare(r->op);
    if (r->flag_out)
        *r->flag_out = r->flag;
    if (r->value_out && r->nval)
        memcpy(r->value_out, r->value, r->nval);
    if (r->mutator)
        mp_snapshot_complete(part_of(r->h)->snap, mp_mype());
    mp_counter_add(r->done, 1);
}

/* On the owner: applies a request, then answers (acknowledged) or completes the mutator
 * at its issuer (unacknowledged). */
static void ht_serve(void *args)
{
    ht_req *q = args;
    ht_part *p = part_of(q->h);
    declare(q->op);
    size_t ks = p->o.key_size, vs = p->o.value_size;
    if (q->key_size != ks || q->value_size != vs)
        lib_die("table %u: PE %d created it with %u-byte keys and %u-byte values, this PE with "
                "%zu and %zu: ht_create must be given the same sizes on every PE",
                q->h, q->from, q->key_size, q->value_size, ks, vs);
    unsigned char rbuf[sizeof(ht_reply) + HT_MAX_ITEM];
    ht_reply *r = (ht_reply *)rbuf;
    bool want_value = q->acked && q->value_out && vs && q->op != OP_INSERT;
    int flag = apply(p, q->op, q->hash, q->data, q->data + ks, want_value ? r->value : NULL);
    bool mutator = q->op != OP_LOOKUP;
    if (q->acked) {
        r->h = q->h;
        r->op = q->op;
        r->mutator = mutator;
        r->flag = flag;
        r->nval = (want_value && flag) ? (uint32_t)vs : 0;
        r->done = q->done;
        r->flag_out = q->flag_out;
        r->value_out = q->value_out;
        HASHTABLE_INC(p->st, NMsg, 1);
        HASHTABLE_INC(p->st, Bytes, r->nval);
        mp_invoke(q->from, ht_reply_fiber, r, sizeof *r + r->nval, p->o.sched);
    } else if (mutator) {
        mp_snapshot_complete(p->snap, q->from); /* counted here: no message */
    }
}

static void ht_resume(void *args);

/* Issues a request (the caller counted it).  Returns OK when it completed locally. */
static mp_status issue(ht_part *p, ht_req *q)
{
    int me = mp_mype();
    bool mutator = q->op != OP_LOOKUP;
    size_t dsize = req_data_size(p, q->op);
    if (mutator) {
        if (mp_snapshot_query(p->snap) == MP_WAIT) {
            /* a sync is freezing the table: park the request until the unfreeze */
            HASHTABLE_INC(p->st, NBlock, 1);
            mp_fiber_t f = mp_fiber_create(ht_resume, q, sizeof *q + dsize, MP_SCHED_FIFO);
            if (!f || mp_snapshot_suspend(p->snap, f) != MP_SUCCESS)
                return MP_FAIL;
            return MP_WAIT;
        }
        mp_snapshot_execute(p->snap);
    }
    int owner = (int)(bin_of(p, q->hash) % (uint64_t)mp_npes());
    if (owner == me) {
        int flag = apply(p, q->op, q->hash, q->data, q->data + p->o.key_size, q->value_out);
        if (q->flag_out)
            *q->flag_out = flag;
        if (mutator)
            mp_snapshot_complete(p->snap, me);
        if (q->done)
            mp_counter_add(q->done, 1);
        return MP_OK;
    }
    if (mp_invoke(owner, ht_serve, q, sizeof *q + dsize, p->o.sched) != MP_SUCCESS) {
        /* nothing left: the snapshot must not wait for a mutator that never went out */
        if (mutator)
            mp_snapshot_complete(p->snap, me);
        return MP_FAIL;
    }
    HASHTABLE_INC(p->st, NMsg, 1);
    HASHTABLE_INC(p->st, Bytes, dsize);
    return MP_WAIT;
}

/* A request parked by a freeze: re-query (and park again) or go. */
static void ht_resume(void *args)
{
    ht_req *q = args;
    ht_part *p = part_of(q->h);
    declare(q->op);
    if (mp_snapshot_query(p->snap) == MP_WAIT) {
        HASHTABLE_INC(p->st, NBlock, 1);
        mp_snapshot_suspend(p->snap, mp_continue(ht_resume, MP_SCHED_FIFO));
        return;
    }
    issue(p, q);
}

static const char *op_name(int op, bool acked)
{
    static const char *const names[2][3] = {{"ht_insert_unack", "ht_delete_unack", "ht_lookup"},
                                            {"ht_insert", "ht_delete", "ht_lookup"}};
    return names[acked][op];
}

/* The missing argument of an operation, or NULL when it has every one it needs. */
static const char *missing_arg(const ht_part *p, int op, const void *key, const void *value,
                               mp_counter_t done, bool acked)
{
    if (!key)
        return "key";
    if (acked && !done)
        return "done counter";
    if (op == OP_INSERT && p->o.value_size && !value)
        return "value";
    return NULL;
}

static mp_status start(ht_t h, int op, const void *key, const void *value, int *flag_out,
                       void *value_out, mp_counter_t done, bool acked)
{
    ht_part *p = table_or_null(h, op_name(op, acked));
    if (!p)
        return MP_FAIL;
    const char *missing = missing_arg(p, op, key, value, done, acked);
    if (missing) {
        lib_misuse("%s: NULL %s", op_name(op, acked), missing);
        return MP_FAIL;
    }
    unsigned char buf[sizeof(ht_req) + HT_MAX_ITEM];
    ht_req *q = (ht_req *)buf;
    q->h = h;
    q->from = mp_mype();
    q->op = (uint8_t)op;
    q->acked = acked;
    q->key_size = (uint16_t)p->o.key_size; /* at most HT_MAX_ITEM */
    q->value_size = (uint16_t)p->o.value_size;
    q->hash = p->o.hash(key, p->o.key_size);
    q->done = acked ? done : NULL;
    q->flag_out = acked ? flag_out : NULL;
    q->value_out = acked ? value_out : NULL;
    memcpy(q->data, key, p->o.key_size);
    if (op == OP_INSERT && p->o.value_size)
        memcpy(q->data + p->o.key_size, value, p->o.value_size);
    HASHTABLE_INC(p->st, NOp, 1);
    if (bin_of(p, q->hash) % (uint64_t)mp_npes() != (uint64_t)q->from)
        HASHTABLE_INC(p->st, NRemote, 1);
    return issue(p, q);
}

mp_status ht_insert(ht_t h, const void *key, const void *value, int *existed, mp_counter_t done)
{
    return start(h, OP_INSERT, key, value, existed, NULL, done, true);
}

mp_status ht_insert_unack(ht_t h, const void *key, const void *value)
{
    return start(h, OP_INSERT, key, value, NULL, NULL, NULL, false);
}

mp_status ht_delete(ht_t h, const void *key, void *old_value, int *found, mp_counter_t done)
{
    return start(h, OP_DELETE, key, NULL, found, old_value, done, true);
}

mp_status ht_delete_unack(ht_t h, const void *key)
{
    return start(h, OP_DELETE, key, NULL, NULL, NULL, NULL, false);
}

mp_status ht_lookup(ht_t h, const void *key, void *value, int *found, mp_counter_t done)
{
    if (!found) {
        lib_misuse("ht_lookup: NULL found");
        return MP_FAIL;
    }
    return start(h, OP_LOOKUP, key, NULL, found, value, done, true);
}

typedef struct {
    mp_counter_t inner, done;
} sync_args;

static void ht_synced(void *args)
{
    sync_args *a = args;
    HASHTABLE_ACCESS(SYNC);
    mp_counter_free(a->inner);
    mp_counter_add(a->done, 1);
}

mp_status ht_sync(ht_t h, mp_counter_t done)
{
    ht_part *p = table_or_null(h, "ht_sync");
    if (!p)
        return MP_FAIL;
    if (!done) {
        lib_misuse("ht_sync: NULL done counter");
        return MP_FAIL;
    }
    sync_args a = {mp_counter_new(0), done};
    if (!a.inner)
        return MP_FAIL;
    /* the snapshot's fibers inherit the category: the sync's idle time is charged to SYNC */
    int caller = mp_access_current();
    HASHTABLE_ACCESS(SYNC);
    mp_status s = mp_snapshot_sync(p->snap, a.inner);
    mp_access_declare(caller);
    if (s == MP_FAIL) { /* refused (a sync in progress): nothing may wait on its counter */
        mp_counter_free(a.inner);
        return MP_FAIL;
    }
    HASHTABLE_INC(p->st, NSync, 1);
    /* the continuation waits after the start: a sync that completed at once enables it now */
    mp_fiber_t f = mp_fiber_create(ht_synced, &a, sizeof a, MP_SCHED_FIFO);
    if (!f || mp_counter_wait(a.inner, 1, f) != MP_SUCCESS)
        lib_die("ht_sync: cannot wait for the sync's end");
    return MP_WAIT;
}

size_t ht_local_count(ht_t h) { return part_of(h)->count; }

void ht_clear_local(ht_t h) { free_entries(part_of(h)); }

void ht_iter_init(ht_t h, ht_iter *it)
{
    ht_part *p = part_of(h);
    if (!it)
        lib_die("ht_iter_init: NULL iterator");
    it->part_ = p;
    it->id_ = h;
    it->bin_ = 0;
    it->entry_ = NULL;
    it->removals_ = p->removals;
}

bool ht_iter_next(ht_iter *it, const void **key, void **value)
{
    if (!it || !it->part_)
        lib_die("ht_iter_next: %s",
                it ? "the iterator was not set up by ht_iter_init" : "NULL iterator");
    ht_part *p = lib_iter_part(it->id_, it->part_, HT_MAGIC, "ht_iter_next", "hash table");
    /* an entry freed since ht_iter_init may be the one the iterator holds: refuse before
     * following its link (a local delete or clear while iterating, which hashtable.h forbids) */
    if (p->removals != it->removals_)
        lib_die("ht_iter_next: entries of the partition were deleted or cleared during the "
                "iteration (not allowed: finish iterating first)");
    ht_entry *e = it->entry_ ? ((ht_entry *)it->entry_)->next : NULL;
    if (!e && it->bin_ < p->nbins) {
        size_t b = next_occupied(p, it->bin_);
        if (b < p->nbins)
            e = p->bins[b];
        it->bin_ = b + 1;
    }
    it->entry_ = e;
    if (!e)
        return false;
    if (key)
        *key = e->data;
    if (value)
        *value = e->data + p->o.key_size;
    return true;
}
