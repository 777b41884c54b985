/*
 * cswec.c -- CSWEC: event-driven timing simulation of a combinational circuit on the event
 * graph (Wen 1995, section 2.2.4.3, Fig 2.13; the study of section 5.1.5).
 *
 *   cswec --netlist=FILE [--capacity=C] [--vectors=V] [--seed=X] [--null-steps=K]
 *         [--place=size|block] [--sched=fifo|preempt] [--check] [--verbose]
 *
 * FILE is a netlist written by benchmarks/cswec/netlist.py (ISCAS-85 circuits from the
 * circuitgraph package or the original C2670 of benchmarks/cswec/data, or the generated
 * REGFILE; a subcircuit per gate, per CMOS stage or per channel-connected component).  The
 * circuit and its electrical model are in cswec_model.h.  Every node of the circuit -- a
 * primary input, a constant, a subcircuit -- is a node of the event graph and is simulated
 * by a thread of its own (a chain of fibers); an edge joins a node to each subcircuit it
 * drives.  Nodes are placed on PEs statically by size (largest first onto the least loaded
 * PE, Wen 1995 section 2.2.4.3), or with --place=block in contiguous runs of the node order
 * (sources, then subcircuits in topological order) holding equal numbers of gates, which
 * keeps most edges on one PE.
 *
 * A subcircuit's thread (Fig 2.13) repeats: consume the input events up to its time T (and
 * every null message, which only raises the edge's known time); plan the next step T' (its
 * own step size, cut at the next pending input event); when some input without a pending
 * event is not known up to T', [wait for a new event message at an empty edge]; else
 * simulate the step, and [send the new state to all fanout subcircuits] when it cannot be
 * extrapolated linearly from the last one, or a null message after --null-steps steps
 * without an event (default 8).  A node about to wait for input first sends a null message
 * with its time if its fanout does not know it yet (the heuristic that keeps most waits
 * from needing deadlock recovery).  At the end time it sends a FIN (a null at the end time).
 * Sources send their stimulus the same way.  Sends suspend while an out-edge is full
 * (--capacity elements per edge, default 64, the paper's setting).
 *
 * --sched chooses the scheduler of the event graph's own fibers (eventgraph.h, eg_sched_mode):
 * fifo (default, the paper's initial implementation) queues the arrival of every element and
 * release message and every wake-up behind the PE's node threads; preempt runs them on the
 * runtime's preemptive scheduler, in the poll that received the message or inside the graph
 * call that enabled them (Fig 5.9's "+ preemptive scheduler").  The node and recovery threads
 * stay on the FIFO scheduler: they have continuations.  The waveforms do not depend on it.
 *
 * Deadlock recovery (one "recovery" thread per PE): when no node on a PE can progress, the
 * PE enters a barrier on the recovery object (other threads that wake up meanwhile run:
 * the barrier overlaps with work); after it the graph is frozen (every element sent has
 * arrived) and a min-reduction finds the global lower bound M of the times of the events
 * not yet consumed: for a node waiting for input the end of the step it waits for (or an
 * earlier event already in its buffer), for a node waiting for space the element it tries to
 * send, for a runnable node its time, for a finished node infinity.  No event earlier than M
 * can still arrive anywhere, so every edge becomes known up to M and the waiting nodes
 * retry; the node that defined M can then progress.  M = infinity ends the simulation.
 *
 * --check: the events of every primary output must equal, bit for bit, those of the
 * sequential event-driven simulation of the same circuit and model (cswec_netlist.h); exit
 * status 1 otherwise.  With --check and no netlist the built-in c17 runs.  The run prints
 * the event graph's collapsing of identical messages: 1 - physical element messages / event
 * messages on edges.  PEs: MPROF_PES (default 2) or the MPI rank count under mpirun.
 * Aggregation: MPROF_AGG_BYTES.  Run profile: MPROF_OUT.
 */
#include "cswec_internal.h"

#include <errno.h>
#include <stdatomic.h>

