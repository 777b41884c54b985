"""mprof.gate stage."""
