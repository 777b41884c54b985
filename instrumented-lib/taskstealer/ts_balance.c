/*
 * ts_balance.c -- the task stealer's load balancing: randomized work stealing.
 *
 * A PE whose pool holds fewer than low_water tasks asks a victim chosen at random among its
 * neighbours (every other PE with the default complete topology; the ring and hypercube are
 * kept for the studies).  A starving PE (empty pool, a remove waiting) retries at once with
 * another victim when refused; a PE that still has work sends at most one request per task
 * it removes, so busy PEs do not flood each other.  The victim gives its oldest tasks (lowest
 * priority first, then oldest first: in a divide-and-conquer computation the largest
 * subproblems), about half of its estimated work (by the work hints; half of the tasks when
 * none is given), at most steal_max -- its own and the thief's, which the request carries: a
 * per-PE setting --; the owner meanwhile runs its newest tasks (see taskstealer.c), so thief
 * and owner work at opposite ends of the pool.
 *
 * Backing off: a starving PE that every neighbour has refused since a task last reached it
 * (a round of refusals) sends its next request "parked": a victim with nothing to give keeps
 * it, instead of refusing, and serves it once tasks enter its pool (tsi_pool_grew), refuses
 * it when it falls idle (no task queued or in progress: the thief starts a new round) or at
 * termination.  It parks at a neighbour that had a task in progress when it refused (where
 * work is likely to appear), else at a random one.  So starving PEs do not pass requests and
 * refusals back and forth for as long as tasks run elsewhere, and a program that can never
 * terminate (a task removed and never finished with ts_done) lets the machine fall quiet: the
 * runtime's hang report names the waiting removes, and the stealer the unfinished tasks
 * (taskstealer.c, ts_at_pe_end).
 *
 * Stolen tasks travel in one bulk store per steal, straight into the thief's receive buffer
 * (one steal out at a time, so one buffer suffices).  A reply with tasks is a task message
 * for termination detection (ts_terminate.c).  Requests and replies carry their sender's task
 * size, which must be the same on every PE (tsi_check_task_size).
 */
#include "ts_internal.h"

#include <stdlib.h>

typedef struct {
    ts_t id;
    int victim;
    uint32_t count;
    uint32_t task_size; /* the victim's */
} steal_reply;

/* A refusal: the victim had a task in progress (a good place to park), or it released a
 * parked request because it fell idle. */
enum { REFUSE_BUSY = 1, REFUSE_RELEASED = 2 };

typedef struct {
    ts_t id;
    int from;
    int flags;
} refusal;

static void ts_steal_serve(void *args);

static int pick_victim(ts_part *p)
{
    if (p->nnbrs == 1)
        return p->nbrs[0];
    for (;;) {
        int v = p->nbrs[tsi_random(p) % (uint64_t)p->nnbrs];
        if (v != p->last_victim)
            return v;
    }
}

void tsi_hunt(ts_part *p)
{
    if (p->terminated) {
        tsi_wake_terminated(p);
        return;
    }
    if (p->o.topology == TS_PUSH || p->nnbrs == 0 || p->steal_out)
        return;
    bool starving = p->n == 0 && p->nwait > 0;
    if (!starving && p->n >= p->o.low_water)
        return;
    /* a PE with work retries only at its next remove (see ts_remove) */
    if (!starving && p->refusals > 0)
        return;
    /* every neighbour refused since a task last reached this PE: wait at one for work */
    bool park = starving && p->nrefused >= p->nnbrs;
    int victim = park && p->park_at >= 0 ? p->park_at : pick_victim(p);
    p->last_victim = victim;
    p->steal_out = true;
    p->req_starving = starving;
    p->steals_sent++;
    ts_steal_req r = {.id = p->id,
                      .from = p->me,
                      .task_size = (uint32_t)p->o.task_size,
                      .cap = p->o.steal_max,
                      .starving = starving,
                      .park = park,
                      .buf = p->recv_buf};
    TASKSTEALER_INC(p->st, NMsg, 1);
    mp_invoke(victim, ts_steal_serve, &r, sizeof r, MP_SCHED_URGENT);
}

/* A remove found work: a PE that had been refused may prefetch again. */
void tsi_hunt_after_remove(ts_part *p)
{
    p->refusals = 0;
    tsi_hunt(p);
}

/* A starving request was refused: one more neighbour of this round. */
static void note_refusal(ts_part *p, int victim, bool busy)
{
    if (p->refused_in[victim] != p->sweep) {
        p->refused_in[victim] = p->sweep;
        p->nrefused++;
    }
    if (busy)
        p->park_at = victim;
    else if (p->park_at == victim)
        p->park_at = -1;
}

static void ts_steal_fail(void *args)
{
    refusal *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(STEAL);
    mp_counter_add(p->steals_answered, 1);
    p->steal_out = false;
    p->refusals++;
    TASKSTEALER_INC(p->st, NStealFail, 1);
    if (m->flags & REFUSE_RELEASED)
        tsi_new_round(p); /* the victim it waited at fell idle: look around again */
    else if (p->req_starving)
        note_refusal(p, m->from, m->flags & REFUSE_BUSY);
    tsi_hunt(p);
}

static void refuse(ts_part *p, ts_t id, int thief, int flags)
{
    refusal m = {id, p->me, flags};
    TASKSTEALER_INC(p->st, NMsg, 1);
    mp_invoke(thief, ts_steal_fail, &m, sizeof m, MP_SCHED_URGENT);
}

