/*
 * ts_worker.c -- the worker loop of the task stealer: a fiber chain that removes a task,
 * lets the application prepare it (fetch its data, split-phase), runs it and finishes it
 * with ts_done, one task per fiber so that steal requests and arrivals are served between
 * tasks.  ts_run is the plain loop; the applications plug their split-phase steps into
 * ts_run_worker.
 */
#include "ts_internal.h"

typedef struct {
    ts_t ts;
    ts_worker_ops ops;
    void *ctx;
    mp_counter_t finished, wake; /* wake: every wait of the loop, in turn */
    uint64_t target;
    int result;
    ts_hints hints;
    _Alignas(16) unsigned char task[TS_MAX_TASK];
} worker;

static void w_remove(void *args);

static void w_finish(worker *w)
{
    if (w->finished)
        mp_counter_add(w->finished, 1);
    mp_counter_free(w->wake);
    free(w);
}

static void w_run(worker *w)
{
    w->ops.run(w->ts, w->task, &w->hints, w->ctx);
    TASKSTEALER_ACCESS(REMOVE);
    ts_done(w->ts);
    mp_fiber_enable(mp_continue(w_remove, MP_SCHED_FIFO)); /* one task per fiber */
}

static void w_prepared(void *args)
{
    worker *w = *(worker **)args;
    if (w->ops.resumed)
        w->ops.resumed(w->ctx, TS_RESUME_PREPARE);
    w_run(w);
}

static void w_got(worker *w)
{
    if (w->result == TS_TERMINATED) {
        w_finish(w);
        return;
    }
    if (w->ops.prepare) {
        mp_status s = w->ops.prepare(w->ts, w->task, w->ctx, w->wake);
        if (s == MP_FAIL)
            lib_die("the worker's prepare step failed");
        if (s == MP_WAIT) {
            mp_counter_wait(w->wake, ++w->target, mp_continue(w_prepared, MP_SCHED_FIFO));
            return;
        }
    }
    w_run(w);
}

static void w_woken(void *args)
{
    worker *w = *(worker **)args;
    TASKSTEALER_ACCESS(REMOVE);
    w_got(w);
}

static void w_take(worker *w)
{
    mp_status s = ts_remove(w->ts, w->task, &w->hints, &w->result, w->wake);
    if (s == MP_FAIL)
        lib_die("ts_remove failed in the worker");
    w->target++; /* ts_remove incremented wake, or will */
    if (s == MP_WAIT) {
        mp_counter_wait(w->wake, w->target, mp_continue(w_woken, MP_SCHED_FIFO));
        return;
    }
    w_got(w);
}

static void w_resumed(void *args)
{
    worker *w = *(worker **)args;
    if (w->ops.resumed)
        w->ops.resumed(w->ctx, TS_RESUME_PAUSE);
    TASKSTEALER_ACCESS(REMOVE);
    w_take(w);
}

static void w_remove(void *args)
{
    worker *w = *(worker **)args;
    TASKSTEALER_ACCESS(REMOVE);
    if (w->ops.before_remove) {
        mp_status s = w->ops.before_remove(w->ts, w->ctx, w->wake);
        if (s == MP_FAIL)
            lib_die("the worker's before_remove step failed");
        if (s == MP_WAIT) {
            mp_counter_wait(w->wake, ++w->target, mp_continue(w_resumed, MP_SCHED_FIFO));
            return;
        }
    }
    w_take(w);
}

mp_err ts_run_worker(ts_t ts, const ts_worker_ops *ops, void *ctx, mp_counter_t finished)
{
    ts_part *p = stealer_or_null(ts, "ts_run_worker");
    if (!p || !ops || !ops->run)
        return MP_ERR_INVALID_ARG;
    worker *w = calloc(1, sizeof *w);
    if (!w)
        return MP_ERR_NO_MEMORY;
    w->ts = ts;
    w->ops = *ops;
    w->ctx = ctx;
    w->finished = finished;
    w->wake = mp_counter_new(0);
    return mp_spawn(w_remove, &w, sizeof w, MP_SCHED_FIFO);
}

mp_err ts_run(ts_t ts, ts_task_fn fn, void *ctx, mp_counter_t finished)
{
    ts_worker_ops ops = {.run = fn};
    return ts_run_worker(ts, &ops, ctx, finished);
}
