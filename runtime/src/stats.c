/*
 * stats.c -- statistics records of instrumented modules, the access-category registry and
 * program parameters.  Records are PE-local; the registry and the parameters are
 * process-wide and guarded by a mutex (they change rarely, outside the hot path).
 */
#define _GNU_SOURCE
#include "mpr.h"
#include "mpr_json.h"
#include "observer.h"
#include "sde.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static char *access_names[MPR_MAX_ACCESS] = {"unclassified"};
static _Atomic int naccess = 1; /* written under registry_lock; read without */

typedef struct param {
    struct param *next;
    char *name;
    double value;
} param;
static param *params;

int mp_access_register(const char *module, const char *name)
{
    if (!module || !name || !*module || !*name) {
        mpr_misuse(MP_ERR_INVALID_ARG, "access category with %s module or name",
                   !module || !name ? "a NULL" : "an empty");
        return -1;
    }
    if (!mpr_utf8_valid(module) || !mpr_utf8_valid(name)) { /* profiles are UTF-8 */
        mpr_misuse(MP_ERR_INVALID_ARG, "access category with a %s that is not UTF-8",
                   mpr_utf8_valid(module) ? "name" : "module name");
        return -1;
    }
    if (strchr(module, ':')) { /* "a:b" + "c" and "a" + "b:c" would be one category */
        mpr_misuse(MP_ERR_INVALID_ARG, "access category %.64s:%.64s: a module name has no ':'",
                   module, name);
        return -1;
    }
    char full[256];
    if (snprintf(full, sizeof full, "%s:%s", module, name) >= (int)sizeof full) {
        /* cut short, two long names would share one category */
        mpr_misuse(MP_ERR_INVALID_ARG,
                   "access category name %.40s...:%.40s... longer than %zu "
                   "bytes",
                   module, name, sizeof full - 1);
        return -1;
    }
    pthread_mutex_lock(&registry_lock);
    int id = -1;
    for (int i = 1; i < naccess; i++)
        if (strcmp(access_names[i], full) == 0)
            id = i;
    if (id < 0 && naccess < MPR_MAX_ACCESS) {
        id = naccess;
        access_names[id] = strdup(full);
        atomic_store_explicit(&naccess, id + 1, memory_order_release);
    }
    pthread_mutex_unlock(&registry_lock);
    if (id < 0)
        mpr_misuse(MP_ERR_LIMIT, "more than %d access categories", MPR_MAX_ACCESS - 1);
    return id;
}

void mp_access_declare(int id)
{
    mpr_pe *pe = mpr_pe_self();
    if (MPR_UNLIKELY(!pe || id < 0 || id >= mpr_access_count())) {
        if (!pe)
            mpr_misuse(MP_ERR_BAD_STATE, "mp_access_declare outside a running PE");
        else
            mpr_misuse(MP_ERR_INVALID_ARG, "declaring unknown access category %d", id);
        return;
    }
    mpr_access_set(pe, (unsigned)id);
    MPR_OBSERVE_HOT(access, pe, (unsigned)id);
}

uint16_t mp_access_word(int id)
{
    if (MPR_UNLIKELY(id < 0 || id >= mpr_access_count())) {
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_access_word of unknown access category %d", id);
        id = MP_ACCESS_UNCLASSIFIED;
    }
    return (uint16_t)((unsigned)id * 0x101u); /* the id in both bytes */
}

int mp_access_current(void)
{
    mpr_pe *pe = mpr_pe_self();
    return pe ? (int)mpr_cur_access(pe) : MP_ACCESS_UNCLASSIFIED;
}

const char *mpr_access_name(int id) { return access_names[id]; }
int mpr_access_count(void) { return atomic_load_explicit(&naccess, memory_order_acquire); }

