/*
 * cswec_netlist.h -- reads the netlist file written by benchmarks/cswec/netlist.py into a
 * cs_model (cswec_model.h), and runs the sequential reference simulation.  Bad input is
 * reported as `file:line:column: message`.
 */
#ifndef CSWEC_NETLIST_H
#define CSWEC_NETLIST_H

#include "cswec_model.h"

#include <ctype.h>

/* ISCAS-85 c17, by hand (six NAND gates), for `cswec --check` without a netlist. */
static const char CS_C17[] = "cswec-netlist 1 c17\n"
                             "signals 11 inputs 5 outputs 2 subcircuits 6 ties 0\n"
                             "in 0 1 2 3 4\n"
                             "out 9 10\n"
                             "sub 1\ngate nand 5 2 0 2\n"   /* N10 = nand(N1, N3) */
                             "sub 1\ngate nand 6 2 2 3\n"   /* N11 = nand(N3, N6) */
                             "sub 1\ngate nand 7 2 1 6\n"   /* N16 = nand(N2, N11) */
                             "sub 1\ngate nand 8 2 6 4\n"   /* N19 = nand(N11, N7) */
                             "sub 1\ngate nand 9 2 5 7\n"   /* N22 = nand(N10, N16) */
                             "sub 1\ngate nand 10 2 7 8\n"; /* N23 = nand(N16, N19) */

typedef struct {
    const char *path, *p;
    int line, col, tline, tcol;
    char tok[64];
} cs_reader;

static void cs_fail(const cs_reader *r, const char *msg, const char *arg)
{
    fprintf(stderr, "%s:%d:%d: %s%s%s\n", r->path, r->tline, r->tcol, msg, arg ? " " : "",
            arg ? arg : "");
    exit(2);
}

static const char *cs_next(cs_reader *r)
{
    while (*r->p && isspace((unsigned char)*r->p)) {
        if (*r->p == '\n') {
            r->line++;
            r->col = 1;
        } else {
            r->col++;
        }
        r->p++;
    }
    r->tline = r->line;
    r->tcol = r->col;
    size_t n = 0;
    while (*r->p && !isspace((unsigned char)*r->p)) {
        if (n + 1 < sizeof r->tok)
            r->tok[n++] = *r->p;
        r->p++;
        r->col++;
    }
    r->tok[n] = 0;
    if (!n)
        cs_fail(r, "unexpected end of file", NULL);
    return r->tok;
}

static void cs_word(cs_reader *r, const char *want)
{
    if (strcmp(cs_next(r), want) != 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "expected '%s', got", want);
        cs_fail(r, msg, r->tok);
    }
}

static uint32_t cs_uint(cs_reader *r, uint32_t max)
{
    const char *t = cs_next(r);
    char *end;
    unsigned long v = strtoul(t, &end, 10);
    if (!isdigit((unsigned char)*t) || *end || v > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "expected an integer in [0, %u], got", max);
        cs_fail(r, msg, t);
    }
    return (uint32_t)v;
}

static void *cs_alloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "cswec: out of memory\n");
        exit(1);
    }
    return p;
}

