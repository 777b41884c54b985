/*
 * bg_internal.h -- the bipartite graph's partition and what its two source files share
 * (bipartite.c: building, validate, update, access, destroy; bg_finalize.c: the inspector that
 * finalizes the graph).  Internal to the library.
 */
#ifndef MPROF_BG_INTERNAL_H
#define MPROF_BG_INTERNAL_H

#include "bipartite.h"

#include "bipartite_perf.h"

#include <string.h>

#define LIB_MODULE "bipartite"
#include "lib_internal.h"

/* Tags a graph's partition: a handle is a bare object id, and an id of another kind of object
 * must be refused before its partition is read as a graph's. */
#define BG_MAGIC 0x42475250u /* "BGRP" */

typedef struct {
    uint32_t magic; /* BG_MAGIC while the partition lives */
    mp_obj_t id;
    int me, npes;
    size_t ss; /* state size */
    /* local nodes */
    size_t n, ncap;
    uint8_t *color;
    unsigned char *states;
    size_t *ebeg; /* CSR: edges of node i are edges[ebeg[i] .. ebeg[i+1]) */
    bg_edge *edges;
    bg_node_id *esrc;  /* esrc[k]: the source of edges[k], apart so that updates stream less */
    uint32_t *nremote; /* nremote[i]: node i's edges from other PEs' nodes */
    /* building: edges, esrc and edst hold the ne edges as added (weights and sources; no
     * source states yet), edst their destinations; finalize lays them out by destination,
     * in place where they came in that order (edst_sorted), and frees edst */
    uint32_t *edst;
    size_t ne, ecap;
    bool edst_sorted;
    size_t ncolor[2];
    /* ghosts, sorted by id */
    size_t ng;
    bg_node_id *gid;
    uint8_t *gcolor;
    unsigned char *gstates;
    size_t *gbeg;  /* ghosts of owner q: [gbeg[q], gbeg[q+1]) */
    uint32_t *gix; /* finalize: the ghost of the r-th remote edge as added (bg_finalize.c) */
    /* schedule, per peer q */
    /* send: my node indices q ghosts, per peer q, colour 0's then colour 1's (sized by q's
     * subscription, so a PE's lists hold its ghosted nodes and not P x its node count) */
    uint32_t **sidx, *scnt[2];
    uint32_t *ridx[2], *rcnt[2]; /* receive: my ghost indices owned by q, by colour */
    size_t *roff;
    void **raddr;            /* q's receive buffer for my states */
    unsigned char **recvbuf; /* my receive buffer for q's states */
    unsigned char **landing; /* finalize: q's answer lands here */
    uint32_t *answers_due;   /* finalize: chunks of q's answer still to arrive */
    unsigned char *packbuf;
    /* progress */
    bool finalized, building;
    bool validating;      /* a bg_validate has not completed (its barrier) on this PE */
    bool destroying;      /* bg_destroy was called */
    mp_counter_t started; /* 1 once bg_finalize was called here */
    mp_counter_t fin;     /* subscriptions served + answers received */
    mp_counter_t recv;    /* validate messages received */
    mp_counter_t sent;    /* validate sources free again */
    mp_counter_t phase;   /* internal barriers */
    uint64_t recv_target, sent_target, phase_target;
    bipartite_stats_t *st;
} bg_part;

/* The partition of `g` on this PE, or NULL after a report naming `fn` when it is no live
 * bipartite graph here (for the calls that can return an error). */
static inline bg_part *graph_or_null(bg_t g, const char *fn)
{
    return lib_part_checked(g, BG_MAGIC, "bipartite graph", fn);
}

/* The same for the calls that cannot return an error, and the library's own fibers: misuse
 * ends the run. */
static inline bg_part *part_of(bg_t g) { return lib_part_of_kind(g, BG_MAGIC, "bipartite graph"); }

static inline size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Chunks.  A transfer between two PEs (a finalize answer, a validate of one colour) can exceed
 * the largest message, mp_max_message(): it goes in chunks of whole states, each one bulk
 * operation that says which part it carries.  Both ends compute the same chunking from the
 * state size, so a receiver knows how many chunks to wait for.  bgi_chunk_limit below
 * mp_max_message() (0: no limit of its own) makes the chunks smaller: the test program sets it
 * to exercise chunking with small graphs. */
extern size_t bgi_chunk_limit;

static inline size_t bgi_chunk_bytes(void)
{
    size_t m = mp_max_message();
    return bgi_chunk_limit && bgi_chunk_limit < m ? bgi_chunk_limit : m;
}

/* Items of `size` bytes per chunk: at least one (bg_create keeps one state, with its colour,
 * within mp_max_message()). */
static inline size_t bgi_per_chunk(size_t size)
{
    size_t c = bgi_chunk_bytes() / size;
    return c ? c : 1;
}

/* Nodes per chunk of a finalize answer, whose chunk holds its nodes' colours (a byte each,
 * padded to 16) and then their states. */
static inline size_t bgi_answer_per_chunk(size_t ss)
{
    size_t b = bgi_chunk_bytes(), c = b / (ss + 1);
    while (c > 1 && align16(c) + c * ss > b)
        c--;
    return c ? c : 1;
}

static inline size_t bgi_chunks(size_t n, size_t per) { return (n + per - 1) / per; }

/* Copies one node state: states of a double (em3d) are copied inline and not by a call of
 * memcpy per ghost value, which cost more than the value's share of the message. */
static inline void copy_state(void *dst, const void *src, size_t ss)
{
    if (ss == sizeof(double))
        memcpy(dst, src, sizeof(double));
    else
        memcpy(dst, src, ss);
}

/* Colour c's send list to peer q (see sidx). */
static inline const uint32_t *send_list(const bg_part *p, int c, int q)
{
    return p->sidx[q] + (c ? p->scnt[0][q] : 0);
}

/* The ghost index of a remote node, or -1 (ghosts are sorted by id). */
static inline long ghost_index(const bg_part *p, bg_node_id id)
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

/* bg_finalize.c: increments `done` (from a fiber that declares VALIDATE) once a barrier on
 * the graph has passed. */
void bgi_barrier_then_signal(bg_part *p, mp_counter_t done);

#endif