void mp_param(const char *name, double value)
{
    if (!name || !*name) { /* a run profile's parameters have names (sweeps select by them) */
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_param with %s name", name ? "an empty" : "a NULL");
        return;
    }
    if (!mpr_utf8_valid(name)) { /* JSON text is UTF-8: the profile would not be read */
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_param: the name is not UTF-8; not recorded");
        return;
    }
    if (!isfinite(value)) { /* JSON has no NaN or infinity: the profile would not be read */
        mpr_misuse(MP_ERR_INVALID_ARG,
                   "mp_param(\"%.64s\", %s): a parameter is a finite "
                   "number; not recorded",
                   name,
                   isnan(value) ? "NaN"
                   : value > 0  ? "inf"
                                : "-inf");
        return;
    }
    pthread_mutex_lock(&registry_lock);
    param *p;
    for (p = params; p; p = p->next)
        if (strcmp(p->name, name) == 0)
            break;
    if (!p && (p = calloc(1, sizeof *p))) {
        p->name = strdup(name);
        p->next = params;
        params = p;
    }
    if (p)
        p->value = value;
    pthread_mutex_unlock(&registry_lock);
}

void mpr_params_for_each(void (*fn)(const char *name, double value, void *ctx), void *ctx)
{
    pthread_mutex_lock(&registry_lock);
    for (param *p = params; p; p = p->next)
        fn(p->name, p->value, ctx);
    pthread_mutex_unlock(&registry_lock);
}

/* Where the set below starts looking for `id` in a table of `cap` slots (a power of two). */
static size_t ids_slot(uint64_t id, size_t cap)
{
    return (size_t)(id * 0x9E3779B97F4A7C15u) & (cap - 1); /* Fibonacci hashing */
}

/* The PE's set of its records' object ids (open addressing, linear probing; a slot holds
 * id + 1, 0 is empty, and the id 2^64 - 1 has a flag of its own).  Adds `id`; returns false if
 * it was there already. */
static bool ids_add(mpr_pe *pe, uint64_t id)
{
    if (id == UINT64_MAX) {
        bool had = pe->record_id_max;
        pe->record_id_max = true;
        return !had;
    }
    if (2 * (pe->nrecord_ids + 1) > pe->record_ids_cap) { /* at most half full */
        size_t cap = pe->record_ids_cap ? 2 * pe->record_ids_cap : 16;
        uint64_t *t = calloc(cap, sizeof *t);
        if (!t)
            mpr_fatal("out of memory recording statistics records");
        for (size_t i = 0; i < pe->record_ids_cap; i++) {
            uint64_t v = pe->record_ids[i];
            if (!v)
                continue;
            size_t j = ids_slot(v - 1, cap);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = v;
        }
        free(pe->record_ids);
        pe->record_ids = t;
        pe->record_ids_cap = cap;
    }
    size_t j = ids_slot(id, pe->record_ids_cap);
    for (; pe->record_ids[j]; j = (j + 1) & (pe->record_ids_cap - 1))
        if (pe->record_ids[j] == id + 1)
            return false;
    pe->record_ids[j] = id + 1;
    pe->nrecord_ids++;
    return true;
}

/* Keeps creation order, so profiles list the runtime (object 0) first. */
static void link_record(mpr_pe *pe, mpr_stats_rec *r, const mp_stat_module *module,
                        uint64_t object_id)
{
    r->module = module;
    r->object_id = object_id;
    if (!pe->records_tail)
        pe->records_tail = &pe->records;
    *pe->records_tail = r;
    pe->records_tail = &r->next;
    MPR_OBSERVE(record_add, pe, r);
}

/* What is wrong with a module description (the generated hooks' are right by construction;
 * a hand-written one is read by the profile writer, the SDE counters and the self-report). */
static const char *module_problem(const mp_stat_module *m)
{
    if (!m->module || !*m->module)
        return "no module name";
    if (m->nfields > 4096)
        return "more than 4096 statistics";
    if (m->nfields && !m->fields)
        return "statistics without field descriptions (fields NULL)";
    if (!mpr_utf8_valid(m->module))
        return "a module name that is not UTF-8";
    for (unsigned i = 0; i < m->nfields; i++) {
        if (!m->fields[i].name || !*m->fields[i].name)
            return "a statistic without a name";
        if (!mpr_utf8_valid(m->fields[i].name))
            return "a statistic name that is not UTF-8";
        if ((unsigned)m->fields[i].type > MP_STAT_F64)
            return "a statistic of unknown type";
        for (unsigned j = 0; j < i; j++)
            if (strcmp(m->fields[j].name, m->fields[i].name) == 0)
                return "two statistics of one name";
    }
    if (m->nterms && (!m->term_names || !m->term_values))
        return "terms without names or a function to compute them";
    return NULL;
}

