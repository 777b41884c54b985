/*
 * mpi/machine.c -- the MPI backend: one PE per rank (Open MPI), for runs across machines.
 *
 * Only non-blocking MPI is used while the PE runs (blocking calls appear only after the run,
 * outside the PEs):
 *   send   a physical message buffer goes out with MPI_Isend (tag TAG_MSG); the request and the
 *          buffer wait in `sends` until MPI_Test sees them complete (oldest first), and the
 *          buffer then goes back to the PE's pool (comm.c's `returned` list).
 *   recv   MPI_Improbe matches the next message (any source), MPI_Imrecv receives it into a
 *          buffer of the matching size class; receives complete in match order, which keeps
 *          each sender's messages in order (MPI does not overtake on one source and tag).
 *   flow   credits: a PE may have at most `window` (MPROF_MPI_WINDOW, default 64) messages to a
 *          destination that the destination has not yet processed.  The receiver returns
 *          credits in batches of window/2 (and all it owes when it goes idle) with a credit
 *          message (TAG_CREDIT); FlowMsgSent counts these credit messages.  A sender out of
 *          credits keeps the buffers in a per-destination backlog, in order, sent as credits
 *          come back: nothing blocks inside a fiber.
 *   idle   an idle PE polls (Improbe, Testsome, the termination wave) with backoff: short
 *          sleeps from 20 us doubling to 1 ms, reset when work arrives.
 *   end    distributed termination detection by waves of MPI_Iallreduce over (messages sent,
 *          messages received, active, idle-timeout votes), all counted over both tags.  A PE
 *          joins the next wave only while it is idle, so a wave completes once every PE has
 *          been idle since the previous one.  The run is quiescent when two consecutive waves
 *          report sum(sent) == sum(received) with the same totals (Mattern's four-counter
 *          method): no message was in flight and no PE active between them.  Every rank sees
 *          the same reduced values, so every rank ends the run on the same wave.
 */
#define _GNU_SOURCE
#include "../mpr.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_MSG 1
#define TAG_CREDIT 2
#define RBUF_SMALL 256
#define BACKOFF_MIN_S 20e-6
#define BACKOFF_MAX_S 1e-3

enum { W_SENT, W_RECV, W_ACTIVE, W_VOTE, W_N };

typedef struct {
    MPI_Request req;
    mpr_msgbuf *buf;
} pending_op;

typedef struct {
    pending_op *v;
    int n, cap;
} op_array;

typedef struct {
    mpr_msgbuf *head, *tail;
} fifo;

static struct {
    MPI_Comm comm;
    int rank, size;
    bool we_initialized; /* MPI_Init was ours: finalize at exit */
    bool in_run;         /* between init and fini: exiting now aborts the job */
    mpr_pe *pe;
    /* point to point */
    op_array sends;    /* outstanding MPI_Isend */
    pending_op *recvs; /* MPI_Imrecv in match order: ring */
    int r_head, r_n, r_cap;
    fifo ready; /* received, not yet taken */
    mpr_msgbuf *rfree_small, *rfree_agg;
    size_t agg_cap;
    /* flow control */
    int window, batch;
    int *credits;  /* per destination: messages we may still send */
    int *owed;     /* per source: processed messages not yet credited */
    fifo *backlog; /* per destination: waiting for credits */
    long backlog_n;
    /* termination */
    int64_t sent, recvd;
    bool idle;
    double idle_since, backoff;
    MPI_Request wave;
    bool wave_on;
    int64_t wave_in[W_N], wave_out[W_N], prev[W_N];
    bool have_prev;
    uint64_t waves;
} M = {.comm = MPI_COMM_NULL, .wave = MPI_REQUEST_NULL};

static void fifo_push(fifo *q, mpr_msgbuf *b)
{
    b->next = NULL;
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
}

static mpr_msgbuf *fifo_pop(fifo *q)
{
    mpr_msgbuf *b = q->head;
    if (b && !(q->head = b->next))
        q->tail = NULL;
    return b;
}

