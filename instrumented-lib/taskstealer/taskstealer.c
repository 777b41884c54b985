/*
 * taskstealer.c -- the task stealer (Wen 1995, section 2.2.3).
 *
 * Per PE: a binary heap of tasks (priority, then order of arrival), a FIFO of waiting
 * removes, and the state of the PE's hunt for work: at most one steal request out at a
 * time, neighbours tried in turn; after a whole turn of refusals, one probe request to the
 * coordinator (PE 0).  The coordinator runs termination rounds one after the other; each
 * round is collective: freeze the snapshot (no migration starts; those started land),
 * barrier (every PE's share has landed), reduce the sum of pending work, unfreeze.
 *
 * Stolen tasks travel in one bulk store per steal, straight into the thief's receive
 * buffer (a thief has one steal out at a time, so one buffer suffices).
 */
#include "taskstealer.h"

#include "taskstealer_perf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ts_hints h;
    uint64_t seq;
    uint8_t migrated;
    _Alignas(16) unsigned char task[];
} entry;

/* A task on the wire: hints, migrated flag, bytes. */
typedef struct {
    ts_hints h;
    uint32_t migrated;
    uint32_t pad_;
    unsigned char task[];
} wire;

typedef struct waiter {
    struct waiter *next;
    void *task;
    ts_hints *hints;
    int *result;
    mp_counter_t done;
} waiter;

typedef struct {
    mp_obj_t id;
    ts_options o;
    mp_snapshot_t snap;
    int me, npes;
    size_t wire_size;
    /* pool */
    entry **heap;
    size_t n, cap;
    uint64_t seq;
    waiter *wq_head, *wq_tail;
    size_t nwait;
    uint64_t in_progress;
    uint64_t pending; /* remote adds parked by a termination round */
    /* hunting */
    int *nbrs;
    int nnbrs, next_nbr, fails;
    bool steal_out, probe_req;
    unsigned char *recv_buf;
    /* termination rounds */
    bool round_active, round_queued, terminated;
    bool coord_active, coord_pending; /* PE 0 only */
    mp_counter_t round_ctr;
    uint64_t round_target;
    double busy_sum;
    uint64_t rng;
    taskstealer_stats_t *st;
} ts_part;

static pthread_once_t access_once = PTHREAD_ONCE_INIT;

static ts_part *part_of(ts_t ts)
{
    ts_part *p = mp_obj_local(ts);
    if (!p) {
        fprintf(stderr, "taskstealer: object %u is not a task stealer on PE %d\n", ts, mp_mype());
        abort();
    }
    return p;
}

