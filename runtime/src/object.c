/*
 * object.c -- the distributed object manager: names for objects with one partition per PE,
 * and split-phase barrier and reduction per object.
 *
 * A global operation combines the PEs' values up a binomial tree rooted at the object's root
 * PE (id mod P, so different objects spread the load) and releases every PE down the same
 * tree: each PE handles at most log2 P messages each way and the operation takes 2 log2 P
 * message latencies, instead of P messages gathered at one PE.  Each object allows one global
 * operation at a time per PE; different objects proceed independently.  A child's next
 * operation cannot reach its parent before the current one ended there: the release passes
 * the parent first.
 */
#include "mpr.h"

#include <stdlib.h>
#include <string.h>

void mpr_objs_init(mpr_pe *pe)
{
    pe->objs = NULL;
    pe->nobjs_cap = 0;
    pe->next_dynamic_obj = MP_OBJ_DYNAMIC_FIRST;
}

void mpr_objs_fini(mpr_pe *pe)
{
    for (uint32_t i = 0; i < pe->nobjs_cap; i++)
        if (pe->objs[i].rt_owned)
            free(pe->objs[i].partition);
    free(pe->objs);
    pe->objs = NULL;
    pe->nobjs_cap = 0;
}

/* Entries appear on demand: a root may hear of an object before its own PE creates it.  Only
 * ids handed out by the runtime reach here (the user's calls check theirs first, see
 * user_obj), so the table grows with the objects created; the arithmetic cannot wrap. */
mpr_obj *mpr_obj_get(mpr_pe *pe, mp_obj_t id)
{
    if (id >= pe->nobjs_cap) {
        if (id == UINT32_MAX)
            mpr_fatal("object id %u is beyond the object table", id);
        uint64_t cap = pe->nobjs_cap ? pe->nobjs_cap : 64;
        while (cap <= id)
            cap *= 2;
        if (cap > UINT32_MAX)
            cap = UINT32_MAX; /* id < UINT32_MAX: it still fits */
        mpr_obj *o = realloc(pe->objs, (size_t)cap * sizeof *o);
        if (!o)
            mpr_fatal("out of memory growing the object table to %llu entries",
                      (unsigned long long)cap);
        memset(o + pe->nobjs_cap, 0, (size_t)(cap - pe->nobjs_cap) * sizeof *o);
        pe->objs = o;
        pe->nobjs_cap = (uint32_t)cap;
    }
    return &pe->objs[id];
}

mpr_obj *mpr_obj_find(mpr_pe *pe, mp_obj_t id)
{
    if (!pe || id >= pe->nobjs_cap || !pe->objs[id].created || pe->objs[id].destroyed)
        return NULL;
    return &pe->objs[id];
}

mp_err mp_obj_create(void *local_partition, mp_obj_t *id)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe || !id)
        return mpr_misuse(pe ? MP_ERR_INVALID_ARG : MP_ERR_BAD_STATE,
                          "mp_obj_create needs a running PE and an id pointer");
    if (pe->next_dynamic_obj == UINT32_MAX)
        return mpr_misuse(MP_ERR_LIMIT, "mp_obj_create: all %u object ids are used",
                          UINT32_MAX - MP_OBJ_DYNAMIC_FIRST);
    *id = pe->next_dynamic_obj++;
    mpr_obj *o = mpr_obj_get(pe, *id);
    o->partition = local_partition;
    o->created = true;
    return MP_SUCCESS;
}

mp_err mp_obj_create_named(mp_obj_t id, void *local_partition)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe)
        return mpr_misuse(MP_ERR_BAD_STATE, "mp_obj_create_named outside a running PE");
    if (id < MP_OBJ_USER_FIRST || id >= MP_OBJ_DYNAMIC_FIRST)
        return mpr_misuse(MP_ERR_INVALID_ARG,
                          "object name %u is not in the reserved range [%u, %u)", id,
                          MP_OBJ_USER_FIRST, MP_OBJ_DYNAMIC_FIRST);
    mpr_obj *o = mpr_obj_get(pe, id);
    if (o->created && !o->destroyed)
        return mpr_misuse(MP_ERR_BAD_STATE,
                          "object name %u is in use on this PE (mp_obj_destroy it first)", id);
    o->partition = local_partition;
    o->created = true;
    o->destroyed = false; /* a reserved name may be used again */
    return MP_SUCCESS;
}

void *mp_obj_local(mp_obj_t id)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe || id >= pe->nobjs_cap)
        return NULL;
    return pe->objs[id].partition;
}

