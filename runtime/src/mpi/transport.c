/*
 * mpi/transport.c -- the MPI backend's point-to-point traffic: sends and their completion,
 * receives in posting order, large messages, and the credits of flow control (see machine.c).
 */
#define _GNU_SOURCE
#include "mpi_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void isend_bytes(int dst, mpr_msgbuf *b, const void *data, size_t len, int tag,
                        MPI_Comm comm)
{
    if (mpr_mpi.sends.n == mpr_mpi.sends.cap) {
        mpr_mpi.sends.cap = mpr_mpi.sends.cap ? 2 * mpr_mpi.sends.cap : 256;
        mpr_mpi.sends.req =
            realloc(mpr_mpi.sends.req, (size_t)mpr_mpi.sends.cap * sizeof *mpr_mpi.sends.req);
        mpr_mpi.sends.buf =
            realloc(mpr_mpi.sends.buf, (size_t)mpr_mpi.sends.cap * sizeof *mpr_mpi.sends.buf);
        if (!mpr_mpi.sends.req || !mpr_mpi.sends.buf)
            mpr_fatal("out of memory");
    }
    mpr_mpi_check(
        MPI_Isend(data, (int)len, MPI_BYTE, dst, tag, comm, &mpr_mpi.sends.req[mpr_mpi.sends.n]),
        "MPI_Isend");
    mpr_mpi.sends.buf[mpr_mpi.sends.n++] = b;
    mpr_mpi.sent++;
}

/* A small message of the machine layer itself (credits, large-message announcements, idle
 * notices). */
void mpr_mpi_send_control(int dst, int tag, const void *data, size_t len)
{
    mpr_msgbuf *b = malloc(sizeof *b + len);
    if (!b)
        mpr_fatal("out of memory");
    b->kind = MPR_BUF_OWNED;
    b->carved = 0;
    b->cap = b->len = len;
    memcpy(b->data, data, len);
    isend_bytes(dst, b, b->data, len, tag, mpr_mpi.comm);
}

/* A message of comm.c: one MPI message when a posted receive holds it, else an announcement
 * and the bytes on comm_large (both in order per sender, so they pair up). */
void mpr_mpi_isend(int dst, mpr_msgbuf *b)
{
    if (MPR_LIKELY(b->len <= mpr_mpi.post_cap)) {
        isend_bytes(dst, b, b->data, b->len, TAG_MSG, mpr_mpi.comm);
        return;
    }
    if (b->len > (size_t)INT32_MAX)
        mpr_fatal("a message of %zu bytes is too large for MPI", b->len);
    uint64_t n = b->len;
    mpr_mpi_send_control(dst, TAG_LARGE, &n, sizeof n);
    isend_bytes(dst, b, b->data, b->len, 0, mpr_mpi.comm_large);
}

void mpr_mpi_send_credit(mpr_pe *pe, int dst)
{
    int32_t n = mpr_mpi.owed[dst];
    mpr_mpi.owed[dst] = 0;
    RTS_INC(&pe->rts, FlowMsgSent, 1);
    mpr_mpi_send_control(dst, TAG_CREDIT, &n, sizeof n);
}

static void drain_backlog(int dst)
{
    fifo *q = &mpr_mpi.backlog[dst];
    while (q->head && mpr_mpi.credits[dst] > 0) {
        mpr_msgbuf *b = mpr_mpi_fifo_pop(q);
        mpr_mpi.credits[dst]--;
        mpr_mpi.backlog_n--;
        mpr_mpi_isend(dst, b);
    }
}

static void recycle_sent(mpr_pe *pe, mpr_msgbuf *b)
{
    if (b->kind == MPR_BUF_POOLED) {
        /* back to the sender's pool (comm.c reclaims from `returned`) */
        mpr_msgbuf *head = atomic_load_explicit(&pe->returned, memory_order_relaxed);
        b->next = head;
        atomic_store_explicit(&pe->returned, b, memory_order_relaxed);
    } else {
        mpr_msgbuf_free(b);
    }
}

/* Completed sends give their buffers back.  Small sends complete at once (MPI copies them out
 * eagerly), so one MPI_Testall usually settles all of them; otherwise the completed ones are
 * found from the front, oldest first (sends complete roughly in the order they were posted,
 * so this stops at the first one still under way instead of scanning them all). */
