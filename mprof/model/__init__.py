"""mprof.model stage."""
