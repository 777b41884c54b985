"""Exports of run profiles to the modelling and analysis tools of the HPC ecosystem:
Extra-P JSON Lines (extrap.py), CUBE4 experiment folders (cube.py) and Hatchet GraphFrames
(mprof.hatchet).  docs/exports.md describes the call tree they share (calltree.py)."""