/* The entry of an object a user's global operation names: the runtime's object, or one
 * created on this PE (mp_obj_create, mp_obj_create_named).  An id never handed out is
 * refused here, before the table grows for it; a destroyed object is left to the caller. */
static mpr_obj *user_obj(mpr_pe *pe, mp_obj_t id, const char *what)
{
    if (id == MP_OBJ_RTS)
        return mpr_obj_get(pe, id);
    if (id >= pe->nobjs_cap || !pe->objs[id].created) {
        mpr_misuse(MP_ERR_INVALID_ARG,
                   "%s: object %u does not exist on this PE (it was not created here by "
                   "mp_obj_create or mp_obj_create_named)",
                   what, id);
        return NULL;
    }
    return &pe->objs[id];
}

typedef struct {
    mp_obj_t id;
    int op; /* a reduction (mp_reduce_op), GOP_BARRIER or GOP_DESTROY */
    double value;
} gop_msg;

/* The kinds of global operation beside the reductions: they combine as sums of zeros.  Every
 * contribution carries its kind, so that PEs that called different ones on one object (a
 * barrier here, a destroy there; SUM here, MAX there) are told, not matched. */
enum { GOP_BARRIER = 100, GOP_DESTROY };

static const char *gop_name(int op)
{
    switch (op) {
    case MP_REDUCE_SUM:
        return "mp_obj_reduce(SUM)";
    case MP_REDUCE_MIN:
        return "mp_obj_reduce(MIN)";
    case MP_REDUCE_MAX:
        return "mp_obj_reduce(MAX)";
    case GOP_BARRIER:
        return "mp_obj_barrier";
    default:
        return "mp_obj_destroy";
    }
}

static double combine(int op, double a, double b)
{
    switch (op) {
    case MP_REDUCE_MIN:
        return a < b ? a : b;
    case MP_REDUCE_MAX:
        return a > b ? a : b;
    default:
        return a + b;
    }
}

/* The binomial tree of object `id`, in ranks relative to its root: the parent of v clears
 * v's lowest set bit; the children of v add each power of two below it. */
static int rel_rank(const mpr_pe *pe, mp_obj_t id)
{
    int root = (int)(id % (mp_obj_t)pe->npes);
    return (pe->id - root + pe->npes) % pe->npes;
}

static int abs_rank(const mpr_pe *pe, mp_obj_t id, int v)
{
    return (int)((id % (mp_obj_t)pe->npes + (mp_obj_t)v) % (mp_obj_t)pe->npes);
}

static int tree_children(const mpr_pe *pe, int v)
{
    int n = 0;
    for (int mask = 1; mask < pe->npes && !(v & mask); mask <<= 1)
        n += v + mask < pe->npes;
    return n;
}

static void gop_release(void *p)
{
    gop_msg *m = p;
    mpr_pe *pe = mpr_pe_self();
    int v = rel_rank(pe, m->id);
    for (int mask = 1; mask < pe->npes && !(v & mask); mask <<= 1)
        if (v + mask < pe->npes)
            mpr_send_record(pe, abs_rank(pe, m->id, v + mask), gop_release, m, sizeof *m,
                            MP_SCHED_URGENT, NULL, 0, NULL);
    mpr_obj *o = mpr_obj_get(pe, m->id);
    if (o->gop_out)
        *o->gop_out = m->value;
    mpr_counter *done = o->gop_done;
    if (o->destroying) {
        /* every PE has called mp_obj_destroy: nothing will reach this partition any more */
        if (o->rt_owned)
            (o->rt_fini ? o->rt_fini : free)(o->partition);
        o->partition = NULL;
        o->rt_owned = false;
        o->rt_fini = NULL;
        o->destroying = false;
        o->destroyed = true;
    }
    o->gop_busy = false;
    o->gop_done = NULL;
    o->gop_out = NULL;
    mp_counter_add(done, 1);
}

static void gop_arrive(void *p);

/* A contribution (this PE's own, or a child's subtree combined): once this PE's and all its
 * children's are in, the subtree's value goes to the parent, or the root releases. */
