/*
 * snapshot.c -- the snapshot data structure (Wen 1995, section 3.4.2).
 *
 * Each PE's partition counts the mutators that executed on it and, through a counter, those
 * that completed (a completion is reported to the PE where the mutator executed, so every PE
 * can wait for its own share).  Freezing is collective: every PE stops admitting mutators,
 * a barrier makes sure all have stopped, then each waits until its started mutators have
 * completed.  Suspended mutators wait on the `thaw` counter, which unfreeze increments.
 * The fibers of a freeze or sync declare the access category of the code that started it,
 * so the idle time they wait through is charged to that access (not to "unclassified").
 */
#include "mpr.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    mp_obj_t id;
    bool frozen;
    uint64_t started;
    mpr_counter *completed;
    mpr_counter *thaw;
    mpr_counter *phase; /* internal: barriers of freeze and sync */
    uint64_t phase_target;
} snapshot;

typedef struct {
    mp_obj_t id;
    mpr_counter *done;
    mpr_counter *scratch; /* sync: the counter of its freeze phase, freed when passed */
    int access;           /* the category of the code that started the freeze or sync */
} step_args;

/* mp_obj_destroy of a snapshot (quiescent: no fiber waits on its counters). */
static void snapshot_free(void *p)
{
    snapshot *s = p;
    mp_counter_free(s->completed);
    mp_counter_free(s->thaw);
    mp_counter_free(s->phase);
    free(s);
}

/* This PE's snapshot `s`, or NULL with the reason in `why`: outside a running PE, an object
 * that does not exist here (never created, or destroyed), or an object that is not a snapshot
 * (its partition is the user's memory: never read it as one). */
static snapshot *find(mp_snapshot_t s, char *why, size_t n)
{
    mpr_pe *pe = mpr_pe_self();
    mpr_obj *o = mpr_obj_find(pe, s);
    if (!pe)
        snprintf(why, n, "snapshot object %u does not exist: called outside a running PE", s);
    else if (!o || !o->partition)
        snprintf(why, n, "snapshot object %u does not exist on this PE", s);
    else if (o->rt_fini != snapshot_free)
        snprintf(why, n, "object %u is not a snapshot (it was not made by mp_snapshot_new)", s);
    else
        return o->partition;
    return NULL;
}

/* For the calls that cannot return an error: misuse ends the run. */
static snapshot *local(mp_snapshot_t s, const char *what)
{
    char why[160];
    snapshot *p = find(s, why, sizeof why);
    if (!p)
        mpr_fatal("%s: %s", what, why);
    return p;
}

/* For the calls that return a code: misuse is reported (MP_ERR_INVALID_ARG) and returned. */
static snapshot *checked(mp_snapshot_t s, const char *what)
{
    char why[160];
    snapshot *p = find(s, why, sizeof why);
    if (!p)
        mpr_misuse(MP_ERR_INVALID_ARG, "%s: %s", what, why);
    return p;
}

mp_err mp_snapshot_new(mp_snapshot_t *out)
{
    if (!out || !mpr_pe_self())
        return mpr_misuse(MP_ERR_INVALID_ARG, "mp_snapshot_new needs a running PE and a handle");
    snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return MP_ERR_NO_MEMORY;
    s->completed = mp_counter_new(0);
    s->thaw = mp_counter_new(0);
    s->phase = mp_counter_new(0);
    mp_err e = mp_obj_create(s, &s->id);
    if (e) {
        snapshot_free(s);
        return e;
    }
    mpr_obj *o = mpr_obj_get(mpr_pe_self(), s->id);
    o->rt_owned = true; /* freed by mp_obj_destroy, or at exit */
    o->rt_fini = snapshot_free;
    *out = s->id;
    return MP_SUCCESS;
}

mp_status mp_snapshot_query(mp_snapshot_t h)
{
    snapshot *s = checked(h, "mp_snapshot_query");
    if (!s)
        return MP_FAIL;
    return s->frozen ? MP_WAIT : MP_OK;
}

void mp_snapshot_execute(mp_snapshot_t h)
{
    snapshot *s = local(h, "mp_snapshot_execute");
    if (s->frozen)
        mpr_misuse(MP_ERR_BAD_STATE, "snapshot %u: execute while frozen (query first)", h);
    s->started++;
}

/* A completion on the PE where its mutator executed: more completions than executions would
 * let a freeze end while a mutator still runs, so the run ends instead. */
static void count_completion(snapshot *s, mp_snapshot_t h)
{
    if (mp_counter_value(s->completed) >= s->started)
        mpr_fatal("mp_snapshot_complete: snapshot %u: more mutators completed than executed on "
                  "PE %d (%" PRIu64 "): each mp_snapshot_execute is followed by one completion",
                  h, mpr_pe_self()->id, s->started);
    mp_counter_add(s->completed, 1);
}

static void remote_complete(void *p)
{
    mp_obj_t *id = p;
    mp_access_declare(mpr_cur_enabler(mpr_pe_self()));
    count_completion(local(*id, "mp_snapshot_complete"), *id);
}