/* Parses `text` (from `path`) into m.  Exits with status 2 on bad input. */
static inline void cs_parse(cs_model *m, const char *text, const char *path)
{
    static const char *types[] = {"and", "nand", "or", "nor", "xor", "xnor", "not", "buf"};
    cs_reader r = {path, text, 1, 1, 1, 1, {0}};
    cs_word(&r, "cswec-netlist");
    cs_word(&r, "1");
    snprintf(m->name, sizeof m->name, "%s", cs_next(&r));
    const uint32_t LIM = 1u << 24;
    cs_word(&r, "signals");
    m->nsig = cs_uint(&r, LIM);
    cs_word(&r, "inputs");
    m->ninputs = cs_uint(&r, m->nsig);
    cs_word(&r, "outputs");
    m->noutputs = cs_uint(&r, m->nsig);
    cs_word(&r, "subcircuits");
    m->nsubs = cs_uint(&r, m->nsig);
    cs_word(&r, "ties");
    m->nties = cs_uint(&r, m->nsig);
    m->nsrc = m->ninputs + m->nties;
    m->nnodes = m->nsrc + m->nsubs;
    m->sig_node = cs_alloc(m->nsig, sizeof *m->sig_node);
    for (uint32_t i = 0; i < m->nsig; i++)
        m->sig_node[i] = UINT32_MAX;
    m->out_sig = cs_alloc(m->noutputs, sizeof *m->out_sig);
    m->tie_value = cs_alloc(m->nties, 1);
    m->sub_g0 = cs_alloc(m->nnodes, sizeof *m->sub_g0);
    m->sub_ng = cs_alloc(m->nnodes, sizeof *m->sub_ng);
    cs_word(&r, "in");
    for (uint32_t i = 0; i < m->ninputs; i++) {
        uint32_t s = cs_uint(&r, m->nsig - 1);
        if (m->sig_node[s] != UINT32_MAX)
            cs_fail(&r, "signal driven twice:", r.tok);
        m->sig_node[s] = i;
    }
    cs_word(&r, "out");
    for (uint32_t i = 0; i < m->noutputs; i++)
        m->out_sig[i] = cs_uint(&r, m->nsig - 1);
    for (uint32_t i = 0; i < m->nties; i++) {
        cs_word(&r, "tie");
        uint32_t s = cs_uint(&r, m->nsig - 1);
        if (m->sig_node[s] != UINT32_MAX)
            cs_fail(&r, "signal driven twice:", r.tok);
        m->sig_node[s] = m->ninputs + i;
        m->tie_value[i] = (uint8_t)cs_uint(&r, 1);
    }
    /* subcircuits: gates, then their input slots (distinct driving nodes) */
    size_t capg = 64, capi = 128, caps = 128;
    m->gate = cs_alloc(capg, sizeof *m->gate);
    m->gin = cs_alloc(capi, sizeof *m->gin);
    m->slot_src = cs_alloc(caps, sizeof *m->slot_src);
    m->slot_off = cs_alloc(m->nnodes + 1, sizeof *m->slot_off);
    uint32_t *gate_sig = cs_alloc(m->nsig, sizeof *gate_sig); /* signal -> local gate + 1 */
    uint32_t nslots = 0;
    for (uint32_t n = m->nsrc; n < m->nnodes; n++) {
        m->slot_off[n] = nslots;
        cs_word(&r, "sub");
        uint32_t ng = cs_uint(&r, 1u << 16);
        if (!ng)
            cs_fail(&r, "a subcircuit needs a gate", NULL);
        m->sub_g0[n] = m->ngates;
        m->sub_ng[n] = ng;
        for (uint32_t k = 0; k < ng; k++) {
            cs_word(&r, "gate");
            const char *t = cs_next(&r);
            int type = -1;
            for (int i = 0; i < 8; i++)
                if (!strcmp(t, types[i]))
                    type = i;
            if (type < 0)
                cs_fail(&r, "unknown gate type", t);
            uint32_t out = cs_uint(&r, m->nsig - 1), nin = cs_uint(&r, 64);
            if (m->sig_node[out] != UINT32_MAX)
                cs_fail(&r, "signal driven twice:", r.tok);
            if (!nin || ((type == G_NOT || type == G_BUF) && nin != 1))
                cs_fail(&r, "wrong number of gate inputs", NULL);
            if (m->ngates == capg)
                m->gate = realloc(m->gate, (capg *= 2) * sizeof *m->gate);
            cs_gate *g = &m->gate[m->ngates++];
            *g = (cs_gate){(uint8_t)type, (uint8_t)nin, (int32_t)m->ngin, 0};
            for (uint32_t i = 0; i < nin; i++) {
                uint32_t s = cs_uint(&r, m->nsig - 1);
                int32_t ref;
                if (m->sig_node[s] == n) {
                    ref = (int32_t)gate_sig[s] - 1; /* an earlier gate of this subcircuit */
                } else if (m->sig_node[s] == UINT32_MAX) {
                    cs_fail(&r, "signal used before it is driven:", r.tok);
                    return;
                } else {
                    uint32_t src = m->sig_node[s], j = m->slot_off[n];
                    while (j < nslots && m->slot_src[j] != src)
                        j++;
                    if (j == nslots) {
                        if (nslots == caps)
                            m->slot_src = realloc(m->slot_src, (caps *= 2) * sizeof *m->slot_src);
                        m->slot_src[nslots++] = src;
                    }
                    ref = -(int32_t)(j - m->slot_off[n]) - 1;
                }
                if (m->ngin == capi)
                    m->gin = realloc(m->gin, (capi *= 2) * sizeof *m->gin);
                m->gin[m->ngin++] = ref;
            }
            m->sig_node[out] = n;
            gate_sig[out] = k + 1;
            if (!m->gate || !m->gin || !m->slot_src) {
                fprintf(stderr, "cswec: out of memory\n");
                exit(1);
            }
        }
    }
    m->slot_off[m->nnodes] = nslots;
    for (uint32_t i = 0; i < m->noutputs; i++)
        if (m->sig_node[m->out_sig[i]] == UINT32_MAX ||
            (m->sig_node[m->out_sig[i]] >= m->nsrc &&
             gate_sig[m->out_sig[i]] != m->sub_ng[m->sig_node[m->out_sig[i]]])) {
            char num[16];
            snprintf(num, sizeof num, "%u", m->out_sig[i]);
            cs_fail(&r, "primary output is no source or subcircuit output:", num);
        }
    /* the load of every signal: the gate inputs reading it; then tau per gate */
    uint32_t *fanout = cs_alloc(m->nnodes, sizeof *fanout);
    for (uint32_t n = m->nsrc; n < m->nnodes; n++)
        for (uint32_t k = 0; k < m->sub_ng[n]; k++) {
            const cs_gate *g = &m->gate[m->sub_g0[n] + k];
            for (uint32_t i = 0; i < g->nin; i++)
                if (m->gin[g->first_in + i] < 0)
                    fanout[m->slot_src[m->slot_off[n] - m->gin[g->first_in + i] - 1]]++;
        }
    for (uint32_t n = m->nsrc; n < m->nnodes; n++)
        for (uint32_t k = 0; k < m->sub_ng[n]; k++) {
            cs_gate *g = &m->gate[m->sub_g0[n] + k];
            uint32_t load = 0; /* inside the subcircuit: the later gates reading it */
            for (uint32_t j = k + 1; j < m->sub_ng[n]; j++) {
                const cs_gate *h = &m->gate[m->sub_g0[n] + j];
                for (uint32_t i = 0; i < h->nin; i++)
                    load += m->gin[h->first_in + i] == (int32_t)k;
            }
            if (k + 1 == m->sub_ng[n])
                load += fanout[n];
            g->tau = TAU_UNIT * (1 + 0.25 * (g->nin - 1)) * (1 + 0.5 * load);
        }
    free(fanout);
    free(gate_sig);
    while (*r.p && isspace((unsigned char)*r.p))
        r.p++;
    if (*r.p) {
        cs_next(&r);
        cs_fail(&r, "trailing text:", r.tok);
    }
}

