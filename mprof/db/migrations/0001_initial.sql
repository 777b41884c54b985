-- mprof profile database, migration 1: runs and everything measured in them.
-- Statistics are stored in long format (one row per statistic) so that SQL can slice them by
-- module, statistic or PE; the raw document is kept as well so `mprof db export` round-trips.

CREATE TABLE runs (
    id                  INTEGER PRIMARY KEY,
    program             TEXT    NOT NULL,
    backend             TEXT,
    npes                INTEGER NOT NULL CHECK (npes >= 1),
    started_at          TEXT,
    elapsed_s           REAL,
    hostname            TEXT,
    machine_fingerprint TEXT,
    source              TEXT,               -- file the profile was imported from
    imported_at         TEXT    NOT NULL,
    document_sha256     TEXT    NOT NULL UNIQUE,
    document            TEXT    NOT NULL    -- the validated run profile, canonical JSON
);

-- Program parameters (kind 'param') and runtime settings (kind 'setting').
-- value_json keeps the exact JSON value; value_num is set when the value is numeric, so that
-- `--where agg_bytes=1000` and `--where agg_bytes=1e3` select the same runs.
CREATE TABLE run_params (
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind       TEXT    NOT NULL CHECK (kind IN ('param', 'setting')),
    name       TEXT    NOT NULL,
    value_json TEXT    NOT NULL,
    value_num  REAL,
    PRIMARY KEY (run_id, kind, name)
);

CREATE TABLE pe_samples (
    run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    pe        INTEGER NOT NULL,
    elapsed_s REAL    NOT NULL,
    idle_s    REAL    NOT NULL,
    PRIMARY KEY (run_id, pe)
);

CREATE TABLE object_stats (
    run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    pe        INTEGER NOT NULL,
    object_id INTEGER NOT NULL,
    module    TEXT    NOT NULL,
    stat      TEXT    NOT NULL,
    value     REAL    NOT NULL,
    PRIMARY KEY (run_id, pe, object_id, stat)
);
CREATE INDEX object_stats_module ON object_stats (module, stat);

CREATE TABLE latency (
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    pe         INTEGER NOT NULL,
    access     TEXT    NOT NULL,
    enabler    TEXT    NOT NULL,
    count      INTEGER NOT NULL,
    observed_s REAL    NOT NULL,
    critical_s REAL    NOT NULL
);
CREATE INDEX latency_run ON latency (run_id, pe);
