/*
 * papi.c -- statistics bound to PAPI events (docs/papi.md): the `papi` measurement service of
 * observer.h, and why an event is absent (papictr.h).
 *
 * Each PE has its own PAPI event sets, one per PAPI component (PAPI_thread_init: counters are
 * per thread, and a PE is one thread), holding every distinct event its records' bound
 * statistics name.  The counters
 * are read when a fiber starts and when it ends; the difference since the previous read goes
 * to the innermost running fiber (preemptive fibers nest), and a fiber's total is charged,
 * when it ends, to the access category it declared last, as latency is.  Time between fibers
 * (the scheduler, polling, idling) is charged to no category.
 *
 * An event is counted or absent for the whole process: the first PE that cannot add it to
 * its set reports it once on stderr, and from then on every record leaves its statistics of
 * that event out of the run profile (profile.c asks mpr_papi_absent).
 */
#define _GNU_SOURCE
#include "observer.h"
#include "papictr.h"

#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVENTS 16
#define DEPTH (MPR_PREEMPT_DEPTH + 4)

/* PAPI counts the events of one component per event set: a PE has a set per component. */
#define MAX_SETS 4
typedef struct {
    int set, cmp, n;
    int event[MAX_EVENTS]; /* index into the PE's events, per position in the set */
} papi_set;

typedef struct {
    papi_set sets[MAX_SETS];
    int nsets;
    int n;                         /* events counted */
    const char *names[MAX_EVENTS]; /* their names */
    long long last[MAX_EVENTS];    /* the previous read */
    long long acc[DEPTH][MAX_EVENTS];
    int depth, lost;
    bool registered;                             /* PAPI_register_thread done */
    uint64_t counts[MPR_MAX_ACCESS][MAX_EVENTS]; /* per access category */
} papi_pe;

typedef struct absent_event {
    struct absent_event *next;
    char *name;
    char *why;
} absent_event;

static pthread_mutex_t papi_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t papi_once = PTHREAD_ONCE_INIT;
static int papi_init_rc = PAPI_OK;
static papi_pe **pes; /* indexed by PE number */
static int npes;
static absent_event *absent;

static void papi_init(void)
{
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT && rc != PAPI_OK) {
        papi_init_rc = rc < 0 ? rc : PAPI_EINVAL;
        return;
    }
    if (!PAPI_is_initialized() ||
        PAPI_thread_init((unsigned long (*)(void))pthread_self) != PAPI_OK) {
        /* a program that initialised PAPI itself without threads: counters are process-wide
         * then, which PEs in threads cannot share */
        papi_init_rc = PAPI_ECMP;
    }
}

/* Under papi_lock.  Records the reason once and says it once. */
static void mark_absent(const char *event, const char *module, const char *stat, const char *why)
{
    for (absent_event *a = absent; a; a = a->next)
        if (strcmp(a->name, event) == 0)
            return;
    absent_event *a = calloc(1, sizeof *a);
    if (a && (a->name = strdup(event)) && (a->why = strdup(why))) {
        a->next = absent;
        absent = a;
    }
    fprintf(stderr,
            "mprof: PAPI event %s cannot be counted here (%s): statistic %s::%s and every other "
            "statistic bound to it are recorded as absent, not as zeros (docs/papi.md)\n",
            event, why, module, stat);
}

static const char *absent_why(const char *event)
{
    for (absent_event *a = absent; a; a = a->next)
        if (strcmp(a->name, event) == 0)
            return a->why;
    return NULL;
}

const char *mpr_papi_absent(const mp_stat_field *field)
{
    if (!field->papi_event)
        return NULL;
    pthread_mutex_lock(&papi_lock);
    const char *why = absent_why(field->papi_event);
    pthread_mutex_unlock(&papi_lock);
    return why;
}

static papi_pe *pe_state(mpr_pe *pe)
{
    pthread_mutex_lock(&papi_lock);
    if (!pes) {
        npes = mpr_g.npes;
        pes = calloc((size_t)npes, sizeof *pes);
    }
    papi_pe *p = NULL;
    if (pes && pe->id < npes) {
        pes[pe->id] = pes[pe->id] ? pes[pe->id] : calloc(1, sizeof **pes);
        p = pes[pe->id];
    }
    pthread_mutex_unlock(&papi_lock);
    return p;
}

