/*
 * ts_terminate.c -- termination detection for the task stealer: Dijkstra-Scholten
 * acknowledgements (diffusing computation), so that no PE ever stops the world to ask
 * whether the computation is over.
 *
 * Work (a queued task, or one in progress) is always covered by a tree of engaged PEs rooted
 * at PE 0.  Every message that carries tasks (a steal reply with tasks, a task added to
 * another PE's pool) raises its sender's deficit; the receiver acknowledges it at once if it
 * is engaged already, or else becomes engaged with the sender as its parent and keeps the
 * acknowledgement.  An engaged PE that is idle (empty pool, no task in progress) and whose
 * own task messages have all been acknowledged sends that acknowledgement to its parent and
 * disengages.  When PE 0 is idle with a zero deficit, no task exists anywhere and none is in
 * flight: it announces termination down a binary tree, the run's only global round.
 *
 * Initially every PE may hold tasks added in pe_main, so every PE starts engaged as if PE 0
 * had sent it a task message (PE 0's deficit starts at P-1).  Refused steal requests carry no
 * tasks and are not acknowledged; a steal costs one acknowledgement more than before.  Steal
 * requests parked at a victim (ts_balance.c) carry no tasks either; the announcement refuses
 * them.
 *
 * A task removed and never finished with ts_done keeps its PE engaged for ever: termination
 * is never announced, and the removes that wait for it never return.  Starving thieves back
 * off (ts_balance.c), so the machine falls quiet and the runtime reports the hang; the
 * stealer names the unfinished tasks at the end (taskstealer.c, ts_at_pe_end).
 */
#include "ts_internal.h"

#define TS_ROOT 0

typedef struct {
    ts_t id;
    int from;
} term_msg;

void tsi_term_init(ts_part *p)
{
    p->engaged = true;
    p->parent = p->me == TS_ROOT ? -1 : TS_ROOT;
    p->deficit = p->me == TS_ROOT ? (uint64_t)(p->npes - 1) : 0;
}

static void ts_ack_arrive(void *args)
{
    term_msg *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(TERMINATE);
    if (p->deficit == 0)
        lib_die("acknowledgement from PE %d without a task message out", m->from);
    p->deficit--;
    tsi_check_idle(p);
}

static void send_ack(ts_part *p, int to)
{
    term_msg m = {p->id, p->me};
    TASKSTEALER_INC(p->st, NAck, 1);
    TASKSTEALER_INC(p->st, NMsg, 1);
    mp_invoke(to, ts_ack_arrive, &m, sizeof m, MP_SCHED_URGENT);
}

void tsi_task_sent(ts_part *p) { p->deficit++; }

void tsi_task_received(ts_part *p, int from)
{
    if (from == p->me)
        return;
    if (p->engaged) {
        send_ack(p, from);
        return;
    }
    p->engaged = true;
    p->parent = from;
}

static void ts_terminate_arrive(void *args);

/* The announcement travels down the binary tree 0 -> 1, 2 -> 3..6 ...: log2 P hops. */
static void announce(ts_part *p)
{
    p->terminated = true;
    TASKSTEALER_INC(p->st, NProbe, 1);
    term_msg m = {p->id, p->me};
    for (int c = 2 * p->me + 1; c <= 2 * p->me + 2 && c < p->npes; c++) {
        TASKSTEALER_INC(p->st, NMsg, 1);
        mp_invoke(c, ts_terminate_arrive, &m, sizeof m, MP_SCHED_URGENT);
    }
    tsi_release_parked(p, false); /* steal requests parked here: refused, as from now on */
    tsi_wake_terminated(p);
}

static void ts_terminate_arrive(void *args)
{
    term_msg *m = args;
    ts_part *p = part_of(m->id);
    TASKSTEALER_ACCESS(TERMINATE);
    if (p->n || p->in_progress || p->deficit)
        lib_die("termination announced to PE %d with work left", p->me);
    announce(p);
}

void tsi_check_idle(ts_part *p)
{
    if (!p->engaged || p->terminated || p->n || p->in_progress || p->deficit)
        return;
    if (p->me == TS_ROOT) {
        announce(p);
        return;
    }
    p->engaged = false;
    send_ack(p, p->parent);
    p->parent = -1;
}
