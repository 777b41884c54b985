/*
 * object.c -- the distributed object manager: names for objects with one partition per PE,
 * and split-phase barrier and reduction per object.
 *
 * A global operation gathers at the object's root PE (id mod P, so different objects spread
 * the load), which combines the values and releases every PE.  Each object allows one global
 * operation at a time per PE; different objects proceed independently.
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

/* Entries appear on demand: a root may hear of an object before its own PE creates it. */
mpr_obj *mpr_obj_get(mpr_pe *pe, mp_obj_t id)
{
    if (id >= pe->nobjs_cap) {
        uint32_t cap = pe->nobjs_cap ? pe->nobjs_cap : 64;
        while (cap <= id)
            cap *= 2;
        mpr_obj *o = realloc(pe->objs, cap * sizeof *o);
        if (!o)
            mpr_fatal("out of memory growing the object table");
        memset(o + pe->nobjs_cap, 0, (cap - pe->nobjs_cap) * sizeof *o);
        pe->objs = o;
        pe->nobjs_cap = cap;
    }
    return &pe->objs[id];
}

mp_err mp_obj_create(void *local_partition, mp_obj_t *id)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe || !id)
        return mpr_misuse(pe ? MP_ERR_INVALID_ARG : MP_ERR_BAD_STATE,
                          "mp_obj_create needs a running PE and an id pointer");
    *id = pe->next_dynamic_obj++;
    mpr_obj *o = mpr_obj_get(pe, *id);
    o->partition = local_partition;
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
    o->partition = local_partition;
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

typedef struct {
    mp_obj_t id;
    int op;
    double value;
} gop_msg;

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

static void gop_release(void *p)
{
    gop_msg *m = p;
    mpr_pe *pe = mpr_pe_self();
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

static void gop_arrive(void *p)
{
    gop_msg *m = p;
    mpr_pe *pe = mpr_pe_self();
    mpr_obj *o = mpr_obj_get(pe, m->id);
    o->gop_acc = o->gop_arrived ? combine(m->op, o->gop_acc, m->value) : m->value;
    if (++o->gop_arrived < pe->npes)
        return;
    gop_msg out = {m->id, m->op, o->gop_acc};
    o->gop_arrived = 0;
    for (int d = 0; d < pe->npes; d++)
        mpr_send_record(pe, d, gop_release, &out, sizeof out, MP_SCHED_URGENT, NULL, 0, NULL);
}

mp_status mp_obj_reduce(mp_obj_t id, mp_reduce_op op, double in, double *out, mp_counter_t done)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe || !done) {
        mpr_misuse(MP_ERR_INVALID_ARG, "global operation needs a running PE and a counter");
        return MP_FAIL;
    }
    mpr_obj *o = mpr_obj_get(pe, id);
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
    gop_msg m = {id, (int)op, in};
    mpr_send_record(pe, (int)(id % (mp_obj_t)pe->npes), gop_arrive, &m, sizeof m, MP_SCHED_URGENT,
                    NULL, 0, NULL);
    return MP_WAIT;
}

mp_status mp_obj_barrier(mp_obj_t id, mp_counter_t done)
{
    return mp_obj_reduce(id, MP_REDUCE_SUM, 0.0, NULL, done);
}

mp_status mp_obj_destroy(mp_obj_t id, mp_counter_t done)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe || !done || id == MP_OBJ_RTS) {
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_obj_destroy needs a running PE, a user object and a "
                                       "counter");
        return MP_FAIL;
    }
    mpr_obj *o = mpr_obj_get(pe, id);
    if (o->destroyed || o->gop_busy)
        return mp_obj_barrier(id, done); /* reports the misuse */
    o->destroying = true;                /* read by gop_release */
    mp_status s = mp_obj_barrier(id, done);
    if (s == MP_FAIL)
        mpr_obj_get(pe, id)->destroying = false;
    return s;
}
