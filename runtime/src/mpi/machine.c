/*
 * mpi/machine.c -- the MPI backend: one PE per rank (Open MPI), for runs across machines.
 *
 * Only non-blocking MPI is used while the PE runs (blocking calls appear only after the run,
 * outside the PEs):
 *   send   a physical message buffer goes out with MPI_Isend (tag TAG_MSG); the request and the
 *          buffer wait in `sends` until MPI_Testall (or MPI_Test, oldest first) sees them
 *          complete, and the buffer then goes back to the PE's pool (comm.c's `returned`).
 *          A buffer larger than a posted receive goes as an announcement (TAG_LARGE, its
 *          size) followed by its bytes on a second communicator.
 *   recv   receives wait posted (any source, any tag), each into a buffer of post_cap bytes
 *          (the aggregation size, 4 KiB to 64 KiB) that carries its own persistent request:
 *          an arriving message lands in place, with no probe, and reposting is an MPI_Start.
 *          They complete in posting order, which is the order they matched: each sender's
 *          messages reach the scheduler in the order they were sent (MPI does not overtake on
 *          one source and communicator).  A take hands the PE at most TAKE_MAX messages.
 *   flow   credits: a PE may have at most `window` (MPROF_MPI_WINDOW, default 64) messages to a
 *          destination that the destination has not yet processed.  The receiver returns
 *          credits in batches of window/2 with a credit message (TAG_CREDIT); FlowMsgSent
 *          counts these credit messages.  A sender out of credits keeps the buffers in a
 *          per-destination backlog, in order, sent as credits come back: nothing blocks inside
 *          a fiber.
 *   idle   an idle PE polls (its receives, its sends, the termination wave) while it spins,
 *          then with backoff: short sleeps from 20 us doubling to 1 ms, reset when work
 *          arrives.
 *   end    distributed termination detection by waves of MPI_Iallreduce over (messages sent,
 *          messages received, active, idle-timeout votes), all counted over every tag.  A PE
 *          joins the next wave only once it has been idle for WAVE_POLLS polls, so a wave
 *          completes once every PE has been idle since the previous one.  The run is
 *          quiescent when two consecutive waves report sum(sent) == sum(received) with the
 *          same totals (Mattern's four-counter method): no message was in flight and no PE
 *          active between them.  Every rank sees the same reduced values, so every rank ends
 *          the run on the same wave.
 */
#define _GNU_SOURCE
#include "../mpr.h"

#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_MSG 1    /* a message of comm.c that fits a posted receive */
#define TAG_CREDIT 2 /* credits returned to the sender: int32 */
#define TAG_LARGE                                                                                  \
    3                  /* announces a message too large for a posted receive: its size (uint64);   \
                          the bytes follow on comm_large (tag 0, the same order per sender) */
#define POST_MIN 4096  /* posted receives hold at least this, */
#define POST_MAX 65536 /* and at most this: bigger aggregation buffers go as large messages */
#define BACKOFF_MIN_S 20e-6
#define BACKOFF_MAX_S 1e-3
#define WAVE_POLLS 1024 /* a PE joins termination waves after this many idle polls (or sleeps) */
#define TAKE_MAX 16     /* messages one take hands to the PE at most (see recv_progress) */

enum { W_SENT, W_RECV, W_ACTIVE, W_VOTE, W_N };

typedef struct {
    MPI_Request req;
    mpr_msgbuf *buf;
} pending_op;

typedef struct {
    MPI_Request *req; /* separate from the buffers: MPI_Testall takes the array */
    mpr_msgbuf **buf;
    int n, cap;
} op_array;

typedef struct {
    mpr_msgbuf *head, *tail;
} fifo;

