"""The call tree that the exports of run profiles share (calltree.py, docs/exports.md); the
writers themselves are formats of mprof.io: Extra-P JSON Lines (mprof.io.extrap), CUBE4
experiment folders (mprof.io.cube), and Hatchet GraphFrames (mprof.hatchet)."""