void tsi_release_parked(ts_part *p, bool released)
{
    int n = p->nparked;
    p->nparked = 0;
    for (int i = 0; i < n; i++)
        refuse(p, p->parked[i].id, p->parked[i].from, released ? REFUSE_RELEASED : 0);
}

/* Each parked request is served again in a fiber of its own, as it was when it arrived (it
 * parks again if the pool is empty by then). */
void tsi_serve_parked(ts_part *p)
{
    int n = p->nparked;
    p->nparked = 0;
    for (int i = 0; i < n; i++)
        if (mp_spawn(ts_steal_serve, &p->parked[i], sizeof p->parked[i], MP_SCHED_URGENT) !=
            MP_SUCCESS)
            lib_die("cannot serve a parked steal request");
}

_Noreturn void tsi_task_size_differs(const ts_part *p, int from, uint32_t size)
{
    lib_die("task stealer %u: PE %d created it with %u-byte tasks, this PE with %zu: ts_create "
            "must be given the same task_size on every PE",
            p->id, from, size, p->o.task_size);
}

/* On the thief: the stolen tasks have landed in the receive buffer. */
static void ts_steal_arrive(void *args)
{
    mp_store_arrival *a = args;
    steal_reply r;
    memcpy(&r, a->user, sizeof r);
    ts_part *p = part_of(r.id);
    TASKSTEALER_ACCESS(STEAL);
    tsi_check_task_size(p, r.victim, r.task_size);
    mp_counter_add(p->steals_answered, 1);
    tsi_task_received(p, r.victim);
    for (uint32_t i = 0; i < r.count; i++) {
        const wire *w = (const wire *)(p->recv_buf + i * p->wire_size);
        tsi_pool_push(p, &w->h, w->task, true);
    }
    p->steal_out = false;
    p->refusals = 0;
    TASKSTEALER_INC(p->st, NSteal, 1);
    tsi_pool_grew(p);
    tsi_hunt(p);
}

/* Steal order: the largest estimated work first, then the lowest priority, then the oldest
 * (the owner runs the other end). */
static int steal_order(const void *a, const void *b)
{
    const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
    if (x->h.work != y->h.work)
        return x->h.work > y->h.work ? -1 : 1;
    if (x->h.priority != y->h.priority)
        return x->h.priority < y->h.priority ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* On the victim: give about half of the work, park the request, or refuse. */
static void ts_steal_serve(void *args)
{
    ts_steal_req *q = args;
    ts_part *p = part_of(q->id);
    TASKSTEALER_ACCESS(STEAL);
    /* the tasks are written into the thief's buffer with this PE's size */
    tsi_check_task_size(p, q->from, q->task_size);
    if (q->park && p->n == 0 && !p->terminated) {
        if (!p->parked)
            p->parked = lib_malloc((size_t)p->npes * sizeof *p->parked);
        if (p->nparked == p->npes)
            lib_die("more parked steal requests than PEs");
        p->parked[p->nparked++] = *q; /* one per thief at most: one request out each */
        return;
    }
    /* a thief that still has work takes none of the last task: no ping-pong of one task */
    if (p->terminated || p->n == 0 || (!q->starving && p->n < 2)) {
        refuse(p, q->id, q->from, p->in_progress ? REFUSE_BUSY : 0);
        return;
    }
    double total = 0;
    for (size_t i = 0; i < p->n; i++)
        total += p->heap[i]->h.work;
    size_t k = (p->n + 1) / 2; /* by count, when no work is estimated */
    if (k > p->o.steal_max)
        k = p->o.steal_max;
    if (k > q->cap) /* the thief's receive buffer holds its own steal_max */
        k = q->cap;
    /* the pool in steal order; the tasks left behind form the heap again afterwards */
    qsort(p->heap, p->n, sizeof *p->heap, steal_order);
    unsigned char *buf = lib_malloc(k * p->wire_size);
    size_t count = 0;
    double moved = 0;
    while (count < k && count < p->n) {
        const entry *e = p->heap[count];
        if (total > 0 && count > 0 && moved + e->h.work > total / 2)
            break; /* the thief has about half of the work */
        wire *w = (wire *)(buf + count * p->wire_size);
        w->h = e->h;
        w->migrated = 1;
        w->pad_ = 0;
        memcpy(w->task, e->task, p->o.task_size);
        moved += e->h.work;
        count++;
    }
    if (total > 0 && count == p->n && p->n > 1)
        count--; /* one task's work is more than half of the rest: keep one */
    for (size_t i = 0; i < count; i++)
        free(p->heap[i]);
    memmove(p->heap, p->heap + count, (p->n - count) * sizeof *p->heap);
    p->n -= count;
    tsi_heap_rebuild(p);
    steal_reply r = {q->id, p->me, (uint32_t)count, (uint32_t)p->o.task_size};
    tsi_task_sent(p);
    TASKSTEALER_INC(p->st, NMsg, 1);
    TASKSTEALER_INC(p->st, NMigrate, count);
    TASKSTEALER_INC(p->st, Bytes, count * p->o.task_size);
    lib_store_and_free(q->from, q->buf, buf, count * p->wire_size, ts_steal_arrive, &r, sizeof r);
    mp_flush();  /* a thief is idle until they land: do not leave them in an aggregation buffer */
    tsi_hunt(p); /* the victim's pool may have fallen below its low-water mark */
}
