/*
 * bulk.c -- bulk read, write and store (Wen 1995, section 3.3.2), built on records with a
 * payload.  Local transfers complete at once (MP_OK) and count as local communication.
 */
#include "mpr.h"

#include <string.h>

typedef struct {
    const void *src;
    void *dst;
    size_t n;
    mpr_counter *done;
    int requester;
} read_req;

typedef struct {
    mpr_counter *done;
    int writer;
} write_ack;

/* On the data's owner: ship the bytes back and bump the requester's counter. */
static void serve_read(void *p)
{
    read_req *r = p;
    mpr_pe *pe = mpr_pe_self();
    mp_access_declare(mpr_cur_enabler(pe));
    mpr_bump_args b = {r->done, 1};
    mpr_transfer = (mpr_transfer_note){"read from", r->requester, r->src, r->n};
    mpr_send_record(pe, r->requester, mpr_counter_complete, &b, sizeof b, MP_SCHED_URGENT, r->src,
                    r->n, r->dst);
    mpr_transfer.what = NULL;
}

static void ack_write(void *p)
{
    write_ack *a = p;
    mpr_pe *pe = mpr_pe_self();
    mp_access_declare(mpr_cur_enabler(pe));
    mpr_bump_args b = {a->done, 1};
    mpr_send_record(pe, a->writer, mpr_counter_complete, &b, sizeof b, MP_SCHED_URGENT, NULL, 0,
                    NULL);
}

/* The calling PE, or NULL after reporting why the call cannot start: outside a running PE,
 * a NULL counter (`done_required`), NULL buffers for a transfer of n > 0 bytes. */
static mpr_pe *caller(const char *what, const void *dst, const void *src, size_t n,
                      bool done_required, mp_counter_t done)
{
    mpr_pe *pe = mpr_pe_self();
    if (!pe) {
        mpr_misuse(MP_ERR_BAD_STATE, "%s outside a running PE", what);
        return NULL;
    }
    if (done_required && !done) {
        mpr_misuse(MP_ERR_INVALID_ARG, "%s needs a counter (done is NULL)", what);
        return NULL;
    }
    if (n && (!dst || !src)) {
        mpr_misuse(MP_ERR_INVALID_ARG, "%s of %zu bytes with a NULL %s", what, n,
                   !src ? "source" : "destination");
        return NULL;
    }
    /* the limit holds for a PE's own memory too: a program tested on one PE must not fail
     * only when the data lies elsewhere */
    if (n > mp_max_message()) {
        mpr_misuse(MP_ERR_TOO_LARGE, "%s of %zu bytes exceeds the %zu-byte limit", what, n,
                   mp_max_message());
        return NULL;
    }
    /* a freed counter, or another PE's, would be reported only when the transfer ends */
    if (done && mpr_counter_check(pe, done) != MP_SUCCESS)
        return NULL;
    return pe;
}

static mp_status local_copy(mpr_pe *pe, void *dst, const void *src, size_t n, mpr_counter *done)
{
    memmove(dst, src, n);
    RTS_INC(&pe->rts, LocalOp, 1);
    RTS_INC(&pe->rts, ByteCopy, n);
    if (done)
        mp_counter_add(done, 1);
    return MP_OK;
}

/* A remote transfer was sent (e == MP_SUCCESS): its counter waits for the reply, and may not
 * be freed until then (mpr_counter_complete). */
static mp_status started(mpr_counter *done, mp_err e)
{
    if (e != MP_SUCCESS)
        return MP_FAIL;
    done->pending++;
    return MP_WAIT;
}

mp_status mp_bulk_read(int pe_id, const void *remote_src, void *local_dst, size_t n,
                       mp_counter_t done)
{
    mpr_pe *pe = caller("mp_bulk_read", local_dst, remote_src, n, true, done);
    if (!pe)
        return MP_FAIL;
    if (pe_id == pe->id)
        return local_copy(pe, local_dst, remote_src, n, done);
    read_req r = {remote_src, local_dst, n, done, pe->id};
    return started(
        done, mpr_send_record(pe, pe_id, serve_read, &r, sizeof r, MP_SCHED_URGENT, NULL, 0, NULL));
}

mp_status mp_bulk_write(int pe_id, void *remote_dst, const void *src, size_t n, mp_counter_t done)
{
    mpr_pe *pe = caller("mp_bulk_write", remote_dst, src, n, true, done);
    if (!pe)
        return MP_FAIL;
    if (pe_id == pe->id)
        return local_copy(pe, remote_dst, src, n, done);
    write_ack a = {done, pe->id};
    return started(done, mpr_send_record(pe, pe_id, ack_write, &a, sizeof a, MP_SCHED_URGENT, src,
                                         n, remote_dst));
}

mp_status mp_bulk_store(int pe_id, void *remote_dst, const void *src, size_t n,
                        mp_counter_t src_free, mp_fiber_fn on_arrival, const void *user,
                        size_t user_size)
{
    mpr_pe *pe = caller("mp_bulk_store", remote_dst, src, n, false, src_free);
    if (!pe)
        return MP_FAIL;
    if (!on_arrival || (user_size && !user)) {
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_bulk_store with a NULL %s",
                   !on_arrival ? "on_arrival function" : "user pointer for user bytes");
        return MP_FAIL;
    }
    unsigned char args[MP_FIBER_ARGS_MAX];
    /* compared before adding: a huge user_size must not wrap around the limit */
    if (user_size > sizeof args - sizeof(mp_store_arrival)) {
        mpr_misuse(MP_ERR_TOO_LARGE,
                   "store arrival arguments of %zu user bytes exceed the %zu-byte limit", user_size,
                   sizeof args - sizeof(mp_store_arrival));
        return MP_FAIL;
    }
    size_t args_size = sizeof(mp_store_arrival) + user_size;
    mp_store_arrival *a = (mp_store_arrival *)args;
    a->dst = remote_dst;
    a->n = n;
    a->from = pe->id;
    if (user_size)
        memcpy(a->user, user, user_size);
    /* The bytes are copied into the message before this returns, so the source is free. */
    if (mpr_send_record(pe, pe_id, on_arrival, args, args_size, MP_SCHED_FIFO, src, n, remote_dst))
        return MP_FAIL;
    if (src_free)
        mp_counter_add(src_free, 1);
    return MP_OK;
}
