-- Migration 2: benchmark sweep points, so that `mprof bench` can resume an interrupted sweep.
-- A point is identified by program + parameters + PE count + environment + repetition index;
-- point_key is a SHA-256 over their canonical JSON.

CREATE TABLE sweep_points (
    point_key   TEXT    PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    program     TEXT    NOT NULL,
    params_json TEXT    NOT NULL,
    npes        INTEGER NOT NULL,
    env_json    TEXT    NOT NULL,
    repetition  INTEGER NOT NULL,
    recorded_at TEXT    NOT NULL
);
CREATE INDEX runs_program ON runs (program, npes);
