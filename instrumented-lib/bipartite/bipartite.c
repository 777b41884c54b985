/*
 * bipartite.c -- the bipartite graph (Wen 1995, section 2.2.1).
 *
 * Finalize is an inspector: the ghosts are the distinct remote sources, sorted by id, so
 * the ghosts of each owner q form one contiguous run whose ids are the subscription list
 * sent to q.  Each PE p sends every other PE q one subscription (count and addresses on p);
 * q pulls the id list with a bulk read, records which of its nodes p needs (by colour, in
 * subscription order), and answers with one bulk store of their colours and states.
 *
 * Validate is the executor: for colour c, p packs the states of the colour-c nodes that q
 * ghosts into one buffer and bulk-stores it into q's receive buffer for p; q's arrival fiber
 * unpacks it into the ghosts.  One message per communicating pair and colour; then a barrier.
 */
#include "bipartite.h"

#include "bipartite_perf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bg_node_id dst_index;
    bg_node_id src;
    double weight;
} pending_edge;

typedef struct {
    mp_obj_t id;
    int me, npes;
    size_t ss; /* state size */
    /* local nodes */
    size_t n, ncap;
    uint8_t *color;
    unsigned char *states;
    size_t *ebeg; /* CSR: edges of node i are edges[ebeg[i] .. ebeg[i+1]) */
    bg_edge *edges;
    size_t ncolor[2];
    pending_edge *pend;
    size_t npend, pcap;
    /* ghosts, sorted by id */
    size_t ng;
    bg_node_id *gid;
    uint8_t *gcolor;
    unsigned char *gstates;
    size_t *gbeg; /* ghosts of owner q: [gbeg[q], gbeg[q+1]) */
    /* schedule, per peer q */
    uint32_t *sidx[2], *scnt[2]; /* send: my node indices q ghosts, by colour */
    size_t *soff;                /* offset of q's lists in sidx[c] */
    uint32_t *ridx[2], *rcnt[2]; /* receive: my ghost indices owned by q, by colour */
    size_t *roff;
    void **raddr;            /* q's receive buffer for my states */
    unsigned char **recvbuf; /* my receive buffer for q's states */
    unsigned char **landing; /* finalize: q's answer lands here */
    unsigned char *packbuf;
    /* progress */
    bool finalized, building;
    mp_counter_t started; /* 1 once bg_finalize was called here */
    mp_counter_t fin;     /* subscriptions served + answers received */
    mp_counter_t recv;    /* validate messages received */
    mp_counter_t sent;    /* validate sources free again */
    mp_counter_t phase;   /* internal barriers */
    uint64_t recv_target, sent_target, phase_target;
    bipartite_stats_t *st;
} bg_part;

static pthread_once_t access_once = PTHREAD_ONCE_INIT;

static void die(const char *msg)
{
    fprintf(stderr, "bipartite (PE %d): %s\n", mp_mype(), msg);
    abort();
}

static void *xcalloc(size_t n, size_t s)
{
    void *q = calloc(n ? n : 1, s ? s : 1);
    if (!q)
        die("out of memory");
    return q;
}

static bg_part *part_of(bg_t g)
{
    bg_part *p = mp_obj_local(g);
    if (!p)
        die("not a bipartite graph");
    return p;
}

mp_err bg_create(size_t state_size, bg_t *out)
{
    if (!out || state_size == 0)
        return MP_ERR_INVALID_ARG;
    pthread_once(&access_once, bipartite_perf_init);
    bg_part *p = xcalloc(1, sizeof *p);
    p->me = mp_mype();
    p->npes = mp_npes();
    p->ss = state_size;
    p->building = true;
    p->started = mp_counter_new(0);
    p->fin = mp_counter_new(0);
    p->recv = mp_counter_new(0);
    p->sent = mp_counter_new(0);
    p->phase = mp_counter_new(0);
    mp_err e = mp_obj_create(p, &p->id);
    if (e)
        return e;
    p->st = bipartite_stats_create(p->id);
    BIPARTITE_SET(p->st, P, 1);
    BIPARTITE_SET(p->st, StateSize, state_size);
    *out = p->id;
    return MP_SUCCESS;
}

