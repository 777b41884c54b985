"""mprof.trace stage: OTF2 traces of the runtime (MPROF_TRACE) converted for other viewers."""
