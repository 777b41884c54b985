/*
 * cswec_threads.c -- CSWEC's threads (Wen 1995, Fig 2.13): the recovery thread of each PE and
 * the thread of every circuit node.  See cswec.c for the algorithm.
 */
#include "cswec_internal.h"

#define die cswec_die

/* ------------------------------------------------------------------------------------ */
/* Deadlock recovery                                                                      */

static void maybe_recover(void);

static double node_bound(node_state *n)
{
    switch (n->state) {
    case DONE:
        return INFINITY;
    case BLK_SEND:
        return n->queued_t;
    case BLK_INPUT: {
        double b = n->want;
        for (uint32_t i = 0; i < n->s.nslot; i++) {
            size_t c = eg_count(S.g, n->in_edge[i]);
            for (size_t k = 0; k < c; k++) {
                const cs_msg *e = eg_examine(S.g, n->in_edge[i], k);
                if (e && e->kind == M_EVENT && e->t < b)
                    b = e->t;
            }
        }
        return b;
    }
    default:
        return n->node < M.nsrc ? 0.0 : n->s.T;
    }
}

static void rec_reduced(void *args)
{
    (void)args;
    CSWEC_ACCESS(TERM);
    CSWEC_INC(S.st, NRecover, 1);
    if (S.gmin == INFINITY) { /* every node everywhere has finished */
        S.finished = true;
        mp_counter_add(S.done_c, 1);
        return;
    }
    for (uint32_t k = 0; k < S.nlocal; k++) {
        node_state *n = &S.nodes[k];
        for (uint32_t i = 0; i < n->s.nslot; i++)
            if (n->known[i] < S.gmin)
                n->known[i] = S.gmin;
        if (n->state == BLK_INPUT)
            mp_counter_add(n->wake, 1); /* retry (a spurious wake-up is harmless) */
    }
    eg_unfreeze(S.g);
    S.recovering = false;
    maybe_recover();
}

static void rec_frozen(void *args)
{
    (void)args;
    CSWEC_ACCESS(TERM);
    S.lb = INFINITY;
    for (uint32_t k = 0; k < S.nlocal; k++) {
        double b = node_bound(&S.nodes[k]);
        if (b < S.lb)
            S.lb = b;
    }
    if (mp_obj_reduce(S.obj, MP_REDUCE_MIN, S.lb, &S.gmin, S.rred) == MP_FAIL)
        die("reduction failed");
    mp_counter_wait(S.rred, S.rounds, mp_continue(rec_reduced, MP_SCHED_FIFO));
}

static void rec_barrier(void *args)
{
    (void)args;
    CSWEC_ACCESS(TERM);
    if (eg_freeze(S.g, S.rfz) == MP_FAIL)
        die("eg_freeze failed");
    mp_counter_wait(S.rfz, S.rounds, mp_continue(rec_frozen, MP_SCHED_FIFO));
}

void cswec_start_round(void)
{
    S.recovering = true;
    S.rounds++;
    if (mp_obj_barrier(S.obj, S.rbar) == MP_FAIL)
        die("barrier failed");
    mp_counter_wait(S.rbar, S.rounds, mp_fiber_create(rec_barrier, NULL, 0, MP_SCHED_FIFO));
}

/* Starts a round once no node has run for two turns of the FIFO queue: a node woken by an
 * arrival is counted active only when its continuation runs, which the wake-up fiber queues
 * behind this one. */
static void rec_check(void *args)
{
    int *turn = args;
    S.checking = false;
    if (S.nactive || S.recovering || S.finished)
        return;
    if (++*turn < 2) {
        S.checking = true;
        mp_fiber_enable(mp_continue(rec_check, MP_SCHED_FIFO));
        return;
    }
    cswec_start_round();
}

static void maybe_recover(void)
{
    if (S.nactive || S.recovering || S.finished || S.checking)
        return;
    int turn = 0;
    S.checking = true;
    if (mp_spawn(rec_check, &turn, sizeof turn, MP_SCHED_FIFO) != MP_SUCCESS)
        die("mp_spawn failed");
}

/* ------------------------------------------------------------------------------------ */
/* The node threads                                                                       */

static void block(node_state *n, int state)
{
    n->state = state;
    S.nactive--;
    maybe_recover();
}

static void node_resumed(void *args)
{
    node_state *n = &S.nodes[*(uint32_t *)args];
    n->consumed = mp_counter_value(n->wake);
    n->state = RUN;
    S.nactive++;
    cswec_node_run(args);
}

static void node_sent(void *args)
{
    node_state *n = &S.nodes[*(uint32_t *)args];
    n->state = RUN;
    S.nactive++;
    cswec_node_run(args);
}

/* Sends one element; false when the node must wait for space (its continuation is set). */
static bool send(node_state *n, const cs_msg *e)
{
    S.tot[e->kind == M_EVENT ? 0 : 1]++;
    S.tot[3] += n->outdeg;
    S.tot[4] += n->nremote;
    if (e->kind == M_EVENT) {
        CSWEC_INC(S.st, NEvent, 1);
        if (drives_po[n->node])
            cs_wave_push(&n->po, e);
    } else {
        CSWEC_INC(S.st, NNull, 1);
    }
    CSWEC_INC(S.st, NEdgeMsg, n->outdeg);
    CSWEC_INC(S.st, NPhys, n->nremote);
    n->since = 0;
    n->announced = e->t;
    n->sent_target++;
    mp_status s = eg_send(S.g, n->node, e, n->sent);
    if (s == MP_FAIL)
        die("eg_send failed");
    if (s == MP_OK)
        return true;
    CSWEC_INC(S.st, NSendBlock, 1);
    n->queued_t = e->t;
    block(n, BLK_SEND);
    mp_counter_wait(n->sent, n->sent_target, mp_continue(node_sent, MP_SCHED_FIFO));
    return false;
}

