/*
 * sde.c -- mprof statistics as PAPI software-defined events (docs/papi.md): the `sde`
 * measurement service of observer.h, and the lock of sde.h.
 *
 * One SDE library handle "MPROF"; a module's counters are registered the first time a record
 * of that module is created on any PE.  Reading a counter (a PAPI_read in any thread) sums the
 * field over the module's live records, plus what freed records left.  The read happens while
 * the owning PEs keep updating their records without atomics: each slot is loaded once,
 * relaxed, as an aligned 8-byte word, so a reader sees each PE's value as of some recent
 * moment, which is what a sampling tool expects of a counter.
 */
#define _GNU_SOURCE
#include "observer.h"
#include "sde.h"

#include <pthread.h>
#include <sde_lib.h>
#include <stdlib.h>
#include <string.h>

typedef struct sde_live {
    struct sde_live *next;
    mpr_stats_rec *rec;
} sde_live;

typedef struct sde_module sde_module;
typedef struct {
    sde_module *mod;
    unsigned field;
} sde_field;

struct sde_module {
    sde_module *next;
    char *name;
    const mp_stat_module *desc; /* the first one seen; every one of the name has its layout */
    sde_live *live;
    uint64_t *retired; /* per field: u64/i64 sums, or the bits of an f64 sum */
    sde_field *fields;
};

static pthread_mutex_t sde_lock = PTHREAD_MUTEX_INITIALIZER;
static papi_handle_t sde_handle;
static sde_module *sde_modules;

static double as_f64(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* The value PAPI reports: a long long; for MP_STAT_F64 the bits of a double, as PAPI reports
 * every PAPI_SDE_double counter. */
static long long sde_read(void *param)
{
    sde_field *f = param;
    mp_stat_type type = f->mod->desc->fields[f->field].type;
    pthread_mutex_lock(&sde_lock);
    uint64_t sum = f->mod->retired[f->field];
    double fsum = type == MP_STAT_F64 ? as_f64(sum) : 0.0;
    for (sde_live *l = f->mod->live; l; l = l->next) {
        uint64_t v = __atomic_load_n(&l->rec->slots[f->field], __ATOMIC_RELAXED);
        if (l->rec->derive) /* what the object derives from its state (mp_stats_derive) */
            v = mpr_stat_add(type, v, mpr_stats_derived(l->rec, f->field));
        if (type == MP_STAT_F64)
            fsum += as_f64(v);
        else
            sum += v; /* i64 wraps like u64: two's complement */
    }
    pthread_mutex_unlock(&sde_lock);
    return (long long)(type == MP_STAT_F64 ? f64_bits(fsum) : sum);
}

void mpr_sde_lock(void) { pthread_mutex_lock(&sde_lock); }
void mpr_sde_unlock(void) { pthread_mutex_unlock(&sde_lock); }

/* Under sde_lock.  *created is set for a module new to the list: its creator registers its
 * counters once the lock is released (libsde's own lock is held while it calls sde_read, so
 * registering under sde_lock could deadlock against a concurrent reader). */
static sde_module *module_get(const mp_stat_module *desc, bool *created)
{
    *created = false;
    for (sde_module *m = sde_modules; m; m = m->next)
        if (strcmp(m->name, desc->module) == 0)
            return m->desc->nfields == desc->nfields ? m : NULL;
    sde_module *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->name = strdup(desc->module);
    m->desc = desc;
    m->retired = calloc(desc->nfields ? desc->nfields : 1, sizeof *m->retired);
    m->fields = calloc(desc->nfields ? desc->nfields : 1, sizeof *m->fields);
    if (!m->name || !m->retired || !m->fields) {
        free(m->name);
        free(m->retired);
        free(m->fields);
        free(m);
        return NULL;
    }
    for (unsigned i = 0; i < desc->nfields; i++) {
        m->fields[i].mod = m;
        m->fields[i].field = i;
    }
    m->next = sde_modules;
    sde_modules = m;
    *created = true;
    return m;
}

/* Registration calls into libsde one at a time: its registry is not safe to update from
 * several threads at once.  A lock of its own, not sde_lock, which sde_read takes while
 * libsde holds its lock. */
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

static void module_register(sde_module *m)
{
    pthread_mutex_lock(&register_lock);
    if (!sde_handle)
        sde_handle = papi_sde_init("MPROF");
    if (!sde_handle) {
        pthread_mutex_unlock(&register_lock);
        return;
    }
    const mp_stat_module *desc = m->desc;
    /* "<module>::<statistic>", put together with memcpy: snprintf cost more than the rest of
     * the registration (a fixed cost of every run, docs/runtime.md) */
    char name[256];
    size_t nm = strlen(desc->module);
    nm = nm < sizeof name - 3 ? nm : sizeof name - 3;
    memcpy(name, desc->module, nm);
    memcpy(name + nm, "::", 2);
    for (unsigned i = 0; i < desc->nfields; i++) {
        size_t nf = strlen(desc->fields[i].name);
        nf = nf < sizeof name - 1 - nm - 2 ? nf : sizeof name - 1 - nm - 2;
        memcpy(name + nm + 2, desc->fields[i].name, nf);
        name[nm + 2 + nf] = '\0';
        int type = desc->fields[i].type == MP_STAT_F64 ? PAPI_SDE_double : PAPI_SDE_long_long;
        papi_sde_register_counter_cb(sde_handle, name, PAPI_SDE_RO | PAPI_SDE_INSTANT, type,
                                     sde_read, &m->fields[i]);
    }
    pthread_mutex_unlock(&register_lock);
}

static void sde_record_add(mpr_pe *pe, mpr_stats_rec *r)
{
    (void)pe;
    sde_live *l = malloc(sizeof *l);
    if (!l)
        return; /* the statistic still reaches the run profile; PAPI misses this record */
    bool created;
    pthread_mutex_lock(&sde_lock);
    sde_module *m = module_get(r->module, &created);
    if (m) {
        l->rec = r;
        l->next = m->live;
        m->live = l;
    }
    pthread_mutex_unlock(&sde_lock);
    if (!m)
        free(l);
    else if (created)
        module_register(m);
}

static void sde_record_retire(mpr_stats_rec *r)
{
    pthread_mutex_lock(&sde_lock);
    for (sde_module *m = sde_modules; m; m = m->next) {
        for (sde_live **p = &m->live; *p; p = &(*p)->next) {
            if ((*p)->rec != r)
                continue;
            sde_live *dead = *p;
            *p = dead->next;
            for (unsigned i = 0; i < m->desc->nfields; i++) {
                if (m->desc->fields[i].type == MP_STAT_F64)
                    m->retired[i] = f64_bits(as_f64(m->retired[i]) + as_f64(r->slots[i]));
                else
                    m->retired[i] += r->slots[i];
            }
            free(dead);
            pthread_mutex_unlock(&sde_lock);
            return;
        }
    }
    pthread_mutex_unlock(&sde_lock);
}

/* Observes every run: a PAPI tool may read the counters at any time. */
static unsigned sde_start(void) { return MPR_OBS_ON; }

const mpr_observer mpr_observer_sde = {
    .name = "sde",
    .start = sde_start,
    .record_add = sde_record_add,
    .record_retire = sde_record_retire,
};
