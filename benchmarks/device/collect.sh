#!/usr/bin/env bash
# What a device run returned, made into the figures here: the runtime's 16-core targets, the
# runtime and PIPE models fitted on the 16-core sweeps (the device has no Tcl to fit them),
# the 2-PE model tested on the 8-PE sweep, and the Chapter 5 studies' summaries.
#
#   benchmarks/device/collect.sh FILES_AT [DEST]
#
# FILES_AT is the folder the device tool put $OUT's files in (run.jsonl, targets.txt, the
# parts' logs, dbs.tgz, studies.tgz; any may be missing: a part cut off by the budget).  DEST
# (default docs/measurements/sixteen-cores/run-YYYY-MM-DD) receives:
#   run.jsonl, targets.txt, *.log   as they came back
#   targets.md                      benchmarks/device/targets.py --markdown of run.jsonl
#   rts-fit.txt, rts-test8.txt, pipe-fit.txt
#                                   mprof fit of the returned sweeps (the runtime model, the
#                                   same model tested on the 8-PE sweep with its misses, PIPE's)
#   models/                         the models those fits saved
#   <app>-study.md                  each returned study's summary, rendered here
# The development VM's own sweeps and models in build/workflows are put back afterwards, so
# that the studies and reports made here go on pricing with this machine's runtime model.
# Exit 0 when everything that came back was read; 1 when a step failed (each says which).
set -u
cd "$(dirname "$0")/../.."
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: collect.sh FILES_AT [DEST]" >&2; exit 2; }
from=$1
dest=${2:-docs/measurements/sixteen-cores/run-$(date +%F)}
[[ -d $from ]] || { echo "collect.sh: $from: no such folder" >&2; exit 2; }
PY=${PYTHON:-.venv/bin/python}
[[ -x $PY ]] || PY=python3
mkdir -p "$dest" || exit 2
rc=0
failed() { echo "collect.sh: $*" >&2; rc=1; }

# 1. the raw lines and the targets
for f in "$from"/run.jsonl "$from"/targets.txt "$from"/*.log; do
  [[ -f $f ]] && cp "$f" "$dest/"
done
if [[ -f $from/run.jsonl ]]; then
  "$PY" benchmarks/device/targets.py --markdown "$from/run.jsonl" > "$dest/targets.md" ||
    failed "targets.py could not read $from/run.jsonl (see $dest/targets.md)"
else
  failed "no run.jsonl in $from: the run ended before its first part"
fi

# 2. the sweeps: fitted here in place of this machine's, which are put back after
if [[ -f $from/dbs.tgz ]]; then
  work=build/workflows
  keep=$(mktemp -d)
  mkdir -p "$work" "$dest/models"
  for f in "$work"/*.db "$work"/*.model.json; do
    [[ -f $f ]] && mv "$f" "$keep/"
  done
  if tar xzf "$from/dbs.tgz"; then
    PATH=$PWD/.venv/bin:$PATH "$PY" -m mprof fit --misses 16 workflows/rts/model.tcl \
      > "$dest/rts-fit.txt" 2>&1 || failed "the runtime model's fit failed (see $dest/rts-fit.txt)"
    if [[ -f $work/rts-test8.db ]]; then
      MPROF_RTS_TEST=rts-test8.db PATH=$PWD/.venv/bin:$PATH "$PY" -m mprof fit --misses 8 \
        workflows/rts/model.tcl > "$dest/rts-test8.txt" 2>&1 ||
        failed "the 8-PE test of the runtime model failed (see $dest/rts-test8.txt)"
    fi
    if [[ -f $work/pipe-fit.db ]]; then
      PATH=$PWD/.venv/bin:$PATH "$PY" -m mprof fit workflows/pipe/model.tcl \
        > "$dest/pipe-fit.txt" 2>&1 || failed "PIPE's fit failed (see $dest/pipe-fit.txt)"
    fi
    for f in "$work"/*.model.json; do
      [[ -f $f ]] && cp "$f" "$dest/models/"
    done
  else
    failed "$from/dbs.tgz is no tar archive of build/workflows"
  fi
  rm -f "$work"/*.db "$work"/*.model.json
  for f in "$keep"/*; do
    [[ -e $f ]] && mv "$f" "$work/"
  done
  rmdir "$keep"
fi

# 3. the studies: each one's summary rendered from its runs' summary.json
if [[ -f $from/studies.tgz ]]; then
  tmp=$(mktemp -d)
  if tar xzf "$from/studies.tgz" -C "$tmp"; then
    for dir in "$tmp"/studies/*/; do
      app=$(basename "$dir")
      script=benchmarks/$app/experiments/run.py
      if [[ ! -f $script ]]; then
        failed "studies.tgz holds '$app', which is no study here"
      elif [[ ! -f $dir/summary.json ]]; then
        failed "$app: no summary.json (the study was cut off before its end)"
      elif PATH=$PWD/.venv/bin:$PATH "$PY" "$script" --render --out "$dir" >/dev/null; then
        cp "$dir/summary.md" "$dest/$app-study.md"
      else
        failed "$app: rendering its summary failed"
      fi
    done
  else
    failed "$from/studies.tgz is no tar archive"
  fi
  rm -rf "$tmp"
fi

echo "collect.sh: into $dest:"
ls "$dest"
[[ -f $dest/targets.md ]] && grep '^|' "$dest/targets.md"
for f in rts-fit rts-test8 pipe-fit; do
  [[ -f $dest/$f.txt ]] && echo "$f: $(grep -m2 -E '^(Sample|Test) MRE' "$dest/$f.txt" | tr '\n' ' ')"
done
exit $rc
