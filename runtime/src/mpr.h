/*
 * mpr.h -- internal declarations shared by the runtime's source files: the umbrella that
 * includes every internal header.  A source file may include just the headers it needs.
 *
 * Everything here is PE-local unless marked otherwise: a PE's fibers, counters, queues and
 * statistics are only touched by the thread that runs that PE, so none of them need atomics.
 * The only shared state is the machine layer (message queues, termination word).
 *
 * One header per concept, in three layers (each header includes what it uses):
 *   mpr_base.h     limits, build switches, compiler hints, error reporting
 *   mpr_fiber.h    the fiber record: states, storage classes, tag word, header layout
 *   mpr_counter.h  counters
 *   mpr_queue.h    scheduler queues (built-in FIFO lists, custom scheduler slots)
 *   mpr_comm.h     message records and buffers, aggregation
 *   mpr_carrier.h  arrived FIFO records run from their message buffer
 *   mpr_obj.h      distributed objects
 *   mpr_latency.h  a cell of the latency table
 *   mpr_stats.h    statistics records, access category names, the run profile
 *   mpr_run.h      the run's global state, its end, hang report and watchdog
 *   mpr_sample.h   CPU time per access category, by sampling
 * above them the PE, whose struct embeds several of those types,
 *   mpr_pe.h       the PE struct and the calling thread's PE
 * and above the PE the inline hot paths, which need its layout:
 *   mpr_sched.h    enabling fibers, the schedule loop
 *   mpr_spawn.h    fiber storage and creation
 *   mpr_account.h  the executing code's access category, idle total and dispatch key
 * The machine layer (backends) is machine.h.
 */
#ifndef MPR_H
#define MPR_H

#include "mpr_base.h"
#include "mpr_fiber.h"
#include "mpr_counter.h"
#include "mpr_queue.h"
#include "mpr_comm.h"
#include "mpr_carrier.h"
#include "mpr_obj.h"
#include "mpr_latency.h"
#include "mpr_stats.h"
#include "mpr_run.h"
#include "mpr_sample.h"
#include "mpr_pe.h"
#include "mpr_sched.h"
#include "mpr_spawn.h"
#include "mpr_account.h"

/* the machine layer: backend table and wrappers (machine.h) */
#include "machine.h"

#endif /* MPR_H */