static void check(int err, const char *what)
{
    if (err != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, text, &len);
        mpr_fatal("MPI: %s failed: %s", what, text);
    }
}

/* ---------------------------------------------------------------------------------- */
/* Start-up and shut-down                                                               */

static void at_exit(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin)
        return;
    if (M.in_run) {
        /* a fatal error inside a run: the other ranks cannot finish without this one */
        MPI_Abort(MPI_COMM_WORLD, 3);
    } else if (M.we_initialized) {
        if (M.comm != MPI_COMM_NULL)
            MPI_Comm_free(&M.comm);
        MPI_Finalize();
    }
}

static int mpi_init(int *npes, int *first, int *count)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "mprof: error: MPI_Init failed\n");
            return -1;
        }
        M.we_initialized = true;
        atexit(at_exit);
    } else if (M.comm == MPI_COMM_NULL) {
        atexit(at_exit); /* the program's MPI: we only abort on a fatal error inside a run */
    }
    if (M.comm == MPI_COMM_NULL) {
        /* our own communicator: the program's messages never mix with the runtime's */
        MPI_Comm_dup(MPI_COMM_WORLD, &M.comm);
        MPI_Comm_set_errhandler(M.comm, MPI_ERRORS_RETURN);
    }
    MPI_Comm_rank(M.comm, &M.rank);
    MPI_Comm_size(M.comm, &M.size);
    if (M.size > 4096) {
        fprintf(stderr, "mprof: error: %d MPI ranks, at most 4096 PEs\n", M.size);
        return -1;
    }
    *npes = M.size;
    *first = M.rank;
    *count = 1;
    M.in_run = true;
    return 0;
}

static void run_state_init(mpr_pe *pe)
{
    M.pe = pe;
    M.agg_cap = mpr_g.cfg.agg_bytes;
    const char *w = getenv("MPROF_MPI_WINDOW");
    M.window = w && atoi(w) >= 2 ? atoi(w) : 64;
    M.batch = M.window / 2;
    M.credits = malloc((size_t)M.size * sizeof *M.credits);
    M.owed = calloc((size_t)M.size, sizeof *M.owed);
    M.backlog = calloc((size_t)M.size, sizeof *M.backlog);
    if (!M.credits || !M.owed || !M.backlog)
        mpr_fatal("out of memory");
    for (int i = 0; i < M.size; i++)
        M.credits[i] = M.window;
    M.backlog_n = 0;
    M.sent = M.recvd = 0;
    M.idle = false;
    M.backoff = BACKOFF_MIN_S;
    M.wave_on = false;
    M.have_prev = false;
    M.waves = 0;
    M.ready.head = M.ready.tail = NULL;
}

static void free_list(mpr_msgbuf *b)
{
    while (b) {
        mpr_msgbuf *n = b->next;
        free(b);
        b = n;
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
        free(b);
    }
}

static void mpi_fini(void)
{
    /* every message was received (quiescence), so the sends complete */
    for (int i = 0; i < M.sends.n; i++) {
        MPI_Wait(&M.sends.v[i].req, MPI_STATUS_IGNORE);
        free(M.sends.v[i].buf); /* the PE and its pools are gone already */
    }
    M.sends.n = 0;
    if (M.wave_on) { /* cannot happen after quiescence; keep the communicator clean anyway */
        MPI_Wait(&M.wave, MPI_STATUS_IGNORE);
        M.wave_on = false;
    }
    for (int i = 0; i < M.r_n; i++) {
        pending_op *op = &M.recvs[(M.r_head + i) % M.r_cap];
        MPI_Wait(&op->req, MPI_STATUS_IGNORE);
        free(op->buf);
    }
    M.r_n = M.r_head = 0;
    free_list(M.ready.head);
    M.ready.head = M.ready.tail = NULL;
    for (int i = 0; i < M.size; i++)
        free_list(M.backlog[i].head);
    free_list(M.rfree_small);
    free_list(M.rfree_agg);
    M.rfree_small = M.rfree_agg = NULL;
    free(M.credits);
    free(M.owed);
    free(M.backlog);
    M.credits = M.owed = NULL;
    M.backlog = NULL;
    M.pe = NULL;
    M.in_run = false;
}

