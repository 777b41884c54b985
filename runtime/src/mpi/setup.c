/*
 * mpi/setup.c -- the MPI backend's start-up and shut-down: MPI itself, the runtime's
 * communicators, what the ranks agree on when a run starts and when the program ends, the
 * run's state and the receives that wait posted (see machine.c).
 */
#define _GNU_SOURCE
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What the ranks agree on (agree below) when a run starts and when the program ends, each an
 * MPI_MAX over the ranks' entries. */
enum {
    A_STARTER, /* P - rank of a rank starting a run (0: none): the lowest such rank */
    A_LEAVER,  /* P - rank of a rank ending the program instead (0: none) */
    A_POST_CAP,
    A_WINDOW_MAX,
    A_WINDOW_NEG, /* -MPROF_MPI_WINDOW: the smallest window */
    A_PROFILE,    /* rank 0 writes a run profile (MPROF_OUT): the others take part */
    A_TRACE,      /* MPROF_TRACE is set here */
    A_TRACE_NEG,  /* -(MPROF_TRACE is set here): 0 where some rank has it not */
    A_N
};

/* One collective over the ranks' entries.  While it waits (the other ranks have not reached
 * mp_main yet, or have gone), the rank says so once after MPROF_IDLE_TIMEOUT seconds: a
 * blocking MPI_Allreduce waited there for ever without a word. */
