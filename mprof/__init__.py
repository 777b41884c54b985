"""mprof: performance profiling and cost modelling for fine-grained parallel programs.

One subpackage per workflow stage: iface -> (runtime) -> db/bench -> model -> latency ->
report -> gate.  Stages exchange plain data classes and JSON documents.
"""

__version__ = "0.1.0"
