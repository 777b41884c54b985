"""mprof.bench stage."""