cswec_params prm = {NULL, 64, 8, 1, 8, false, false, false, false, false};
cs_model M;
eg_edge_def *edges;
uint32_t nedges;
uint8_t *drives_po;
_Thread_local pe_state S;
static _Atomic int failed;

void cswec_die(const char *what)
{
    fprintf(stderr, "cswec: PE %d: %s\n", mp_mype(), what);
    exit(1);
}

static int partition(uint32_t node, int npes, void *ctx)
{
    (void)npes;
    return ((const int *)ctx)[node];
}

#define die cswec_die

/* ------------------------------------------------------------------------------------ */
/* Setup, collection, check                                                               */

/* Largest first onto the least loaded PE (ties: lower node, lower PE); --place=block: runs of
 * the node order instead.  Every PE computes the same table. */
static int *place(int npes)
{
    int *part = cs_alloc(M.nnodes, sizeof *part);
    if (prm.block) { /* contiguous runs of the topological order, equal in gates */
        double total = 0, done = 0;
        for (uint32_t i = 0; i < M.nnodes; i++)
            total += M.sub_ng[i] ? M.sub_ng[i] : 1;
        for (uint32_t i = 0; i < M.nnodes; i++) {
            int pe = (int)(done * npes / total);
            part[i] = pe < npes ? pe : npes - 1;
            done += M.sub_ng[i] ? M.sub_ng[i] : 1;
        }
        return part;
    }
    uint32_t *order = cs_alloc(M.nnodes, sizeof *order);
    double *load = cs_alloc((size_t)npes, sizeof *load);
    for (uint32_t i = 0; i < M.nnodes; i++)
        order[i] = i;
    for (uint32_t i = 1; i < M.nnodes; i++) { /* stable insertion sort by size, descending */
        uint32_t x = order[i], j = i;
        uint32_t wx = M.sub_ng[x] ? M.sub_ng[x] : 1;
        while (j > 0 && (M.sub_ng[order[j - 1]] ? M.sub_ng[order[j - 1]] : 1) < wx) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    for (uint32_t i = 0; i < M.nnodes; i++) {
        int best = 0;
        for (int p = 1; p < npes; p++)
            if (load[p] < load[best])
                best = p;
        part[order[i]] = best;
        load[best] += M.sub_ng[order[i]] ? M.sub_ng[order[i]] : 1;
    }
    free(order);
    free(load);
    return part;
}

typedef struct {
    uint32_t node, n, last, pad_;
    cs_msg e[28];
} po_msg;

static void collect(void *args)
{
    po_msg *m = args;
    for (uint32_t i = 0; i < m->n; i++)
        cs_wave_push(&S.got[m->node], &m->e[i]);
    if (m->last)
        mp_counter_add(S.collected, 1);
}

static uint32_t po_nodes(void)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < M.nnodes; i++)
        k += drives_po[i];
    return k;
}

static void send_po(const node_state *n)
{
    po_msg m;
    memset(&m, 0, sizeof m);
    m.node = n->node;
    size_t i = 0;
    do {
        for (m.n = 0; i < n->po.n && m.n < 28; i++)
            m.e[m.n++] = n->po.e[i];
        m.last = i == n->po.n;
        if (mp_invoke(0, collect, &m, offsetof(po_msg, e) + m.n * sizeof m.e[0], MP_SCHED_FIFO) !=
            MP_SUCCESS)
            die("mp_invoke failed");
    } while (i < n->po.n);
}

/* PE 0: compares the primary outputs with the sequential simulation; returns the outputs
 * that differ. */
static uint32_t compare(const cs_wave *seq)
{
    uint32_t wrong = 0;
    for (uint32_t k = 0; k < M.nnodes; k++) {
        if (!drives_po[k])
            continue;
        const cs_wave *a = &S.got[k], *b = &seq[k];
        bool same = a->n == b->n;
        for (size_t i = 0; same && i < a->n; i++)
            same = a->e[i].t == b->e[i].t && a->e[i].v == b->e[i].v && a->e[i].s == b->e[i].s;
        if (!same) {
            if (wrong < 3)
                fprintf(stderr, "cswec: node %u: %zu events, sequential %zu\n", k, a->n, b->n);
            wrong++;
        }
    }
    return wrong;
}

