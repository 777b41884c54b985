/* mpi_rate.c -- remote invocation rates of the runtime on MPI beside shared memory, and the
 * plain MPI_Isend/MPI_Irecv small-message rate between the same two ranks, in one run, so the
 * runtime layer's cost over raw MPI is visible.  Run under `mpirun -np 2` (bench.sh).
 *
 *   raw MPI     rank 0 streams N messages of SIZE bytes to rank 1 with MPI_Isend, at most W
 *               unacknowledged; rank 1 keeps W MPI_Irecv posted and acknowledges every W/2
 *               with a 1-byte message: the same protocol as the runtime measurement.
 *   runtime     PE 0 streams N SIZE-byte mp_invoke()s to PE 1 with at most W unacknowledged
 *               (PE 1 acknowledges every W/2 with mp_counter_add_remote), without aggregation
 *               (one MPI message per invocation, like raw MPI) and with 4 KiB aggregation;
 *               on the MPI backend (the two ranks) and on shm (two threads on rank 0 while
 *               rank 1 sleeps).
 * Each figure is the best of REPS repetitions.  Prints a table, then one JSON line.
 * Usage: mpi_rate [N] [SIZE] */
#define _GNU_SOURCE
#include "mp.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define W 64
#define REPS 3

static long N = 200000;
static int SIZE = 32;
static int rank;

/* ------------------------------------------------------------------------------------ */