static struct {
    MPI_Comm comm, comm_large;
    int rank, size;
    bool we_initialized; /* MPI_Init was ours: finalize at exit */
    bool in_run;         /* between init and fini: exiting now aborts the job */
    mpr_pe *pe;
    /* point to point */
    op_array sends;    /* outstanding MPI_Isend, oldest first */
    mpr_msgbuf **post; /* buffers with their receive posted: ring in posting order */
    int npost, post_head;
    size_t post_cap;  /* bytes each posted receive holds */
    pending_op large; /* the bytes of an announced large message, received before the rest */
    bool large_on;
    fifo ready; /* received, not yet taken */
    int ready_n;
    mpr_msgbuf *rfree; /* buffers of post_cap bytes */
    /* flow control */
    int window, batch;
    int *credits;  /* per destination: messages we may still send */
    int *owed;     /* per source: processed messages not yet credited */
    fifo *backlog; /* per destination: waiting for credits */
    long backlog_n;
    /* termination */
    int64_t sent, recvd;
    bool idle;
    unsigned idle_polls;
    double idle_since, backoff;
    MPI_Request wave;
    bool wave_on;
    int64_t wave_in[W_N], wave_out[W_N], prev[W_N];
    bool have_prev;
    uint64_t waves;
} M = {.comm = MPI_COMM_NULL, .comm_large = MPI_COMM_NULL, .wave = MPI_REQUEST_NULL};

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
        if (M.comm != MPI_COMM_NULL) {
            MPI_Comm_free(&M.comm);
            MPI_Comm_free(&M.comm_large);
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
    const char *agg = getenv("MPROF_AGG_BYTES");
    long bytes = agg && atol(agg) > 0 ? atol(agg) : 4096;
    long limit = (bytes + 512 + 4095) / 4096 * 4096; /* above this, rendezvous is cheap anyway */
    limit = limit < 8192 ? 8192 : limit > 32768 ? 32768 : limit;
    char value[32];
    snprintf(value, sizeof value, "%ld", limit);
    setenv(name, value, 0);
#endif
}