static inline void cs_model_free(cs_model *m)
{
    void *p[] = {m->out_sig, m->sig_node, m->tie_value, m->sub_g0,  m->sub_ng,
                 m->gate,    m->gin,      m->slot_src,  m->slot_off};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
}

/* ---------------------------------------------------------------------------------- */
/* The sequential reference: every node in topological order, to the end                */

typedef struct {
    cs_msg *e;
    size_t n, cap;
} cs_wave;

static void cs_wave_push(cs_wave *w, const cs_msg *e)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->e = realloc(w->e, w->cap * sizeof *w->e);
        if (!w->e) {
            fprintf(stderr, "cswec: out of memory\n");
            exit(1);
        }
    }
    w->e[w->n++] = *e;
}

/* Every node's events (sources: their stimulus); the caller frees waves[i].e and waves. */
static inline cs_wave *cs_sequential(const cs_model *m, uint64_t *steps)
{
    cs_wave *w = cs_alloc(m->nnodes, sizeof *w);
    for (uint32_t n = 0; n < m->nsrc; n++) {
        uint64_t cur = 0;
        cs_msg e;
        while (cs_source_event(m, n, &cur, &e))
            cs_wave_push(&w[n], &e);
    }
    for (uint32_t n = m->nsrc; n < m->nnodes; n++) {
        uint32_t ns = m->slot_off[n + 1] - m->slot_off[n];
        cs_sub s = {n,
                    ns,
                    cs_alloc(ns, sizeof(cs_seg)),
                    cs_alloc(m->sub_ng[n], sizeof(double)),
                    cs_alloc(m->sub_ng[n], sizeof(double)),
                    0,
                    {0, 0, 0, 0, 0},
                    false};
        size_t *pos = cs_alloc(ns, sizeof *pos);
        for (;;) {
            double next = INFINITY;
            for (uint32_t i = 0; i < ns; i++) { /* consume the events up to T */
                const cs_wave *src = &w[m->slot_src[m->slot_off[n] + i]];
                while (pos[i] < src->n && src->e[pos[i]].t <= s.T) {
                    const cs_msg *e = &src->e[pos[i]++];
                    s.in[i] = (cs_seg){e->t, e->v, e->s};
                }
                if (pos[i] < src->n && src->e[pos[i]].t < next)
                    next = src->e[pos[i]].t;
            }
            if (!s.init) {
                cs_init(m, &s);
                s.last = (cs_msg){0, cs_out(m, &s), 0, M_EVENT, 0};
                cs_wave_push(&w[n], &s.last);
                continue;
            }
            if (s.T >= m->t_end)
                break;
            double T2 = cs_plan(m, &s), prev = cs_out(m, &s), T = s.T;
            if (next < T2)
                T2 = next;
            cs_advance(m, &s, T2);
            ++*steps;
            cs_msg e;
            if (cs_event(m, &s, prev, T2 - T, &e))
                cs_wave_push(&w[n], &e);
        }
        free(s.in);
        free(s.v);
        free(s.tgt);
        free(pos);
    }
    return w;
}

#endif
