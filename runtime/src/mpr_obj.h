/*
 * mpr_obj.h -- distributed objects: a PE's state of one object, and object.c.
 */
#ifndef MPR_OBJ_H
#define MPR_OBJ_H

#include "mpr_base.h"
#include "mpr_counter.h"

#include <stdio.h>

typedef struct {
    void *partition;
    /* global operation (barrier / reduction) in progress on this PE */
    mpr_counter *gop_done;
    double *gop_out;
    bool gop_busy;
    /* root side: arrivals of the current round */
    int gop_arrived;
    double gop_acc;
    int gop_op;
    bool rt_owned;   /* partition allocated by the runtime (snapshot): freed at exit */
    bool destroying; /* mp_obj_destroy: the current global operation ends the object */
    bool destroyed;
    bool created; /* mp_obj_create / mp_obj_create_named ran on this PE (not just a message) */
    void (*rt_fini)(void *partition); /* frees an rt_owned partition at mp_obj_destroy */
} mpr_obj;

/* object.c */
void mpr_objs_init(mpr_pe *pe);
void mpr_objs_fini(mpr_pe *pe);
mpr_obj *mpr_obj_get(mpr_pe *pe, mp_obj_t id);
/* The entry of an object created on this PE and not destroyed, else NULL (the table does not
 * grow; pe may be NULL). */
mpr_obj *mpr_obj_find(mpr_pe *pe, mp_obj_t id);
/* At the end of a run: whether a global operation on this PE's objects was started by some
 * PEs and never called by others, with a line for each on `out` (the hang report; NULL: only
 * whether). */
bool mpr_objs_report_unfinished(mpr_pe *pe, FILE *out);

#endif /* MPR_OBJ_H */
