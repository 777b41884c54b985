"""mprof.history stage: results of `mprof gate` and of benchmarks kept per commit (docs/history.md)."""