static double sum(double x)
{
    double out = 0;
    mp_counter_t c = mp_counter_new(0);
    uint64_t w = 0;
    bu_await(c, &w, mp_obj_reduce(S.obj, MP_REDUCE_SUM, x, &out, c), "reduction");
    mp_counter_free(c);
    return out;
}

static void pe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int me = mp_mype(), npes = mp_npes();
    memset(&S, 0, sizeof S);
    S.me = me;
    S.npes = npes;
    S.part = place(npes);
    eg_config cfg = {.nnodes = M.nnodes,
                     .edges = edges,
                     .nedges = nedges,
                     .elt_size = sizeof(cs_msg),
                     .capacity = (uint32_t)prm.capacity,
                     .partition = partition,
                     .partition_ctx = S.part,
                     .wake = EG_WAKE_EMPTY,
                     .sched = prm.preempt ? EG_SCHED_PREEMPT : EG_SCHED_FIFO};
    if (eg_graph_create(&cfg, &S.g) != MP_SUCCESS)
        die("cannot create the event graph");
    mp_obj_create(&S, &S.obj);
    S.st = cswec_stats_create(S.obj);
    S.rbar = mp_counter_new(0);
    S.rfz = mp_counter_new(0);
    S.rred = mp_counter_new(0);
    S.done_c = mp_counter_new(0);
    S.collected = mp_counter_new(0);
    if (me == 0)
        S.got = cs_alloc(M.nnodes, sizeof *S.got);
    for (uint32_t k = 0; k < M.nnodes; k++)
        S.nlocal += S.part[k] == me;
    S.nodes = cs_alloc(S.nlocal, sizeof *S.nodes);
    uint32_t *ids = cs_alloc(S.nlocal, sizeof *ids);
    uint32_t gates = 0;
    for (uint32_t k = 0, j = 0; k < M.nnodes; k++) {
        if (S.part[k] != me)
            continue;
        node_state *n = &S.nodes[j];
        ids[j] = j;
        j++;
        uint32_t ns;
        n->node = k;
        n->in_edge = eg_in_edges(S.g, k, &ns);
        n->s = (cs_sub){k,
                        ns,
                        cs_alloc(ns, sizeof(cs_seg)),
                        cs_alloc(M.sub_ng[k] ? M.sub_ng[k] : 1, sizeof(double)),
                        cs_alloc(M.sub_ng[k] ? M.sub_ng[k] : 1, sizeof(double)),
                        0,
                        {0, 0, 0, 0, 0},
                        false};
        n->known = cs_alloc(ns, sizeof(double));
        n->announced = -1;
        for (uint32_t i = 0; i < ns; i++)
            n->known[i] = -1;
        n->wake = mp_counter_new(0);
        n->sent = mp_counter_new(0);
        const uint32_t *out = eg_out_edges(S.g, k, &n->outdeg);
        uint64_t seen = 0; /* remote PEs (bits; PEs beyond 64 counted once each per edge) */
        for (uint32_t i = 0; i < n->outdeg; i++) {
            int pe = S.part[edges[out[i]].dst];
            if (pe != me && (pe >= 64 || !(seen >> pe & 1))) {
                n->nremote++;
                if (pe < 64)
                    seen |= 1ull << pe;
            }
        }
        gates += M.sub_ng[k];
    }
    CSWEC_SET(S.st, P, 1);
    CSWEC_SET(S.st, Node, S.nlocal);
    CSWEC_SET(S.st, Gate, gates);
    S.nactive = S.nlocal;

    double t0 = mp_wtime();
    for (uint32_t j = 0; j < S.nlocal; j++)
        mp_spawn(cswec_node_run, &ids[j], sizeof ids[j], MP_SCHED_FIFO);
    if (S.nlocal == 0)
        cswec_start_round();
    if (mp_block_until(S.done_c, 1) != MP_SUCCESS)
        exit(1);
    double sim_s = mp_wtime() - t0;

    /* Collect the primary outputs' events on PE 0 */
    for (uint32_t j = 0; j < S.nlocal; j++)
        if (drives_po[S.nodes[j].node])
            send_po(&S.nodes[j]);
    double events = sum(S.tot[0]), nulls = sum(S.tot[1]), steps = sum(S.tot[2]);
    double edge_msgs = sum(S.tot[3]), phys = sum(S.tot[4]);
    double wrong = 0;
    if (me == 0) {
        if (mp_block_until(S.collected, po_nodes()) != MP_SUCCESS)
            exit(1);
        for (uint32_t k = 0; prm.fault && k < M.nnodes; k++) /* the test hook */
            if (S.got[k].n) {
                S.got[k].e[S.got[k].n - 1].v += 0.5;
                break;
            }
        double collapse = edge_msgs > 0 ? 1 - phys / edge_msgs : 0;
        mp_param("sim_s", sim_s);
        mp_param("collapse", collapse);
        mp_param("events", events);
        mp_param("nulls", nulls);
        mp_param("steps", steps);
        mp_param("recoveries", (double)S.rounds);
        mp_param("preempt", eg_sched(S.g) == EG_SCHED_PREEMPT); /* as the graph was made */
        size_t po_events = 0;
        for (uint32_t k = 0; k < M.nnodes; k++)
            po_events += S.got[k].n;
        printf("cswec: P=%d circuit=%s nodes=%u edges=%u capacity=%llu vectors=%llu place=%s "
               "sched=%s: %.0f steps, %.0f events, %.0f nulls, %zu output events, %llu recovery "
               "rounds, %.6f s\n",
               npes, M.name, M.nnodes, nedges, (unsigned long long)prm.capacity,
               (unsigned long long)prm.vectors, prm.block ? "block" : "size",
               eg_sched(S.g) == EG_SCHED_PREEMPT ? "preempt" : "fifo", steps, events, nulls,
               po_events, (unsigned long long)S.rounds, sim_s);
        printf("cswec: collapsing: %.0f event messages on edges, %.0f physical element "
               "messages: %.1f %% removed\n",
               edge_msgs, phys, 100 * collapse);
        if (prm.verbose)
            for (uint32_t i = 0; i < M.noutputs; i++) {
                const cs_wave *w = &S.got[M.sig_node[M.out_sig[i]]];
                printf("  output %u: %zu events, final %.3f\n", i, w->n,
                       w->n ? w->e[w->n - 1].v : -1.0);
            }
        if (prm.check) {
            uint64_t seq_steps = 0;
            cs_wave *seq = cs_sequential(&M, &seq_steps);
            uint32_t bad = compare(seq);
            wrong = bad;
            printf("cswec: check against the sequential simulation: %s (%u of %u output nodes "
                   "differ; %llu steps sequentially)\n",
                   bad ? "FAILED" : "OK", bad, po_nodes(), (unsigned long long)seq_steps);
            for (uint32_t k = 0; k < M.nnodes; k++)
                free(seq[k].e);
            free(seq);
        }
        fflush(stdout);
    }
    if (bu_agree(S.obj, wrong) > 0)
        atomic_store(&failed, 1);
    /* the graph stays frozen after the last recovery round; eg_finalize frees it */
    for (uint32_t j = 0; j < S.nlocal; j++) {
        node_state *n = &S.nodes[j];
        free(n->s.in);
        free(n->s.v);
        free(n->s.tgt);
        free(n->known);
        free(n->po.e);
        mp_counter_free(n->wake);
        mp_counter_free(n->sent);
    }
    if (me == 0) {
        for (uint32_t k = 0; k < M.nnodes; k++)
            free(S.got[k].e);
        free(S.got);
    }
    mp_counter_t cs[] = {S.rbar, S.rfz, S.rred, S.done_c, S.collected};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        mp_counter_free(cs[i]);
    free(S.nodes);
    free(ids);
    free(S.part);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cswec: %s: cannot open: %s\n", path, strerror(errno));
        exit(2);
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t k; buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    if (ferror(f)) { /* a folder opens, and reads nothing: not an empty netlist */
        fprintf(stderr, "cswec: %s: cannot read: %s\n", path, strerror(errno));
        exit(2);
    }
    fclose(f);
    if (!buf)
        die("out of memory");
    buf[n] = 0;
    return buf;
}

