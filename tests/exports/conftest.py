"""A small real PIPE database for the export tests: PIPE on 2 PEs at five values of M (two
repetitions each), run from the normal build."""

import os
import subprocess

import pytest

from mprof.db.store import ProfileDB

M_VALUES = (200, 400, 800, 1600, 3200)


@pytest.fixture(scope="session")
def pipe_db(build_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipe-db")
    paths = []
    for m in M_VALUES:
        for rep in (1, 2):
            out = tmp / f"run-{m}-{rep}.json"
            subprocess.run(
                [
                    str(build_dir / "benchmarks/pipe/pipe"),
                    "2",
                    str(m),
                    "5",
                    "50",
                    "15",
                    "64",
                    "1000",
                ],
                env=dict(os.environ, MPROF_OUT=str(out)),
                check=True,
                stdout=subprocess.DEVNULL,
            )
            paths.append(out)
    db = tmp / "pipe.db"
    with ProfileDB(db) as store:
        store.import_files(paths)
    return db