/* module_problem once per description and PE: the check of the names is quadratic, and a
 * program may create a record per object of the module (the last few descriptions checked). */
static const char *module_problem_cached(mpr_pe *pe, const mp_stat_module *m)
{
    for (unsigned i = 0; i < MPR_CHECKED_MODULES; i++)
        if (pe->checked_modules[i] == m)
            return NULL;
    const char *bad = module_problem(m);
    if (!bad)
        pe->checked_modules[pe->next_checked_module++ % MPR_CHECKED_MODULES] = m;
    return bad;
}

/* Set while this thread runs a derive function: one that calls back into the statistics
 * would take MPR_SDE_LOCK a second time, which its caller holds, and hang. */
static _Thread_local bool in_derive;

static mp_err derive_reentered(const char *call)
{
    return mpr_misuse(MP_ERR_BAD_STATE,
                      "%s called from a derive function (which may only read its context)", call);
}

void *mp_stats_new(const mp_stat_module *module, uint64_t object_id)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe) {
        mpr_misuse(MP_ERR_BAD_STATE, "statistics record created outside a running PE");
        return NULL;
    }
    if (in_derive) {
        derive_reentered("mp_stats_new");
        return NULL;
    }
    const char *bad = module ? module_problem_cached(pe, module) : "a NULL module";
    if (bad) {
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_stats_new: %s", bad);
        return NULL;
    }
    if (!ids_add(pe, object_id)) { /* the run profile names records by their object ids */
        mpr_misuse(MP_ERR_INVALID_ARG,
                   "mp_stats_new: object %" PRIu64 " already has a statistics record on this PE%s",
                   object_id, object_id == MP_OBJ_RTS ? " (the runtime's)" : "");
        return NULL;
    }
    mpr_stats_rec *r = calloc(1, sizeof *r + module->nfields * sizeof(uint64_t));
    if (!r)
        mpr_fatal("out of memory allocating statistics");
    r->slots = r->storage;
    link_record(pe, r, module, object_id);
    return r->slots;
}

mpr_stats_rec *mpr_stats_attach(mpr_pe *pe, const mp_stat_module *module, uint64_t object_id,
                                uint64_t *slots)
{
    mpr_stats_rec *r = calloc(1, sizeof *r);
    if (!r)
        mpr_fatal("out of memory allocating statistics");
    r->slots = slots;
    ids_add(pe, object_id); /* the runtime's own, first: never taken */
    link_record(pe, r, module, object_id);
    return r;
}

uint64_t mpr_stat_add(mp_stat_type type, uint64_t a, uint64_t b)
{
    if (type != MP_STAT_F64)
        return a + b; /* i64 wraps like u64: two's complement */
    double x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    x += y;
    memcpy(&a, &x, sizeof a);
    return a;
}

/* Calls the record's derive function into zeroed slots: on the stack for the common module of
 * a few fields. */
static uint64_t *derive_into(const mpr_stats_rec *r, uint64_t *small, unsigned nsmall)
{
    unsigned n = r->module->nfields;
    uint64_t *add = n <= nsmall ? small : calloc(n, sizeof *add);
    if (!add)
        mpr_fatal("out of memory deriving statistics");
    memset(add, 0, n * sizeof *add);
    in_derive = true;
    r->derive(r->derive_ctx, add);
    in_derive = false;
    return add;
}

/* What the record's derive function adds to `field` now (under MPR_SDE_LOCK, or on the PE). */
uint64_t mpr_stats_derived(const mpr_stats_rec *r, unsigned field)
{
    uint64_t small[32];
    uint64_t *add = derive_into(r, small, 32);
    uint64_t v = add[field];
    if (add != small)
        free(add);
    return v;
}

