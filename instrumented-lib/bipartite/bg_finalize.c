/*
 * bg_finalize.c -- the bipartite graph's inspector (Wen 1995, section 2.2.1.2).
 *
 * The ghosts are the distinct remote sources, sorted by id, so the ghosts of each owner q
 * form one contiguous run whose ids are the subscription list sent to q.  Each PE p sends
 * every other PE q one subscription (count and addresses on p); q pulls the id list with a
 * bulk read, records which of its nodes p needs (by colour, in subscription order), and
 * answers with one bulk store of their colours and states.  Both transfers go in chunks where
 * they exceed the largest message (bg_internal.h).  Then the edges are laid out in CSR with
 * their source pointers resolved, and a barrier ends the finalize.
 */
#include "bg_internal.h"

/* A remote edge's source id and the edge's place among the remote edges (in the order they
 * were added), sorted together so that deduplicating the ids also tells every remote edge its
 * ghost: finish_build then reads it, where it once searched the sorted ghosts for every
 * remote edge (a binary search over 165 000 ghosts per PE at 16 PEs was a third of em3d's
 * construction). */
typedef struct {
    bg_node_id id;
    size_t ord;
} src_ref;

/* Sorts the remote edges' sources by id with a least-significant-digit radix sort on the
 * bytes in which the ids differ (the low bytes of the index and of the owner): a few passes
 * of a few instructions per edge, where qsort's comparisons and copies cost about 400
 * instructions per id -- remote edges grow from none at 1 PE to a tenth of the edges (em3d's
 * default) at 16, so this was most of em3d's growth of work per PE.  Stable, so the edges of
 * one source stay in their order. */
