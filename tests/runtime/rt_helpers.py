"""Running the runtime's C test programs and reading what they leave behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

TARGET = "mprof_runtime_tests"
SUPPRESSIONS = Path(__file__).resolve().parent / "tsan.supp"

# Sanitizer reports that fail a test even when the program exits 0.
SANITIZER_ERRORS = re.compile(
    r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
    r"runtime error:|ThreadSanitizer: reported"
)


def rts_statistics() -> list[str]:
    """The statistic names declared in runtime/rts.perf."""
    from mprof.iface import load_interface

    return [s.name for s in load_interface(REPO_ROOT / "runtime" / "rts.perf").statistics]


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    profile: dict | None = None
    env: dict = field(default_factory=dict)

    def pe_stats(self, pe: int) -> dict:
        """The rts statistics (object 0) of one PE."""
        for obj in self.profile["pes"][pe]["objects"]:
            if obj["module"] == "rts":
                return obj["stats"]
        raise AssertionError(f"PE {pe} has no rts object")

    def latency(self, pe: int, access: str, enabler: str) -> dict | None:
        for row in self.profile["pes"][pe]["latency"]:
            if row["access"] == access and row["enabler"] == enabler:
                return row
        return None

    def codes(self) -> dict[str, str]:
        """The "<case> <code>" lines a misuse scenario prints (tests/c/runtime/misuse.c)."""
        return dict(line.split() for line in self.stdout.splitlines() if line.count(" ") == 1)

    def check_cases(self, cases: dict) -> None:
        """Every case of {case: (code, message or None)} printed its code, and its message is
        on stderr."""
        codes = self.codes()
        for case, (code, message) in cases.items():
            assert codes.get(case) == str(code), f"{case}: {codes.get(case)}\n{self.describe()}"
            if message:
                assert message in self.stderr, f"{case}: no '{message}' on stderr\n{self.stderr}"

    def describe(self) -> str:
        return (
            f"$ {' '.join(self.args)}  (env {self.env})\nexit {self.returncode}\n"
            f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"
        )


def rt_workload_rts(cmake_build, out: Path, args: list, **env) -> list[dict]:
    """Runs build/benchmarks/micro/rt_workload ARGS (built first) with PATH and `env` alone,
    its run profile written to `out`; returns each PE's rts statistics, in PE order."""
    exe = cmake_build("build", targets=["rt_workload"]) / "benchmarks" / "micro" / "rt_workload"
    run_env = {
        "PATH": "/usr/bin:/bin",
        "MPROF_OUT": str(out),
        **{k: str(v) for k, v in env.items()},
    }
    run = subprocess.run(
        [str(exe), *map(str, args)], env=run_env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    per_pe = []
    for pe in json.loads(out.read_text())["pes"]:
        (rts,) = [o["stats"] for o in pe["objects"] if o["module"] == "rts"]
        per_pe.append(rts)
    return per_pe


# The worker threads a test's run gets unless it sets MPROF_WORKERS: the runtime's default is
# the CPUs the process may use, so counts that depend on which PEs share a worker (aggregation
# groups, flushes) would depend on the machine running the tests.  Two, as on the development
# machine; the runtime never runs more workers than PEs.
TEST_WORKERS = "2"


def clean_env(**overrides: str) -> dict[str, str]:
    """The process environment without MPROF_* settings, plus `overrides` (and MPROF_WORKERS
    set to TEST_WORKERS where `overrides` do not set it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env["MPROF_WORKERS"] = TEST_WORKERS
    env.update({k: str(v) for k, v in overrides.items()})
    return env


class RuntimeTests:
    """Runs the programs of one build variant (None, "address" or "thread")."""

    _cache: dict = {}

    def __init__(self, variant: str | None, bindir: Path):
        self.variant = variant
        self.bindir = bindir

    @classmethod
    def for_variant(cls, variant: str | None, cmake_build) -> "RuntimeTests":
        """`cmake_build` is the fixture of tests/conftest.py."""
        if variant not in cls._cache:
            bdir = cmake_build(sanitize=variant, targets=[TARGET])  # a failed build fails
            cls._cache[variant] = cls(variant, bdir / "tests" / "c")
        return cls._cache[variant]

    def run(
        self,
        program: str,
        *args,
        env: dict | None = None,
        timeout: float = 60,
        profile: bool = True,
        expect_rc: int | None = 0,
        cpus: set[int] | None = None,
    ) -> Run:
        """Runs rt_<program> with MPROF_* settings from `env`; parses the run profile.  `cpus`:
        the CPUs the program may run on (its affinity), else those of the tests."""
        exe = self.bindir / f"rt_{program}"
        settings = {k: str(v) for k, v in (env or {}).items()}
        extra = {}
        if self.variant == "address":
            extra["ASAN_OPTIONS"] = "abort_on_error=0:detect_leaks=1"
            extra["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
        elif self.variant == "thread":
            extra["TSAN_OPTIONS"] = (
                f"halt_on_error=1:second_deadlock_stack=1:suppressions={SUPPRESSIONS}"
            )
        with tempfile.TemporaryDirectory(prefix="mprof-rt-") as tmp:
            out = Path(tmp) / "profile.json"
            if profile:
                settings.setdefault("MPROF_OUT", str(out))
            cmd = [str(exe), *map(str, args)]
            proc = subprocess.run(
                cmd,
                env=clean_env(**settings, **extra),
                capture_output=True,
                text=True,
                timeout=timeout,
                preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
            )
            doc = json.loads(out.read_text()) if profile and out.exists() else None
        run = Run(cmd, proc.returncode, proc.stdout, proc.stderr, doc, settings)
        if self.variant:
            assert not SANITIZER_ERRORS.search(run.stderr), run.describe()
        if expect_rc is not None:
            assert run.returncode == expect_rc, run.describe()
        return run
