/*
 * snapshot.c -- the snapshot data structure (Wen 1995, section 3.4.2).
 *
 * Each PE's partition counts the mutators that executed on it (`started`) and the completions
 * reported on it (`completed`), whichever PE executed their mutators: a completion is a local
 * add where it happens, not a message to the executing PE.  The sum over the PEs of
 * started - completed is then the number of mutators in progress, and a freeze waits for it to
 * reach zero by rounds of a global sum reduction on the snapshot object:
 *   - freezing, every PE stops admitting mutators and contributes its difference to the first
 *     round, which thus also serves as the barrier after which no PE executes a mutator (every
 *     PE's `started` is final by the time it contributes);
 *   - a PE's `completed` only grows, and no completion is counted without its execution, so a
 *     round's sum is at least the number of mutators still in progress, and a sum of zero means
 *     every one has completed; every PE gets the same sum, so all end the freeze in the same
 *     round;
 *   - otherwise each PE contributes to the next round from a FIFO fiber, which runs behind what
 *     its queue holds (the arrived mutators among it): rounds follow the PEs' progress through
 *     their work rather than spinning at message latency;
 *   - a round whose sum is that of the round before saw no completion between them (`started`
 *     is fixed while frozen): the rounds stall, and the next starts only on progress, a
 *     completion on some PE.  That PE tells the others (a wake naming the round), and a PE
 *     that counted a completion after its last contribution starts it itself.  So a mutator
 *     that never completes leaves the machine quiescent, with each PE's freeze waiting on its
 *     `progress` counter, which the hang report lists, rather than circling in rounds; and a
 *     record that sits in an aggregation buffer for a while costs a pause, not a hang.
 * So a freeze whose mutators have all completed takes one global operation, as the barrier did
 * before, and a mutator costs a count where it executes and one where it completes: where every
 * remote completion was a message back, Tripuzzle sent one per remote insert, half of its
 * remote operations.  Sync is freeze and unfreeze: the round that finds the sum zero already
 * tells every PE that all mutators have completed, so it needs no barrier after the freeze.
 * More completions than executions would let a freeze end while a mutator runs: a completion
 * on the executing PE is checked at once, and a round whose sum is negative ends the run.
 * Suspended mutators wait on the `thaw` counter, which unfreeze increments.  The fibers of a
 * freeze or sync declare the access category of the code that started it, so the idle time they
 * wait through is charged to that access (not to "unclassified").
 */
#include "mpr.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    mp_obj_t id;
    bool frozen;
    uint64_t started;       /* mutators executed on this PE */
    uint64_t completed;     /* completions reported on this PE, of any PE's mutators */
    uint64_t own_completed; /* those of mutators executed here (the misuse check) */
    mpr_counter *thaw;
    mpr_counter *phase; /* internal: the rounds of freeze and sync */
    uint64_t phase_target;
    double in_progress; /* the last round's sum: mutators that may still be in progress */
    /* The rounds of the freeze in progress (see the top of the file). */
    double last_sum;             /* the round before's sum; -1 at a freeze's first round */
    uint64_t completed_at_round; /* `completed` when this PE contributed to the last round */
    bool stalled;                /* waiting for progress after round `phase_target` */
    uint64_t woken_round;        /* the latest round another PE reported progress after */
    mpr_counter *progress;       /* a stalled freeze's next round waits on it */
    uint64_t progress_target;
} snapshot;

typedef struct {
    mp_obj_t id;
    mpr_counter *done;
    bool sync;  /* a sync: unfreezes when the mutators have completed */
    int access; /* the category of the code that started the freeze or sync */
} step_args;

