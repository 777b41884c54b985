# Thin entry points; CMake builds the C parts, pytest drives the tests.
# `make demo` and `make test` install whatever is missing first (scripts/bootstrap.sh).

BUILD ?= build
VENV := .venv
PY := $(VENV)/bin/python
JOBS ?= 2

.PHONY: all bootstrap build demo test bench studies clean format

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(abspath $(PY)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@PATH=$(abspath $(VENV))/bin:$$PATH scripts/demo.sh

test: build
	@PATH=$(abspath $(VENV))/bin:$$PATH $(PY) -m pytest -q tests

bench: build
	@PATH=$(abspath $(VENV))/bin:$$PATH scripts/bench.sh

# The Chapter 5 studies: `make studies PES=8,16 SIZE=paper` on a 16-core machine.
PES ?= 2
SIZE ?= small
studies: build
	@PATH=$(abspath $(VENV))/bin:$$PATH benchmarks/studies.sh --pes $(PES) --size $(SIZE)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')
	@$(VENV)/bin/ruff format $$(git ls-files '*.py')

clean:
	rm -rf $(BUILD) build-asan build-tsan build-nostats build-overhead-stats build-overhead-latency build-notrace
