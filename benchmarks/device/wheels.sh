#!/usr/bin/env bash
# Fetches, here, the wheels of jsonschema and of what it needs for the 16-core device
# machine's Python 3.12, which lacks jsonschema, into .device/whl.  attrs and
# typing-extensions are there too, but in versions of their own: the wheels bring theirs.
# benchmarks/device/run.sh installs them into a folder of its own when `import jsonschema`
# fails.  `mprof bench` needs none of them; `mprof report` (the studies' runner) validates the
# profiles it reads and needs them.  Run after the packing step, which recreates .device/:
#   benchmarks/device/wheels.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -d .device ]] || { echo "wheels.sh: no .device/: run the packing step first" >&2; exit 2; }
rm -rf .device/whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .device/whl \
  jsonschema referencing jsonschema-specifications rpds-py attrs typing-extensions
ls .device/whl | sed 's/^/wheels.sh: /'
