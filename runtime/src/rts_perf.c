/* rts_perf.c -- registration of the runtime's statistics record (see rts_perf.h). */
#include "rts_perf.h"

static const mp_stat_field rts_fields[] = {
    {"P", MP_STAT_U64},           {"Sched", MP_STAT_U64},       {"ThreadAlloc", MP_STAT_U64},
    {"ThreadEnable", MP_STAT_U64}, {"ThreadDisp", MP_STAT_U64},  {"ThreadContext", MP_STAT_U64},
    {"IdleCycle", MP_STAT_U64},   {"MsgSent", MP_STAT_U64},     {"FlowMsgSent", MP_STAT_U64},
    {"ByteSent", MP_STAT_U64},    {"FastMsgSent", MP_STAT_U64}, {"RemoteOp", MP_STAT_U64},
    {"ByteCopy", MP_STAT_U64},    {"IdleNs", MP_STAT_U64},
};
const mp_stat_module rts_stat_module = {"rts", sizeof rts_fields / sizeof rts_fields[0],
                                          rts_fields};

rts_stats_t *rts_stats_create(uint64_t object_id)
{
    return (rts_stats_t *)mp_stats_new(&rts_stat_module, object_id);
}
