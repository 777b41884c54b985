/*
 * cswec_model.h -- CSWEC's circuit and its electrical model, shared by the parallel
 * simulation and the sequential reference (cswec.c).
 *
 * The circuit.  Nodes 0 .. nsrc-1 are sources (primary inputs, then constants), nodes nsrc ..
 * nnodes-1 subcircuits in topological order.  A subcircuit is a list of gates in evaluation
 * order whose last gate drives its one output signal; a gate input is either an earlier gate
 * of the same subcircuit or an input slot (one per distinct driving node: the in-edges of the
 * event graph, in edge-number order).  Netlist file format: benchmarks/cswec/netlist.py.
 *
 * The electrical model (simple on purpose: the study is about synchronization, not device
 * physics).  Voltages are in units of Vdd, times in ns.  A gate drives its output towards
 * its logic value, `target` = Vdd * f(inputs above Vdd/2), through a first-order RC stage:
 * tau = TAU_UNIT * R * C with R = 1 + 0.25 (inputs - 1) (a longer transistor stack) and
 * C = 1 + 0.5 fanout (the gates it loads).  Over a step of length h with the target fixed at
 * the step's start the output relaxes exactly, v <- target + (v - target) exp(-h / tau);
 * within 1e-3 of the target it snaps to it (settled).  Step size (per subcircuit, each its
 * own, SWEC's idea): h = DV_MAX * tau / |target - v| for the fastest unsettled gate, in
 * [H_MIN, H_MAX]; a step also ends just after an input crosses Vdd/2 and at the next input
 * event.  Inputs between events are linear: value(t) = clamp(v + s (t - t0)).
 *
 * Events.  After each step the subcircuit compares its output with the linear extrapolation
 * of its last event; beyond EV_TOL it sends a new event (time, value, slope over the step).
 * A null message (time only) goes out after `null_steps` steps without an event, a FIN at the
 * end time.  Sources send their piecewise-linear stimulus as events (the value at t = 0, then
 * the start and end of every ramp).  Everything a subcircuit computes depends only on the
 * events it consumed, never on nulls or arrival times, so every schedule gives the same
 * waveforms (the sequential reference checks it).
 */
#ifndef CSWEC_MODEL_H
#define CSWEC_MODEL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define TAU_UNIT 0.05 /* ns */
#define DV_MAX 0.1    /* Vdd per step while switching */
#define H_MIN 0.001   /* ns */
#define H_MAX 2.0     /* ns */
#define EV_TOL 0.02   /* Vdd: extrapolation error that makes an event */
#define SETTLE 1e-3
#define CROSS_EPS 1e-4 /* ns: a step ends this long after an input crosses Vdd/2 */

enum { G_AND, G_NAND, G_OR, G_NOR, G_XOR, G_XNOR, G_NOT, G_BUF };
enum { M_EVENT = 1, M_NULL = 2, M_FIN = 3 };

typedef struct {
    double t, v, s; /* time, value, slope (Vdd/ns) */
    uint32_t kind, pad_;
} cs_msg; /* an event-graph element: 32 bytes */

typedef struct {
    double t, v, s;
} cs_seg;

typedef struct {
    uint8_t type;
    uint8_t nin;
    int32_t first_in; /* into model.gin: >= 0 a gate of the subcircuit (local index),
                         < 0 input slot -(x + 1) */
    double tau;
} cs_gate;

typedef struct {
    char name[64];
    uint32_t nsig, ninputs, noutputs, nties, nsubs, nsrc, nnodes;
    uint32_t *out_sig;         /* primary outputs: their signal */
    uint32_t *sig_node;        /* signal -> driving node (internal signals: their subcircuit) */
    uint8_t *tie_value;        /* per tie */
    uint32_t *sub_g0, *sub_ng; /* per node (sources: 0 gates) */
    cs_gate *gate;
    int32_t *gin;
    uint32_t ngates, ngin;
    uint32_t *slot_src; /* per node, its distinct driving nodes in order: in edges */
    uint32_t *slot_off; /* nnodes + 1 offsets into slot_src */
    /* stimulus */
    uint64_t seed, vectors;
    double period, ramp, t_end;
} cs_model;

static inline double cs_clamp(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }
static inline double cs_eval(const cs_seg *g, double t)
{
    return cs_clamp(g->v + g->s * (t - g->t));
}

static inline int cs_logic(uint8_t type, const int *in, int n)
{
    int a = 1, o = 0, x = 0;
    for (int i = 0; i < n; i++) {
        a &= in[i];
        o |= in[i];
        x ^= in[i];
    }
    switch (type) {
    case G_AND:
        return a;
    case G_NAND:
        return !a;
    case G_OR:
        return o;
    case G_NOR:
        return !o;
    case G_XOR:
        return x;
    case G_XNOR:
        return !x;
    case G_NOT:
        return !in[0];
    default:
        return in[0];
    }
}

/* ---------------------------------------------------------------------------------- */
/* A subcircuit's simulation state and its steps                                       */

typedef struct {
    uint32_t node, nslot;
    cs_seg *in;  /* per slot: the current input segment */
    double *v;   /* per gate */
    double *tgt; /* per gate, scratch */
    double T;
    cs_msg last; /* the last event sent */
    bool init;
} cs_sub;

