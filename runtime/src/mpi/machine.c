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
 *          arrives.  After NOTICE_POLLS polls it tells the ranks it exchanged messages with
 *          since it last told them that it waits (TAG_IDLE, notice.c), for their flush policy.
 *   end    distributed termination detection by waves of MPI_Iallreduce over (messages sent,
 *          messages received, active, idle-timeout votes), all counted over every tag.  A PE
 *          joins the next wave only once it has been idle for WAVE_POLLS polls, so a wave
 *          completes once every PE has been idle since the previous one.  The run is
 *          quiescent when two consecutive waves report sum(sent) == sum(received) with the
 *          same totals (Mattern's four-counter method): no message was in flight and no PE
 *          active between them.  Every rank sees the same reduced values, so every rank ends
 *          the run on the same wave.
 * This file holds the machine interface; setup.c, transport.c and wave.c the rest
 * (mpi_internal.h).
 */
#define _GNU_SOURCE
#include "mpi_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <time.h>

/* The rank's state (mpi_internal.h says which file does what with it). */
mpr_mpi_state mpr_mpi = {
    .comm = MPI_COMM_NULL, .comm_large = MPI_COMM_NULL, .wave = MPI_REQUEST_NULL};

void mpr_mpi_check(int err, const char *what)
{
    if (err != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, text, &len);
        mpr_fatal("MPI: %s failed: %s", what, text);
    }
}

/* The machine interface (machine.h), on setup.c, transport.c and wave.c. */

static void mpi_send(mpr_pe *from, int dst, mpr_msgbuf *b)
{
    mpr_mpi_partner(dst);
    if (mpr_mpi.credits[dst] > 0 && !mpr_mpi.backlog[dst].head) {
        mpr_mpi.credits[dst]--;
        mpr_mpi_isend(dst, b);
        return;
    }
    mpr_mpi_fifo_push(&mpr_mpi.backlog[dst], b);
    /* out of credits: look for returned ones now and then (a loop in pe_main may not poll) */
    if (mpr_mpi.backlog_n++ % 16 == 0) {
        mpr_mpi_test_sends(from);
        mpr_mpi_recv_progress(INT_MAX); /* the credits may be behind many messages */
    }
}

/* Messages the idle loop's last poll received (mpi_pending) go to the PE as they are: another
 * progress step first cost as much as the idle loop's (about 800 instructions, an MPI_Test
 * that finds nothing and a send test), on the path from an arrival to the fibers that answer
 * it.  With none waiting, the take polls. */
static mpr_msgbuf *mpi_take(mpr_pe *pe)
{
    if (!mpr_mpi.ready.head)
        mpr_mpi_progress(pe);
    mpr_msgbuf *b = mpr_mpi.ready.head;
    mpr_mpi.ready.head = mpr_mpi.ready.tail = NULL;
    mpr_mpi.ready_n = 0;
    return b;
}

static void mpi_processed(mpr_pe *pe, mpr_msgbuf *b)
{
    int src = b->src;
    mpr_mpi_rbuf_put(b);
    if (++mpr_mpi.owed[src] >= mpr_mpi.batch)
        mpr_mpi_send_credit(pe, src);
}

static int mpi_pending(mpr_pe *pe)
{
    mpr_mpi_idle_progress(pe);
    return mpr_mpi.ready.head != NULL;
}

static int mpi_idle_enter(mpr_pe *pe)
{
    if (!mpr_mpi.idle) {
        /* Credits owed stay owed (fewer than a batch per sender, each sent as soon as a batch
         * is due): with every message it sent processed, a sender still holds more than
         * window - batch credits, so it never waits for them, and an idle PE sends nothing
         * but its idle notices (one per partner and spell, notice.c), so the waves settle.
         * (Sending them here cost a credit message per idle spell.) */
        mpr_mpi.idle = true;
        mpr_mpi.told = false;
        mpr_mpi.idle_polls = 0;
        mpr_mpi.idle_since = 0; /* read when the first wave starts */
    }
    mpr_mpi_idle_progress(pe);
    return mpr_run_over();
}

static void mpi_idle_leave(mpr_pe *pe)
{
    (void)pe;
    mpr_mpi.idle = false;
    mpr_mpi.backoff = BACKOFF_MIN_S;
}

static void mpi_sleep(mpr_pe *pe, double timeout_s)
{
    double s = mpr_mpi.backoff < timeout_s ? mpr_mpi.backoff : timeout_s;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
    if (mpr_mpi.backoff < BACKOFF_MAX_S)
        mpr_mpi.backoff *= 2;
    if (mpr_mpi.idle_polls < WAVE_POLLS)
        mpr_mpi.idle_polls = WAVE_POLLS; /* done spinning (MPROF_SPIN): a long idle spell */
    mpr_mpi_idle_progress(pe);
}

static void mpi_wake_all(void) {}

static int mpi_run(void)
{
    mpr_pe *pe = mpr_g.pes[mpr_mpi.rank];
    mpr_mpi_run_state_init(pe);
    mpr_pe_run(pe);
    mpr_mpi_withdraw_receives();
    mpr_pe_bind(NULL); /* the PE ran on this thread: outside mp_main there is no PE */
    return 0;
}

static double mpi_max_all(double v)
{
    double out = v;
    mpr_mpi_check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, mpr_mpi.comm), "MPI_Allreduce");
    return out;
}

static int mpi_gather(const char *buf, size_t len, char **out, size_t *out_len)
{
    if (len > (size_t)INT32_MAX / 2)
        mpr_fatal("a PE's run-profile section of %zu bytes is too large to gather", len);
    int mine = (int)len, *lens = NULL, *displs = NULL;
    char *all = NULL;
    if (mpr_mpi.rank == 0) {
        lens = malloc((size_t)mpr_mpi.size * sizeof *lens);
        displs = malloc((size_t)mpr_mpi.size * sizeof *displs);
        if (!lens || !displs)
            mpr_fatal("out of memory");
    }
    mpr_mpi_check(MPI_Gather(&mine, 1, MPI_INT, lens, 1, MPI_INT, 0, mpr_mpi.comm), "MPI_Gather");
    size_t total = 0;
    if (mpr_mpi.rank == 0) {
        for (int i = 0; i < mpr_mpi.size; i++) {
            displs[i] = (int)total;
            total += (size_t)lens[i];
        }
        if (total > (size_t)INT32_MAX)
            mpr_fatal("the run profile (%zu bytes) is too large to gather", total);
        if (!(all = malloc(total + 1)))
            mpr_fatal("out of memory");
    }
    mpr_mpi_check(MPI_Gatherv(buf, mine, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, mpr_mpi.comm),
                  "MPI_Gatherv");
    free(lens);
    free(displs);
    if (mpr_mpi.rank != 0)
        return 0;
    all[total] = 0;
    *out = all;
    *out_len = total;
    return 1;
}

const mpr_machine mpr_machine_mpi = {
    .name = "mpi",
    .init = mpr_mpi_init,
    .run = mpi_run,
    .agree = mpr_mpi_agree,
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
    .fini = mpr_mpi_fini,
    .peer_idle_epoch = mpr_mpi_peer_idle_epoch,
};