static double raw_mpi(void)
{
    static char buf[W][1024];
    char ack = 0;
    MPI_Request req[W], ack_req;
    long batches = (N + W / 2 - 1) / (W / 2);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank == 0) {
        long sent = 0, acks = 0;
        for (int i = 0; i < W; i++)
            req[i] = MPI_REQUEST_NULL;
        MPI_Irecv(&ack, 1, MPI_BYTE, 1, 8, MPI_COMM_WORLD, &ack_req);
        while (acks < batches) {
            while (sent < N && sent < acks * (W / 2) + W) {
                MPI_Wait(&req[sent % W], MPI_STATUS_IGNORE); /* acknowledged: complete */
                MPI_Isend(buf[sent % W], SIZE, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &req[sent % W]);
                sent++;
            }
            MPI_Wait(&ack_req, MPI_STATUS_IGNORE);
            if (++acks < batches)
                MPI_Irecv(&ack, 1, MPI_BYTE, 1, 8, MPI_COMM_WORLD, &ack_req);
        }
        MPI_Waitall(W, req, MPI_STATUSES_IGNORE);
    } else if (rank == 1) {
        for (long i = 0; i < W && i < N; i++)
            MPI_Irecv(buf[i], SIZE, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &req[i]);
        for (long got = 0; got < N;) {
            MPI_Wait(&req[got % W], MPI_STATUS_IGNORE); /* one source, one tag: in order */
            if (got + W < N)
                MPI_Irecv(buf[got % W], SIZE, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &req[got % W]);
            got++;
            if (got % (W / 2) == 0 || got == N)
                MPI_Send(&ack, 1, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

/* ------------------------------------------------------------------------------------ */

typedef struct {
    mp_counter_t acked; /* on PE 0 */
    unsigned char pad[1024];
} inv;

static _Thread_local long received; /* per PE (shm: per thread) */
static double seconds;              /* written by PE 0 only */

static void arrive(void *p)
{
    inv *m = p;
    if (++received % (W / 2) == 0 || received == N)
        mp_counter_add_remote(0, m->acked, 1);
}

typedef struct {
    long sent;
    mp_counter_t acked;
} sender_args;

static void sender(void *p)
{
    sender_args *s = p;
    inv m;
    memset(&m, 0, sizeof m);
    m.acked = s->acked;
    long limit = (long)mp_counter_value(s->acked) * (W / 2) + W;
    while (s->sent < N && s->sent < limit) {
        mp_invoke(1, arrive, &m, (size_t)SIZE, MP_SCHED_FIFO);
        s->sent++;
    }
    if (s->sent < N)
        mp_counter_wait(s->acked, (uint64_t)((s->sent - W / 2) / (W / 2)) + 1,
                        mp_continue(sender, MP_SCHED_FIFO));
}

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    received = 0;
    if (mp_mype() != 0)
        return;
    sender_args s = {0, mp_counter_new(0)};
    uint64_t batches = (uint64_t)((N + W / 2 - 1) / (W / 2));
    double t0 = mp_wtime();
    mp_spawn(sender, &s, sizeof s, MP_SCHED_FIFO);
    mp_block_until(s.acked, batches);
    seconds = mp_wtime() - t0;
}

static double runtime_rate(const char *backend, size_t agg)
{
    setenv("MPROF_BACKEND", backend, 1);
    mp_config cfg;
    mp_config_init(&cfg);
    cfg.npes = 2;
    cfg.agg_bytes = agg;
    cfg.small_bytes = 0;
    cfg.profile_path = NULL;
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        char *argv[] = {"mpi_rate", NULL};
        seconds = 0;
        if (mp_main(&cfg, pe_main, 1, argv) != 0) {
            fprintf(stderr, "mpi_rate: run failed\n");
            exit(1);
        }
        if (seconds > 0 && seconds < best)
            best = seconds;
    }
    return best;
}

/* rank 0 runs the shm backend on two threads; rank 1 sleeps meanwhile (no CPU stolen) */
static double shm_rate(size_t agg)
{
    double t = 0;
    MPI_Request req;
    if (rank == 0)
        t = runtime_rate("shm", agg);
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    for (int flag = 0; !flag;) {
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        if (!flag)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return t;
}

static double mpi_best(double (*fn)(void))
{
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        double t = fn();
        if (t < best)
            best = t;
    }
    return best;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        N = atol(argv[1]);
    if (argc > 2)
        SIZE = atoi(argv[2]);
    if (SIZE < (int)sizeof(mp_counter_t) || SIZE > 1024) {
        fprintf(stderr, "mpi_rate: SIZE must be %zu..1024\n", sizeof(mp_counter_t));
        return 2;
    }
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_rate: run with mpirun -np 2\n");
        MPI_Finalize();
        return 2;
    }
    double raw = mpi_best(raw_mpi);
    double mpi_noagg = runtime_rate("mpi", 0);
    double mpi_agg = runtime_rate("mpi", 4096);
    double shm_noagg = shm_rate(0);
    double shm_agg = shm_rate(4096);
    if (rank == 0) {
        double n = (double)N;
        printf("%-36s %12s %10s\n", "small messages, 2 ranks", "msgs/s", "ns/msg");
        printf("%-36s %12.0f %10.1f\n", "raw MPI_Isend/Irecv", n / raw, raw / n * 1e9);
        printf("%-36s %12.0f %10.1f\n", "mp_invoke, MPI, no aggregation", n / mpi_noagg,
               mpi_noagg / n * 1e9);
        printf("%-36s %12.0f %10.1f\n", "mp_invoke, MPI, 4 KiB aggregation", n / mpi_agg,
               mpi_agg / n * 1e9);
        printf("%-36s %12.0f %10.1f\n", "mp_invoke, shm, no aggregation", n / shm_noagg,
               shm_noagg / n * 1e9);
        printf("%-36s %12.0f %10.1f\n", "mp_invoke, shm, 4 KiB aggregation", n / shm_agg,
               shm_agg / n * 1e9);
        printf("{\"benchmark\": \"mpi_rate\", \"n\": %ld, \"size\": %d, \"window\": %d, "
               "\"raw_mpi_msgs_per_s\": %.0f, \"rt_mpi_noagg_per_s\": %.0f, "
               "\"rt_mpi_agg_per_s\": %.0f, \"rt_shm_noagg_per_s\": %.0f, "
               "\"rt_shm_agg_per_s\": %.0f, \"rt_mpi_noagg_over_raw\": %.2f, "
               "\"rt_overhead_ns_per_msg\": %.1f}\n",
               N, SIZE, W, n / raw, n / mpi_noagg, n / mpi_agg, n / shm_noagg, n / shm_agg,
               mpi_noagg / raw, (mpi_noagg - raw) / n * 1e9);
    }
    MPI_Finalize();
    return 0;
}