bg_node_id bg_add_node(bg_t g, bg_color color, const void *state)
{
    bg_part *p = part_of(g);
    if (!p->building || (color != BG_RED && color != BG_BLACK))
        die("bg_add_node after bg_finalize or with a bad colour");
    if (p->n == p->ncap) {
        p->ncap = p->ncap ? 2 * p->ncap : 256;
        p->color = realloc(p->color, p->ncap);
        p->states = realloc(p->states, p->ncap * p->ss);
        if (!p->color || !p->states)
            die("out of memory");
    }
    p->color[p->n] = (uint8_t)color;
    if (state)
        memcpy(p->states + p->n * p->ss, state, p->ss);
    else
        memset(p->states + p->n * p->ss, 0, p->ss);
    p->ncolor[color]++;
    return BG_ID(p->me, p->n++);
}

mp_err bg_add_edge(bg_t g, bg_node_id dst, bg_node_id src, double weight)
{
    bg_part *p = part_of(g);
    if (!p->building || BG_OWNER(dst) != p->me || BG_INDEX(dst) >= p->n || BG_OWNER(src) < 0 ||
        BG_OWNER(src) >= p->npes)
        return MP_ERR_INVALID_ARG;
    if (BG_OWNER(src) == p->me &&
        (BG_INDEX(src) >= p->n || p->color[BG_INDEX(src)] == p->color[BG_INDEX(dst)]))
        return MP_ERR_INVALID_ARG;
    if (p->npend == p->pcap) {
        p->pcap = p->pcap ? 2 * p->pcap : 1024;
        p->pend = realloc(p->pend, p->pcap * sizeof *p->pend);
        if (!p->pend)
            die("out of memory");
    }
    p->pend[p->npend++] = (pending_edge){BG_INDEX(dst), src, weight};
    return MP_SUCCESS;
}

static int cmp_id(const void *a, const void *b)
{
    bg_node_id x = *(const bg_node_id *)a, y = *(const bg_node_id *)b;
    return x < y ? -1 : x > y;
}

