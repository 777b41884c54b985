/*
 * rts_perf.h -- statistics record of the runtime (module "rts", runtime/rts.perf).
 * Hand-written stand-in with the same shape as the hooks `mprof iface compile` generates,
 * so the runtime can switch to the generated header without source changes.
 */
#ifndef RTS_PERF_H
#define RTS_PERF_H
#include "mp.h"
#include <stdint.h>

typedef struct {
    uint64_t P;
    uint64_t Sched;
    uint64_t ThreadAlloc;
    uint64_t ThreadEnable;
    uint64_t ThreadDisp;
    uint64_t ThreadContext;
    uint64_t IdleCycle;
    uint64_t MsgSent;
    uint64_t FlowMsgSent;
    uint64_t ByteSent;
    uint64_t FastMsgSent;
    uint64_t RemoteOp;
    uint64_t ByteCopy;
    uint64_t IdleNs;
} rts_stats_t;

rts_stats_t *rts_stats_create(uint64_t object_id);
extern const mp_stat_module rts_stat_module; /* the descriptor, for embedded records */

#ifndef MPROF_DISABLE
#define RTS_INC(rec, stat, n) ((rec)->stat += (uint64_t)(n))
#define RTS_SET(rec, stat, v) ((rec)->stat = (uint64_t)(v))
#define RTS_READ(rec, stat) ((rec)->stat)
#else
#define RTS_INC(rec, stat, n) ((void)0)
#define RTS_SET(rec, stat, v) ((void)0)
#define RTS_READ(rec, stat) ((uint64_t)0)
#endif
#endif