static void *xmalloc(size_t n)
{
    void *q = malloc(n);
    if (!q) {
        fprintf(stderr, "taskstealer: out of memory\n");
        abort();
    }
    return q;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void ts_options_init(ts_options *o, size_t task_size)
{
    memset(o, 0, sizeof *o);
    o->task_size = task_size;
    o->topology = TS_RING;
    o->steal_max = 16;
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

mp_err ts_create(const ts_options *o, ts_t *out)
{
    if (!o || !out || o->task_size == 0 || o->task_size > TS_MAX_TASK || o->steal_max == 0 ||
        (unsigned)o->topology > TS_PUSH)
        return MP_ERR_INVALID_ARG;
    pthread_once(&access_once, taskstealer_perf_init);
    ts_part *p = calloc(1, sizeof *p);
    if (!p)
        return MP_ERR_NO_MEMORY;
    p->o = *o;
    p->me = mp_mype();
    p->npes = mp_npes();
    p->wire_size = (sizeof(wire) + o->task_size + 15) & ~(size_t)15;
    p->nbrs = xmalloc((size_t)p->npes * sizeof *p->nbrs);
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
    p->recv_buf = xmalloc(p->wire_size * o->steal_max);
    p->rng = o->seed ^ ((uint64_t)me * 0x9e3779b97f4a7c15ull);
    p->round_ctr = mp_counter_new(0);
    mp_err e = mp_snapshot_new(&p->snap);
    if (e == MP_SUCCESS)
        e = mp_obj_create(p, &p->id);
    if (e != MP_SUCCESS)
        return e;
    p->st = taskstealer_stats_create(p->id);
    TASKSTEALER_SET(p->st, P, 1);
    *out = p->id;
    return MP_SUCCESS;
}

/* ---------------------------------------------------------------------------------- */
/* The pool: a max-heap on (priority, -seq)                                             */

static bool before(const entry *a, const entry *b)
{
    return a->h.priority > b->h.priority || (a->h.priority == b->h.priority && a->seq < b->seq);
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

static entry *heap_take(ts_part *p, size_t i)
{
    entry *e = p->heap[i];
    p->heap[i] = p->heap[--p->n];
    if (i < p->n) {
        sift_down(p, i);
        sift_up(p, i);
    }
    return e;
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
static void pool_push(ts_part *p, const ts_hints *h, const unsigned char *task, bool migrated)
{
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
    entry *e = xmalloc(sizeof *e + p->o.task_size);
    e->h = *h;
    e->seq = p->seq++;
    e->migrated = migrated;
    memcpy(e->task, task, p->o.task_size);
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        entry **nh = realloc(p->heap, p->cap * sizeof *nh);
        if (!nh) {
            fprintf(stderr, "taskstealer: out of memory\n");
            abort();
        }
        p->heap = nh;
    }
    p->heap[p->n++] = e;
    sift_up(p, p->n - 1);
}

static void wake_terminated(ts_part *p)
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
/* Hunting for work: steal from neighbours, then ask for a termination probe            */

typedef struct {
    ts_t id;
    int from;
    void *buf; /* the thief's receive buffer */
} steal_req;

typedef struct {
    ts_t id;
    int victim;
    uint32_t count;
} steal_reply;

typedef struct {
    ts_t id;
    int from;
} small_msg;

static void ts_steal_serve(void *args);
static void ts_probe_request(void *args);

static void hunt(ts_part *p)
{
    if (p->terminated) {
        wake_terminated(p);
        return;
    }
    if (!p->nwait || p->n || p->steal_out || p->probe_req || p->round_active)
        return;
    if (p->o.topology != TS_PUSH && p->nnbrs > 0 && p->fails < p->nnbrs) {
        int victim = p->nbrs[p->next_nbr];
        p->next_nbr = (p->next_nbr + 1) % p->nnbrs;
        p->steal_out = true;
        steal_req r = {p->id, p->me, p->recv_buf};
        TASKSTEALER_INC(p->st, NMsg, 1);
        mp_invoke(victim, ts_steal_serve, &r, sizeof r, MP_SCHED_URGENT);
        return;
    }
    /* no neighbour has work (or we do not steal): is the whole computation over? */
    p->probe_req = true;
    small_msg m = {p->id, p->me};
    if (p->me != 0)
        TASKSTEALER_INC(p->st, NMsg, 1);
    mp_invoke(0, ts_probe_request, &m, sizeof m, MP_SCHED_URGENT);
}

typedef struct {
    mp_counter_t c;
    void *buf;
} free_args;

static void ts_free_after(void *args)
{
    free_args *a = args;
    free(a->buf);
    mp_counter_free(a->c);
}

static void ts_steal_fail(void *args)
{
    small_msg *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(STEAL);
    p->steal_out = false;
    p->fails++;
    TASKSTEALER_INC(p->st, NStealFail, 1);
    hunt(p);
}

/* On the thief: the stolen tasks have landed in the receive buffer. */
static void ts_steal_arrive(void *args)
{
    mp_store_arrival *a = args;
    steal_reply r;
    memcpy(&r, a->user, sizeof r);
    ts_part *p = part_of(r.id);
    TASKSTEALER_ACCESS(STEAL);
    for (uint32_t i = 0; i < r.count; i++) {
        const wire *w = (const wire *)(p->recv_buf + i * p->wire_size);
        pool_push(p, &w->h, w->task, true);
    }
    if (r.victim != p->me)
        TASKSTEALER_INC(p->st, NMsg, 1); /* the runtime's completion message */
    mp_snapshot_complete(p->snap, r.victim);
    p->steal_out = false;
    p->fails = 0;
    TASKSTEALER_INC(p->st, NSteal, 1);
    hunt(p);
}

/* Index of the best task to give away: migrated before, then low penalty, low priority,
 * most recent. */
static size_t pick_victim_task(const ts_part *p)
{
    size_t best = 0;
    for (size_t i = 1; i < p->n; i++) {
        const entry *a = p->heap[i], *b = p->heap[best];
        if (a->migrated != b->migrated) {
            if (a->migrated)
                best = i;
            continue;
        }
        if (a->h.penalty != b->h.penalty) {
            if (a->h.penalty < b->h.penalty)
                best = i;
            continue;
        }
        if (a->h.priority != b->h.priority) {
            if (a->h.priority < b->h.priority)
                best = i;
            continue;
        }
        if (a->seq > b->seq)
            best = i;
    }
    return best;
}

/* On the victim: give away up to half of the pool, or refuse. */
static void ts_steal_serve(void *args)
{
    steal_req *q = args;
    ts_part *p = part_of(q->id);
    TASKSTEALER_ACCESS(STEAL);
    if (p->n == 0 || p->terminated) {
        small_msg m = {q->id, p->me};
        TASKSTEALER_INC(p->st, NMsg, 1);
        mp_invoke(q->from, ts_steal_fail, &m, sizeof m, MP_SCHED_URGENT);
        return;
    }
    if (mp_snapshot_query(p->snap) == MP_WAIT) {
        /* a termination round is on: serve after it (the pool is counted as busy) */
        mp_snapshot_suspend(p->snap, mp_continue(ts_steal_serve, MP_SCHED_URGENT));
        return;
    }
    mp_snapshot_execute(p->snap);
    size_t k = (p->n + 1) / 2;
    if (k > p->o.steal_max)
        k = p->o.steal_max;
    double total = 0, moved = 0;
    for (size_t i = 0; i < p->n; i++)
        total += p->heap[i]->h.work;
    unsigned char *buf = xmalloc(k * p->wire_size);
    size_t count = 0;
    while (count < k && (count == 0 || total <= 0 || moved < total / 2)) {
        entry *e = heap_take(p, pick_victim_task(p));
        wire *w = (wire *)(buf + count * p->wire_size);
        w->h = e->h;
        w->migrated = 1;
        w->pad_ = 0;
        memcpy(w->task, e->task, p->o.task_size);
        moved += e->h.work;
        free(e);
        count++;
    }
    steal_reply r = {q->id, p->me, (uint32_t)count};
    mp_counter_t c = mp_counter_new(0);
    TASKSTEALER_INC(p->st, NMsg, 1);
    TASKSTEALER_INC(p->st, NMigrate, count);
    TASKSTEALER_INC(p->st, Bytes, count * p->o.task_size);
    mp_status s =
        mp_bulk_store(q->from, q->buf, buf, count * p->wire_size, c, ts_steal_arrive, &r, sizeof r);
    if (s == MP_FAIL) {
        fprintf(stderr, "taskstealer: bulk store to PE %d failed\n", q->from);
        abort();
    }
    free_args fa = {c, buf};
    mp_counter_wait(c, 1, mp_fiber_create(ts_free_after, &fa, sizeof fa, MP_SCHED_URGENT));
}

/* ---------------------------------------------------------------------------------- */
/* Adding and removing                                                                  */

typedef struct {
    ts_t id;
    int from;
    int dest;
    ts_hints h;
    _Alignas(16) unsigned char task[];
} add_msg;

static void ts_add_arrive(void *args)
{
    add_msg *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(ADD);
    pool_push(p, &m->h, m->task, false);
    if (m->from != p->me)
        TASKSTEALER_INC(p->st, NMsg, 1); /* the runtime's completion message */
    mp_snapshot_complete(p->snap, m->from);
    hunt(p);
}

/* Ships a task to another pool (a migration): OK to start, or park until the round ends. */
static void ts_add_send(void *args)
{
    add_msg *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(ADD);
    if (mp_snapshot_query(p->snap) == MP_WAIT) {
        mp_snapshot_suspend(p->snap, mp_continue(ts_add_send, MP_SCHED_URGENT));
        return;
    }
    mp_snapshot_execute(p->snap);
    p->pending--;
    TASKSTEALER_INC(p->st, NMsg, 1);
    TASKSTEALER_INC(p->st, NMigrate, 1);
    TASKSTEALER_INC(p->st, Bytes, p->o.task_size);
    mp_invoke(m->dest, ts_add_arrive, m, sizeof *m + p->o.task_size, MP_SCHED_FIFO);
}

mp_status ts_add(ts_t ts, int dest, const void *task, const ts_hints *hints)
{
    ts_part *p = mp_obj_local(ts);
    if (!p || !task || dest < TS_ANY || dest >= p->npes)
        return MP_FAIL;
    ts_hints h = hints ? *hints : (ts_hints){0, 0, 0};
    if (dest == TS_ANY)
        dest = p->o.topology == TS_PUSH ? (int)(splitmix(&p->rng) % (uint64_t)p->npes) : p->me;
    TASKSTEALER_INC(p->st, NAdd, 1);
    if (dest == p->me) {
        pool_push(p, &h, task, false);
        return MP_OK;
    }
    unsigned char buf[sizeof(add_msg) + TS_MAX_TASK];
    add_msg *m = (add_msg *)buf;
    m->id = ts;
    m->from = p->me;
    m->dest = dest;
    m->h = h;
    memcpy(m->task, task, p->o.task_size);
    p->pending++;
    if (mp_snapshot_query(p->snap) == MP_WAIT) {
        /* parked until the round ends; urgent, so that it leaves before the next round can
         * start (rounds run back to back while PEs are hungry) */
        mp_fiber_t f = mp_fiber_create(ts_add_send, m, sizeof *m + p->o.task_size, MP_SCHED_URGENT);
        if (!f || mp_snapshot_suspend(p->snap, f) != MP_SUCCESS)
            return MP_FAIL;
        return MP_WAIT;
    }
    mp_snapshot_execute(p->snap);
    p->pending--;
    TASKSTEALER_INC(p->st, NMsg, 1);
    TASKSTEALER_INC(p->st, NMigrate, 1);
    TASKSTEALER_INC(p->st, Bytes, p->o.task_size);
    if (mp_invoke(dest, ts_add_arrive, m, sizeof *m + p->o.task_size, MP_SCHED_FIFO))
        return MP_FAIL;
    return MP_WAIT;
}

mp_status ts_remove(ts_t ts, void *task, ts_hints *hints, int *result, mp_counter_t done)
{
    ts_part *p = mp_obj_local(ts);
    if (!p || !task || !result || !done)
        return MP_FAIL;
    if (p->terminated) {
        *result = TS_TERMINATED;
        mp_counter_add(done, 1);
        return MP_OK;
    }
    if (p->n) {
        entry *e = heap_take(p, 0);
        waiter w = {NULL, task, hints, result, done};
        hand_to(p, &w, &e->h, e->task);
        free(e);
        return MP_OK;
    }
    waiter *w = xmalloc(sizeof *w);
    *w = (waiter){NULL, task, hints, result, done};
    if (p->wq_tail)
        p->wq_tail->next = w;
    else
        p->wq_head = w;
    p->wq_tail = w;
    p->nwait++;
    TASKSTEALER_INC(p->st, NBlock, 1);
    hunt(p);
    return MP_WAIT;
}

void ts_done(ts_t ts)
{
    ts_part *p = part_of(ts);
    if (p->in_progress == 0) {
        fprintf(stderr, "taskstealer: ts_done without a task in progress on PE %d\n", p->me);
        abort();
    }
    p->in_progress--;
}

bool ts_terminated(ts_t ts) { return part_of(ts)->terminated; }
size_t ts_local_count(ts_t ts) { return part_of(ts)->n; }

/* ---------------------------------------------------------------------------------- */
/* Termination rounds                                                                   */

typedef struct {
    ts_t id;
} round_args;

static void ts_round_start(void *args);

static void coord_start_round(ts_part *p)
{
    p->coord_active = true;
    round_args a = {p->id};
    for (int q = 0; q < p->npes; q++) {
        if (q != p->me)
            TASKSTEALER_INC(p->st, NMsg, 1);
        mp_invoke(q, ts_round_start, &a, sizeof a, MP_SCHED_URGENT);
    }
}

/* On PE 0: some PE found no work anywhere near it. */
static void ts_probe_request(void *args)
{
    small_msg *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(TERMINATE);
    if (p->terminated)
        return;
    if (p->coord_active)
        p->coord_pending = true; /* run another round after this one */
    else
        coord_start_round(p);
}

static void begin_round(ts_part *p);

static void ts_round_reduced(void *args)
{
    round_args *a = args;
    ts_part *p = part_of(a->id);
    TASKSTEALER_ACCESS(TERMINATE);
    p->round_active = false;
    if (p->busy_sum == 0)
        p->terminated = true;
    mp_snapshot_unfreeze(p->snap);
    if (p->me == 0)
        p->coord_active = false;
    if (p->terminated) {
        wake_terminated(p);
        return;
    }
    p->probe_req = false;
    p->fails = 0;
    if (p->round_queued) {
        p->round_queued = false;
        begin_round(p);
    } else if (p->me == 0 && p->coord_pending) {
        p->coord_pending = false;
        coord_start_round(p);
    }
    hunt(p);
}

static void ts_round_barrier_done(void *args)
{
    round_args *a = args;
    ts_part *p = part_of(a->id);
    TASKSTEALER_ACCESS(TERMINATE);
    /* every migration started before the freeze has landed everywhere: count the work */
    double busy = (double)(p->n + p->in_progress + p->pending);
    p->round_target++;
    mp_counter_wait(p->round_ctr, p->round_target, mp_continue(ts_round_reduced, MP_SCHED_URGENT));
    mp_obj_reduce(p->id, MP_REDUCE_SUM, busy, &p->busy_sum, p->round_ctr);
}

static void ts_round_frozen(void *args)
{
    round_args *a = args;
    ts_part *p = part_of(a->id);
    TASKSTEALER_ACCESS(TERMINATE);
    p->round_target++;
    mp_counter_wait(p->round_ctr, p->round_target,
                    mp_continue(ts_round_barrier_done, MP_SCHED_URGENT));
    mp_obj_barrier(p->id, p->round_ctr);
}

static void begin_round(ts_part *p)
{
    p->round_active = true;
    TASKSTEALER_INC(p->st, NProbe, 1);
    p->round_target++;
    round_args a = {p->id};
    mp_counter_wait(p->round_ctr, p->round_target,
                    mp_fiber_create(ts_round_frozen, &a, sizeof a, MP_SCHED_URGENT));
    mp_snapshot_freeze(p->snap, p->round_ctr);
}

static void ts_round_start(void *args)
{
    round_args *a = args;
    ts_part *p = part_of(a->id);
    TASKSTEALER_ACCESS(TERMINATE);
    if (p->terminated)
        return;
    if (p->round_active)
        p->round_queued = true; /* the previous round is still ending here */
    else
        begin_round(p);
}

/* ---------------------------------------------------------------------------------- */
/* ts_run: a worker fiber chain                                                         */

typedef struct {
    ts_t ts;
    ts_task_fn fn;
    void *ctx;
    mp_counter_t finished, wake;
    uint64_t target;
    int result;
    ts_hints hints;
    unsigned char task[TS_MAX_TASK];
} worker;

static void ts_worker(void *args);

/* Runs the task just obtained (or finishes); returns false when the worker is done. */
static bool worker_handle(worker *w)
{
    if (w->result == TS_TERMINATED) {
        if (w->finished)
            mp_counter_add(w->finished, 1);
        mp_counter_free(w->wake);
        free(w);
        return false;
    }
    w->fn(w->ts, w->task, &w->hints, w->ctx);
    TASKSTEALER_ACCESS(REMOVE);
    ts_done(w->ts);
    return true;
}

static void ts_worker_got(void *args)
{
    worker *w = *(worker **)args;
    TASKSTEALER_ACCESS(REMOVE);
    if (worker_handle(w))
        mp_fiber_enable(mp_continue(ts_worker, MP_SCHED_FIFO));
}

static void ts_worker(void *args)
{
    worker *w = *(worker **)args;
    TASKSTEALER_ACCESS(REMOVE);
    w->target++;
    mp_status s = ts_remove(w->ts, w->task, &w->hints, &w->result, w->wake);
    if (s == MP_WAIT) {
        mp_counter_wait(w->wake, w->target, mp_continue(ts_worker_got, MP_SCHED_FIFO));
        return;
    }
    if (s == MP_FAIL) {
        fprintf(stderr, "taskstealer: ts_remove failed in the worker\n");
        abort();
    }
    /* one task per fiber: yield so that steal requests and arrivals are served */
    if (worker_handle(w))
        mp_fiber_enable(mp_continue(ts_worker, MP_SCHED_FIFO));
}

mp_err ts_run(ts_t ts, ts_task_fn fn, void *ctx, mp_counter_t finished)
{
    ts_part *p = mp_obj_local(ts);
    if (!p || !fn)
        return MP_ERR_INVALID_ARG;
    worker *w = calloc(1, sizeof *w);
    if (!w)
        return MP_ERR_NO_MEMORY;
    w->ts = ts;
    w->fn = fn;
    w->ctx = ctx;
    w->finished = finished;
    w->wake = mp_counter_new(0);
    return mp_spawn(ts_worker, &w, sizeof w, MP_SCHED_FIFO);
}
