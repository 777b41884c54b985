"""A stand-in machine-state probe: writes a run profile whose busy time is the next value of
STATE_FILE (one number per line, consumed from the top; the last one repeats forever).

usage: fake_probe.py STATE_FILE
"""

import json
import os
import sys

from mprof.bench.synth import make_profile

state = sys.argv[1]
with open(state) as f:
    values = f.read().split()
value = float(values[0])
if len(values) > 1:
    with open(state, "w") as f:
        f.write("\n".join(values[1:]) + "\n")
doc = make_profile("probe", [[("rts", {"P": 1})]], [value])
with open(os.environ["MPROF_OUT"], "w") as f:
    json.dump(doc, f)
