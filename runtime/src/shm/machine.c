/*
 * shm/machine.c -- the shared-memory backend: one thread per PE in one process.
 *
 * Each PE has an inbox, a lock-free stack that any PE pushes to and only the owner empties
 * (all at once, then reversed, which keeps every sender's messages in order).  Idle PEs
 * sleep on a futex.  Termination uses one word: active PEs in the high half, physical
 * messages in flight in the low half; the PE that brings it to zero ends the run.
 * The functions are reached through the table mpr_machine_shm (machine.h).
 */
#define _GNU_SOURCE
#include "../mpr.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ONE_ACTIVE ((uint64_t)1 << 32)

static void futex_wait(_Atomic(uint32_t) *word, uint32_t expected, double timeout_s)
{
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (double)(time_t)timeout_s) * 1e9)};
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

static void futex_wake(_Atomic(uint32_t) *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void wake(mpr_pe *pe)
{
    atomic_fetch_add(&pe->wake_seq, 1);
    futex_wake(&pe->wake_seq);
}

static void shm_wake_all(void);

static void push(_Atomic(mpr_msgbuf *) *stack, mpr_msgbuf *b)
{
    mpr_msgbuf *head = atomic_load_explicit(stack, memory_order_relaxed);
    do
        b->next = head;
    while (!atomic_compare_exchange_weak_explicit(stack, &head, b, memory_order_seq_cst,
                                                  memory_order_relaxed));
}

static void shm_send(mpr_pe *from, int dst, mpr_msgbuf *b)
{
    mpr_pe *to = mpr_g.pes[dst];
    atomic_fetch_add(&mpr_g.activity, 1);
    push(&to->inbox, b);
    /* seq_cst push then load pairs with the sleeper's store-then-check: no lost wake-up */
    if (atomic_load(&to->sleeping)) {
        wake(to);
        RTS_INC(&from->rts, Wakes, 1);
    }
}

static mpr_msgbuf *shm_take(mpr_pe *pe)
{
    if (!atomic_load_explicit(&pe->inbox, memory_order_relaxed))
        return NULL;
    mpr_msgbuf *b = atomic_exchange_explicit(&pe->inbox, NULL, memory_order_acquire);
    mpr_msgbuf *fifo = NULL;
    while (b) {
        mpr_msgbuf *n = b->next;
        b->next = fifo;
        fifo = b;
        b = n;
    }
    return fifo;
}

static int shm_pending(mpr_pe *pe)
{
    return atomic_load_explicit(&pe->inbox, memory_order_acquire) != NULL;
}

static void shm_processed(mpr_pe *pe, mpr_msgbuf *b)
{
    if (b->kind == MPR_BUF_POOLED) {
        /* give the buffer back to its sender: the flow-control message of this backend */
        push(&mpr_g.pes[b->src]->returned, b);
        RTS_INC(&pe->rts, FlowMsgSent, 1);
    } else {
        free(b);
    }
    atomic_fetch_sub(&mpr_g.activity, 1);
}

static int shm_idle_enter(mpr_pe *pe)
{
    (void)pe;
    if (atomic_fetch_sub(&mpr_g.activity, ONE_ACTIVE) == ONE_ACTIVE) {
        atomic_store(&mpr_g.done, 1);
        shm_wake_all();
        return 1;
    }
    return 0;
}

static void shm_idle_leave(mpr_pe *pe)
{
    (void)pe;
    atomic_fetch_add(&mpr_g.activity, ONE_ACTIVE);
}

static void shm_sleep(mpr_pe *pe, double timeout_s)
{
    uint32_t seq = atomic_load(&pe->wake_seq);
    atomic_store(&pe->sleeping, 1);
    if (!shm_pending(pe) && !atomic_load(&mpr_g.done))
        futex_wait(&pe->wake_seq, seq, timeout_s);
    atomic_store(&pe->sleeping, 0);
}

static void shm_wake_all(void)
{
    for (int i = 0; i < mpr_g.npes; i++)
        if (mpr_g.pes[i])
            wake(mpr_g.pes[i]);
}

static void *pe_thread(void *arg)
{
    mpr_pe_run(arg);
    return NULL;
}

static int shm_run(void)
{
    pthread_t *threads = calloc((size_t)mpr_g.npes, sizeof *threads);
    if (!threads)
        return -1;
    int started = 0, rc = 0;
    for (; started < mpr_g.npes; started++)
        if (pthread_create(&threads[started], NULL, pe_thread, mpr_g.pes[started]) != 0) {
            fprintf(stderr, "mprof: cannot start thread for PE %d\n", started);
            rc = -1;
            break;
        }
    if (rc) {
        /* the started PEs cannot finish without the others: end the process cleanly */
        mpr_fatal("could only start %d of %d PEs", started, mpr_g.npes);
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    return rc;
}

static int shm_init(int *npes, int *first, int *count)
{
    *first = 0;
    *count = *npes; /* every PE lives in this process */
    return 0;
}

static double shm_max_all(double v) { return v; }

static int shm_gather(const char *buf, size_t len, char **out, size_t *out_len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, buf, len);
    copy[len] = 0;
    *out = copy;
    *out_len = len;
    return 1;
}

static void shm_fini(void) {}

const mpr_machine mpr_machine_shm = {
    .name = "shm",
    .init = shm_init,
    .run = shm_run,
    .send = shm_send,
    .take = shm_take,
    .processed = shm_processed,
    .idle_enter = shm_idle_enter,
    .idle_leave = shm_idle_leave,
    .sleep = shm_sleep,
    .wake_all = shm_wake_all,
    .pending = shm_pending,
    .max_all = shm_max_all,
    .gather = shm_gather,
    .fini = shm_fini,
};