static long ghost_index(const bg_part *p, bg_node_id id)
{
    size_t lo = 0, hi = p->ng;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->gid[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->ng && p->gid[lo] == id ? (long)lo : -1;
}

/* ---------------------------------------------------------------------------------- */
/* Finalize                                                                             */

typedef struct {
    bg_t g;
    int from;
    uint32_t count;
    const bg_node_id *ids;  /* on `from` */
    void *landing;          /* on `from` */
    void *recvbuf;          /* on `from` */
    mp_counter_t read_done; /* on the serving PE, once the ids are read */
    bg_node_id *idbuf;
} sub_msg;

typedef struct {
    bg_t g;
    int from;
    uint32_t count;
} answer_hdr;

static inline size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

static void finish_build(bg_part *p);

static void fin_step(bg_part *p) { mp_counter_add(p->fin, 1); }

typedef struct {
    mp_counter_t c;
    void *buf;
} free_args;

static void bg_free_after(void *args)
{
    free_args *a = args;
    free(a->buf);
    mp_counter_free(a->c);
}

/* Bulk-stores `buf` (malloc'd) and frees it once the runtime says the source is free. */
static void store_and_free(bg_part *p, int to, void *dst, void *buf, size_t n, mp_fiber_fn fn,
                           const void *user, size_t user_size)
{
    mp_counter_t c = mp_counter_new(0);
    BIPARTITE_INC(p->st, NMsg, 1);
    if (mp_bulk_store(to, dst, buf, n, c, fn, user, user_size) == MP_FAIL)
        die("bulk store failed");
    free_args fa = {c, buf};
    mp_counter_wait(c, 1, mp_fiber_create(bg_free_after, &fa, sizeof fa, MP_SCHED_URGENT));
}

static void bg_answer_arrive(void *args);

/* On the owner: the id list of a subscriber has been read: record and answer. */
static void bg_sub_read(void *args)
{
    sub_msg *m = args;
    bg_part *p = part_of(m->g);
    BIPARTITE_ACCESS(VALIDATE);
    int q = m->from;
    size_t off = p->soff[q];
    size_t abytes = align16(m->count) + (size_t)m->count * p->ss;
    unsigned char *ans = xcalloc(1, abytes);
    for (uint32_t i = 0; i < m->count; i++) {
        bg_node_id id = m->idbuf[i];
        if (BG_OWNER(id) != p->me || BG_INDEX(id) >= p->n)
            die("an edge names a node that does not exist");
        uint32_t idx = BG_INDEX(id);
        int c = p->color[idx];
        p->sidx[c][off + p->scnt[c][q]++] = idx;
        ans[i] = (uint8_t)c;
        memcpy(ans + align16(m->count) + (size_t)i * p->ss, p->states + (size_t)idx * p->ss, p->ss);
    }
    if (m->read_done)
        mp_counter_free(m->read_done);
    free(m->idbuf);
    p->raddr[q] = m->recvbuf;
    answer_hdr h = {m->g, p->me, m->count};
    store_and_free(p, q, m->landing, ans, abytes, bg_answer_arrive, &h, sizeof h);
    fin_step(p);
}

/* On the owner: a subscription (once this PE has started finalizing too). */
static void bg_sub_arrive(void *args)
{
    sub_msg *m = args;
    bg_part *p = part_of(m->g);
    BIPARTITE_ACCESS(VALIDATE);
    if (mp_counter_value(p->started) == 0) {
        /* our own nodes may still be growing: wait for bg_finalize here */
        mp_counter_wait(p->started, 1, mp_continue(bg_sub_arrive, MP_SCHED_FIFO));
        return;
    }
    if (m->count == 0) {
        m->idbuf = NULL;
        m->read_done = NULL;
        bg_sub_read(m);
        return;
    }
    m->idbuf = xcalloc(m->count, sizeof *m->idbuf);
    m->read_done = mp_counter_new(0);
    BIPARTITE_INC(p->st, NMsg, 1); /* the read request */
    mp_status s =
        mp_bulk_read(m->from, m->ids, m->idbuf, m->count * sizeof *m->idbuf, m->read_done);
    if (s == MP_FAIL)
        die("bulk read failed");
    mp_counter_wait(m->read_done, 1, mp_continue(bg_sub_read, MP_SCHED_FIFO));
}

/* On the subscriber: colours and states of my ghosts owned by `from`. */
static void bg_answer_arrive(void *args)
{
    mp_store_arrival *a = args;
    answer_hdr h;
    memcpy(&h, a->user, sizeof h);
    bg_part *p = part_of(h.g);
    BIPARTITE_ACCESS(VALIDATE);
    int q = h.from;
    size_t base = p->gbeg[q];
    if (h.count != p->gbeg[q + 1] - base)
        die("finalize answer of the wrong size");
    const unsigned char *buf = p->landing[q];
    for (uint32_t i = 0; i < h.count; i++) {
        int c = buf[i];
        p->gcolor[base + i] = (uint8_t)c;
        memcpy(p->gstates + (base + i) * p->ss, buf + align16(h.count) + (size_t)i * p->ss, p->ss);
        p->ridx[c][p->roff[q] + p->rcnt[c][q]++] = (uint32_t)(base + i);
    }
    fin_step(p);
}

typedef struct {
    bg_t g;
    mp_counter_t done;
} done_args;

static void bg_signal(void *args)
{
    done_args *a = args;
    BIPARTITE_ACCESS(VALIDATE);
    mp_counter_add(a->done, 1);
}

/* Increments `done` (from a fiber that declares VALIDATE) once a barrier has passed. */
static void barrier_then_signal(bg_part *p, mp_counter_t done)
{
    done_args d = {p->id, done};
    p->phase_target++;
    mp_counter_wait(p->phase, p->phase_target,
                    mp_fiber_create(bg_signal, &d, sizeof d, MP_SCHED_FIFO));
    mp_obj_barrier(p->id, p->phase);
}

static void bg_fin_done(void *args)
{
    done_args *a = args;
    bg_part *p = part_of(a->g);
    BIPARTITE_ACCESS(VALIDATE);
    finish_build(p);
    barrier_then_signal(p, a->done);
}

/* Edges into CSR, with their source pointers resolved; statistics. */
static void finish_build(bg_part *p)
{
    p->ebeg = xcalloc(p->n + 1, sizeof *p->ebeg);
    for (size_t e = 0; e < p->npend; e++)
        p->ebeg[p->pend[e].dst_index + 1]++;
    for (size_t i = 0; i < p->n; i++)
        p->ebeg[i + 1] += p->ebeg[i];
    size_t *fill = xcalloc(p->n + 1, sizeof *fill);
    memcpy(fill, p->ebeg, (p->n + 1) * sizeof *fill);
    p->edges = xcalloc(p->npend, sizeof *p->edges);
    size_t remote = 0;
    for (size_t e = 0; e < p->npend; e++) {
        pending_edge *pe = &p->pend[e];
        const void *src;
        int scolor;
        if (BG_OWNER(pe->src) == p->me) {
            src = p->states + (size_t)BG_INDEX(pe->src) * p->ss;
            scolor = p->color[BG_INDEX(pe->src)];
        } else {
            long gi = ghost_index(p, pe->src);
            if (gi < 0)
                die("lost a ghost");
            src = p->gstates + (size_t)gi * p->ss;
            scolor = p->gcolor[gi];
            remote++;
        }
        if (scolor == p->color[pe->dst_index])
            die("an edge joins two nodes of the same colour");
        p->edges[fill[pe->dst_index]++] = (bg_edge){pe->src, pe->weight, src};
    }
    free(fill);
    free(p->pend);
    p->pend = NULL;
    BIPARTITE_SET(p->st, Node, p->n);
    BIPARTITE_SET(p->st, Ghost, p->ng);
    BIPARTITE_SET(p->st, Edge, p->npend);
    BIPARTITE_SET(p->st, RemoteEdge, remote);
    size_t maxsend = 0;
    for (int q = 0; q < p->npes; q++)
        for (int c = 0; c < 2; c++)
            if (p->scnt[c][q] > maxsend)
                maxsend = p->scnt[c][q];
    p->packbuf = xcalloc(maxsend, p->ss);
    p->finalized = true;
}

mp_status bg_finalize(bg_t g, mp_counter_t done)
{
    bg_part *p = mp_obj_local(g);
    if (!p || !done || !p->building)
        return MP_FAIL;
    p->building = false;
    int P = p->npes;
    /* ghosts: the distinct remote sources, sorted (hence grouped by owner) */
    bg_node_id *ids = xcalloc(p->npend, sizeof *ids);
    size_t k = 0;
    for (size_t e = 0; e < p->npend; e++)
        if (BG_OWNER(p->pend[e].src) != p->me)
            ids[k++] = p->pend[e].src;
    qsort(ids, k, sizeof *ids, cmp_id);
    size_t ng = 0;
    for (size_t i = 0; i < k; i++)
        if (ng == 0 || ids[ng - 1] != ids[i])
            ids[ng++] = ids[i];
    p->ng = ng;
    p->gid = ids;
    p->gcolor = xcalloc(ng, 1);
    p->gstates = xcalloc(ng, p->ss);
    p->gbeg = xcalloc((size_t)P + 1, sizeof *p->gbeg);
    for (size_t i = 0; i < ng; i++)
        p->gbeg[BG_OWNER(ids[i]) + 1]++;
    for (int q = 0; q < P; q++)
        p->gbeg[q + 1] += p->gbeg[q];
    for (int c = 0; c < 2; c++) {
        p->scnt[c] = xcalloc((size_t)P, sizeof(uint32_t));
        p->rcnt[c] = xcalloc((size_t)P, sizeof(uint32_t));
        /* send lists: at most all my nodes of colour c per peer; sized lazily below */
        p->ridx[c] = xcalloc(ng, sizeof(uint32_t));
    }
    /* each peer's send lists get a slice of n entries per colour (n = my node count) */
    p->soff = xcalloc((size_t)P, sizeof *p->soff);
    p->sidx[0] = xcalloc((size_t)P * (p->n ? p->n : 1), sizeof(uint32_t));
    p->sidx[1] = xcalloc((size_t)P * (p->n ? p->n : 1), sizeof(uint32_t));
    p->roff = xcalloc((size_t)P, sizeof *p->roff);
    p->raddr = xcalloc((size_t)P, sizeof *p->raddr);
    p->recvbuf = xcalloc((size_t)P, sizeof *p->recvbuf);
    p->landing = xcalloc((size_t)P, sizeof *p->landing);
    for (int q = 0; q < P; q++) {
        size_t cnt = p->gbeg[q + 1] - p->gbeg[q];
        p->roff[q] = p->gbeg[q];
        p->soff[q] = (size_t)q * (p->n ? p->n : 1);
        p->recvbuf[q] = xcalloc(cnt, p->ss);
        p->landing[q] = xcalloc(1, align16(cnt) + cnt * p->ss);
    }
    /* finalize completes after P-1 subscriptions served and P-1 answers received */
    done_args d = {g, done};
    mp_counter_wait(p->fin, 2 * (uint64_t)(P - 1),
                    mp_fiber_create(bg_fin_done, &d, sizeof d, MP_SCHED_FIFO));
    for (int q = 0; q < P; q++) {
        if (q == p->me)
            continue;
        size_t cnt = p->gbeg[q + 1] - p->gbeg[q];
        sub_msg m = {g,    p->me, (uint32_t)cnt, p->gid + p->gbeg[q], p->landing[q], p->recvbuf[q],
                     NULL, NULL};
        BIPARTITE_INC(p->st, NMsg, 1);
        mp_invoke(q, bg_sub_arrive, &m, sizeof m, MP_SCHED_FIFO);
    }
    mp_counter_set(p->started, 1);
    return MP_WAIT;
}

/* ---------------------------------------------------------------------------------- */
/* Validate                                                                             */

typedef struct {
    bg_t g;
    int from;
    int color;
    uint32_t count;
} val_hdr;

static void bg_val_arrive(void *args)
{
    mp_store_arrival *a = args;
    val_hdr h;
    memcpy(&h, a->user, sizeof h);
    bg_part *p = part_of(h.g);
    BIPARTITE_ACCESS(VALIDATE);
    int q = h.from, c = h.color;
    if (h.count != p->rcnt[c][q])
        die("validate message of the wrong size");
    const unsigned char *buf = p->recvbuf[q];
    const uint32_t *gi = p->ridx[c] + p->roff[q];
    for (uint32_t i = 0; i < h.count; i++)
        memcpy(p->gstates + (size_t)gi[i] * p->ss, buf + (size_t)i * p->ss, p->ss);
    BIPARTITE_INC(p->st, NRecv, 1);
    mp_counter_add(p->recv, 1);
}

typedef struct {
    bg_t g;
    mp_counter_t done;
} val_args;

static void bg_val_sent(void *args)
{
    val_args *a = args;
    bg_part *p = part_of(a->g);
    BIPARTITE_ACCESS(VALIDATE);
    barrier_then_signal(p, a->done);
}

static void bg_val_received(void *args)
{
    val_args *a = args;
    bg_part *p = part_of(a->g);
    BIPARTITE_ACCESS(VALIDATE);
    mp_counter_wait(p->sent, p->sent_target, mp_continue(bg_val_sent, MP_SCHED_FIFO));
}

mp_status bg_validate(bg_t g, bg_color c, mp_counter_t done)
{
    bg_part *p = mp_obj_local(g);
    if (!p || !done || !p->finalized || (c != BG_RED && c != BG_BLACK))
        return MP_FAIL;
    BIPARTITE_INC(p->st, NValidate, 1);
    for (int q = 0; q < p->npes; q++) {
        if (p->rcnt[c][q])
            p->recv_target++;
        uint32_t cnt = p->scnt[c][q];
        if (!cnt)
            continue;
        const uint32_t *idx = p->sidx[c] + p->soff[q];
        for (uint32_t i = 0; i < cnt; i++)
            memcpy(p->packbuf + (size_t)i * p->ss, p->states + (size_t)idx[i] * p->ss, p->ss);
        val_hdr h = {g, p->me, (int)c, cnt};
        BIPARTITE_INC(p->st, NMsg, 1);
        BIPARTITE_INC(p->st, Bytes, (uint64_t)cnt * p->ss);
        p->sent_target++;
        if (mp_bulk_store(q, p->raddr[q], p->packbuf, (size_t)cnt * p->ss, p->sent, bg_val_arrive,
                          &h, sizeof h) == MP_FAIL)
            die("bulk store failed");
        /* the pack buffer is reused for the next peer: wait until the runtime let go */
        if (mp_counter_value(p->sent) < p->sent_target)
            die("bulk store kept the source buffer (unsupported by this implementation)");
    }
    val_args a = {g, done};
    mp_counter_wait(p->recv, p->recv_target,
                    mp_fiber_create(bg_val_received, &a, sizeof a, MP_SCHED_FIFO));
    return MP_WAIT;
}

/* ---------------------------------------------------------------------------------- */
/* Update and iterators                                                                 */

#define UPDATE_CHUNK 256

typedef struct {
    bg_t g;
    int color;
    bg_update_fn fn;
    void *ctx;
    mp_counter_t done;
    size_t next;
} upd_args;

static void fill_node(bg_part *p, size_t i, bg_node *out)
{
    out->id = BG_ID(p->me, i);
    out->color = (bg_color)p->color[i];
    out->state = p->states + i * p->ss;
    out->nedges = p->ebeg[i + 1] - p->ebeg[i];
    out->edges = p->edges + p->ebeg[i];
}

static void bg_update_fiber(void *args)
{
    upd_args *a = args;
    bg_part *p = part_of(a->g);
    BIPARTITE_ACCESS(UPDATE);
    size_t end = a->next + UPDATE_CHUNK;
    if (end > p->n)
        end = p->n;
    for (size_t i = a->next; i < end; i++) {
        if (p->color[i] != a->color)
            continue;
        bg_node v;
        fill_node(p, i, &v);
        BIPARTITE_INC(p->st, NUpdate, 1);
        BIPARTITE_INC(p->st, NEdgeVisit, v.nedges);
        a->fn(a->g, &v, a->ctx);
    }
    a->next = end;
    if (end < p->n) {
        mp_fiber_enable(mp_continue(bg_update_fiber, MP_SCHED_FIFO));
        return;
    }
    mp_counter_add(a->done, 1);
}

mp_status bg_update(bg_t g, bg_color c, bg_update_fn fn, void *ctx, mp_counter_t done)
{
    bg_part *p = mp_obj_local(g);
    if (!p || !fn || !done || !p->finalized || (c != BG_RED && c != BG_BLACK))
        return MP_FAIL;
    upd_args a = {g, (int)c, fn, ctx, done, 0};
    return mp_spawn(bg_update_fiber, &a, sizeof a, MP_SCHED_FIFO) ? MP_FAIL : MP_WAIT;
}

void *bg_state(bg_t g, bg_node_id id)
{
    bg_part *p = part_of(g);
    if (BG_OWNER(id) != p->me || BG_INDEX(id) >= p->n)
        return NULL;
    return p->states + (size_t)BG_INDEX(id) * p->ss;
}

const void *bg_read(bg_t g, bg_node_id id)
{
    bg_part *p = part_of(g);
    if (BG_OWNER(id) == p->me)
        return bg_state(g, id);
    long gi = ghost_index(p, id);
    return gi < 0 ? NULL : p->gstates + (size_t)gi * p->ss;
}

size_t bg_local_count(bg_t g, bg_color c) { return part_of(g)->ncolor[c & 1]; }
size_t bg_ghost_count(bg_t g) { return part_of(g)->ng; }

void bg_iter_init(bg_t g, bg_color c, bg_iter *it)
{
    it->part_ = part_of(g);
    it->next_ = 0;
    it->color_ = c;
}

bool bg_iter_next(bg_iter *it, bg_node *node)
{
    bg_part *p = it->part_;
    if (!p->finalized)
        return false;
    while (it->next_ < p->n && p->color[it->next_] != it->color_)
        it->next_++;
    if (it->next_ >= p->n)
        return false;
    fill_node(p, it->next_++, node);
    return true;
}
