/*
 * bipartite.c -- the bipartite graph (Wen 1995, section 2.2.1).
 *
 * Finalize is an inspector (bg_finalize.c): it makes a ghost for every remote source and
 * agrees with every other PE on which node states travel between them.
 *
 * Validate is the executor: for colour c, p packs the states of the colour-c nodes that q
 * ghosts into one buffer and bulk-stores it into q's receive buffer for p; q's arrival fiber
 * unpacks it into the ghosts.  One message per communicating pair and colour (more where the
 * states exceed the largest message: chunks, bg_internal.h); then a barrier.
 */
#include "bg_internal.h"

size_t bgi_chunk_limit;

mp_err bg_create(size_t state_size, bg_t *out)
{
    if (!out || state_size == 0) {
        lib_misuse("bg_create: %s", out ? "state_size is 0" : "NULL out");
        return MP_ERR_INVALID_ARG;
    }
    /* a state travels whole, with its colour in a finalize answer (a 16-byte padded field):
     * one such chunk must fit a message (and the sizes computed from state_size cannot wrap
     * below this bound) */
    if (state_size > mp_max_message() - 16) {
        lib_misuse("bg_create: state_size %zu exceeds the largest state a message can carry "
                   "(%zu bytes)",
                   state_size, mp_max_message() - 16);
        return MP_ERR_TOO_LARGE;
    }
    LIB_PERF_INIT(bipartite_perf_init);
    bg_part *p = lib_calloc(1, sizeof *p);
    p->magic = BG_MAGIC;
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

/* Room for `ncap` local nodes: false, with the capacity as it was, when the memory is not
 * there.  The caller has checked that ncap * state_size does not wrap. */
static bool nodes_room(bg_part *p, size_t ncap)
{
    uint8_t *color = realloc(p->color, ncap);
    if (!color)
        return false;
    p->color = color;
    unsigned char *states = realloc(p->states, ncap * p->ss);
    if (!states)
        return false;
    p->states = states;
    p->ncap = ncap;
    return true;
}

/* Room for `ecap` edges, as nodes_room; the caller has checked that the sizes do not wrap. */
static bool edges_room(bg_part *p, size_t ecap)
{
    bg_edge *edges = realloc(p->edges, ecap * sizeof *p->edges);
    if (!edges)
        return false;
    p->edges = edges;
    bg_node_id *esrc = realloc(p->esrc, ecap * sizeof *p->esrc);
    if (!esrc)
        return false;
    p->esrc = esrc;
    uint32_t *edst = realloc(p->edst, ecap * sizeof *p->edst);
    if (!edst)
        return false;
    p->edst = edst;
    p->ecap = ecap;
    return true;
}

/* Room for one more local node (node ids hold a 32-bit local index). */
static void grow_nodes(bg_part *p)
{
    if (p->n == (size_t)UINT32_MAX + 1)
        lib_die("bg_add_node: more than 2^32 nodes on one PE (node ids hold a 32-bit index)");
    size_t ncap = p->ncap ? 2 * p->ncap : 256, bytes;
    if (__builtin_mul_overflow(ncap, p->ss, &bytes))
        lib_die("bg_add_node: %zu nodes of %zu bytes exceed the address space", ncap, p->ss);
    if (!nodes_room(p, ncap))
        lib_die("bg_add_node: out of memory (%zu nodes)", ncap);
}

/* The largest edge count whose arrays' sizes do not wrap. */
#define EDGES_MAX (SIZE_MAX / sizeof(bg_edge))

mp_err bg_reserve(bg_t g, size_t nodes, size_t edges)
{
    bg_part *p = graph_or_null(g, "bg_reserve");
    if (!p)
        return MP_ERR_INVALID_ARG;
    if (!p->building) {
        lib_misuse("bg_reserve: the graph is finalized");
        return MP_ERR_INVALID_ARG;
    }
    size_t bytes;
    if (nodes > (size_t)UINT32_MAX + 1 || __builtin_mul_overflow(nodes, p->ss, &bytes) ||
        edges > EDGES_MAX) {
        lib_misuse("bg_reserve: %zu nodes of %zu bytes and %zu edges exceed what one PE can "
                   "hold (2^32 nodes, and arrays within the address space)",
                   nodes, p->ss, edges);
        return MP_ERR_TOO_LARGE;
    }
    if ((nodes > p->ncap && !nodes_room(p, nodes)) || (edges > p->ecap && !edges_room(p, edges)))
        return MP_ERR_NO_MEMORY;
    return MP_SUCCESS;
}

bg_node_id bg_add_node(bg_t g, bg_color color, const void *state)
{
    bg_part *p = part_of(g);
    if (!p->building || (color != BG_RED && color != BG_BLACK))
        lib_die("bg_add_node after bg_finalize or with a bad colour");
    if (p->n == p->ncap)
        grow_nodes(p);
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
    bg_part *p = graph_or_null(g, "bg_add_edge");
    if (!p)
        return MP_ERR_INVALID_ARG;
    const char *bad = !p->building             ? "the graph is finalized"
                      : BG_OWNER(dst) != p->me ? "dst is not a node of this PE"
                      : BG_INDEX(dst) >= p->n  ? "dst is no node of this PE"
                      : BG_OWNER(src) < 0 || BG_OWNER(src) >= p->npes ? "src names no PE"
                      : BG_OWNER(src) == p->me && BG_INDEX(src) >= p->n
                          ? "src is no node of this PE"
                      : BG_OWNER(src) == p->me && p->color[BG_INDEX(src)] == p->color[BG_INDEX(dst)]
                          ? "src and dst have the same colour"
                          : NULL;
    if (bad) { /* told, not only returned */
        lib_misuse("bg_add_edge: %s", bad);
        return MP_ERR_INVALID_ARG;
    }
    if (p->ne == p->ecap) {
        size_t ecap = p->ecap ? 2 * p->ecap : 1024;
        if (ecap > EDGES_MAX || !edges_room(p, ecap))
            lib_die("bg_add_edge: out of memory (%zu edges)", ecap);
    }
    if (p->ne == 0)
        p->edst_sorted = true;
    else if (BG_INDEX(dst) < p->edst[p->ne - 1])
        p->edst_sorted = false;
    p->edges[p->ne] = (bg_edge){weight, NULL};
    p->esrc[p->ne] = src;
    p->edst[p->ne++] = BG_INDEX(dst);
    return MP_SUCCESS;
}

/* ---------------------------------------------------------------------------------- */
/* Validate                                                                             */

typedef struct {
    bg_t g;
    int from;
    int color;
    uint32_t first, count; /* this chunk: states first .. first + count - 1 of the pair's */
} val_hdr;

static void bg_val_arrive(void *args)
{
    mp_store_arrival *a = args;
    val_hdr h;
    memcpy(&h, a->user, sizeof h);
    bg_part *p = part_of(h.g);
    BIPARTITE_ACCESS(VALIDATE);
    int q = h.from, c = h.color;
    if (h.first > p->rcnt[c][q] || h.count > p->rcnt[c][q] - h.first)
        lib_die("validate message of the wrong size");
    const unsigned char *buf = p->recvbuf[q];
    const uint32_t *gi = p->ridx[c] + p->roff[q];
    for (uint32_t i = h.first; i < h.first + h.count; i++)
        copy_state(p->gstates + (size_t)gi[i] * p->ss, buf + (size_t)i * p->ss, p->ss);
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
    bgi_barrier_then_signal(p, a->done);
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
    bg_part *p = graph_or_null(g, "bg_validate");
    if (!p || !done || !p->finalized || (c != BG_RED && c != BG_BLACK))
        return MP_FAIL;
    if (p->validating) { /* its barrier would be refused, and this one lost */
        lib_misuse("bg_validate: graph %u has a validate in progress; wait for its counter", g);
        return MP_FAIL;
    }
    p->validating = true;
    BIPARTITE_INC(p->st, NValidate, 1);
    size_t per = bgi_per_chunk(p->ss);
    for (int q = 0; q < p->npes; q++) {
        p->recv_target += bgi_chunks(p->rcnt[c][q], per);
        uint32_t cnt = p->scnt[c][q];
        const uint32_t *idx = cnt ? send_list(p, (int)c, q) : NULL;
        for (uint32_t first = 0; first < cnt; first += (uint32_t)per) {
            uint32_t k = cnt - first < per ? cnt - first : (uint32_t)per;
            for (uint32_t i = 0; i < k; i++)
                copy_state(p->packbuf + (size_t)i * p->ss,
                           p->states + (size_t)idx[first + i] * p->ss, p->ss);
            val_hdr h = {g, p->me, (int)c, first, k};
            BIPARTITE_INC(p->st, NMsg, 1);
            BIPARTITE_INC(p->st, Bytes, (uint64_t)k * p->ss);
            p->sent_target++;
            if (mp_bulk_store(q, (unsigned char *)p->raddr[q] + (size_t)first * p->ss, p->packbuf,
                              (size_t)k * p->ss, p->sent, bg_val_arrive, &h, sizeof h) == MP_FAIL)
                lib_die("bulk store failed");
            /* the pack buffer is reused for the next chunk: wait until the runtime let go */
            if (mp_counter_value(p->sent) < p->sent_target)
                lib_die("bulk store kept the source buffer (unsupported by this implementation)");
        }
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
    out->srcs = p->esrc + p->ebeg[i];
    out->nremote = p->nremote[i];
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
    bg_part *p = graph_or_null(g, "bg_update");
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

size_t bg_local_count(bg_t g, bg_color c)
{
    bg_part *p = part_of(g);
    if (c != BG_RED && c != BG_BLACK) /* masked, a bad colour counted the other one */
        lib_die("bg_local_count: colour %d is neither BG_RED nor BG_BLACK", (int)c);
    return p->ncolor[c];
}
size_t bg_ghost_count(bg_t g) { return part_of(g)->ng; }

void bg_iter_init(bg_t g, bg_color c, bg_iter *it)
{
    if (!it || (c != BG_RED && c != BG_BLACK))
        lib_die("bg_iter_init: %s",
                it ? "a colour that is neither BG_RED nor BG_BLACK" : "NULL iterator");
    it->part_ = part_of(g);
    it->id_ = g;
    it->next_ = 0;
    it->color_ = c;
}

bool bg_iter_next(bg_iter *it, bg_node *node)
{
    if (!it || !it->part_ || !node)
        lib_die("bg_iter_next: %s", !it || !node ? "NULL iterator or node"
                                                 : "the iterator was not set up by bg_iter_init");
    bg_part *p = lib_iter_part(it->id_, it->part_, BG_MAGIC, "bg_iter_next", "bipartite graph");
    if (!p->finalized)
        return false;
    while (it->next_ < p->n && p->color[it->next_] != it->color_)
        it->next_++;
    if (it->next_ >= p->n)
        return false;
    fill_node(p, it->next_++, node);
    return true;
}

/* ---------------------------------------------------------------------------------- */
/* Destroy                                                                              */

static void part_free(void *arg)
{
    bg_part *p = arg;
    if (p->recvbuf)
        for (int q = 0; q < p->npes; q++) {
            free(p->recvbuf[q]);
            free(p->landing[q]);
            free(p->sidx[q]);
        }
    void *arrays[] = {p->color,   p->states,  p->ebeg,    p->edges,   p->esrc,
                      p->nremote, p->gix,     p->edst,    p->gid,     p->gcolor,
                      p->gstates, p->gbeg,    p->sidx,    p->scnt[0], p->scnt[1],
                      p->ridx[0], p->ridx[1], p->rcnt[0], p->rcnt[1], p->roff,
                      p->raddr,   p->recvbuf, p->landing, p->packbuf, p->answers_due};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        free(arrays[i]);
    mp_counter_t counters[] = {p->started, p->fin, p->recv, p->sent, p->phase};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        mp_counter_free(counters[i]);
    p->magic = 0;
    free(p);
}

mp_status bg_destroy(bg_t g, mp_counter_t done)
{
    bg_part *p = graph_or_null(g, "bg_destroy");
    if (!p || !done || (!p->building && !p->finalized))
        return MP_FAIL; /* (a finalize in progress) */
    if (p->destroying || p->validating) {
        lib_misuse("bg_destroy: graph %u %s", g,
                   p->destroying ? "is being destroyed already" : "has a validate in progress");
        return MP_FAIL;
    }
    p->destroying = true;
    return lib_destroy(g, 0, part_free, p, done);
}
