"""cmake/MprofInterface.cmake: mprof_add_interface() generates, compiles and regenerates."""

import os
import shutil
import sys
import time

import pytest
from iface_helpers import INTERFACES, ROOT, run
from tooling import require_tool


@pytest.fixture(autouse=True)
def _tools_installed():
    require_tool("cmake")
    require_tool("cc")


PROJECT = """
cmake_minimum_required(VERSION 3.20)
project(ifacetest C)
list(APPEND CMAKE_MODULE_PATH "{root}/cmake")
include(MprofInterface)
add_executable(prog main.c)
target_compile_options(prog PRIVATE -Wall -Wextra -Werror)
target_compile_definitions(prog PRIVATE MPROF_DISABLE)
mprof_add_interface(prog pipe.perf)
"""

MAIN = """
#include <stdio.h>
#include "pipe_perf.h"
int main(void) {
    pipe_stats_t s = {0};
    PIPE_SET(&s, M, 3);
    s.M = 6; s.T = 7;
    printf("%g %d\\n", pipe_term_Comp(&s), PIPE_NTERMS);
    return 0;
}
"""


def test_mprof_add_interface(tmp_path):
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(PROJECT.format(root=ROOT))
    (src / "main.c").write_text(MAIN)
    perf = src / "pipe.perf"
    perf.write_text(INTERFACES["pipe"].read_text())
    gen = [] if not shutil.which("ninja") else ["-G", "Ninja"]
    run(["cmake", "-S", src, "-B", build, *gen, f"-DPython3_EXECUTABLE={sys.executable}"])
    run(["cmake", "--build", build])
    assert (build / "perf" / "pipe_perf.h").exists()
    assert run([build / "prog"]).stdout.split() == ["42", "2"]

    # Editing the interface regenerates the hooks on the next build.
    time.sleep(1.1)  # coarse file-system timestamps
    perf.write_text(perf.read_text().replace("{ Comp = M * T; }", "{ Comp = M + T; }"))
    os.utime(perf)
    run(["cmake", "--build", build])
    assert run([build / "prog"]).stdout.split() == ["13", "2"]
