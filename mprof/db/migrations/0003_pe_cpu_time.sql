-- Run profile schema version 2: each PE's thread CPU time and the CPU time of its idle loop.
-- NULL for runs recorded from version 1 profiles, which did not measure them.
ALTER TABLE pe_samples ADD COLUMN cpu_s REAL;
ALTER TABLE pe_samples ADD COLUMN idle_cpu_s REAL;