static void sample(papi_pe *p)
{
    for (int j = 0; j < p->nsets; j++) {
        papi_set *ps = &p->sets[j];
        long long v[MAX_EVENTS];
        if (!ps->n || PAPI_read(ps->set, v) != PAPI_OK)
            continue;
        for (int i = 0; i < ps->n; i++) {
            int k = ps->event[i];
            if (p->depth > 0)
                p->acc[p->depth - 1][k] += v[i] - p->last[k];
            p->last[k] = v[i];
        }
    }
}

/* Event names are resolved once per process (under papi_lock): PAPI's name lookup is not
 * safe to repeat from every PE thread. */
typedef struct {
    const char *name;
    int code, rc;
} known_event;
static known_event known[MAX_EVENTS * MAX_SETS];
static int nknown;

static int event_code(const char *event, int *code)
{
    for (int i = 0; i < nknown; i++)
        if (strcmp(known[i].name, event) == 0) {
            *code = known[i].code;
            return known[i].rc;
        }
    int rc = PAPI_event_name_to_code(event, code);
    if (nknown < MAX_EVENTS * MAX_SETS)
        known[nknown++] = (known_event){event, *code, rc};
    return rc;
}

static _Thread_local char why_buf[256];

/* PAPI's message, and for a preset the likely reason: no counter of this machine backs it. */
static const char *explain(int rc, const char *event)
{
    bool hw = strncmp(event, "PAPI_", 5) == 0 &&
              (rc == PAPI_ENOEVNT || rc == PAPI_ECMP_DISABLED || rc == PAPI_ENOCNTR);
    snprintf(why_buf, sizeof why_buf, "%s%s", PAPI_strerror(rc),
             hw ? "; no hardware counter of this machine provides the preset (papi_avail lists "
                  "them; a virtual machine without a PMU has none)"
                : "");
    return why_buf;
}

/* Adds `event` to the PE's set of its component (counting of that set restarts from zero;
 * what was counted so far has been charged to the running fibers first).  Returns NULL or
 * why the event cannot be counted. */
static const char *add_event(papi_pe *p, const char *event)
{
    if (p->n == MAX_EVENTS)
        return "more than 16 distinct PAPI events";
    int code, rc;
    if ((rc = event_code(event, &code)) != PAPI_OK)
        return explain(rc, event);
    int cmp = PAPI_get_event_component(code);
    papi_set *ps = NULL;
    for (int j = 0; j < p->nsets && !ps; j++)
        if (p->sets[j].cmp == cmp)
            ps = &p->sets[j];
    if (!ps) {
        if (p->nsets == MAX_SETS)
            return "events of more than 4 PAPI components";
        ps = &p->sets[p->nsets];
        ps->set = PAPI_NULL;
        ps->cmp = cmp;
        ps->n = 0;
        if ((rc = PAPI_create_eventset(&ps->set)) != PAPI_OK)
            return PAPI_strerror(rc);
        p->nsets++;
    }
    if (ps->n) {
        sample(p);
        long long v[MAX_EVENTS];
        PAPI_stop(ps->set, v);
    }
    const char *why = NULL;
    if ((rc = PAPI_add_event(ps->set, code)) != PAPI_OK) {
        why = explain(rc, event);
    } else {
        ps->event[ps->n++] = p->n;
        p->names[p->n++] = event;
    }
    if (ps->n) {
        if (!why && (rc = PAPI_start(ps->set)) != PAPI_OK) {
            /* the new event cannot run beside the others: take it out again */
            why = PAPI_strerror(rc);
            PAPI_remove_event(ps->set, code);
            ps->n--;
            p->n--;
            if (ps->n)
                PAPI_start(ps->set);
        } else if (why) {
            PAPI_start(ps->set);
        }
        for (int i = 0; i < ps->n; i++)
            p->last[ps->event[i]] = 0;
    }
    return why;
}

