/*
 * taskstealer.c -- the task stealer (Wen 1995, section 2.2.3): creation, the pools, adding and
 * removing tasks, and destroy.  Stealing is in ts_balance.c, termination detection in
 * ts_terminate.c, the worker loop in ts_worker.c.
 *
 * Per PE: a binary heap of tasks (priority, then newest first: the owner works depth-first
 * while thieves take the oldest, see ts_balance.c), a FIFO of waiting removes, and the state
 * of the PE's hunt for work.
 */
#include "ts_internal.h"

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t tsi_random(ts_part *p) { return splitmix(&p->rng); }

void ts_options_init(ts_options *o, size_t task_size)
{
    memset(o, 0, sizeof *o);
    o->task_size = task_size;
    o->topology = TS_COMPLETE;
    o->steal_max = 128;
    o->low_water = 2;
    o->seed = 12345;
}

static const char *const topo_names[] = {"ring", "hypercube", "complete", "push"};

int ts_topology_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, topo_names[i]) == 0)
            return i;
    return -1;
}

const char *ts_topology_name(ts_topology t) { return (unsigned)t < 4 ? topo_names[t] : "unknown"; }

static void add_nbr(ts_part *p, int q)
{
    if (q == p->me || q < 0 || q >= p->npes)
        return;
    for (int i = 0; i < p->nnbrs; i++)
        if (p->nbrs[i] == q)
            return;
    p->nbrs[p->nnbrs++] = q;
}

/* The PE is out of work with the stealer still alive (mp_at_pe_end): tasks left in its pool
 * will never run, because the program stopped removing them before termination.  Said, as a
 * run that silently skips work would otherwise look finished.  Tasks removed and never
 * finished with ts_done keep termination from being detected: the removes that wait for it
 * never return, and the runtime reports them as a hang; the stealer says why. */
static void ts_at_pe_end(void *arg)
{
    ts_part *p = mp_obj_local((mp_obj_t)(uintptr_t)arg); /* NULL once destroyed */
    if (!p || p->magic != TS_MAGIC)
        return;
    if (p->n > 0)
        lib_misuse("task stealer %u: the run ended with %zu task(s) in this PE's pool that no "
                   "ts_remove took (a task runs only once removed: remove until ts_remove "
                   "answers TS_TERMINATED, or use ts_run)",
                   p->id, p->n);
    if (p->in_progress > 0 && !p->terminated)
        lib_misuse("task stealer %u: %llu task(s) removed on this PE and not finished with "
                   "ts_done: termination cannot be detected (finish every task obtained from "
                   "ts_remove with ts_done)",
                   p->id, (unsigned long long)p->in_progress);
}

static void part_free(void *arg);

mp_err ts_create(const ts_options *o, ts_t *out)
{
    /* before anything else: outside a PE there is no P to build the topology on */
    if (mp_mype() < 0) {
        lib_misuse("ts_create: called outside a running PE (create the stealer in pe_main, on "
                   "every PE)");
        return MP_ERR_BAD_STATE;
    }
    /* each refusal told, not only returned */
    const char *bad = !o || !out                        ? "NULL options or handle"
                      : o->task_size == 0               ? "task_size is 0"
                      : o->task_size > TS_MAX_TASK      ? "task_size is over TS_MAX_TASK"
                      : o->steal_max == 0               ? "steal_max is 0"
                      : (unsigned)o->topology > TS_PUSH ? "unknown topology"
                                                        : NULL;
    if (bad) {
        lib_misuse("ts_create: %s", bad);
        return MP_ERR_INVALID_ARG;
    }
    LIB_PERF_INIT(taskstealer_perf_init);
    ts_part *p = calloc(1, sizeof *p);
    if (!p)
        return MP_ERR_NO_MEMORY;
    p->magic = TS_MAGIC;
    p->o = *o;
    p->me = mp_mype();
    p->npes = mp_npes();
    p->wire_size = (sizeof(wire) + o->task_size + 15) & ~(size_t)15;
    /* one steal is one bulk store: no more tasks than the largest message holds */
    size_t fit = mp_max_message() / p->wire_size;
    if (p->o.steal_max > fit)
        p->o.steal_max = fit ? (unsigned)fit : 1;
    p->nbrs = lib_malloc((size_t)p->npes * sizeof *p->nbrs);
    int P = p->npes, me = p->me;
    if (o->topology == TS_RING) {
        add_nbr(p, (me + 1) % P);
        add_nbr(p, (me + P - 1) % P);
    } else if (o->topology == TS_HYPERCUBE) {
        for (int b = 1; b < P; b <<= 1)
            add_nbr(p, me ^ b);
    } else if (o->topology == TS_COMPLETE) {
        for (int i = 1; i < P; i++)
            add_nbr(p, (me + i) % P);
    }
    p->recv_buf = lib_malloc(p->wire_size * p->o.steal_max);
    p->rng = o->seed ^ ((uint64_t)me * 0x9e3779b97f4a7c15ull);
    p->last_victim = -1;
    p->refused_in = lib_calloc((size_t)P, sizeof *p->refused_in);
    p->sweep = 1;
    p->park_at = -1;
    p->steals_answered = mp_counter_new(0);
    tsi_term_init(p);
    mp_err e = mp_obj_create(p, &p->id);
    if (e != MP_SUCCESS) {
        part_free(p);
        return e;
    }
    p->st = taskstealer_stats_create(p->id);
    TASKSTEALER_SET(p->st, P, 1);
    if ((e = mp_at_pe_end(ts_at_pe_end, (void *)(uintptr_t)p->id)) != MP_SUCCESS)
        return e;
    *out = p->id;
    return MP_SUCCESS;
}

