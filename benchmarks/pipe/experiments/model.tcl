# Cost models of PIPE (modules rts, graph, pipe) for the experiments of Wen 1995, §4.4.4/§4.5.4.
# Run by benchmarks/pipe/experiments/run.py, which sets MPROF_EXP_WORK (its work folder, holding
# pipe-fit.db and pipe-test.db) and MPROF_EXP_RTS_MODEL (the runtime's model).
#
# Like workflows/pipe/model.tcl (Fig 4.9), the runtime's communication and thread parameters are
# imported from the runtime session; unlike it, the Idle term (measured idle seconds, whose unit
# cost should be ~1) is fitted here, so that the Cost Profile shows IDLE as in Figs 4.12-4.19.

set work    $::env(MPROF_EXP_WORK)
set runtime $::env(MPROF_EXP_RTS_MODEL)

FitDatabase:     $work/pipe-fit.db
TestDatabase:    $work/pipe-test.db
Interface:       rts graph pipe

ImportParameter: Rts $runtime  Thread RemoteOp Msg ByteSent
IgnoreTerm:      Rts ByteCopy FastMsgSent ThreadContext
# channel bursts: left out, as in workflows/pipe/model.tcl (which says why)
IgnoreTerm:      Rts Notify Drain
# PIPE runs no preemptive thread from a message (DirectThread is zero)
IgnoreTerm:      Rts DirectThread
# nor forwards records (two hops only past 65 PEs with a thread each)
IgnoreTerm:      Rts Forward
# P = 1 for every module on every PE: the start-up terms are collinear; keep graph's.
IgnoreTerm:      Rts P
IgnoreTerm:      pipe P

Normalize on
Fit
SaveModel $work/pipe.model.json