static int mpi_init(int *npes, int *first, int *count)
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
        M.we_initialized = true;
        atexit(at_exit);
    } else if (M.comm == MPI_COMM_NULL) {
        atexit(at_exit); /* the program's MPI: we only abort on a fatal error inside a run */
    }
    if (M.comm == MPI_COMM_NULL) {
        /* our own communicator: the program's messages never mix with the runtime's */
        MPI_Comm_dup(MPI_COMM_WORLD, &M.comm);
        MPI_Comm_set_errhandler(M.comm, MPI_ERRORS_RETURN);
        /* the bytes of large messages: kept apart from the posted receives' any-tag matching */
        MPI_Comm_dup(M.comm, &M.comm_large);
        MPI_Comm_set_errhandler(M.comm_large, MPI_ERRORS_RETURN);
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

/* Receive buffers of post_cap bytes carry their own persistent receive (any source, any tag),
 * stored after the data: reposting one is an MPI_Start, not a new MPI_Irecv. */
static inline MPI_Request *rbuf_req(mpr_msgbuf *b) { return (MPI_Request *)(b->data + b->cap); }

static mpr_msgbuf *rbuf_get(void)
{
    mpr_msgbuf *b = M.rfree;
    if (b) {
        M.rfree = b->next;
        return b;
    }
    if (!(b = malloc(sizeof *b + M.post_cap + sizeof(MPI_Request))))
        mpr_fatal("out of memory");
    b->cap = M.post_cap;
    b->kind = MPR_BUF_POOLED;
    check(MPI_Recv_init(b->data, (int)M.post_cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, M.comm,
                        rbuf_req(b)),
          "MPI_Recv_init");
    return b;
}

/* back to the free list, its receive inactive (or freed, for a large message's buffer) */
static void rbuf_put(mpr_msgbuf *b)
{
    if (b->kind == MPR_BUF_OWNED) {
        free(b);
    } else {
        b->next = M.rfree;
        M.rfree = b;
    }
}

static void rbuf_free_list(mpr_msgbuf *b)
{
    while (b) {
        mpr_msgbuf *n = b->next;
        if (b->kind != MPR_BUF_OWNED)
            MPI_Request_free(rbuf_req(b));
        free(b);
        b = n;
    }
}

/* Posts b's receive: the next message from anyone lands in it. */
static void post(mpr_msgbuf *b) { check(MPI_Start(rbuf_req(b)), "MPI_Start"); }

static void run_state_init(mpr_pe *pe)
{
    M.pe = pe;
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
    M.ready_n = 0;
    /* Receives wait posted, so that an arriving message lands in its buffer without a probe,
     * enough for a window from one sender and its credits; more arrivals wait in MPI. */
    size_t cap = mpr_g.cfg.agg_bytes;
    cap = cap < POST_MIN ? POST_MIN : cap > POST_MAX ? POST_MAX : cap;
    M.post_cap = (cap + 15) & ~(size_t)15; /* the request after the data stays aligned */
    M.npost = M.size < 2 ? 0 : M.window < 200 ? M.window + M.window / 4 : 256;
    M.post_head = 0;
    M.large_on = false;
    M.post = malloc((size_t)(M.npost + 1) * sizeof *M.post);
    if (!M.post)
        mpr_fatal("out of memory");
    for (int i = 0; i < M.npost; i++) {
        M.post[i] = rbuf_get();
        post(M.post[i]);
    }
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

/* The PE has finished: its posted receives are withdrawn.  This happens before the next
 * collective (mp_main's agreement on the status), so no rank can be sending messages of a
 * next run yet, and at quiescence no message of this one is in flight: nothing matched them.
 * (Withdrawing them later, in fini, raced with a fast rank's next run, whose first messages
 * could match a receive about to be cancelled and be lost.) */
static void withdraw_receives(void)
{
    for (int i = 0; i < M.npost; i++) {
        MPI_Cancel(rbuf_req(M.post[i]));
        MPI_Wait(rbuf_req(M.post[i]), MPI_STATUS_IGNORE);
        M.post[i]->next = M.rfree;
        M.rfree = M.post[i];
    }
    if (M.large_on) {
        MPI_Cancel(&M.large.req);
        MPI_Wait(&M.large.req, MPI_STATUS_IGNORE);
        free(M.large.buf);
        M.large_on = false;
    }
    free(M.post);
    M.post = NULL;
    M.npost = M.post_head = 0;
    rbuf_free_list(M.rfree);
    M.rfree = NULL;
}

static void mpi_fini(void)
{
    /* every message was received (quiescence), so the sends complete */
    for (int i = 0; i < M.sends.n; i++) {
        MPI_Wait(&M.sends.req[i], MPI_STATUS_IGNORE);
        free(M.sends.buf[i]); /* the PE and its pools are gone already */
    }
    M.sends.n = 0;
    if (M.wave_on) { /* cannot happen after quiescence; keep the communicator clean anyway */
        MPI_Wait(&M.wave, MPI_STATUS_IGNORE);
        M.wave_on = false;
    }
    withdraw_receives();          /* normally done at the end of the run already */
    rbuf_free_list(M.ready.head); /* only after an abnormal end (hang) */
    M.ready.head = M.ready.tail = NULL;
    for (int i = 0; i < M.size; i++)
        free_list(M.backlog[i].head);
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

static void isend_bytes(int dst, mpr_msgbuf *b, const void *data, size_t len, int tag,
                        MPI_Comm comm)
{
    if (M.sends.n == M.sends.cap) {
        M.sends.cap = M.sends.cap ? 2 * M.sends.cap : 256;
        M.sends.req = realloc(M.sends.req, (size_t)M.sends.cap * sizeof *M.sends.req);
        M.sends.buf = realloc(M.sends.buf, (size_t)M.sends.cap * sizeof *M.sends.buf);
        if (!M.sends.req || !M.sends.buf)
            mpr_fatal("out of memory");
    }
    check(MPI_Isend(data, (int)len, MPI_BYTE, dst, tag, comm, &M.sends.req[M.sends.n]),
          "MPI_Isend");
    M.sends.buf[M.sends.n++] = b;
    M.sent++;
}

/* A small message of the machine layer itself (credits, large-message announcements). */
static void send_control(int dst, int tag, const void *data, size_t len)
{
    mpr_msgbuf *b = malloc(sizeof *b + len);
    if (!b)
        mpr_fatal("out of memory");
    b->kind = MPR_BUF_OWNED;
    b->cap = b->len = len;
    memcpy(b->data, data, len);
    isend_bytes(dst, b, b->data, len, tag, M.comm);
}

/* A message of comm.c: one MPI message when a posted receive holds it, else an announcement
 * and the bytes on comm_large (both in order per sender, so they pair up). */
static void isend(int dst, mpr_msgbuf *b)
{
    if (MPR_LIKELY(b->len <= M.post_cap)) {
        isend_bytes(dst, b, b->data, b->len, TAG_MSG, M.comm);
        return;
    }
    if (b->len > (size_t)INT32_MAX)
        mpr_fatal("a message of %zu bytes is too large for MPI", b->len);
    uint64_t n = b->len;
    send_control(dst, TAG_LARGE, &n, sizeof n);
    isend_bytes(dst, b, b->data, b->len, 0, M.comm_large);
}

static void send_credit(mpr_pe *pe, int dst)
{
    int32_t n = M.owed[dst];
    M.owed[dst] = 0;
    RTS_INC(&pe->rts, FlowMsgSent, 1);
    send_control(dst, TAG_CREDIT, &n, sizeof n);
}

static void drain_backlog(int dst)
{
    fifo *q = &M.backlog[dst];
    while (q->head && M.credits[dst] > 0) {
        mpr_msgbuf *b = fifo_pop(q);
        M.credits[dst]--;
        M.backlog_n--;
        isend(dst, b);
    }
}

/* Completed sends give their buffers back.  Small sends complete at once (MPI copies them out
 * eagerly), so one MPI_Testall usually settles all of them; otherwise the completed ones are
 * found from the front, oldest first (sends complete roughly in the order they were posted,
 * so this stops at the first one still under way instead of scanning them all). */
static void test_sends(mpr_pe *pe)
{
    int n = M.sends.n, k = 0, flag = 0;
    if (!n)
        return;
    check(MPI_Testall(n, M.sends.req, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (flag) {
        k = n;
    } else {
        for (; k < n; k++) {
            check(MPI_Test(&M.sends.req[k], &flag, MPI_STATUS_IGNORE), "MPI_Test");
            if (!flag)
                break;
        }
    }
    for (int i = 0; i < k; i++)
        recycle_sent(pe, M.sends.buf[i]);
    if (k < n) {
        memmove(M.sends.req, M.sends.req + k, (size_t)(n - k) * sizeof *M.sends.req);
        memmove(M.sends.buf, M.sends.buf + k, (size_t)(n - k) * sizeof *M.sends.buf);
    }
    M.sends.n = n - k;
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
static void recv_progress(int max)
{
    while (M.ready_n < max) {
        int flag = 0;
        MPI_Status st;
        if (MPR_UNLIKELY(M.large_on)) {
            check(MPI_Test(&M.large.req, &flag, &st), "MPI_Test");
            if (!flag)
                return;
            M.large_on = false;
            M.recvd++;
            mpr_msgbuf *b = M.large.buf;
            b->src = st.MPI_SOURCE;
            b->dst = M.rank;
            fifo_push(&M.ready, b);
            M.ready_n++;
        }
        if (!M.npost)
            return;
        mpr_msgbuf *b = M.post[M.post_head];
        check(MPI_Test(rbuf_req(b), &flag, &st), "MPI_Test");
        if (!flag)
            return;
        M.recvd++;
        if (MPR_LIKELY(st.MPI_TAG == TAG_MSG)) {
            b->len = received_bytes(&st);
            b->src = st.MPI_SOURCE;
            b->dst = M.rank;
            fifo_push(&M.ready, b);
            M.ready_n++;
            M.post[M.post_head] = b = rbuf_get();
        } else if (st.MPI_TAG == TAG_CREDIT) {
            int32_t n;
            memcpy(&n, b->data, sizeof n);
            M.credits[st.MPI_SOURCE] += n;
            drain_backlog(st.MPI_SOURCE);
        } else { /* TAG_LARGE */
            uint64_t n;
            memcpy(&n, b->data, sizeof n);
            mpr_msgbuf *big = malloc(sizeof *big + n);
            if (!big)
                mpr_fatal("out of memory receiving a %llu-byte message", (unsigned long long)n);
            big->kind = MPR_BUF_OWNED;
            big->cap = big->len = (size_t)n;
            M.large.buf = big;
            check(MPI_Irecv(big->data, (int)n, MPI_BYTE, st.MPI_SOURCE, 0, M.comm_large,
                            &M.large.req),
                  "MPI_Irecv");
            M.large_on = true;
        }
        post(b);
        M.post_head = M.post_head + 1 == M.npost ? 0 : M.post_head + 1;
    }
}

/* ---------------------------------------------------------------------------------- */
/* Termination waves                                                                    */

static bool locally_idle(void) { return M.idle && !M.ready.head && !M.large_on && !M.backlog_n; }

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
            mpr_run_end(MPR_RUN_QUIESCENT);
            return;
        }
        if (all_idle && w[W_VOTE] == M.size) {
            /* every PE idle past MPROF_IDLE_TIMEOUT and still no quiescence */
            mpr_run_end(MPR_RUN_IDLE_TIMEOUT);
            return;
        }
        memcpy(M.prev, w, sizeof M.prev);
        M.have_prev = true;
    }
    /* Short idle spells (a PE waiting for an answer) start no wave: a pending wave makes every
     * MPI call of every rank progress the collective until the last rank joins.  Idle polls
     * are counted rather than timed, so the idle loop reads no clock. */
    if (!mpr_run_over() && locally_idle() && ++M.idle_polls >= WAVE_POLLS) {
        double t = mpr_g.cfg.idle_timeout_s, now = mp_wtime();
        if (M.idle_since == 0)
            M.idle_since = now;
        M.wave_in[W_SENT] = M.sent;
        M.wave_in[W_RECV] = M.recvd;
        M.wave_in[W_ACTIVE] = 0;
        M.wave_in[W_VOTE] = t > 0 && now - M.idle_since > t;
        check(MPI_Iallreduce(M.wave_in, M.wave_out, W_N, MPI_INT64_T, MPI_SUM, M.comm, &M.wave),
              "MPI_Iallreduce");
        M.wave_on = true;
    }
}

/* An active PE moves messages only; waves are for idle PEs (a pending wave makes every MPI
 * call progress the collective too). */
static void progress(mpr_pe *pe)
{
    test_sends(pe);
    recv_progress(TAKE_MAX);
}

static void idle_progress(mpr_pe *pe)
{
    progress(pe);
    wave_progress();
}

/* ---------------------------------------------------------------------------------- */
/* The machine interface                                                                */

static void mpi_send(mpr_pe *from, int dst, mpr_msgbuf *b)
{
    if (M.credits[dst] > 0 && !M.backlog[dst].head) {
        M.credits[dst]--;
        isend(dst, b);
        return;
    }
    fifo_push(&M.backlog[dst], b);
    /* out of credits: look for returned ones now and then (a loop in pe_main may not poll) */
    if (M.backlog_n++ % 16 == 0) {
        test_sends(from);
        recv_progress(INT_MAX); /* the credits may be behind many messages */
    }
}

static mpr_msgbuf *mpi_take(mpr_pe *pe)
{
    progress(pe);
    mpr_msgbuf *b = M.ready.head;
    M.ready.head = M.ready.tail = NULL;
    M.ready_n = 0;
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
    idle_progress(pe);
    return M.ready.head != NULL;
}

static int mpi_idle_enter(mpr_pe *pe)
{
    if (!M.idle) {
        /* Credits owed stay owed (fewer than a batch per sender, each sent as soon as a batch
         * is due): with every message it sent processed, a sender still holds more than
         * window - batch credits, so it never waits for them, and an idle PE sends nothing,
         * as the waves assume.  (Sending them here cost a credit message per idle spell.) */
        M.idle = true;
        M.idle_polls = 0;
        M.idle_since = 0; /* read when the first wave starts */
    }
    idle_progress(pe);
    return mpr_run_over();
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
    if (M.idle_polls < WAVE_POLLS)
        M.idle_polls = WAVE_POLLS; /* done spinning (MPROF_SPIN): a long idle spell */
    idle_progress(pe);
}

static void mpi_wake_all(void) {}

static int mpi_run(void)
{
    mpr_pe *pe = mpr_g.pes[M.rank];
    run_state_init(pe);
    mpr_pe_run(pe);
    withdraw_receives();
    mpr_pe_bind(NULL); /* the PE ran on this thread: outside mp_main there is no PE */
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