/* Stores what the derive function adds in the record and drops the function. */
static void settle(mpr_stats_rec *r)
{
    if (!r->derive)
        return;
    uint64_t small[32];
    uint64_t *add = derive_into(r, small, 32);
    for (unsigned i = 0; i < r->module->nfields; i++)
        r->slots[i] = mpr_stat_add(r->module->fields[i].type, r->slots[i], add[i]);
    if (add != small)
        free(add);
    r->derive = NULL;
    r->derive_ctx = NULL;
}

mp_err mp_stats_derive(void *record, mp_stats_derive_fn fn, const void *ctx)
{
    if (in_derive)
        return derive_reentered("mp_stats_derive");
    mpr_pe *pe = mpr_pe_self();
    mpr_stats_rec *r = pe ? pe->records : NULL;
    while (r && r->slots != record)
        r = r->next;
    if (!r)
        return mpr_misuse(MP_ERR_INVALID_ARG,
                          "mp_stats_derive: %p is not a statistics record of "
                          "this PE",
                          record);
    MPR_SDE_LOCK(); /* a PAPI reader may be calling the old function */
    settle(r);
    r->derive = fn;
    r->derive_ctx = fn ? ctx : NULL;
    MPR_SDE_UNLOCK();
    return MP_SUCCESS;
}

/* At the end of the PE, before the run profile and the PAPI-bound statistics take the
 * records: derived statistics become stored ones, and no object state is needed after. */
void mpr_stats_settle(mpr_pe *pe)
{
    MPR_SDE_LOCK();
    for (mpr_stats_rec *r = pe->records; r; r = r->next)
        settle(r);
    MPR_SDE_UNLOCK();
}

#ifndef MPROF_DISABLE
/* What the PE keeps anyway: IdleNs is C_total (latency accounting; mpr_idle_add is the only
 * way either grows), IdleCpuNs the idle loop's CPU time (the profile's idle_cpu_s), the
 * latency table counts the dispatches, part of all three thread counts (mpr_rts_fold), and
 * the backend's channels their bursts (machine.h chan_counts). */
static void rts_derive(const void *ctx, uint64_t *add)
{
    const mpr_pe *pe = ctx;
    rts_stats_t *d = (rts_stats_t *)add;
    /* fibers run straight from a message are dispatches of the latency table, not fibers */
    uint64_t dispatched =
        mpr_dispatched(pe) - __atomic_load_n(&pe->rts.ThreadDirect, __ATOMIC_RELAXED);
    d->ThreadDisp = dispatched;
    d->ThreadAlloc = dispatched;
    d->ThreadEnable = dispatched;
    d->IdleNs = __atomic_load_n(&pe->c_total, __ATOMIC_RELAXED);
    d->IdleCpuNs = __atomic_load_n(&pe->idle_cpu_ns, __ATOMIC_RELAXED);
    if (mpr_m) /* the backend's channels count their bursts */
        mpr_machine_chan_counts(pe, &d->ChanNotify, &d->ChanDrain);
}
#endif

void mpr_stats_init(mpr_pe *pe)
{
#ifndef MPROF_DISABLE /* statistics compiled out: the hooks are gone, and so is the record */
    mpr_stats_rec *r = mpr_stats_attach(pe, &rts_stat_module, MP_OBJ_RTS, (uint64_t *)&pe->rts);
    RTS_SET(&pe->rts, P, 1);
    MPR_SDE_LOCK();
    r->derive = rts_derive;
    r->derive_ctx = pe;
    MPR_SDE_UNLOCK();
#else
    (void)pe;
#endif
}

void mpr_stats_fini(mpr_pe *pe)
{
    for (mpr_stats_rec *r = pe->records, *n; r; r = n) {
        n = r->next;
        MPR_OBSERVE(record_retire, r);
        free(r);
    }
    pe->records = NULL;
    pe->records_tail = NULL;
    free(pe->record_ids);
    pe->record_ids = NULL;
    pe->record_ids_cap = pe->nrecord_ids = 0;
    pe->record_id_max = false;
}