static int usage(void)
{
    fprintf(stderr, "usage: cswec --netlist=FILE [--capacity=C] [--vectors=V] [--seed=X] "
                    "[--null-steps=K] [--place=size|block]\n"
                    "             [--sched=fifo|preempt] [--check] [--verbose]\n");
    return 2;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        bool ok = true;
        if (bu_check_flag(a, &prm.check, &prm.fault))
            continue;
        if (!strcmp(a, "--verbose"))
            prm.verbose = true;
        else if ((v = bu_opt(a, "--netlist")) && *v)
            prm.netlist = v;
        else if ((v = bu_opt(a, "--capacity")))
            ok = bu_u64("cswec", "--capacity", v, 1, 1u << 20, &prm.capacity);
        else if ((v = bu_opt(a, "--vectors")))
            ok = bu_u64("cswec", "--vectors", v, 1, 1u << 20, &prm.vectors);
        else if ((v = bu_opt(a, "--seed")))
            ok = bu_u64("cswec", "--seed", v, 0, UINT64_MAX, &prm.seed);
        else if ((v = bu_opt(a, "--place")) && (!strcmp(v, "size") || !strcmp(v, "block")))
            prm.block = !strcmp(v, "block");
        else if ((v = bu_opt(a, "--sched")) && (!strcmp(v, "fifo") || !strcmp(v, "preempt")))
            prm.preempt = !strcmp(v, "preempt");
        else if ((v = bu_opt(a, "--null-steps")))
            ok = bu_u64("cswec", "--null-steps", v, 1, 1u << 20, &prm.null_steps);
        else
            return usage();
        if (!ok)
            return 2;
    }
    if (!prm.netlist && !prm.check)
        return usage();
    char *text = prm.netlist ? slurp(prm.netlist) : NULL;
    cs_parse(&M, text ? text : CS_C17, prm.netlist ? prm.netlist : "<built-in c17>");
    free(text);
    M.seed = prm.seed;
    M.vectors = prm.vectors;
    M.period = 10.0;
    M.ramp = 0.5;
    M.t_end = (double)(prm.vectors + 1) * M.period;
    nedges = M.slot_off[M.nnodes];
    edges = cs_alloc(nedges, sizeof *edges);
    for (uint32_t n = M.nsrc; n < M.nnodes; n++)
        for (uint32_t j = M.slot_off[n]; j < M.slot_off[n + 1]; j++)
            edges[j] = (eg_edge_def){M.slot_src[j], n};
    drives_po = cs_alloc(M.nnodes, 1);
    for (uint32_t i = 0; i < M.noutputs; i++)
        drives_po[M.sig_node[M.out_sig[i]]] = 1;

    mp_config cfg;
    bu_config(&cfg);
    cswec_perf_init();
    mp_param("capacity", (double)prm.capacity);
    mp_param("vectors", (double)prm.vectors);
    mp_param("nodes", (double)M.nnodes);
    mp_param("edges", (double)nedges);
    mp_param("block", prm.block);
    int rc = mp_main(&cfg, pe_main, argc, argv);
    eg_finalize();
    free(edges);
    free(drives_po);
    cs_model_free(&M);
    if (atomic_load(&failed))
        return 1;
    return rc;
}