/* The target of gate k of subcircuit n at time t (gates before k already at their values). */
static double cs_target(const cs_model *m, const cs_sub *s, uint32_t k, double t)
{
    const cs_gate *g = &m->gate[m->sub_g0[s->node] + k];
    int in[64];
    int n = g->nin < 64 ? g->nin : 64;
    for (int i = 0; i < n; i++) {
        int32_t r = m->gin[g->first_in + i];
        double x = r >= 0 ? s->v[r] : cs_eval(&s->in[-r - 1], t);
        in[i] = x > 0.5;
    }
    return cs_logic(g->type, in, n) ? 1.0 : 0.0;
}

/* At T = 0 with every input known: the DC operating point, gates in order. */
static void cs_init(const cs_model *m, cs_sub *s)
{
    for (uint32_t k = 0; k < m->sub_ng[s->node]; k++)
        s->v[k] = cs_target(m, s, k, 0.0);
    s->T = 0;
    s->init = true;
}

static double cs_out(const cs_model *m, const cs_sub *s) { return s->v[m->sub_ng[s->node] - 1]; }

/* The end of the next step by the subcircuit's own rules (the caller also stops it at the next
 * pending input event). */
static double cs_plan(const cs_model *m, cs_sub *s)
{
    double h = H_MAX;
    uint32_t ng = m->sub_ng[s->node];
    for (uint32_t k = 0; k < ng; k++) {
        double tg = cs_target(m, s, k, s->T), d = fabs(tg - s->v[k]);
        s->tgt[k] = tg;
        if (d > 0) {
            double hk = DV_MAX * m->gate[m->sub_g0[s->node] + k].tau / d;
            if (hk < h)
                h = hk;
        }
    }
    if (h < H_MIN)
        h = H_MIN;
    double T2 = s->T + h;
    for (uint32_t i = 0; i < s->nslot; i++) { /* an input crossing Vdd/2 */
        const cs_seg *g = &s->in[i];
        if (g->s != 0) {
            double x = g->t + (0.5 - g->v) / g->s + CROSS_EPS;
            if (x > s->T && x < T2)
                T2 = x;
        }
    }
    return T2 < m->t_end ? T2 : m->t_end;
}

/* Advances to T2 (targets from cs_plan, fixed over the step). */
static void cs_advance(const cs_model *m, cs_sub *s, double T2)
{
    double h = T2 - s->T;
    uint32_t ng = m->sub_ng[s->node];
    for (uint32_t k = 0; k < ng; k++) {
        double tg = s->tgt[k],
               v = tg + (s->v[k] - tg) * exp(-h / m->gate[m->sub_g0[s->node] + k].tau);
        s->v[k] = fabs(v - tg) < SETTLE ? tg : v;
    }
    s->T = T2;
}

/* After a step from `prev` (output value before it): an event when the output left the linear
 * extrapolation of the last one. */
static bool cs_event(const cs_model *m, cs_sub *s, double prev, double h, cs_msg *out)
{
    double v = cs_out(m, s), ext = cs_clamp(s->last.v + s->last.s * (s->T - s->last.t));
    if (fabs(v - ext) <= EV_TOL)
        return false;
    double slope = v == s->tgt[m->sub_ng[s->node] - 1] ? 0.0 : (v - prev) / h;
    *out = (cs_msg){s->T, v, slope, M_EVENT, 0};
    s->last = *out;
    return true;
}

/* ---------------------------------------------------------------------------------- */
/* Sources: the seeded stimulus                                                        */

/* The k-th event of source `node` (k = 0: its value at t = 0); false past the last. */
static bool cs_source_event(const cs_model *m, uint32_t node, uint64_t *cursor, cs_msg *out)
{
    uint64_t k = *cursor;
    if (node >= m->ninputs) { /* a constant */
        if (k > 0)
            return false;
        *out = (cs_msg){0, m->tie_value[node - m->ninputs], 0, M_EVENT, 0};
        *cursor = 1;
        return true;
    }
    int v = (int)(bu_hash3(m->seed, 10, node, 0) & 1);
    if (k == 0) {
        *out = (cs_msg){0, v, 0, M_EVENT, 0};
        *cursor = 1;
        return true;
    }
    /* cursor 2 j - 1: the start of vector j's ramp (when the input toggles), 2 j: its end */
    for (uint64_t j = 1; j <= m->vectors; j++) {
        if (!(bu_hash3(m->seed, 11, node, j) & 1))
            continue;
        double t =
            (double)j * m->period + bu_unit(bu_hash3(m->seed, 12, node, j)) * 0.2 * m->period;
        if (k <= 2 * j - 1) {
            *out = (cs_msg){t, v, (v ? -1.0 : 1.0) / m->ramp, M_EVENT, 0};
            *cursor = 2 * j;
            return true;
        }
        if (k == 2 * j) {
            *out = (cs_msg){t + m->ramp, !v, 0, M_EVENT, 0};
            *cursor = 2 * j + 1;
            return true;
        }
        v = !v;
    }
    return false;
}

#endif
