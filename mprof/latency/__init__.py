"""mprof.latency stage."""
