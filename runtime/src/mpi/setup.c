/*
 * mpi/setup.c -- the MPI backend's start-up and shut-down: MPI itself, the runtime's
 * communicators, the run's state and the receives that wait posted (see machine.c).
 */
#define _GNU_SOURCE
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

static void at_exit(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin)
        return;
    if (mpr_mpi.in_run) {
        /* a fatal error inside a run: the other ranks cannot finish without this one */
        MPI_Abort(MPI_COMM_WORLD, 3);
    } else if (mpr_mpi.we_initialized) {
        if (mpr_mpi.comm != MPI_COMM_NULL) {
            MPI_Comm_free(&mpr_mpi.comm);
            MPI_Comm_free(&mpr_mpi.comm_large);
        }
        MPI_Finalize();
    }
}

/* Open MPI sends a message eagerly over shared memory only below 4 KiB including its header,
 * so a full 4 KiB aggregation buffer went by the rendezvous protocol (a handshake and a
 * cross-process copy per buffer): a third of the rate of eager sends.  When the runtime
 * starts MPI itself it raises that limit to hold an aggregation buffer (MPROF_AGG_BYTES) with
 * room for headers, unless the launch set it (mpirun --mca, -x, or the environment). */
static void raise_eager_limit(void)
{
#ifdef OPEN_MPI
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
    const char *name = "OMPI_MCA_btl_sm_eager_limit";
#else
    const char *name = "OMPI_MCA_btl_vader_eager_limit";
#endif
    /* quiet: mp_config_init warns about a bad value */
    long bytes = (long)mpr_env_number("MPROF_AGG_BYTES", 4096, 0, 1024.0 * 1024 * 1024, 1, 1);
    if (bytes <= 0)
        bytes = 4096;
    long limit = (bytes + 512 + 4095) / 4096 * 4096; /* above this, rendezvous is cheap anyway */
    limit = limit < 8192 ? 8192 : limit > 32768 ? 32768 : limit;
    char value[32];
    snprintf(value, sizeof value, "%ld", limit);
    setenv(name, value, 0);
#endif
}

int mpr_mpi_init(int *npes, int *first, int *count)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        /* MPI_THREAD_SINGLE: one thread per process, the PE's, makes every MPI call of the
         * runtime.  Any higher level turns on Open MPI's internal locking (about a quarter
         * of the small-message rate here); a program that calls MPI from threads of its own
         * initialises MPI itself, at the level it needs, and the runtime keeps it. */
        int provided;
        raise_eager_limit();
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "mprof: error: MPI_Init failed\n");
            return -1;
        }
        mpr_mpi.we_initialized = true;
        atexit(at_exit);
    } else if (mpr_mpi.comm == MPI_COMM_NULL) {
        atexit(at_exit); /* the program's MPI: we only abort on a fatal error inside a run */
    }
    if (mpr_mpi.comm == MPI_COMM_NULL) {
        /* our own communicator: the program's messages never mix with the runtime's */
        MPI_Comm_dup(MPI_COMM_WORLD, &mpr_mpi.comm);
        MPI_Comm_set_errhandler(mpr_mpi.comm, MPI_ERRORS_RETURN);
        /* the bytes of large messages: kept apart from the posted receives' any-tag matching */
        MPI_Comm_dup(mpr_mpi.comm, &mpr_mpi.comm_large);
        MPI_Comm_set_errhandler(mpr_mpi.comm_large, MPI_ERRORS_RETURN);
    }
    MPI_Comm_rank(mpr_mpi.comm, &mpr_mpi.rank);
    MPI_Comm_size(mpr_mpi.comm, &mpr_mpi.size);
    if (mpr_mpi.size > 4096) {
        fprintf(stderr, "mprof: error: %d MPI ranks, at most 4096 PEs\n", mpr_mpi.size);
        return -1;
    }
    *npes = mpr_mpi.size;
    *first = mpr_mpi.rank;
    *count = 1;
    mpr_mpi.in_run = true;
    return 0;
}

mpr_msgbuf *mpr_mpi_rbuf_get(void)
{
    mpr_msgbuf *b = mpr_mpi.rfree;
    if (b) {
        mpr_mpi.rfree = b->next;
        return b;
    }
    if (!(b = malloc(sizeof *b + mpr_mpi.post_cap + sizeof(MPI_Request))))
        mpr_fatal("out of memory");
    b->cap = mpr_mpi.post_cap;
    b->kind = MPR_BUF_POOLED;
    mpr_mpi_check(MPI_Recv_init(b->data, (int)mpr_mpi.post_cap, MPI_BYTE, MPI_ANY_SOURCE,
                                MPI_ANY_TAG, mpr_mpi.comm, mpr_mpi_rbuf_req(b)),
                  "MPI_Recv_init");
    return b;
}

/* back to the free list, its receive inactive (or freed, for a large message's buffer) */
void mpr_mpi_rbuf_put(mpr_msgbuf *b)
{
    if (b->kind == MPR_BUF_OWNED) {
        free(b);
    } else {
        b->next = mpr_mpi.rfree;
        mpr_mpi.rfree = b;
    }
}

static void rbuf_free_list(mpr_msgbuf *b)
{
    while (b) {
        mpr_msgbuf *n = b->next;
        if (b->kind != MPR_BUF_OWNED)
            MPI_Request_free(mpr_mpi_rbuf_req(b));
        free(b);
        b = n;
    }
}

