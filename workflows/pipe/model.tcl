# Instantiate the PIPE program's and the event graph's cost models with the runtime's
# parameters imported from a previous session (Wen 1995, Fig 4.9):
#   mprof bench workflows/rts/sweep-fit.toml && mprof bench workflows/rts/sweep-test.toml
#   mprof fit workflows/rts/model.tcl                 # writes build/workflows/rts.model.json
#   mprof bench workflows/pipe/sweep-fit.toml && mprof bench workflows/pipe/sweep-test.toml
#   mprof fit workflows/pipe/model.tcl
# Interfaces are found by module name: rts in runtime/, graph in instrumented-lib/eventgraph/ and
# pipe in benchmarks/pipe/ (see docs/fitting.md for the search path).

FitDatabase:     ../../build/workflows/pipe-fit.db
TestDatabase:    ../../build/workflows/pipe-test.db

Interface:       rts graph pipe

set runtime ../../build/workflows/rts.model.json
ImportParameter: Rts $runtime  Thread
ImportParameter: Rts $runtime  RemoteOp Msg
ImportParameter: Rts $runtime  ByteSent
ImportParameter: Rts $runtime  Idle

# Terms the runtime session could not determine (workflows/rts/model.tcl ignores them).
IgnoreTerm:      Rts ByteCopy FastMsgSent ThreadContext
# The start-up terms of all modules are P = 1 per PE and hence collinear; keep graph's.
IgnoreTerm:      Rts P
IgnoreTerm:      pipe P

Normalize on
Fit
SaveModel ../../build/workflows/pipe.model.json