void mpr_mpi_test_sends(mpr_pe *pe)
{
    int n = mpr_mpi.sends.n, k = 0, flag = 0;
    if (!n)
        return;
    mpr_mpi_check(MPI_Testall(n, mpr_mpi.sends.req, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (flag) {
        k = n;
    } else {
        for (; k < n; k++) {
            mpr_mpi_check(MPI_Test(&mpr_mpi.sends.req[k], &flag, MPI_STATUS_IGNORE), "MPI_Test");
            if (!flag)
                break;
        }
    }
    for (int i = 0; i < k; i++)
        recycle_sent(pe, mpr_mpi.sends.buf[i]);
    if (k < n) {
        memmove(mpr_mpi.sends.req, mpr_mpi.sends.req + k,
                (size_t)(n - k) * sizeof *mpr_mpi.sends.req);
        memmove(mpr_mpi.sends.buf, mpr_mpi.sends.buf + k,
                (size_t)(n - k) * sizeof *mpr_mpi.sends.buf);
    }
    mpr_mpi.sends.n = n - k;
}

static inline size_t received_bytes(MPI_Status *st)
{
#ifdef OPEN_MPI
    return st->_ucount; /* what MPI_Get_count reads, without a library call per message */
#else
    int count = 0;
    MPI_Get_count(st, MPI_BYTE, &count);
    return (size_t)count;
#endif
}

/* Completes receives in posting order, which is the order they matched messages: each
 * sender's messages are handed on in the order they were sent.  A large message's bytes are
 * received where its announcement was, before anything posted after it.  Stops once `max`
 * messages wait for the PE: a take hands over a few at a time (TAKE_MAX), so the first
 * fibers run, and answer, while later messages are still arriving.  Draining everything that
 * arrived first (a whole window) delayed the answers by as much and halved the unaggregated
 * rate in a windowed stream. */
void mpr_mpi_recv_progress(int max)
{
    while (mpr_mpi.ready_n < max) {
        int flag = 0;
        MPI_Status st;
        if (MPR_UNLIKELY(mpr_mpi.large_on)) {
            mpr_mpi_check(MPI_Test(&mpr_mpi.large.req, &flag, &st), "MPI_Test");
            if (!flag)
                return;
            mpr_mpi.large_on = false;
            mpr_mpi.recvd++;
            mpr_msgbuf *b = mpr_mpi.large.buf;
            b->src = st.MPI_SOURCE;
            b->dst = mpr_mpi.rank;
            mpr_mpi_fifo_push(&mpr_mpi.ready, b);
            mpr_mpi.ready_n++;
        }
        if (!mpr_mpi.npost)
            return;
        mpr_msgbuf *b = mpr_mpi.post[mpr_mpi.post_head];
        mpr_mpi_check(MPI_Test(mpr_mpi_rbuf_req(b), &flag, &st), "MPI_Test");
        if (!flag)
            return;
        mpr_mpi.recvd++;
        if (MPR_LIKELY(st.MPI_TAG == TAG_MSG)) {
            mpr_mpi_partner(st.MPI_SOURCE);
            b->len = received_bytes(&st);
            b->src = st.MPI_SOURCE;
            b->dst = mpr_mpi.rank;
            mpr_mpi_fifo_push(&mpr_mpi.ready, b);
            mpr_mpi.ready_n++;
            mpr_mpi.post[mpr_mpi.post_head] = b = mpr_mpi_rbuf_get();
        } else if (st.MPI_TAG == TAG_CREDIT) {
            int32_t n;
            memcpy(&n, b->data, sizeof n);
            mpr_mpi.credits[st.MPI_SOURCE] += n;
            drain_backlog(st.MPI_SOURCE);
        } else if (st.MPI_TAG == TAG_IDLE) {
            memcpy(&mpr_mpi.peer_epoch[st.MPI_SOURCE], b->data, sizeof(uint32_t));
        } else { /* TAG_LARGE */
            mpr_mpi_partner(st.MPI_SOURCE);
            uint64_t n;
            memcpy(&n, b->data, sizeof n);
            mpr_msgbuf *big = malloc(sizeof *big + n);
            if (!big)
                mpr_fatal("out of memory receiving a %llu-byte message", (unsigned long long)n);
            big->kind = MPR_BUF_OWNED;
            big->carved = 0;
            big->cap = big->len = (size_t)n;
            mpr_mpi.large.buf = big;
            mpr_mpi_check(MPI_Irecv(big->data, (int)n, MPI_BYTE, st.MPI_SOURCE, 0,
                                    mpr_mpi.comm_large, &mpr_mpi.large.req),
                          "MPI_Irecv");
            mpr_mpi.large_on = true;
        }
        mpr_mpi_post(b);
        mpr_mpi.post_head = mpr_mpi.post_head + 1 == mpr_mpi.npost ? 0 : mpr_mpi.post_head + 1;
    }
}

/* An active PE moves messages only; waves are for idle PEs (a pending wave makes every MPI
 * call progress the collective too). */
void mpr_mpi_progress(mpr_pe *pe)
{
    mpr_mpi_test_sends(pe);
    mpr_mpi_recv_progress(TAKE_MAX);
}