static void papi_record_add(mpr_pe *pe, mpr_stats_rec *r)
{
    const mp_stat_module *m = r->module;
    for (unsigned i = 0; i < m->nfields; i++) {
        const char *event = m->fields[i].papi_event;
        if (!event)
            continue;
        pthread_once(&papi_once, papi_init);
        papi_pe *p = pe_state(pe);
        if (!p)
            return;
        if (!p->registered && papi_init_rc == PAPI_OK) {
            /* PAPI looks calling threads up in its thread list: register before any call */
            pthread_mutex_lock(&papi_lock);
            PAPI_register_thread();
            pthread_mutex_unlock(&papi_lock);
            p->registered = true;
        }
        bool have = false;
        for (int k = 0; k < p->n && !have; k++)
            have = strcmp(p->names[k], event) == 0;
        /* PAPI's event tables are not safe to search from several threads at once: PEs add
         * their events one at a time (record creation is never on a hot path) */
        pthread_mutex_lock(&papi_lock);
        if (have || absent_why(event)) {
            pthread_mutex_unlock(&papi_lock);
            continue;
        }
        const char *why = papi_init_rc != PAPI_OK ? PAPI_strerror(papi_init_rc) : NULL;
        /* PAPI counts per thread: PEs that share a worker thread would share its counters
         * (and PAPI allows one running event set per thread) */
        if (!why && pe->shared_thread)
            why = "PEs share worker threads; set MPROF_WORKERS to the number of PEs to count";
        if (!why)
            why = add_event(p, event);
        if (why)
            mark_absent(event, m->module, m->fields[i].name, why);
        if (!why && !pe->fiber_hooks) { /* this PE's fibers are counted from now on */
            pe->fiber_hooks = true;
            mpr_dispatch_key_update(pe);
        }
        pthread_mutex_unlock(&papi_lock);
    }
}

static void papi_fiber_begin(mpr_pe *pe)
{
    papi_pe *p = pes ? pes[pe->id] : NULL;
    if (!p || !p->n)
        return;
    sample(p);
    if (p->depth == DEPTH) {
        p->lost++;
        return;
    }
    memset(p->acc[p->depth], 0, sizeof p->acc[p->depth]);
    p->depth++;
}

static void papi_fiber_end(mpr_pe *pe)
{
    papi_pe *p = pes ? pes[pe->id] : NULL;
    if (!p || !p->n)
        return;
    sample(p);
    if (p->lost) {
        p->lost--;
        return;
    }
    if (p->depth == 0)
        return;
    p->depth--;
    unsigned a = mpr_cur_access(pe);
    for (int k = 0; k < p->n; k++)
        p->counts[a][k] += (uint64_t)p->acc[p->depth][k];
}

/* Does access category `a` belong to `module` ("module:NAME")? */
static bool of_module(int a, const char *module)
{
    const char *name = mpr_access_name(a);
    size_t n = strlen(module);
    return strncmp(name, module, n) == 0 && name[n] == ':';
}

static void papi_pe_end(mpr_pe *pe)
{
    papi_pe *p = pes && pe->id < npes ? pes[pe->id] : NULL;
    if (!p)
        return;
    int naccess = mpr_access_count();
    for (mpr_stats_rec *r = pe->records; r; r = r->next) {
        const mp_stat_module *m = r->module;
        bool has_accesses = false;
        for (int a = 0; a < naccess && !has_accesses; a++)
            has_accesses = of_module(a, m->module);
        for (unsigned i = 0; i < m->nfields; i++) {
            int k = -1;
            for (int j = 0; j < p->n && m->fields[i].papi_event; j++)
                if (strcmp(p->names[j], m->fields[i].papi_event) == 0)
                    k = j;
            if (k < 0)
                continue;
            /* a module without access categories of its own gets every fiber of the PE */
            uint64_t sum = 0;
            for (int a = 0; a < naccess; a++)
                if (!has_accesses || of_module(a, m->module))
                    sum += p->counts[a][k];
            r->slots[i] = sum;
        }
    }
    pthread_mutex_lock(&papi_lock);
    for (int j = 0; j < p->nsets; j++) {
        long long v[MAX_EVENTS];
        if (p->sets[j].n)
            PAPI_stop(p->sets[j].set, v);
        PAPI_cleanup_eventset(p->sets[j].set);
        PAPI_destroy_eventset(&p->sets[j].set);
    }
    pes[pe->id] = NULL;
    PAPI_unregister_thread();
    pthread_mutex_unlock(&papi_lock);
    free(p);
}

/* Observes every run: any record may bind a statistic to an event.  Its fiber events reach
 * only the PEs whose fiber_hooks papi_record_add set. */
static unsigned papi_start(void) { return MPR_OBS_ON; }

const mpr_observer mpr_observer_papi = {
    .name = "papi",
    .start = papi_start,
    .record_add = papi_record_add,
    .fiber_begin = papi_fiber_begin,
    .fiber_end = papi_fiber_end,
    .pe_end = papi_pe_end,
};
