"""mprof.iface stage."""
