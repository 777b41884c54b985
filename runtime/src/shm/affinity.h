/*
 * shm/affinity.h -- binding the worker threads to processing units (shm backend; affinity.c).
 *
 * Unbound, the OS places and moves a worker as it likes: two PEs that exchange messages may
 * share a core's hyperthreads in one run and sit on different cores in the next, and a worker
 * that moves leaves its caches behind.  The same configuration then costs different CPU time
 * from run to run, which no statistic counts.  With MPROF_PIN=1 (the default) each worker is
 * bound to a processing unit of its own, one per physical core before any core's second
 * hardware thread, when the process may use at least as many units as there are workers.  With
 * more workers than units (more PEs than cores, or a launcher that bound the process to fewer
 * units) nothing is bound: the OS time-shares the workers.  Two runs started at the same time
 * on one machine would each bind to the same first units: run them with MPROF_PIN=0.
 */
#ifndef MPR_SHM_AFFINITY_H
#define MPR_SHM_AFFINITY_H

/* Chooses a processing unit for each of `nworkers` workers, when binding applies (MPROF_PIN,
 * the units this process may use); cpu_of[k] is worker k's OS CPU number.  Returns the number
 * of workers to bind: nworkers or 0. */
int mpr_shm_affinity_plan(int nworkers, int *cpu_of);

/* Binds the calling thread to OS CPU `cpu` (a worker, as it starts); a failure is reported
 * once and leaves the thread unbound. */
void mpr_shm_affinity_bind(int cpu);

#endif