static void agree(int64_t mine[A_N], int64_t all[A_N], double timeout_s)
{
    MPI_Request req;
    mpr_mpi_check(MPI_Iallreduce(mine, all, A_N, MPI_INT64_T, MPI_MAX, mpr_mpi.comm, &req),
                  "MPI_Iallreduce");
    double t0 = mp_wtime(), sleep_s = BACKOFF_MIN_S;
    bool told = false;
    for (;;) {
        int flag = 0;
        mpr_mpi_check(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        if (flag)
            return;
        if (!told && timeout_s > 0 && mp_wtime() - t0 > timeout_s) {
            told = true;
            fprintf(stderr,
                    "mprof: note: rank %d of %d has waited %g s (MPROF_IDLE_TIMEOUT) for the "
                    "other ranks to %s; a rank that ended without calling mp_main as often as "
                    "this one, or that finalized MPI itself, keeps it waiting for ever\n",
                    mpr_mpi.rank, mpr_mpi.size, timeout_s,
                    mine[A_LEAVER] ? "end the program" : "start this run of mp_main");
        }
        struct timespec ts = {0, (long)(sleep_s * 1e9)};
        nanosleep(&ts, NULL);
        if (sleep_s < BACKOFF_MAX_S)
            sleep_s *= 2;
    }
}

static void at_exit(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin)
        return;
    if (mpr_mpi.in_run) {
        /* a fatal error inside a run, or exit() called in it: the other ranks cannot finish
         * without this one (without a word here the job only said that MPI_Abort was called) */
        fprintf(stderr,
                "mprof: error: rank %d of %d exits inside mp_main (a fatal error, or exit() "
                "called in the program); aborting the MPI job, whose other ranks cannot end "
                "the run without it\n",
                mpr_mpi.rank, mpr_mpi.size);
        MPI_Abort(MPI_COMM_WORLD, 3);
    } else if (mpr_mpi.we_initialized) {
        if (mpr_mpi.comm != MPI_COMM_NULL) {
            /* A rank still to start a run (its program calls mp_main more often) waits in
             * that run's agreement: this one matches it and tells it that the program ended
             * here, instead of leaving it waiting for ever. */
            if (!mpr_mpi.disagreed) {
                int64_t mine[A_N] = {0}, all[A_N];
                mine[A_LEAVER] = mpr_mpi.size - mpr_mpi.rank;
                agree(mine, all, 0);
                if (all[A_STARTER])
                    fprintf(stderr,
                            "mprof: error: rank %d of %d ends the program while rank %d starts "
                            "another run of mp_main: every rank must call mp_main as often\n",
                            mpr_mpi.rank, mpr_mpi.size, mpr_mpi.size - (int)all[A_STARTER]);
            }
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
    b->carved = 0;
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

/* The settings the ranks' transports must share, agreed when a run starts: MPROF_AGG_BYTES
 * sizes the posted receives, and a sender classes a message by its own receive size (a rank
 * with larger buffers sent messages that overflowed its peer's receives, and MPI crashed in
 * MPI_Test); a sender with a smaller MPROF_MPI_WINDOW than half its receiver's waited for
 * credits the receiver never owed.  And who takes part in the run profile: rank 0 writes it
 * (MPROF_OUT there), every rank must take part in gathering it, whatever its own MPROF_OUT
 * (forwarded to the ranks of other hosts only with mpirun -x), and whether every rank traces
 * (the trace's set-up is collective: MPROF_TRACE on some ranks only left them waiting for the
 * others for ever).  Returns -1, with a message, when another rank ended the program instead
 * of starting this run. */
static int agree_on_run(int *window, size_t *post_cap)
{
    int64_t mine[A_N] = {0}, all[A_N];
    const char *trace = getenv("MPROF_TRACE");
    mine[A_TRACE] = trace && *trace;
    mine[A_TRACE_NEG] = -mine[A_TRACE];
    mine[A_STARTER] = mpr_mpi.size - mpr_mpi.rank;
    mine[A_POST_CAP] = (int64_t)*post_cap;
    mine[A_WINDOW_MAX] = *window;
    mine[A_WINDOW_NEG] = -*window;
    mine[A_PROFILE] = mpr_mpi.rank == 0 && mpr_g.cfg.profile_path;
    agree(mine, all, mpr_g.cfg.idle_timeout_s);
    if (all[A_LEAVER]) {
        fprintf(stderr,
                "mprof: error: rank %d of %d starts another run of mp_main, but rank %d ended "
                "the program instead: every rank must call mp_main as often\n",
                mpr_mpi.rank, mpr_mpi.size, mpr_mpi.size - (int)all[A_LEAVER]);
        mpr_mpi.disagreed = true; /* the other rank's exit has been matched: none at ours */
        return -1;
    }
    *post_cap = (size_t)all[A_POST_CAP];
    *window = (int)-all[A_WINDOW_NEG];
    mpr_g.trace_partial = all[A_TRACE] && !-all[A_TRACE_NEG];
    if (all[A_WINDOW_MAX] != *window && mpr_mpi.rank == 0)
        fprintf(stderr,
                "mprof: warning: MPROF_MPI_WINDOW differs between the ranks (%d to %lld); "
                "every rank uses %d\n",
                *window, (long long)all[A_WINDOW_MAX], *window);
    if (all[A_PROFILE] && !mpr_g.cfg.profile_path) {
        mpr_g.cfg.profile_path = "(rank 0's MPROF_OUT)"; /* takes part, writes nothing */
    } else if (!all[A_PROFILE] && mpr_g.cfg.profile_path) {
        fprintf(stderr,
                "mprof: error: rank %d of %d: MPROF_OUT=%s is set here but not on rank 0, "
                "which writes the run profile: no run profile is written (pass it to every "
                "rank, with mpirun -x MPROF_OUT across hosts)\n",
                mpr_mpi.rank, mpr_mpi.size, mpr_g.cfg.profile_path);
        mpr_g.cfg.profile_path = NULL;
    }
    return 0;
}

/* The machine table's agree: before the observers start (a trace's set-up is collective). */
int mpr_mpi_agree(void)
{
    int window = (int)mpr_env_number("MPROF_MPI_WINDOW", 64, 2, 1 << 16, 1, 0);
    size_t cap = mpr_g.cfg.agg_bytes;
    cap = cap < POST_MIN ? POST_MIN : cap > POST_MAX ? POST_MAX : cap;
    cap = (cap + 15) & ~(size_t)15; /* the request after the data stays aligned */
    if (agree_on_run(&window, &cap) != 0) {
        mpr_mpi.in_run = false; /* no run: at exit only MPI_Finalize */
        return -1;
    }
    mpr_mpi.window = window;
    mpr_mpi.post_cap = cap;
    return 0;
}

void mpr_mpi_run_state_init(mpr_pe *pe)
{
    mpr_mpi.pe = pe;
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
