"""mprof.report stage."""