/* mp_obj_destroy of a snapshot (quiescent: no fiber waits on its counters). */
static void snapshot_free(void *p)
{
    snapshot *s = p;
    mp_counter_free(s->thaw);
    mp_counter_free(s->phase);
    mp_counter_free(s->progress);
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
    s->thaw = mp_counter_new(0);
    s->phase = mp_counter_new(0);
    s->progress = mp_counter_new(0);
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

typedef struct {
    mp_obj_t id;
    uint64_t round;
} wake_args;

/* Another PE counted a completion after round `round` found no progress. */
static void wake_arrive(void *p)
{
    const wake_args *w = p;
    /* the completing fiber's category, as the enabler of the freeze's next round (latency) */
    mp_access_declare(mpr_cur_enabler(mpr_pe_self()));
    char why[160];
    snapshot *s = find(w->id, why, sizeof why);
    if (!s) /* destroyed since: the freeze it was sent in has ended on every PE */
        return;
    if (w->round > s->woken_round)
        s->woken_round = w->round; /* for a PE that has not seen the round's sum yet */
    if (s->stalled && s->phase_target == w->round) {
        s->stalled = false;
        mp_counter_add(s->progress, 1);
    }
}

/* This PE made progress while the rounds stall: the next round starts, here at once and on
 * the others when the wake arrives. */
static void progress(snapshot *s)
{
    mpr_pe *pe = mpr_pe_self();
    wake_args w = {s->id, s->phase_target};
    for (int k = 1; k < pe->npes; k++)
        mpr_send_record(pe, (pe->id + k) % pe->npes, wake_arrive, &w, sizeof w, MP_SCHED_URGENT,
                        NULL, 0, NULL);
    if (s->stalled) {
        s->stalled = false;
        mp_counter_add(s->progress, 1);
    }
}

void mp_snapshot_complete(mp_snapshot_t h, int executing_pe)
{
    snapshot *s = local(h, "mp_snapshot_complete");
    mpr_pe *pe = mpr_pe_self();
    if (executing_pe < 0 || executing_pe >= pe->npes) /* a completion of no mutator */
        mpr_fatal("mp_snapshot_complete: snapshot %u: executing PE %d is not a PE (0..%d)", h,
                  executing_pe, pe->npes - 1);
    /* more completions than executions would let a freeze end while a mutator still runs:
     * checked here for this PE's own mutators, and by the freeze's rounds for all */
    if (executing_pe == pe->id && s->own_completed++ >= s->started)
        mpr_fatal("mp_snapshot_complete: snapshot %u: more mutators completed than executed on "
                  "PE %d (%" PRIu64 "): each mp_snapshot_execute is followed by one completion",
                  h, pe->id, s->started);
    s->completed++;
    if (MPR_UNLIKELY(s->stalled))
        progress(s);
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

static void round_done(void *p);

/* This PE's contribution to a round of the freeze (see the top of the file); round_done runs
 * when every PE's is in. */
static void round_start(snapshot *s, step_args a)
{
    s->phase_target++;
    mp_fiber_t f = mp_fiber_create(round_done, &a, sizeof a, MP_SCHED_URGENT);
    mp_counter_wait(s->phase, s->phase_target, f);
    s->completed_at_round = s->completed;
    double diff = (double)(int64_t)(s->started - s->completed); /* exact below 2^53 */
    mp_obj_reduce(s->id, MP_REDUCE_SUM, diff, &s->in_progress, s->phase);
}

/* The next round, behind the fibers this PE has queued meanwhile. */
static void round_again(void *p)
{
    step_args *a = p;
    mp_access_declare(a->access);
    round_start(local(a->id, "mp_snapshot_freeze"), *a);
}

/* round_again for a stalled freeze, under the name the hang report gives a freeze that waits
 * for a mutator that never completes: not static, so that the dynamic symbol table has it. */
void mpr_snapshot_waits_for_mutators(void *p);
void mpr_snapshot_waits_for_mutators(void *p) { round_again(p); }

static void round_done(void *p)
{
    step_args *a = p;
    mp_access_declare(a->access);
    snapshot *s = local(a->id, "mp_snapshot_freeze");
    if (s->in_progress < 0)
        mpr_fatal("snapshot %u: more mutators completed than executed (%.0f more over all PEs): "
                  "each mp_snapshot_execute is followed by one completion",
                  a->id, -s->in_progress);
    if (s->in_progress > 0) {
        bool same = s->in_progress == s->last_sum;
        bool counted = s->completed != s->completed_at_round; /* since this PE's contribution */
        s->last_sum = s->in_progress;
        if (same && counted)
            progress(s); /* the others wait to hear of it */
        if (!same || counted || s->woken_round == s->phase_target) {
            mp_spawn(round_again, a, sizeof *a, MP_SCHED_FIFO);
            return;
        }
        s->stalled = true; /* nothing completed between two rounds: wait for progress */
        mp_fiber_t f =
            mp_fiber_create(mpr_snapshot_waits_for_mutators, a, sizeof *a, MP_SCHED_FIFO);
        mp_counter_wait(s->progress, ++s->progress_target, f);
        return;
    }
    if (a->sync)
        mp_snapshot_unfreeze(a->id);
    mp_counter_add(a->done, 1);
}

/* Freeze and sync: stop admitting mutators, then the first round. */
static mp_status freeze_start(snapshot *s, step_args a)
{
    s->frozen = true;
    s->last_sum = -1;
    round_start(s, a);
    return MP_WAIT;
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
    if (mpr_counter_check(mpr_pe_self(), done) != MP_SUCCESS) /* freed, or another PE's */
        return MP_FAIL;
    return freeze_start(s, (step_args){h, done, false, mp_access_current()});
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

mp_status mp_snapshot_sync(mp_snapshot_t h, mp_counter_t done)
{
    snapshot *s = checked(h, "mp_snapshot_sync");
    if (!s)
        return MP_FAIL;
    if (!done || s->frozen) {
        mpr_misuse(done ? MP_ERR_BAD_STATE : MP_ERR_INVALID_ARG, "snapshot %u: sync %s", h,
                   done ? "while frozen" : "without a counter");
        return MP_FAIL;
    }
    if (mpr_counter_check(mpr_pe_self(), done) != MP_SUCCESS) /* freed, or another PE's */
        return MP_FAIL;
    return freeze_start(s, (step_args){h, done, true, mp_access_current()});
}
