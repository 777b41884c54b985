"""mprof.history stage: gate and benchmark results kept per commit (docs/history.md)."""