static void finish(node_state *n)
{
    n->state = DONE;
    S.nactive--;
    maybe_recover();
}

/* A source: its stimulus, then FIN. */
static void source_run(node_state *n)
{
    cs_msg e;
    while (cs_source_event(&M, n->node, &n->src_cursor, &e))
        if (!send(n, &e))
            return;
    if (!n->fin_sent) {
        n->fin_sent = true;
        e = (cs_msg){M.t_end, 0, 0, M_FIN, 0};
        if (!send(n, &e))
            return;
    }
    finish(n);
}

/* Consumes the events up to T and every null at the head of an edge; returns the time of the
 * earliest pending event (infinity if none). */
static double consume(node_state *n)
{
    double next = INFINITY;
    for (uint32_t i = 0; i < n->s.nslot; i++) {
        uint32_t edge = n->in_edge[i];
        while (eg_count(S.g, edge)) {
            const cs_msg *e = eg_examine(S.g, edge, 0);
            if (e->kind == M_EVENT && e->t > n->s.T) {
                if (e->t < next)
                    next = e->t;
                break;
            }
            cs_msg m;
            eg_remove(S.g, edge, &m, 1);
            if (m.kind == M_EVENT) {
                if (m.t == 0 && !n->s.init)
                    n->nvalid++; /* (a source's first event is at t = 0, then ramps) */
                n->s.in[i] = (cs_seg){m.t, m.v, m.s};
            }
            if (m.t > n->known[i])
                n->known[i] = m.t;
            n->nfin += m.kind == M_FIN;
        }
    }
    return next;
}

#define STEPS_PER_FIBER 64

/* From node_run: waits for an arrival; `want` is the step end it waits for (infinity: only
 * FINs are missing, no event can come). */
static void wait_input(node_state *n, double want)
{
    CSWEC_INC(S.st, NInputBlock, 1);
    n->want = want;
    if (!eg_is_waiting(S.g, n->node) && eg_wait(S.g, n->node, n->wake) == MP_FAIL)
        die("eg_wait failed");
    block(n, BLK_INPUT);
    mp_counter_wait(n->wake, n->consumed + 1, mp_continue(node_resumed, MP_SCHED_FIFO));
}

void cswec_node_run(void *args)
{
    node_state *n = &S.nodes[*(uint32_t *)args];
    if (n->node < M.nsrc) {
        source_run(n);
        return;
    }
    for (int it = 0; it < STEPS_PER_FIBER; it++) {
        double next = consume(n);
        double T2;
        if (!n->s.init) {
            T2 = 0; /* every input's value at t = 0 first */
        } else {
            if (n->s.T >= M.t_end) {
                if (!n->fin_sent) {
                    n->fin_sent = true;
                    cs_msg e = {M.t_end, 0, 0, M_FIN, 0};
                    if (!send(n, &e))
                        return;
                }
                if (n->nfin < n->s.nslot) { /* drain the inputs: senders may wait for space */
                    wait_input(n, INFINITY);
                    return;
                }
                finish(n);
                return;
            }
            T2 = cs_plan(&M, &n->s);
            if (next < T2)
                T2 = next;
        }
        /* initialisation needs every input's event at t = 0 itself (a recovery bound of 0
         * says only that nothing earlier is on its way) */
        bool ready = n->s.init || n->nvalid == n->s.nslot;
        for (uint32_t i = 0; i < n->s.nslot && ready && n->s.init; i++)
            ready = eg_count(S.g, n->in_edge[i]) > 0 || n->known[i] >= T2;
        if (!ready) {
            /* before waiting, tell the fanout how far this node got (a null message): the
             * waits of its receivers then rarely need the recovery thread */
            if (n->s.init && n->announced < n->s.T) {
                cs_msg e = {n->s.T, 0, 0, M_NULL, 0};
                if (!send(n, &e))
                    return;
            }
            /* [ Wait until a new event message arrives at an empty edge ] */
            wait_input(n, T2);
            return;
        }
        if (!n->s.init) {
            cs_init(&M, &n->s);
            n->s.last = (cs_msg){0, cs_out(&M, &n->s), 0, M_EVENT, 0};
            if (!send(n, &n->s.last))
                return;
            continue;
        }
        double prev = cs_out(&M, &n->s), T = n->s.T;
        cs_advance(&M, &n->s, T2);
        CSWEC_INC(S.st, NStep, 1);
        S.tot[2]++;
        CSWEC_INC(S.st, NGateEval, M.sub_ng[n->node]);
        cs_msg e;
        if (cs_event(&M, &n->s, prev, T2 - T, &e)) {
            /* [ Send new state to all fanout subcircuits ] */
            if (!send(n, &e))
                return;
        } else if (++n->since >= prm.null_steps) {
            /* [ Send null messages to all fanout subcircuits ] */
            e = (cs_msg){n->s.T, 0, 0, M_NULL, 0};
            if (!send(n, &e))
                return;
        }
    }
    mp_fiber_enable(mp_continue(cswec_node_run, MP_SCHED_FIFO)); /* let messages in */
}
