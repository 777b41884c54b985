"""mprof.db stage."""