static void gop_contribute(mpr_pe *pe, mp_obj_t id, int op, double value)
{
    mpr_obj *o = mpr_obj_get(pe, id);
    if (o->gop_arrived && o->gop_op != op) /* the round's first contribution set its kind */
        mpr_fatal("object %u: PEs called different global operations on it (%s and %s); every "
                  "PE must call the same one",
                  id, gop_name(o->gop_op), gop_name(op));
    o->gop_op = op;
    o->gop_acc = o->gop_arrived ? combine(op, o->gop_acc, value) : value;
    int v = rel_rank(pe, id);
    if (++o->gop_arrived < 1 + tree_children(pe, v))
        return;
    gop_msg out = {id, op, o->gop_acc};
    o->gop_arrived = 0;
    int to = v == 0 ? pe->id : abs_rank(pe, id, v & (v - 1));
    mpr_send_record(pe, to, v == 0 ? gop_release : gop_arrive, &out, sizeof out, MP_SCHED_URGENT,
                    NULL, 0, NULL);
}

static void gop_arrive(void *p)
{
    gop_msg *m = p;
    gop_contribute(mpr_pe_self(), m->id, m->op, m->value);
}

static mp_status gop_start(mp_obj_t id, mp_reduce_op op, int kind, double in, double *out,
                           mp_counter_t done, const char *what)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe) {
        mpr_misuse(MP_ERR_BAD_STATE, "%s outside a running PE", what);
        return MP_FAIL;
    }
    if (!done) {
        mpr_misuse(MP_ERR_INVALID_ARG, "%s needs a counter", what);
        return MP_FAIL;
    }
    if (mpr_counter_check(pe, done) != MP_SUCCESS) /* freed, or another PE's: reported */
        return MP_FAIL;
    if (op != MP_REDUCE_SUM && op != MP_REDUCE_MIN && op != MP_REDUCE_MAX) {
        mpr_misuse(MP_ERR_INVALID_ARG, "%s: unknown reduction operation %d", what, (int)op);
        return MP_FAIL;
    }
    mpr_obj *o = user_obj(pe, id, what);
    if (!o)
        return MP_FAIL;
    if (o->destroyed) {
        mpr_misuse(MP_ERR_BAD_STATE, "object %u was destroyed", id);
        return MP_FAIL;
    }
    if (o->gop_busy) {
        mpr_misuse(MP_ERR_BAD_STATE, "object %u already has a global operation in progress", id);
        return MP_FAIL;
    }
    o->gop_busy = true;
    o->gop_done = done;
    o->gop_out = out;
    gop_contribute(pe, id, kind, in);
    return MP_WAIT;
}

bool mpr_objs_report_unfinished(mpr_pe *pe, FILE *out)
{
    bool any = false;
    for (uint32_t i = 0; i < pe->nobjs_cap; i++) {
        mpr_obj *o = &pe->objs[i];
        if (out && o->gop_busy)
            fprintf(out, "  PE %d: %s on object %u did not complete: not every PE called it\n",
                    pe->id, gop_name(o->gop_op), i);
        else if (out && o->gop_arrived)
            fprintf(out,
                    "  PE %d: never called %s on object %u, which other PEs called (their "
                    "contributions wait here)\n",
                    pe->id, gop_name(o->gop_op), i);
        any |= o->gop_busy || o->gop_arrived;
    }
    return any;
}

mp_status mp_obj_reduce(mp_obj_t id, mp_reduce_op op, double in, double *out, mp_counter_t done)
{
    return gop_start(id, op, (int)op, in, out, done, "mp_obj_reduce");
}

mp_status mp_obj_barrier(mp_obj_t id, mp_counter_t done)
{
    return gop_start(id, MP_REDUCE_SUM, GOP_BARRIER, 0.0, NULL, done, "mp_obj_barrier");
}

mp_status mp_obj_destroy(mp_obj_t id, mp_counter_t done)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe || !done || id == MP_OBJ_RTS) {
        mpr_misuse(pe ? MP_ERR_INVALID_ARG : MP_ERR_BAD_STATE,
                   "mp_obj_destroy needs a running PE, a user object and a counter");
        return MP_FAIL;
    }
    mpr_obj *o = user_obj(pe, id, "mp_obj_destroy");
    if (!o)
        return MP_FAIL;
    if (o->destroyed || o->gop_busy)
        return gop_start(id, MP_REDUCE_SUM, GOP_DESTROY, 0.0, NULL, done,
                         "mp_obj_destroy"); /* reports */
    o->destroying = true;                   /* read by gop_release */
    mp_status s = gop_start(id, MP_REDUCE_SUM, GOP_DESTROY, 0.0, NULL, done, "mp_obj_destroy");
    if (s == MP_FAIL)
        mpr_obj_get(pe, id)->destroying = false;
    return s;
}