/* ---------------------------------------------------------------------------------- */
/* The pool: a max-heap on (priority, seq)                                              */

static bool before(const entry *a, const entry *b)
{
    return a->h.priority > b->h.priority || (a->h.priority == b->h.priority && a->seq > b->seq);
}

static void sift_up(ts_part *p, size_t i)
{
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(p->heap[i], p->heap[up]))
            break;
        entry *t = p->heap[i];
        p->heap[i] = p->heap[up];
        p->heap[up] = t;
        i = up;
    }
}

static void sift_down(ts_part *p, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < p->n && before(p->heap[l], p->heap[m]))
            m = l;
        if (r < p->n && before(p->heap[r], p->heap[m]))
            m = r;
        if (m == i)
            return;
        entry *t = p->heap[i];
        p->heap[i] = p->heap[m];
        p->heap[m] = t;
        i = m;
    }
}

entry *tsi_heap_take(ts_part *p, size_t i)
{
    entry *e = p->heap[i];
    p->heap[i] = p->heap[--p->n];
    if (i < p->n) {
        sift_down(p, i);
        sift_up(p, i);
    }
    return e;
}

void tsi_heap_rebuild(ts_part *p)
{
    for (size_t i = p->n / 2; i-- > 0;)
        sift_down(p, i);
}

static void hand_to(ts_part *p, waiter *w, const ts_hints *h, const unsigned char *task)
{
    memcpy(w->task, task, p->o.task_size);
    if (w->hints)
        *w->hints = *h;
    *w->result = TS_GOT_TASK;
    p->in_progress++;
    TASKSTEALER_INC(p->st, NTask, 1);
    mp_counter_add(w->done, 1);
}

/* A task enters this PE's pool: straight to the first waiting remove, if any. */
void tsi_pool_push(ts_part *p, const ts_hints *h, const unsigned char *task, bool migrated)
{
    if (p->nrefused) /* a thief's round of refusals ends with it */
        tsi_new_round(p);
    waiter *w = p->wq_head;
    if (w) {
        p->wq_head = w->next;
        if (!p->wq_head)
            p->wq_tail = NULL;
        p->nwait--;
        hand_to(p, w, h, task);
        free(w);
        return;
    }
    entry *e = lib_malloc(sizeof *e + p->o.task_size);
    e->h = *h;
    e->seq = p->seq++;
    e->migrated = migrated;
    memcpy(e->task, task, p->o.task_size);
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->heap = lib_realloc(p->heap, p->cap * sizeof *p->heap);
    }
    p->heap[p->n++] = e;
    sift_up(p, p->n - 1);
}

void tsi_wake_terminated(ts_part *p)
{
    while (p->wq_head) {
        waiter *w = p->wq_head;
        p->wq_head = w->next;
        *w->result = TS_TERMINATED;
        mp_counter_add(w->done, 1);
        free(w);
    }
    p->wq_tail = NULL;
    p->nwait = 0;
}

/* ---------------------------------------------------------------------------------- */
/* Adding and removing                                                                  */

typedef struct {
    ts_t id;
    int from;
    uint32_t task_size; /* the sender's */
    ts_hints h;
    _Alignas(16) unsigned char task[];
} add_msg;

static void ts_add_arrive(void *args)
{
    add_msg *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(ADD);
    tsi_check_task_size(p, m->from, m->task_size);
    tsi_task_received(p, m->from);
    tsi_pool_push(p, &m->h, m->task, false);
    tsi_pool_grew(p);
    tsi_hunt(p);
}

/* Why ts_add cannot take the task, or NULL. */
static const char *add_refusal(const ts_part *p, int dest, const void *task)
{
    if (!task)
        return "NULL task";
    if (dest < TS_ANY || dest >= p->npes)
        return "destination is neither a PE nor TS_ANY";
    /* termination was announced: no worker will ever remove the task (and no PE would count it
     * for termination detection again) */
    if (p->terminated)
        return "the stealer has terminated: the task could never run";
    return NULL;
}