/* ---------------------------------------------------------------------------------- */
/* Point to point                                                                       */

static void isend(int dst, mpr_msgbuf *b, int tag)
{
    if (M.sends.n == M.sends.cap) {
        M.sends.cap = M.sends.cap ? 2 * M.sends.cap : 256;
        M.sends.v = realloc(M.sends.v, (size_t)M.sends.cap * sizeof *M.sends.v);
        if (!M.sends.v)
            mpr_fatal("out of memory");
    }
    pending_op *op = &M.sends.v[M.sends.n];
    check(MPI_Isend(b->data, (int)b->len, MPI_BYTE, dst, tag, M.comm, &op->req), "MPI_Isend");
    op->buf = b;
    M.sends.n++;
    M.sent++;
}

static void send_credit(mpr_pe *pe, int dst)
{
    mpr_msgbuf *b = malloc(sizeof *b + sizeof(int32_t));
    if (!b)
        mpr_fatal("out of memory");
    b->kind = MPR_BUF_OWNED;
    b->cap = b->len = sizeof(int32_t);
    b->src = M.rank;
    b->dst = dst;
    int32_t n = M.owed[dst];
    memcpy(b->data, &n, sizeof n);
    M.owed[dst] = 0;
    RTS_INC(&pe->rts, FlowMsgSent, 1);
    isend(dst, b, TAG_CREDIT);
}

static void drain_backlog(int dst)
{
    fifo *q = &M.backlog[dst];
    while (q->head && M.credits[dst] > 0) {
        mpr_msgbuf *b = fifo_pop(q);
        M.credits[dst]--;
        M.backlog_n--;
        isend(dst, b, TAG_MSG);
    }
}

/* Completed sends give their buffers back, oldest first: sends complete roughly in the order
 * they were posted, so testing from the front costs O(1) per message (a full MPI_Testsome
 * over every outstanding request made each poll O(window)). */
