# Instantiate the runtime's cost model (runtime/rts.perf) from rt_workload sweeps:
#   mprof bench workflows/rts/sweep-fit.toml
#   mprof bench workflows/rts/sweep-test.toml
#   mprof fit workflows/rts/model.tcl
# Paths are relative to this script.

FitDatabase:   ../../build/workflows/rts-fit.db
TestDatabase:  ../../build/workflows/rts-test.db
Interface:     ../../runtime/rts.perf

Measure cpu
Granularity pe
Normalize on
IgnoreTerm:    rts Idle ThreadContext
Fit
SaveModel ../../build/workflows/rts.model.json
