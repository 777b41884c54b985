/*
 * trace.h -- OTF2 traces of a run (MPROF_TRACE=DIR, docs/tracing.md).
 *
 * The hot files call the runtime's tracing only through MPR_TRACE(call): with tracing off a
 * run pays one load of mpr_trace_on and a branch predicted not taken; built without OTF2 the
 * macro expands to nothing and `call` is not compiled.
 */
#ifndef MPR_TRACE_H
#define MPR_TRACE_H

#include "mpr.h"

#ifdef MPROF_HAVE_OTF2
extern bool mpr_trace_on; /* set once in mp_main, before the PEs start */
#define MPR_TRACE(call)                                                                            \
    do {                                                                                           \
        if (MPR_UNLIKELY(mpr_trace_on))                                                            \
            call;                                                                                  \
    } while (0)

/* mp_main: opens DIR/traces.otf2 when MPROF_TRACE is set (collective on the MPI backend) */
void mpr_trace_start(void);
#define MPR_TRACE_START() mpr_trace_start()
/* mp_main, after the PEs ended: definitions, then closes the archive (collective) */
void mpr_trace_finish(void);
/* the PE's thread, at its start and end (the end writes the statistics as metrics) */
void mpr_trace_pe_begin(mpr_pe *pe);
void mpr_trace_pe_end(mpr_pe *pe);
/* a fiber starts / ends running; it starts in the unclassified category */
void mpr_trace_fiber_begin(mpr_pe *pe);
void mpr_trace_fiber_end(mpr_pe *pe);
/* the executing code declared access category `access` */
void mpr_trace_access(mpr_pe *pe, unsigned access);
/* the PE goes idle / has work again */
void mpr_trace_idle_begin(mpr_pe *pe);
void mpr_trace_idle_end(mpr_pe *pe);
/* a remote invocation of `bytes` bytes to PE dst is made / a record from PE src arrives */
void mpr_trace_send(mpr_pe *pe, int dst, size_t bytes);
void mpr_trace_recv(mpr_pe *pe, int src, size_t bytes);
#else
#define MPR_TRACE(call) ((void)0)
#define MPR_TRACE_START() ((void)0)
#endif

#endif /* MPR_TRACE_H */