void mpr_mpi_run_state_init(mpr_pe *pe)
{
    mpr_mpi.pe = pe;
    mpr_mpi.window = (int)mpr_env_number("MPROF_MPI_WINDOW", 64, 2, 1 << 16, 1, 0);
    mpr_mpi.batch = mpr_mpi.window / 2;
    mpr_mpi.credits = malloc((size_t)mpr_mpi.size * sizeof *mpr_mpi.credits);
    mpr_mpi.owed = calloc((size_t)mpr_mpi.size, sizeof *mpr_mpi.owed);
    mpr_mpi.backlog = calloc((size_t)mpr_mpi.size, sizeof *mpr_mpi.backlog);
    if (!mpr_mpi.credits || !mpr_mpi.owed || !mpr_mpi.backlog)
        mpr_fatal("out of memory");
    for (int i = 0; i < mpr_mpi.size; i++)
        mpr_mpi.credits[i] = mpr_mpi.window;
    mpr_mpi.backlog_n = 0;
    mpr_mpi_notice_init();
    mpr_mpi.sent = mpr_mpi.recvd = 0;
    mpr_mpi.idle = false;
    mpr_mpi.backoff = BACKOFF_MIN_S;
    mpr_mpi.wave_on = false;
    mpr_mpi.have_prev = false;
    mpr_mpi.waves = 0;
    mpr_mpi.ready.head = mpr_mpi.ready.tail = NULL;
    mpr_mpi.ready_n = 0;
    /* Receives wait posted, so that an arriving message lands in its buffer without a probe,
     * enough for a window from one sender and its credits; more arrivals wait in MPI. */
    size_t cap = mpr_g.cfg.agg_bytes;
    cap = cap < POST_MIN ? POST_MIN : cap > POST_MAX ? POST_MAX : cap;
    mpr_mpi.post_cap = (cap + 15) & ~(size_t)15; /* the request after the data stays aligned */
    mpr_mpi.npost = mpr_mpi.size < 2       ? 0
                    : mpr_mpi.window < 200 ? mpr_mpi.window + mpr_mpi.window / 4
                                           : 256;
    mpr_mpi.post_head = 0;
    mpr_mpi.large_on = false;
    mpr_mpi.post = malloc((size_t)(mpr_mpi.npost + 1) * sizeof *mpr_mpi.post);
    if (!mpr_mpi.post)
        mpr_fatal("out of memory");
    for (int i = 0; i < mpr_mpi.npost; i++) {
        mpr_mpi.post[i] = mpr_mpi_rbuf_get();
        mpr_mpi_post(mpr_mpi.post[i]);
    }
}

/* The PE has finished: its posted receives are withdrawn.  This happens before the next
 * collective (mp_main's agreement on the status), so no rank can be sending messages of a
 * next run yet, and at quiescence no message of this one is in flight: nothing matched them.
 * (Withdrawing them later, in fini, raced with a fast rank's next run, whose first messages
 * could match a receive about to be cancelled and be lost.) */
void mpr_mpi_withdraw_receives(void)
{
    for (int i = 0; i < mpr_mpi.npost; i++) {
        MPI_Cancel(mpr_mpi_rbuf_req(mpr_mpi.post[i]));
        MPI_Wait(mpr_mpi_rbuf_req(mpr_mpi.post[i]), MPI_STATUS_IGNORE);
        mpr_mpi.post[i]->next = mpr_mpi.rfree;
        mpr_mpi.rfree = mpr_mpi.post[i];
    }
    if (mpr_mpi.large_on) {
        MPI_Cancel(&mpr_mpi.large.req);
        MPI_Wait(&mpr_mpi.large.req, MPI_STATUS_IGNORE);
        free(mpr_mpi.large.buf);
        mpr_mpi.large_on = false;
    }
    free(mpr_mpi.post);
    mpr_mpi.post = NULL;
    mpr_mpi.npost = mpr_mpi.post_head = 0;
    rbuf_free_list(mpr_mpi.rfree);
    mpr_mpi.rfree = NULL;
}

void mpr_mpi_fini(void)
{
    /* every message was received (quiescence), so the sends complete */
    for (int i = 0; i < mpr_mpi.sends.n; i++) {
        MPI_Wait(&mpr_mpi.sends.req[i], MPI_STATUS_IGNORE);
        free(mpr_mpi.sends.buf[i]); /* the PE and its pools are gone already */
    }
    mpr_mpi.sends.n = 0;
    if (mpr_mpi.wave_on) { /* cannot happen after quiescence; keep the communicator clean anyway */
        MPI_Wait(&mpr_mpi.wave, MPI_STATUS_IGNORE);
        mpr_mpi.wave_on = false;
    }
    mpr_mpi_withdraw_receives();        /* normally done at the end of the run already */
    rbuf_free_list(mpr_mpi.ready.head); /* only after an abnormal end (hang) */
    mpr_mpi.ready.head = mpr_mpi.ready.tail = NULL;
    for (int i = 0; i < mpr_mpi.size; i++)
        mpr_msgbuf_free_list(mpr_mpi.backlog[i].head);
    mpr_mpi_notice_fini();
    free(mpr_mpi.credits);
    free(mpr_mpi.owed);
    free(mpr_mpi.backlog);
    mpr_mpi.credits = mpr_mpi.owed = NULL;
    mpr_mpi.backlog = NULL;
    mpr_mpi.pe = NULL;
    mpr_mpi.in_run = false;
}
