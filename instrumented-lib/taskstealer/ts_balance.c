/*
 * ts_balance.c -- the task stealer's load balancing and termination detection (Wen 1995,
 * section 2.2.3.2).
 *
 * A PE has at most one steal request out at a time and tries its neighbours in turn; after a
 * whole turn of refusals it sends one probe request to the coordinator (PE 0).  The
 * coordinator runs termination rounds one after the other; each round is collective: freeze
 * the snapshot (no migration starts; those started land), barrier (every PE's share has
 * landed), reduce the sum of pending work, unfreeze.  Stolen tasks travel in one bulk store
 * per steal, straight into the thief's receive buffer (one steal out at a time, so one
 * buffer suffices).
 */
#include "ts_internal.h"

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
static void ts_probe_request(void *args); /* below, with the termination rounds */

void tsi_hunt(ts_part *p)
{
    if (p->terminated) {
        tsi_wake_terminated(p);
        return;
    }
    if (!p->nwait || p->n || p->steal_out || p->probe_req || p->round_active)
        return;
    if (p->o.topology != TS_PUSH && p->nnbrs > 0 && p->fails < p->nnbrs) {
        int victim = p->nbrs[p->next_nbr];
        p->next_nbr = (p->next_nbr + 1) % p->nnbrs;
        p->steal_out = true;
        p->steals_sent++;
        steal_req r = {p->id, p->me, p->recv_buf};
        TASKSTEALER_INC(p->st, NMsg, 1);
        mp_invoke(victim, ts_steal_serve, &r, sizeof r, MP_SCHED_URGENT);
        return;
    }
    /* no neighbour has work (or we do not steal): is the whole computation over? */
    p->probe_req = true;
    p->probes_sent++;
    small_msg m = {p->id, p->me};
    if (p->me != 0)
        TASKSTEALER_INC(p->st, NMsg, 1);
    mp_invoke(0, ts_probe_request, &m, sizeof m, MP_SCHED_URGENT);
}

static void ts_steal_fail(void *args)
{
    small_msg *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(STEAL);
    mp_counter_add(p->steals_answered, 1);
    p->steal_out = false;
    p->fails++;
    TASKSTEALER_INC(p->st, NStealFail, 1);
    tsi_hunt(p);
}

/* On the thief: the stolen tasks have landed in the receive buffer. */
static void ts_steal_arrive(void *args)
{
    mp_store_arrival *a = args;
    steal_reply r;
    memcpy(&r, a->user, sizeof r);
    ts_part *p = part_of(r.id);
    TASKSTEALER_ACCESS(STEAL);
    mp_counter_add(p->steals_answered, 1);
    for (uint32_t i = 0; i < r.count; i++) {
        const wire *w = (const wire *)(p->recv_buf + i * p->wire_size);
        tsi_pool_push(p, &w->h, w->task, true);
    }
    if (r.victim != p->me)
        TASKSTEALER_INC(p->st, NMsg, 1); /* the runtime's completion message */
    mp_snapshot_complete(p->snap, r.victim);
    p->steal_out = false;
    p->fails = 0;
    TASKSTEALER_INC(p->st, NSteal, 1);
    tsi_hunt(p);
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
    unsigned char *buf = lib_malloc(k * p->wire_size);
    size_t count = 0;
    while (count < k && (count == 0 || total <= 0 || moved < total / 2)) {
        entry *e = tsi_heap_take(p, pick_victim_task(p));
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
    TASKSTEALER_INC(p->st, NMsg, 1);
    TASKSTEALER_INC(p->st, NMigrate, count);
    TASKSTEALER_INC(p->st, Bytes, count * p->o.task_size);
    lib_store_and_free(q->from, q->buf, buf, count * p->wire_size, ts_steal_arrive, &r, sizeof r);
}

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
    mp_counter_add(p->probes_received, 1);
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
        tsi_wake_terminated(p);
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
    tsi_hunt(p);
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
