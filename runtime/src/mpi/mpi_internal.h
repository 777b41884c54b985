/*
 * mpi/mpi_internal.h -- what the MPI backend's files share: its constants, its state (one
 * rank runs one PE, so the backend's state is the rank's) and the functions one file calls in
 * another.  The backend is machine.c (the machine interface, and an overview of the
 * protocol), setup.c (start-up, shut-down, the posted receives), transport.c (sends,
 * receives, flow control), notice.c (idle notices, for comm.c's flush policy) and wave.c
 * (termination waves).
 */
#ifndef MPR_MPI_INTERNAL_H
#define MPR_MPI_INTERNAL_H

#include "../mpr.h"

#include <mpi.h>

#define TAG_MSG 1    /* a message of comm.c that fits a posted receive */
#define TAG_CREDIT 2 /* credits returned to the sender: int32 */
#define TAG_LARGE                                                                                  \
    3                  /* announces a message too large for a posted receive: its size (uint64);   \
                          the bytes follow on comm_large (tag 0, the same order per sender) */
#define TAG_IDLE 4     /* an idle notice (notice.c): the sender's idle epoch (uint32) */
#define POST_MIN 4096  /* posted receives hold at least this, */
#define POST_MAX 65536 /* and at most this: bigger aggregation buffers go as large messages */
#define BACKOFF_MIN_S 20e-6
#define BACKOFF_MAX_S 1e-3
#define WAVE_POLLS 1024 /* a PE joins termination waves after this many idle polls (or sleeps) */
#define TAKE_MAX 16     /* messages one take hands to the PE at most (see recv_progress) */
#define NOTICE_POLLS 64 /* an idle PE tells its partners it waits after this many idle polls */

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

/* The rank's state (machine.c defines it). */
typedef struct mpr_mpi_state {
    MPI_Comm comm, comm_large;
    int rank, size;
    bool we_initialized; /* MPI_Init was ours: finalize at exit */
    bool in_run;         /* between init and fini: exiting now aborts the job */
    bool disagreed;      /* a rank ended the program as this one started a run (setup.c) */
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
    /* idle notices (notice.c) */
    uint32_t *peer_epoch; /* per rank: its idle epoch as it last told us, odd bit cleared once
                           * we sent it anything or heard from it since */
    uint8_t *partner;     /* per rank: exchanged a message with it since we last told it */
    int *partners;        /* the ranks marked in `partner` */
    int npartners;
    bool told; /* this idle spell's notices have gone */
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
} mpr_mpi_state;

extern mpr_mpi_state mpr_mpi;

static inline void mpr_mpi_fifo_push(fifo *q, mpr_msgbuf *b)
{
    b->next = NULL;
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
}

static inline mpr_msgbuf *mpr_mpi_fifo_pop(fifo *q)
{
    mpr_msgbuf *b = q->head;
    if (b && !(q->head = b->next))
        q->tail = NULL;
    return b;
}

/* Ends the process with MPI's message when a call failed (machine.c). */
void mpr_mpi_check(int err, const char *what);

/* setup.c */
int mpr_mpi_init(int *npes, int *first, int *count);
void mpr_mpi_fini(void);
/* -1 (message printed) when the ranks disagree on starting the run */
int mpr_mpi_agree(void);
void mpr_mpi_run_state_init(mpr_pe *pe);
void mpr_mpi_withdraw_receives(void);
mpr_msgbuf *mpr_mpi_rbuf_get(void);
void mpr_mpi_rbuf_put(mpr_msgbuf *b);

/* Receive buffers of post_cap bytes carry their own persistent receive (any source, any tag),
 * stored after the data: reposting one is an MPI_Start, not a new MPI_Irecv. */
static inline MPI_Request *mpr_mpi_rbuf_req(mpr_msgbuf *b)
{
    return (MPI_Request *)(b->data + b->cap);
}

/* Posts b's receive: the next message from anyone lands in it. */
static inline void mpr_mpi_post(mpr_msgbuf *b)
{
    mpr_mpi_check(MPI_Start(mpr_mpi_rbuf_req(b)), "MPI_Start");
}

/* transport.c */
void mpr_mpi_send_control(int dst, int tag, const void *data, size_t len);
void mpr_mpi_isend(int dst, mpr_msgbuf *b);
void mpr_mpi_send_credit(mpr_pe *pe, int dst);
void mpr_mpi_test_sends(mpr_pe *pe);
void mpr_mpi_recv_progress(int max);
void mpr_mpi_progress(mpr_pe *pe);

/* notice.c */
void mpr_mpi_notice_init(void);
void mpr_mpi_notice_fini(void);
void mpr_mpi_notice_progress(mpr_pe *pe);
uint32_t mpr_mpi_peer_idle_epoch(int pe);

/* A message of comm.c went to, or came from, rank r: r is a partner (told when this PE waits),
 * and it has been sent something, or is busy, since it last said it waits. */
static inline void mpr_mpi_partner(int r)
{
    mpr_mpi.peer_epoch[r] &= ~1u;
    if (MPR_UNLIKELY(!mpr_mpi.partner[r])) {
        mpr_mpi.partner[r] = 1;
        mpr_mpi.partners[mpr_mpi.npartners++] = r;
    }
}

/* wave.c */
void mpr_mpi_wave_progress(void);
void mpr_mpi_idle_progress(mpr_pe *pe);

#endif /* MPR_MPI_INTERNAL_H */