static void sort_refs(src_ref *refs, size_t k)
{
    bg_node_id diff = 0;
    for (size_t i = 1; i < k; i++)
        diff |= refs[i].id ^ refs[0].id;
    if (!diff)
        return;
    src_ref *a = refs, *b = lib_malloc(k * sizeof *b);
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((diff >> shift) & 0xff))
            continue; /* every id has the same byte here */
        size_t start[257] = {0};
        for (size_t i = 0; i < k; i++)
            start[((a[i].id >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            start[d + 1] += start[d];
        for (size_t i = 0; i < k; i++)
            b[start[(a[i].id >> shift) & 0xff]++] = a[i];
        src_ref *t = a;
        a = b;
        b = t;
    }
    if (a != refs) {
        memcpy(refs, a, k * sizeof *refs);
        b = a;
    }
    free(b);
}

typedef struct {
    bg_t g;
    int from;
    uint32_t count;
    uint32_t ss;            /* the subscriber's state size: the owner's must be the same */
    const bg_node_id *ids;  /* on `from` */
    void *landing;          /* on `from` */
    void *recvbuf;          /* on `from` */
    mp_counter_t read_done; /* on the serving PE, once the ids are read */
    bg_node_id *idbuf;
} sub_msg;

typedef struct {
    bg_t g;
    int from;
    uint32_t first, count; /* this chunk: nodes first .. first + count - 1 of the answer */
} answer_hdr;

/* Where chunk k of an answer lands in the subscriber's landing buffer, and the buffer's size
 * for an answer of n nodes. */
static size_t answer_stride(const bg_part *p)
{
    size_t per = bgi_answer_per_chunk(p->ss);
    return align16(per) + per * p->ss;
}

static size_t landing_size(const bg_part *p, size_t n)
{
    if (n == 0)
        return 0;
    size_t per = bgi_answer_per_chunk(p->ss), last = n - (bgi_chunks(n, per) - 1) * per;
    return (bgi_chunks(n, per) - 1) * answer_stride(p) + align16(last) + last * p->ss;
}

static void finish_build(bg_part *p);

static void fin_step(bg_part *p) { mp_counter_add(p->fin, 1); }

/* Bulk-stores `buf` (malloc'd) and frees it once the runtime says the source is free. */
static void store_and_free(bg_part *p, int to, void *dst, void *buf, size_t n, mp_fiber_fn fn,
                           const void *user, size_t user_size)
{
    BIPARTITE_INC(p->st, NMsg, 1);
    lib_store_and_free(to, dst, buf, n, fn, user, user_size);
}

static void bg_answer_arrive(void *args);

/* On the owner: the id list of a subscriber has been read: record and answer. */
static void bg_sub_read(void *args)
{
    sub_msg *m = args;
    bg_part *p = part_of(m->g);
    BIPARTITE_ACCESS(VALIDATE);
    int q = m->from;
    uint32_t black = 0; /* colour 1's list follows colour 0's */
    for (uint32_t i = 0; i < m->count; i++) {
        bg_node_id id = m->idbuf[i];
        if (BG_OWNER(id) != p->me || BG_INDEX(id) >= p->n)
            lib_die("an edge names a node that does not exist");
        black += p->color[BG_INDEX(id)];
    }
    uint32_t *list = m->count ? lib_calloc(m->count, sizeof *list) : NULL;
    uint32_t next[2] = {0, m->count - black};
    for (uint32_t i = 0; i < m->count; i++) {
        uint32_t idx = BG_INDEX(m->idbuf[i]);
        list[next[p->color[idx]]++] = idx;
    }
    p->sidx[q] = list;
    p->scnt[0][q] = m->count - black;
    p->scnt[1][q] = black;
    p->raddr[q] = m->recvbuf;
    /* the answer, in chunks (an empty answer is one empty chunk: the subscriber counts it) */
    size_t per = bgi_answer_per_chunk(p->ss), stride = answer_stride(p);
    uint32_t first = 0;
    do {
        uint32_t k = m->count - first < per ? m->count - first : (uint32_t)per;
        size_t bytes = k ? align16(k) + (size_t)k * p->ss : 0;
        unsigned char *ans = lib_calloc(1, bytes);
        for (uint32_t i = 0; i < k; i++) {
            uint32_t idx = BG_INDEX(m->idbuf[first + i]);
            ans[i] = p->color[idx];
            copy_state(ans + align16(k) + (size_t)i * p->ss, p->states + (size_t)idx * p->ss,
                       p->ss);
        }
        answer_hdr h = {m->g, p->me, first, k};
        store_and_free(p, q, (unsigned char *)m->landing + first / per * stride, ans, bytes,
                       bg_answer_arrive, &h, sizeof h);
        first += k;
    } while (first < m->count);
    if (m->read_done)
        mp_counter_free(m->read_done);
    free(m->idbuf);
    fin_step(p);
}

/* On the owner: a subscription (once this PE has started finalizing too). */
static void bg_sub_arrive(void *args)
{
    sub_msg *m = args;
    bg_part *p = part_of(m->g);
    BIPARTITE_ACCESS(VALIDATE);
    if (m->ss != p->ss) /* its landing and receive buffers are sized for its own states */
        lib_die("graph %u: PE %d created it with %u-byte node states, this PE with %zu: "
                "bg_create must be given the same state size on every PE",
                m->g, m->from, m->ss, p->ss);
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
    m->idbuf = lib_calloc(m->count, sizeof *m->idbuf);
    m->read_done = mp_counter_new(0);
    size_t per = bgi_per_chunk(sizeof *m->idbuf);
    for (size_t first = 0; first < m->count; first += per) {
        size_t k = m->count - first < per ? m->count - first : per;
        BIPARTITE_INC(p->st, NMsg, 1); /* a read request */
        if (mp_bulk_read(m->from, m->ids + first, m->idbuf + first, k * sizeof *m->idbuf,
                         m->read_done) == MP_FAIL)
            lib_die("bulk read failed");
    }
    mp_counter_wait(m->read_done, bgi_chunks(m->count, per),
                    mp_continue(bg_sub_read, MP_SCHED_FIFO));
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
    size_t base = p->gbeg[q], total = p->gbeg[q + 1] - base;
    size_t per = bgi_answer_per_chunk(p->ss);
    if (h.first > total || h.count > total - h.first || p->answers_due[q] == 0 ||
        h.first % per != 0)
        lib_die("finalize answer of the wrong size");
    const unsigned char *buf = p->landing[q] + h.first / per * answer_stride(p);
    for (uint32_t i = 0; i < h.count; i++) {
        size_t at = base + h.first + i;
        p->gcolor[at] = buf[i];
        copy_state(p->gstates + at * p->ss, buf + align16(h.count) + (size_t)i * p->ss, p->ss);
    }
    if (--p->answers_due[q])
        return;
    /* the whole answer is in (chunks may come in any order): the receive lists, by colour in
     * subscription order, as the owner made its send lists */
    for (size_t i = 0; i < total; i++) {
        int c = p->gcolor[base + i];
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
    part_of(a->g)->validating = false; /* (a finalize's: false already) */
    mp_counter_add(a->done, 1);
}

/* Increments `done` (from a fiber that declares VALIDATE) once a barrier has passed. */
void bgi_barrier_then_signal(bg_part *p, mp_counter_t done)
{
    done_args d = {p->id, done};
    p->phase_target++;
    mp_counter_wait(p->phase, p->phase_target,
                    mp_fiber_create(bg_signal, &d, sizeof d, MP_SCHED_FIFO));
    if (mp_obj_barrier(p->id, p->phase) == MP_FAIL) /* the calls refuse overlapping phases */
        lib_die("graph %u: a phase's barrier was refused", p->id);
}

static void bg_fin_done(void *args)
{
    done_args *a = args;
    bg_part *p = part_of(a->g);
    BIPARTITE_ACCESS(VALIDATE);
    finish_build(p);
    bgi_barrier_then_signal(p, a->done);
}

/* Edges into CSR, with their source pointers resolved; statistics.  Edges added in the order
 * of their destinations (a node's edges after the previous node's, as EM3D adds them) are in
 * CSR already and are resolved where they lie: the graph then never holds a second copy of its
 * edges.  Others are laid out by destination afterwards, stably, so that a node's edges keep
 * the order they were added in. */
static void finish_build(bg_part *p)
{
    size_t ne = p->ne;
    p->ebeg = lib_calloc(p->n + 1, sizeof *p->ebeg);
    for (size_t e = 0; e < ne; e++)
        p->ebeg[p->edst[e] + 1]++;
    for (size_t i = 0; i < p->n; i++)
        p->ebeg[i + 1] += p->ebeg[i];
    p->nremote = lib_calloc(p->n, sizeof *p->nremote);
    size_t remote = 0; /* also the place of the next remote edge among them (gix) */
    for (size_t e = 0; e < ne; e++) {
        bg_node_id s = p->esrc[e];
        uint32_t d = p->edst[e];
        const void *src;
        int scolor;
        if (BG_OWNER(s) == p->me) {
            src = p->states + (size_t)BG_INDEX(s) * p->ss;
            scolor = p->color[BG_INDEX(s)];
        } else {
            size_t gi = p->gix[remote];
            if (gi >= p->ng || p->gid[gi] != s)
                lib_die("lost a ghost");
            src = p->gstates + gi * p->ss;
            scolor = p->gcolor[gi];
            remote++;
            p->nremote[d]++;
        }
        if (scolor == p->color[d])
            lib_die("an edge joins two nodes of the same colour");
        p->edges[e].src_state = src;
    }
    if (ne && !p->edst_sorted) {
        size_t *fill = lib_calloc(p->n + 1, sizeof *fill);
        memcpy(fill, p->ebeg, (p->n + 1) * sizeof *fill);
        bg_edge *edges = lib_calloc(ne, sizeof *edges);
        bg_node_id *esrc = lib_calloc(ne, sizeof *esrc);
        for (size_t e = 0; e < ne; e++) {
            size_t k = fill[p->edst[e]]++;
            edges[k] = p->edges[e];
            esrc[k] = p->esrc[e];
        }
        free(fill);
        free(p->edges);
        free(p->esrc);
        p->edges = edges;
        p->esrc = esrc;
    }
    if (!ne) { /* a node view points into them (bg_node.edges, .srcs) */
        p->edges = lib_calloc(1, sizeof *p->edges);
        p->esrc = lib_calloc(1, sizeof *p->esrc);
    }
    free(p->edst);
    p->edst = NULL;
    free(p->gix);
    p->gix = NULL;
    BIPARTITE_SET(p->st, Node, p->n);
    BIPARTITE_SET(p->st, Ghost, p->ng);
    BIPARTITE_SET(p->st, Edge, ne);
    BIPARTITE_SET(p->st, RemoteEdge, remote);
    size_t maxsend = 0;
    for (int q = 0; q < p->npes; q++)
        for (int c = 0; c < 2; c++)
            if (p->scnt[c][q] > maxsend)
                maxsend = p->scnt[c][q];
    size_t per = bgi_per_chunk(p->ss); /* validate packs one chunk at a time */
    p->packbuf = lib_calloc(maxsend < per ? maxsend : per, p->ss);
    p->finalized = true;
}

mp_status bg_finalize(bg_t g, mp_counter_t done)
{
    bg_part *p = graph_or_null(g, "bg_finalize");
    if (!p || !done || !p->building)
        return MP_FAIL;
    p->building = false;
    int P = p->npes;
    /* ghosts: the distinct remote sources, sorted (hence grouped by owner); each remote edge's
     * ghost, by the edge's place among the remote edges, for finish_build */
    size_t k = 0;
    for (size_t e = 0; e < p->ne; e++)
        k += BG_OWNER(p->esrc[e]) != p->me;
    if (k > UINT32_MAX)
        lib_die("bg_finalize: %zu remote edges on one PE, more than 2^32", k);
    src_ref *refs = lib_calloc(k ? k : 1, sizeof *refs);
    for (size_t e = 0, r = 0; e < p->ne; e++)
        if (BG_OWNER(p->esrc[e]) != p->me) {
            refs[r].id = p->esrc[e];
            refs[r].ord = r;
            r++;
        }
    sort_refs(refs, k);
    bg_node_id *ids = lib_calloc(k ? k : 1, sizeof *ids);
    p->gix = lib_calloc(k ? k : 1, sizeof *p->gix);
    size_t ng = 0;
    for (size_t i = 0; i < k; i++) {
        if (ng == 0 || ids[ng - 1] != refs[i].id)
            ids[ng++] = refs[i].id;
        p->gix[refs[i].ord] = (uint32_t)(ng - 1);
    }
    free(refs);
    p->ng = ng;
    p->gid = ids;
    p->gcolor = lib_calloc(ng, 1);
    p->gstates = lib_calloc(ng, p->ss);
    p->gbeg = lib_calloc((size_t)P + 1, sizeof *p->gbeg);
    for (size_t i = 0; i < ng; i++)
        p->gbeg[BG_OWNER(ids[i]) + 1]++;
    for (int q = 0; q < P; q++)
        p->gbeg[q + 1] += p->gbeg[q];
    for (int c = 0; c < 2; c++) {
        p->scnt[c] = lib_calloc((size_t)P, sizeof(uint32_t));
        p->rcnt[c] = lib_calloc((size_t)P, sizeof(uint32_t));
        p->ridx[c] = lib_calloc(ng, sizeof(uint32_t));
    }
    /* each peer's send lists: made when its subscription is read (bg_sub_read) */
    p->sidx = lib_calloc((size_t)P, sizeof *p->sidx);
    p->roff = lib_calloc((size_t)P, sizeof *p->roff);
    p->raddr = lib_calloc((size_t)P, sizeof *p->raddr);
    p->recvbuf = lib_calloc((size_t)P, sizeof *p->recvbuf);
    p->landing = lib_calloc((size_t)P, sizeof *p->landing);
    p->answers_due = lib_calloc((size_t)P, sizeof *p->answers_due);
    size_t per = bgi_answer_per_chunk(p->ss);
    for (int q = 0; q < P; q++) {
        size_t cnt = p->gbeg[q + 1] - p->gbeg[q];
        p->roff[q] = p->gbeg[q];
        p->recvbuf[q] = lib_calloc(cnt, p->ss);
        p->landing[q] = lib_calloc(1, landing_size(p, cnt));
        p->answers_due[q] = cnt ? (uint32_t)bgi_chunks(cnt, per) : 1;
    }
    /* finalize completes after P-1 subscriptions served and P-1 answers received */
    done_args d = {g, done};
    mp_counter_wait(p->fin, 2 * (uint64_t)(P - 1),
                    mp_fiber_create(bg_fin_done, &d, sizeof d, MP_SCHED_FIFO));
    for (int q = 0; q < P; q++) {
        if (q == p->me)
            continue;
        size_t cnt = p->gbeg[q + 1] - p->gbeg[q];
        sub_msg m = {g,
                     p->me,
                     (uint32_t)cnt,
                     (uint32_t)p->ss,
                     p->gid + p->gbeg[q],
                     p->landing[q],
                     p->recvbuf[q],
                     NULL,
                     NULL};
        BIPARTITE_INC(p->st, NMsg, 1);
        mp_invoke(q, bg_sub_arrive, &m, sizeof m, MP_SCHED_FIFO);
    }
    mp_counter_set(p->started, 1);
    return MP_WAIT;
}
