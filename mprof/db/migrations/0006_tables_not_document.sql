-- Migration 6: the tables hold everything a run profile has, and the stored copy of the
-- document goes.  Until now the fields below were only in runs.document; they get columns and
-- tables of their own, are filled from each stored document with SQLite's JSON functions, and
-- the document column is dropped (document_sha256 stays: it makes imports idempotent).
-- mprof.db.store reads a run back from these tables alone (RunProfile.to_document gives the
-- document again, numbers as SQLite keeps them).

-- JSON text (argv, accesses: arrays of strings; bench: what `mprof bench` measured around the
-- run, opaque to the database); NULL where the profile had none.
ALTER TABLE runs ADD COLUMN argv TEXT;
ALTER TABLE runs ADD COLUMN accesses TEXT;
ALTER TABLE runs ADD COLUMN bench TEXT;
ALTER TABLE runs ADD COLUMN machine_cpu TEXT;
ALTER TABLE runs ADD COLUMN machine_cores INTEGER;
-- 1 where the profile named no machine fingerprint and machine_fingerprint was derived from
-- hostname, cpu and cores (mprof.db.store.machine_fingerprint): the document had none.
ALTER TABLE runs ADD COLUMN fingerprint_derived INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN profile_version INTEGER;  -- the profile's schema_version

-- The interfaces (.perf texts) the program was built with, by module, in profile order:
-- mprof.iface.registry finds the text by its digest.
CREATE TABLE run_interfaces (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name   TEXT    NOT NULL,
    digest TEXT    NOT NULL
);
CREATE INDEX run_interfaces_run ON run_interfaces (run_id);

-- Statistics an object's PE could not count (a PAPI event), with the reason; such a statistic
-- has no object_stats row.  module and position (the object's index in its PE's list of
-- objects) are kept so that an object whose statistics were all absent is still known, in its
-- place; the others keep their place in the order of their object_stats rows.
CREATE TABLE object_absent (
    run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    pe        INTEGER NOT NULL,
    position  INTEGER NOT NULL,
    object_id INTEGER NOT NULL,
    module    TEXT    NOT NULL,
    stat      TEXT    NOT NULL,
    reason    TEXT    NOT NULL,
    PRIMARY KEY (run_id, pe, object_id, stat)
);

UPDATE runs SET
    argv = json_extract(document, '$.argv'),
    accesses = json_extract(document, '$.accesses'),
    bench = json_extract(document, '$.bench'),
    machine_cpu = json_extract(document, '$.machine.cpu'),
    machine_cores = json_extract(document, '$.machine.cores'),
    fingerprint_derived = coalesce(json_extract(document, '$.machine.fingerprint'), '') = '',
    profile_version = json_extract(document, '$.schema_version');

INSERT INTO run_interfaces (run_id, name, digest)
SELECT r.id, json_extract(i.value, '$.name'), json_extract(i.value, '$.digest')
FROM runs AS r, json_each(r.document, '$.interfaces') AS i
ORDER BY r.id, i.key;

INSERT INTO object_absent (run_id, pe, position, object_id, module, stat, reason)
SELECT r.id, json_extract(p.value, '$.pe'), o.key, json_extract(o.value, '$.id'),
       json_extract(o.value, '$.module'), a.key, a.value
FROM runs AS r, json_each(r.document, '$.pes') AS p, json_each(p.value, '$.objects') AS o,
     json_each(o.value, '$.absent') AS a;

-- Runs imported before migration 3 or 5 have their CPU times and category times only in the
-- document.
UPDATE pe_samples SET
    cpu_s = (SELECT json_extract(p.value, '$.cpu_s')
             FROM runs AS r, json_each(r.document, '$.pes') AS p
             WHERE r.id = pe_samples.run_id AND json_extract(p.value, '$.pe') = pe_samples.pe),
    idle_cpu_s = (SELECT json_extract(p.value, '$.idle_cpu_s')
                  FROM runs AS r, json_each(r.document, '$.pes') AS p
                  WHERE r.id = pe_samples.run_id
                    AND json_extract(p.value, '$.pe') = pe_samples.pe)
WHERE cpu_s IS NULL;

INSERT INTO category_time (run_id, pe, access, cpu_s, samples)
SELECT r.id, s.pe, json_extract(c.value, '$.access'), json_extract(c.value, '$.cpu_s'),
       json_extract(c.value, '$.samples')
FROM runs AS r, json_each(r.document, '$.pes') AS p, json_each(p.value, '$.categories') AS c,
     pe_samples AS s
WHERE s.run_id = r.id AND s.pe = json_extract(p.value, '$.pe') AND s.categories IS NULL;

UPDATE pe_samples SET categories = 1
WHERE categories IS NULL AND EXISTS (
    SELECT 1 FROM runs AS r, json_each(r.document, '$.pes') AS p
    WHERE r.id = pe_samples.run_id AND json_extract(p.value, '$.pe') = pe_samples.pe
      AND json_type(p.value, '$.categories') = 'array');

-- Integers beyond 2^53 of runs imported before migration 4 (which kept them exact only for
-- new runs); those the JSON functions read as integers, i.e. below 2^63.
UPDATE object_stats SET value_exact = (
    SELECT CAST(json_extract(o.value, '$.stats."' || object_stats.stat || '"') AS TEXT)
    FROM runs AS r, json_each(r.document, '$.pes') AS p, json_each(p.value, '$.objects') AS o
    WHERE r.id = object_stats.run_id AND json_extract(p.value, '$.pe') = object_stats.pe
      AND json_extract(o.value, '$.id') = object_stats.object_id
      AND json_type(o.value, '$.stats."' || object_stats.stat || '"') = 'integer')
WHERE value_exact IS NULL AND abs(value) > 9007199254740992.0;

ALTER TABLE runs DROP COLUMN document;
