/*
 * bipartite.h -- the bipartite graph on the mprof runtime (Wen 1995, section 2.2.1).
 *
 * Nodes are red or black; edges join nodes of different colours.  Each PE builds its own
 * nodes and the edges *into* them (naming source nodes anywhere by id), then all PEs
 * finalize the graph together: every remote source gets a ghost node (a replica of its
 * state) on the PE that reads it, and each pair of PEs agrees once on which states travel.
 * The graph is static from then on.
 *
 * Bulk-synchronous use (Wen 1995, Fig 2.1): update the local nodes of one colour (reading
 * neighbour states through the edges), validate that colour, update the other colour,
 * validate it, and so on.  bg_validate(c) sends, for every PE pair, the states of all colour-c
 * nodes that the other PE ghosts in ONE packed message (a bulk store), unpacks the arriving
 * ones into the ghosts and ends with a barrier: when it completes, every ghost of colour c on
 * every PE equals its owner.  Ghosts of colour c may change from the moment any PE starts
 * the next bg_validate(c).
 *
 * Node ids are global: (owner PE << 32) | local index; local indices are assigned in the
 * order of bg_add_node.  Collective calls (bg_create, bg_finalize, bg_validate, bg_destroy)
 * are made by every PE in the same order; create the graph in pe_main before any fiber
 * touches it.
 */
#ifndef MPROF_BIPARTITE_H
#define MPROF_BIPARTITE_H

#include "mp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef mp_obj_t bg_t;
typedef uint64_t bg_node_id;
typedef enum { BG_RED = 0, BG_BLACK = 1 } bg_color;

#define BG_ID(pe, index) (((bg_node_id)(uint32_t)(pe) << 32) | (bg_node_id)(uint32_t)(index))
#define BG_OWNER(id) ((int)((id) >> 32))
#define BG_INDEX(id) ((uint32_t)(id))

/* An edge as an update reads it: 16 bytes, what a kernel streams per edge and iteration (the
 * source's id, which an update does not need, is in bg_node.srcs). */
typedef struct {
    double weight;
    const void *src_state; /* the source's state: a local node or a ghost */
} bg_edge;

typedef struct {
    bg_node_id id;
    bg_color color;
    void *state;
    size_t nedges;
    const bg_edge *edges;   /* edges into this node */
    const bg_node_id *srcs; /* srcs[e]: the source of edges[e] */
    size_t nremote;         /* of the edges, those whose source is another PE's node */
} bg_node;

/* Collective: a graph whose nodes carry `state_size` bytes of state, the same on every PE (a
 * PE that finds another's differs at bg_finalize ends the run).  MP_ERR_INVALID_ARG: NULL
 * out or state_size 0; MP_ERR_TOO_LARGE: state_size above mp_max_message() (a node's state
 * travels in one message).  Both reported on stderr; nothing is created. */
mp_err bg_create(size_t state_size, bg_t *out);

/* Building (before bg_finalize): a local node (state copied; NULL = zeros) and an edge into
 * the local node `dst` from any node `src` of the other colour.  bg_add_node has no error
 * value: a handle that is no live graph here, a call after bg_finalize, a bad colour, more than
 * 2^32 nodes on one PE or running out of memory end the run with a message.  The calls that
 * return an mp_err or mp_status refuse a handle that is no live graph on this PE
 * (MP_ERR_INVALID_ARG / MP_FAIL, reported on stderr). */
bg_node_id bg_add_node(bg_t g, bg_color color, const void *state);
mp_err bg_add_edge(bg_t g, bg_node_id dst, bg_node_id src, double weight);

/* Building, optional: room for `nodes` local nodes and `edges` edges into them in all, so
 * that adding up to that many allocates nothing more.  Without it the arrays double as they
 * fill, and each growth of a large one moves it, which flushes its old pages from every CPU
 * that runs the program.  Never shrinks.  MP_ERR_INVALID_ARG: no live graph on this PE, or
 * finalized; MP_ERR_TOO_LARGE: beyond 2^32 nodes or the address space (both reported on
 * stderr); MP_ERR_NO_MEMORY: the memory is not there.  The graph is unchanged on an error. */
mp_err bg_reserve(bg_t g, size_t nodes, size_t edges);

/* Collective, split-phase (MP_WAIT): creates the ghosts, agrees on the message schedule,
 * fills the ghosts with their owners' current states and ends with a barrier. */
mp_status bg_finalize(bg_t g, mp_counter_t done);

/* Collective, split-phase (MP_WAIT): refreshes every ghost of colour `c` (see above).  One
 * at a time: while a validate has not completed, another (of either colour) is refused
 * (MP_FAIL, with a line on stderr). */
mp_status bg_validate(bg_t g, bg_color c, mp_counter_t done);

/* Split-phase, local: calls fn on every local node of colour c (in fibers that declare the
 * UPDATE access, a chunk of nodes per fiber), then increments done.  MP_WAIT. */
typedef void (*bg_update_fn)(bg_t g, bg_node *node, void *ctx);
mp_status bg_update(bg_t g, bg_color c, bg_update_fn fn, void *ctx, mp_counter_t done);

/* Collective, split-phase (MP_WAIT): frees the graph.  Call it when no bg_update, validate
 * or finalize of the graph is in progress on any PE (in the bulk-synchronous pattern: after
 * the last validate has completed; during a validate, or a second time, MP_FAIL with a line
 * on stderr).  The statistics stay in the run profile. */
mp_status bg_destroy(bg_t g, mp_counter_t done);

/* Local access. */
void *bg_state(bg_t g, bg_node_id local);   /* a local node's state, NULL if not local */
const void *bg_read(bg_t g, bg_node_id id); /* local node or ghost, NULL if neither */
size_t bg_local_count(bg_t g, bg_color c);
size_t bg_ghost_count(bg_t g);

typedef struct {
    void *part_;
    bg_t id_;
    size_t next_;
    bg_color color_;
} bg_iter;
/* Iterates over the local nodes of colour c (after bg_finalize, which builds the edges). */
void bg_iter_init(bg_t g, bg_color c, bg_iter *it);
bool bg_iter_next(bg_iter *it, bg_node *node);

#ifdef __cplusplus
}
#endif
#endif
