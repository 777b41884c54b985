-- Migration 5: each PE's measured CPU time per access category (the run profile's optional
-- per-PE `categories`: the fiber category the PE's CPU-clock samples fell in, with the
-- scheduler and the idle loop as "(scheduler)" and "(idle)"; cpu_s adds up to the PE's).
-- pe_samples.categories is 1 for a PE whose profile had the array (even an empty one), NULL
-- for runs recorded before the runtime measured it.

CREATE TABLE category_time (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    pe      INTEGER NOT NULL,
    access  TEXT    NOT NULL,
    cpu_s   REAL    NOT NULL,
    samples INTEGER NOT NULL,
    PRIMARY KEY (run_id, pe, access)
);
ALTER TABLE pe_samples ADD COLUMN categories INTEGER;