static void test_sends(mpr_pe *pe)
{
    int k = 0;
    while (k < M.sends.n) {
        int flag = 0;
        check(MPI_Test(&M.sends.v[k].req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        if (!flag)
            break;
        recycle_sent(pe, M.sends.v[k].buf);
        k++;
    }
    if (k) {
        memmove(M.sends.v, M.sends.v + k, (size_t)(M.sends.n - k) * sizeof *M.sends.v);
        M.sends.n -= k;
    }
}

static mpr_msgbuf *rbuf_get(size_t need)
{
    mpr_msgbuf **list = NULL;
    size_t cap = need;
    if (need <= RBUF_SMALL) {
        list = &M.rfree_small;
        cap = RBUF_SMALL;
    } else if (need <= M.agg_cap) {
        list = &M.rfree_agg;
        cap = M.agg_cap;
    }
    mpr_msgbuf *b = list ? *list : NULL;
    if (b) {
        *list = b->next;
        return b;
    }
    b = malloc(sizeof *b + cap);
    if (!b)
        mpr_fatal("out of memory receiving a %zu-byte message", need);
    b->cap = cap;
    b->kind = list ? MPR_BUF_POOLED : MPR_BUF_OWNED;
    return b;
}

static void rbuf_put(mpr_msgbuf *b)
{
    if (b->kind == MPR_BUF_OWNED) {
        free(b);
    } else if (b->cap == RBUF_SMALL) {
        b->next = M.rfree_small;
        M.rfree_small = b;
    } else {
        b->next = M.rfree_agg;
        M.rfree_agg = b;
    }
}

/* Matches every arrived message and completes receives in match order. */
static void recv_progress(void)
{
    for (;;) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        check(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, M.comm, &flag, &msg, &st), "MPI_Improbe");
        if (!flag)
            break;
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        mpr_msgbuf *b = rbuf_get((size_t)count);
        b->len = (size_t)count;
        b->src = st.MPI_SOURCE;
        b->dst = st.MPI_TAG; /* remembered until the receive completes */
        if (M.r_n == M.r_cap) {
            int cap = M.r_cap ? 2 * M.r_cap : 256;
            pending_op *v = malloc((size_t)cap * sizeof *v);
            if (!v)
                mpr_fatal("out of memory");
            for (int i = 0; i < M.r_n; i++)
                v[i] = M.recvs[(M.r_head + i) % M.r_cap];
            free(M.recvs);
            M.recvs = v;
            M.r_cap = cap;
            M.r_head = 0;
        }
        pending_op *op = &M.recvs[(M.r_head + M.r_n) % M.r_cap];
        op->buf = b;
        check(MPI_Imrecv(b->data, count, MPI_BYTE, &msg, &op->req), "MPI_Imrecv");
        M.r_n++;
    }
    while (M.r_n) {
        pending_op *op = &M.recvs[M.r_head];
        int flag = 0;
        check(MPI_Test(&op->req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        if (!flag)
            break;
        mpr_msgbuf *b = op->buf;
        M.r_head = (M.r_head + 1) % M.r_cap;
        M.r_n--;
        M.recvd++;
        if (b->dst == TAG_CREDIT) {
            int32_t n;
            memcpy(&n, b->data, sizeof n);
            M.credits[b->src] += n;
            drain_backlog(b->src);
            rbuf_put(b);
        } else {
            b->dst = M.rank;
            fifo_push(&M.ready, b);
        }
    }
}

/* ---------------------------------------------------------------------------------- */
/* Termination waves                                                                    */

static bool locally_idle(void) { return M.idle && !M.ready.head && !M.r_n && !M.backlog_n; }

static void wave_progress(void)
{
    if (M.wave_on) {
        int flag = 0;
        check(MPI_Test(&M.wave, &flag, MPI_STATUS_IGNORE), "MPI_Test (wave)");
        if (!flag)
            return;
        M.wave_on = false;
        M.waves++;
        int64_t *w = M.wave_out;
        bool all_idle = w[W_ACTIVE] == 0;
        bool balanced = w[W_SENT] == w[W_RECV];
        if (all_idle && balanced && M.have_prev && M.prev[W_ACTIVE] == 0 &&
            M.prev[W_SENT] == M.prev[W_RECV] && M.prev[W_SENT] == w[W_SENT]) {
            atomic_store(&mpr_g.done, 1);
            return;
        }
        if (all_idle && w[W_VOTE] == M.size) {
            /* every PE idle past MPROF_IDLE_TIMEOUT and still no quiescence */
            int expected = 0;
            atomic_compare_exchange_strong(&mpr_g.hang, &expected, 2);
            atomic_store(&mpr_g.done, 1);
            return;
        }
        memcpy(M.prev, w, sizeof M.prev);
        M.have_prev = true;
    }
    if (!atomic_load_explicit(&mpr_g.done, memory_order_relaxed) && locally_idle()) {
        double t = mpr_g.cfg.idle_timeout_s;
        M.wave_in[W_SENT] = M.sent;
        M.wave_in[W_RECV] = M.recvd;
        M.wave_in[W_ACTIVE] = 0;
        M.wave_in[W_VOTE] = t > 0 && mp_wtime() - M.idle_since > t;
        check(MPI_Iallreduce(M.wave_in, M.wave_out, W_N, MPI_INT64_T, MPI_SUM, M.comm, &M.wave),
              "MPI_Iallreduce");
        M.wave_on = true;
    }
}

static void progress(mpr_pe *pe)
{
    test_sends(pe);
    recv_progress();
    wave_progress();
}

/* ---------------------------------------------------------------------------------- */
/* The machine interface                                                                */

static void mpi_send(mpr_pe *from, int dst, mpr_msgbuf *b)
{
    if (M.credits[dst] > 0 && !M.backlog[dst].head) {
        M.credits[dst]--;
        isend(dst, b, TAG_MSG);
        return;
    }
    fifo_push(&M.backlog[dst], b);
    /* out of credits: look for returned ones now and then (a loop in pe_main may not poll) */
    if (M.backlog_n++ % 16 == 0) {
        test_sends(from);
        recv_progress();
    }
}

static mpr_msgbuf *mpi_take(mpr_pe *pe)
{
    progress(pe);
    mpr_msgbuf *b = M.ready.head;
    M.ready.head = M.ready.tail = NULL;
    return b;
}

static void mpi_processed(mpr_pe *pe, mpr_msgbuf *b)
{
    int src = b->src;
    rbuf_put(b);
    if (++M.owed[src] >= M.batch)
        send_credit(pe, src);
}

static int mpi_pending(mpr_pe *pe)
{
    progress(pe);
    return M.ready.head != NULL;
}

static int mpi_idle_enter(mpr_pe *pe)
{
    if (!M.idle) {
        /* Owed credits go out now, while this PE still counts as active: a sender may wait
         * for them, and a passive PE must not send (the waves assume it does not). */
        for (int s = 0; s < M.size; s++)
            if (M.owed[s])
                send_credit(pe, s);
        M.idle = true;
        M.idle_since = mp_wtime();
    }
    progress(pe);
    return atomic_load(&mpr_g.done);
}

static void mpi_idle_leave(mpr_pe *pe)
{
    (void)pe;
    M.idle = false;
    M.backoff = BACKOFF_MIN_S;
}

static void mpi_sleep(mpr_pe *pe, double timeout_s)
{
    double s = M.backoff < timeout_s ? M.backoff : timeout_s;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
    if (M.backoff < BACKOFF_MAX_S)
        M.backoff *= 2;
    progress(pe);
}

static void mpi_wake_all(void) {}

static int mpi_run(void)
{
    mpr_pe *pe = mpr_g.pes[M.rank];
    run_state_init(pe);
    mpr_pe_run(pe);
    mpr_self_pe = NULL; /* the PE ran on this thread: outside mp_main there is no PE */
    return 0;
}

static double mpi_max_all(double v)
{
    double out = v;
    check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, M.comm), "MPI_Allreduce");
    return out;
}

