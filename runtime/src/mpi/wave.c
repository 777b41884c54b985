/*
 * mpi/wave.c -- the MPI backend's termination detection: waves of MPI_Iallreduce over the
 * ranks' message counts (Mattern's four-counter method, see machine.c).
 */
#define _GNU_SOURCE
#include "mpi_internal.h"

#include <string.h>

static bool locally_idle(void)
{
    return mpr_mpi.idle && !mpr_mpi.ready.head && !mpr_mpi.large_on && !mpr_mpi.backlog_n;
}

void mpr_mpi_wave_progress(void)
{
    if (mpr_mpi.wave_on) {
        int flag = 0;
        mpr_mpi_check(MPI_Test(&mpr_mpi.wave, &flag, MPI_STATUS_IGNORE), "MPI_Test (wave)");
        if (!flag)
            return;
        mpr_mpi.wave_on = false;
        mpr_mpi.waves++;
        int64_t *w = mpr_mpi.wave_out;
        bool all_idle = w[W_ACTIVE] == 0;
        bool balanced = w[W_SENT] == w[W_RECV];
        if (all_idle && balanced && mpr_mpi.have_prev && mpr_mpi.prev[W_ACTIVE] == 0 &&
            mpr_mpi.prev[W_SENT] == mpr_mpi.prev[W_RECV] && mpr_mpi.prev[W_SENT] == w[W_SENT]) {
            mpr_run_end(MPR_RUN_QUIESCENT);
            return;
        }
        if (all_idle && w[W_VOTE] == mpr_mpi.size) {
            /* every PE idle past MPROF_IDLE_TIMEOUT and still no quiescence */
            mpr_run_end(MPR_RUN_IDLE_TIMEOUT);
            return;
        }
        memcpy(mpr_mpi.prev, w, sizeof mpr_mpi.prev);
        mpr_mpi.have_prev = true;
    }
    /* Short idle spells (a PE waiting for an answer) start no wave: a pending wave makes every
     * MPI call of every rank progress the collective until the last rank joins.  Idle polls
     * are counted rather than timed, so the idle loop reads no clock. */
    if (!mpr_run_over() && locally_idle() && ++mpr_mpi.idle_polls >= WAVE_POLLS) {
        double t = mpr_g.cfg.idle_timeout_s, now = mp_wtime();
        if (mpr_mpi.idle_since == 0)
            mpr_mpi.idle_since = now;
        mpr_mpi.wave_in[W_SENT] = mpr_mpi.sent;
        mpr_mpi.wave_in[W_RECV] = mpr_mpi.recvd;
        mpr_mpi.wave_in[W_ACTIVE] = 0;
        mpr_mpi.wave_in[W_VOTE] = t > 0 && now - mpr_mpi.idle_since > t;
        mpr_mpi_check(MPI_Iallreduce(mpr_mpi.wave_in, mpr_mpi.wave_out, W_N, MPI_INT64_T, MPI_SUM,
                                     mpr_mpi.comm, &mpr_mpi.wave),
                      "MPI_Iallreduce");
        mpr_mpi.wave_on = true;
    }
}

/* An idle PE moves messages, tells its partners it waits (once per idle spell) and takes part
 * in the waves. */
void mpr_mpi_idle_progress(mpr_pe *pe)
{
    mpr_mpi_progress(pe);
    mpr_mpi_notice_progress(pe);
    mpr_mpi_wave_progress();
}
