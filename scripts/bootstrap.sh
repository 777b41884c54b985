#!/usr/bin/env bash
# Installs what mprof needs on a Debian machine, idempotently:
#   - Debian packages (compilers, CMake, Open MPI, PAPI, OTF2, Eigen, Tcl, valgrind, ...)
#   - a Python virtual environment in .venv with mprof installed in editable mode.
# Safe to run again: it only acts on what is missing or out of date.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build clang clang-format libclang-rt-14-dev
  valgrind gdb pkg-config
  libopenmpi-dev openmpi-bin
  libpapi-dev papi-tools
  libotf2-trace-dev otf2-tools
  libeigen3-dev libhwloc-dev libhwloc-plugins
  tcl8.6 tcl8.6-dev
  libsqlite3-dev sqlite3
  python3 python3-venv python3-tk python3-dev
  chromium   # the report test renders the HTML page in a real headless browser
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PY" -m venv .venv
fi
# Reinstall when the package metadata changed since the last install.
stamp=.venv/.mprof-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
  echo "bootstrap: installing Python packages into .venv"
  # setuptools >= 77 reads pyproject.toml's license field (the package installs outside the
  # source tree too: docs/install.md); `ecosystem` are Extra-P, pycubexr, Hatchet, Thicket,
  # otf2, pandas, pyarrow and asv.
  .venv/bin/python -m pip install -q --upgrade pip 'setuptools>=77' wheel
  .venv/bin/python -m pip install -q -e '.[test,ecosystem]'
  touch "$stamp"
fi