static int mpi_gather(const char *buf, size_t len, char **out, size_t *out_len)
{
    if (len > (size_t)INT32_MAX / 2)
        mpr_fatal("a PE's run-profile section of %zu bytes is too large to gather", len);
    int mine = (int)len, *lens = NULL, *displs = NULL;
    char *all = NULL;
    if (M.rank == 0) {
        lens = malloc((size_t)M.size * sizeof *lens);
        displs = malloc((size_t)M.size * sizeof *displs);
        if (!lens || !displs)
            mpr_fatal("out of memory");
    }
    check(MPI_Gather(&mine, 1, MPI_INT, lens, 1, MPI_INT, 0, M.comm), "MPI_Gather");
    size_t total = 0;
    if (M.rank == 0) {
        for (int i = 0; i < M.size; i++) {
            displs[i] = (int)total;
            total += (size_t)lens[i];
        }
        if (total > (size_t)INT32_MAX)
            mpr_fatal("the run profile (%zu bytes) is too large to gather", total);
        if (!(all = malloc(total + 1)))
            mpr_fatal("out of memory");
    }
    check(MPI_Gatherv(buf, mine, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, M.comm), "MPI_Gatherv");
    free(lens);
    free(displs);
    if (M.rank != 0)
        return 0;
    all[total] = 0;
    *out = all;
    *out_len = total;
    return 1;
}

const mpr_machine mpr_machine_mpi = {
    .name = "mpi",
    .init = mpi_init,
    .run = mpi_run,
    .send = mpi_send,
    .take = mpi_take,
    .processed = mpi_processed,
    .idle_enter = mpi_idle_enter,
    .idle_leave = mpi_idle_leave,
    .sleep = mpi_sleep,
    .wake_all = mpi_wake_all,
    .pending = mpi_pending,
    .max_all = mpi_max_all,
    .gather = mpi_gather,
    .fini = mpi_fini,
};