void mp_snapshot_complete(mp_snapshot_t h, int executing_pe)
{
    snapshot *s = local(h, "mp_snapshot_complete");
    mpr_pe *pe = mpr_pe_self();
    if (executing_pe < 0 || executing_pe >= pe->npes) /* the completion would be lost */
        mpr_fatal("mp_snapshot_complete: snapshot %u: executing PE %d is not a PE (0..%d)", h,
                  executing_pe, pe->npes - 1);
    if (executing_pe == pe->id)
        count_completion(s, h);
    else
        mpr_send_record(pe, executing_pe, remote_complete, &h, sizeof h, MP_SCHED_URGENT, NULL, 0,
                        NULL);
}

mp_err mp_snapshot_suspend(mp_snapshot_t h, mp_fiber_t continuation)
{
    snapshot *s = checked(h, "mp_snapshot_suspend");
    if (!s)
        return MP_ERR_INVALID_ARG;
    if (!continuation)
        return mpr_misuse(MP_ERR_INVALID_ARG, "mp_snapshot_suspend needs a continuation fiber");
    return mp_counter_wait(s->thaw, mp_counter_value(s->thaw) + 1, continuation);
}

/* Runs `fn(args)` once the phase counter reaches its next target (after a barrier). */
static void after_barrier(snapshot *s, mp_fiber_fn fn, step_args a)
{
    s->phase_target++;
    mp_fiber_t f = mp_fiber_create(fn, &a, sizeof a, MP_SCHED_URGENT);
    mp_counter_wait(s->phase, s->phase_target, f);
    mp_obj_barrier(s->id, s->phase);
}

static void freeze_drained(void *p)
{
    step_args *a = p;
    mp_access_declare(a->access);
    mp_counter_add(a->done, 1);
}

static void freeze_all_frozen(void *p)
{
    step_args *a = p;
    mp_access_declare(a->access);
    snapshot *s = local(a->id, "mp_snapshot_freeze");
    /* No PE admits mutators any more, so `started` is final: wait for our completions. */
    mp_fiber_t f = mp_fiber_create(freeze_drained, a, sizeof *a, MP_SCHED_URGENT);
    mp_counter_wait(s->completed, s->started, f);
}

mp_status mp_snapshot_freeze(mp_snapshot_t h, mp_counter_t done)
{
    snapshot *s = checked(h, "mp_snapshot_freeze");
    if (!s)
        return MP_FAIL;
    if (!done || s->frozen) {
        mpr_misuse(done ? MP_ERR_BAD_STATE : MP_ERR_INVALID_ARG, "snapshot %u: freeze %s", h,
                   done ? "while already frozen" : "without a counter");
        return MP_FAIL;
    }
    s->frozen = true;
    after_barrier(s, freeze_all_frozen, (step_args){h, done, NULL, mp_access_current()});
    return MP_WAIT;
}

void mp_snapshot_unfreeze(mp_snapshot_t h)
{
    snapshot *s = local(h, "mp_snapshot_unfreeze");
    if (!s->frozen) { /* a thaw now would release the mutators of the next freeze early */
        mpr_misuse(MP_ERR_BAD_STATE, "snapshot %u: unfreeze while not frozen", h);
        return;
    }
    s->frozen = false;
    mp_counter_add(s->thaw, 1);
}

static void sync_done(void *p)
{
    step_args *a = p;
    mp_access_declare(a->access);
    mp_snapshot_unfreeze(a->id);
    mp_counter_add(a->done, 1);
}

static void sync_frozen(void *p)
{
    step_args *a = p;
    mp_access_declare(a->access);
    mp_counter_free(a->scratch);
    /* Every PE must have drained its share before anyone unfreezes. */
    after_barrier(local(a->id, "mp_snapshot_sync"), sync_done,
                  (step_args){a->id, a->done, NULL, a->access});
}

static void sync_start(void *p)
{
    step_args *a = p;
    mp_access_declare(a->access);
    snapshot *s = local(a->id, "mp_snapshot_sync");
    mpr_counter *mine = mp_counter_new(0);
    step_args next = {a->id, a->done, mine, a->access};
    mp_fiber_t f = mp_fiber_create(sync_frozen, &next, sizeof next, MP_SCHED_URGENT);
    mp_counter_wait(mine, 1, f);
    s->frozen = true;
    after_barrier(s, freeze_all_frozen, (step_args){a->id, mine, NULL, a->access});
}

mp_status mp_snapshot_sync(mp_snapshot_t h, mp_counter_t done)
{
    snapshot *s = checked(h, "mp_snapshot_sync");
    if (!s)
        return MP_FAIL;
    if (!done || s->frozen) {
        mpr_misuse(MP_ERR_BAD_STATE, "snapshot %u: sync %s", h,
                   done ? "while frozen" : "without a counter");
        return MP_FAIL;
    }
    step_args a = {h, done, NULL, mp_access_current()};
    sync_start(&a);
    return MP_WAIT;
}
