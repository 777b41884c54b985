# Modeling script of the gate workload (benchmarks/gate/gate_ops.c): one cost per insert
# (OP_A), one per lookup (OP_B) and a start-up cost per PE.  `mprof gate --fit` replaces the
# fit database by each side's runs; standalone, fit a database recorded with sweep.toml.
FitDatabase: ../../build/gate/gate_ops.db
Interface: gateops.perf
