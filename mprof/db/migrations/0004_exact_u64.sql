-- Migration 4: the full range of 64-bit statistics, stored exactly.
-- object_stats.value is REAL, which holds integers exactly only up to 2^53, while a u64
-- counter reaches 2^64-1 (a counter taken below zero wraps there).  value_exact holds the
-- decimal text of an integer statistic beyond +-2^53 (NULL otherwise); readers prefer it.
-- Object ids and latency counts from 2^63 on do not fit SQLite's signed INTEGER: they are
-- stored as value - 2^64 (the same 64 bits read as signed) and mprof reads them back.

ALTER TABLE object_stats ADD COLUMN value_exact TEXT;