mp_status ts_add(ts_t ts, int dest, const void *task, const ts_hints *hints)
{
    ts_part *p = stealer_or_null(ts, "ts_add");
    if (!p)
        return MP_FAIL;
    const char *why = add_refusal(p, dest, task);
    if (why) {
        lib_misuse("ts_add (destination %d): %s", dest, why);
        return MP_FAIL;
    }
    ts_hints h = hints ? *hints : (ts_hints){0, 0, 0};
    if (dest == TS_ANY)
        dest = p->o.topology == TS_PUSH ? (int)(splitmix(&p->rng) % (uint64_t)p->npes) : p->me;
    TASKSTEALER_INC(p->st, NAdd, 1);
    if (dest == p->me) {
        tsi_pool_push(p, &h, task, false);
        tsi_pool_grew(p);
        return MP_OK;
    }
    unsigned char buf[sizeof(add_msg) + TS_MAX_TASK];
    add_msg *m = (add_msg *)buf;
    m->id = ts;
    m->from = p->me;
    m->task_size = (uint32_t)p->o.task_size;
    m->h = h;
    memcpy(m->task, task, p->o.task_size);
    tsi_task_sent(p);
    TASKSTEALER_INC(p->st, NMsg, 1);
    TASKSTEALER_INC(p->st, NMigrate, 1);
    TASKSTEALER_INC(p->st, Bytes, p->o.task_size);
    if (mp_invoke(dest, ts_add_arrive, m, sizeof *m + p->o.task_size, MP_SCHED_FIFO))
        return MP_FAIL;
    return MP_WAIT;
}

mp_status ts_remove(ts_t ts, void *task, ts_hints *hints, int *result, mp_counter_t done)
{
    ts_part *p = stealer_or_null(ts, "ts_remove");
    if (!p)
        return MP_FAIL;
    if (!task || !result || !done) {
        lib_misuse("ts_remove: NULL %s", !task ? "task" : !result ? "result" : "done counter");
        return MP_FAIL;
    }
    if (p->terminated) {
        *result = TS_TERMINATED;
        mp_counter_add(done, 1);
        return MP_OK;
    }
    if (p->n) {
        entry *e = tsi_heap_take(p, 0);
        waiter w = {NULL, task, hints, result, done};
        hand_to(p, &w, &e->h, e->task);
        free(e);
        tsi_hunt_after_remove(p); /* below the low-water mark: steal before running dry */
        return MP_OK;
    }
    waiter *w = lib_malloc(sizeof *w);
    *w = (waiter){NULL, task, hints, result, done};
    if (p->wq_tail)
        p->wq_tail->next = w;
    else
        p->wq_head = w;
    p->wq_tail = w;
    p->nwait++;
    TASKSTEALER_INC(p->st, NBlock, 1);
    tsi_check_idle(p);
    tsi_hunt(p);
    return MP_WAIT;
}

void ts_done(ts_t ts)
{
    ts_part *p = part_of(ts);
    if (p->in_progress == 0)
        lib_die("ts_done without a task in progress");
    p->in_progress--;
    if (p->nparked && p->in_progress == 0 && p->n == 0)
        tsi_release_parked(p, true); /* no work will appear here: thieves look elsewhere */
    tsi_check_idle(p);
}

bool ts_terminated(ts_t ts) { return part_of(ts)->terminated; }
size_t ts_local_count(ts_t ts) { return part_of(ts)->n; }

/* ---------------------------------------------------------------------------------- */
/* Destroy                                                                              */

/* After termination the only messages of the stealer that may still travel are steal
 * requests sent before the thief learnt of termination, and their refusals (every task
 * message was acknowledged before PE 0 announced termination, and the announcement reaches
 * each PE once, before its ts_destroy).  Each PE waits for the answers to its own steal
 * requests before it enters mp_obj_destroy, whose barrier frees the partitions only when
 * every PE has: so no request can find a partition gone. */

static void part_free(void *arg)
{
    ts_part *p = arg;
    for (size_t i = 0; i < p->n; i++)
        free(p->heap[i]);
    free(p->heap);
    free(p->nbrs);
    free(p->recv_buf);
    free(p->refused_in);
    free(p->parked);
    mp_counter_free(p->steals_answered);
    p->magic = 0;
    free(p);
}

typedef struct {
    ts_t id;
} destroy_args;

static void ts_destroy_go(void *args)
{
    ts_part *p = part_of(((destroy_args *)args)->id);
    TASKSTEALER_ACCESS(TERMINATE);
    if (lib_destroy(p->id, 0, part_free, p, p->destroy_done) == MP_FAIL)
        lib_die("mp_obj_destroy failed");
}

/* Why ts_destroy cannot start, or NULL. */
static const char *destroy_refusal(const ts_part *p, mp_counter_t done)
{
    if (!done)
        return "NULL done counter";
    if (p->destroy_done)
        return "called twice";
    if (!p->terminated || p->in_progress)
        return "before termination on this PE";
    return NULL;
}

mp_status ts_destroy(ts_t ts, mp_counter_t done)
{
    ts_part *p = stealer_or_null(ts, "ts_destroy");
    if (!p)
        return MP_FAIL;
    const char *why = destroy_refusal(p, done);
    if (why) {
        lib_misuse("ts_destroy: %s", why);
        return MP_FAIL;
    }
    p->destroy_done = done;
    destroy_args a = {ts};
    mp_fiber_t f = mp_fiber_create(ts_destroy_go, &a, sizeof a, MP_SCHED_FIFO);
    mp_counter_wait(p->steals_answered, p->steals_sent, f);
    return MP_WAIT;
}
