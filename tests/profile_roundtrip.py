"""Helpers of the tests of runs stored in a profile database.  What "the same run" means when
a run profile comes back out of the database as a RunProfile:
equal after putting each PE's category rows largest first, as RunProfile keeps them (their
order carries no meaning).  Numbers compare by value, so 5 and 5.0 are the same, as they are
to every stage after the database."""

import copy
import hashlib
import json

from mprof.db.store import canonical_json, machine_fingerprint, to_sql_u64


def normalized(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    for pe in doc["pes"]:
        if "categories" in pe:
            pe["categories"].sort(key=lambda c: (-c["cpu_s"], c["access"]))
    doc["pes"].sort(key=lambda p: p["pe"])
    return doc


def insert_as_schema_5(conn, doc: dict, *, tables_since=(3, 4, 5)) -> None:
    """Store `doc` as mprof did with database schema 5 (the document copy in runs.document,
    the tables beside it); `tables_since` leaves out what migrations 3 (CPU times), 4 (exact
    integers) and 5 (category times) added, as for a run imported before them."""
    text = canonical_json(doc)
    run_id = conn.execute(
        "INSERT INTO runs (program, backend, npes, started_at, elapsed_s, hostname, "
        "machine_fingerprint, source, imported_at, document_sha256, document) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 'old.json', 'then', ?, ?)",
        (
            doc["program"],
            doc.get("backend"),
            doc["npes"],
            doc.get("started_at"),
            doc.get("elapsed_s"),
            doc["machine"].get("hostname"),
            machine_fingerprint(doc),
            hashlib.sha256(text.encode()).hexdigest(),
            text,
        ),
    ).lastrowid
    for kind, key in (("param", "params"), ("setting", "settings")):
        for name, value in doc[key].items():
            conn.execute(
                "INSERT INTO run_params VALUES (?, ?, ?, ?, NULL)",
                (run_id, kind, name, json.dumps(value)),
            )
    for pe in doc["pes"]:
        cpu = 3 in tables_since
        categories = 5 in tables_since and "categories" in pe
        conn.execute(
            "INSERT INTO pe_samples (run_id, pe, elapsed_s, idle_s, cpu_s, idle_cpu_s, "
            "categories) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                pe["pe"],
                pe["elapsed_s"],
                pe["idle_s"],
                pe.get("cpu_s") if cpu else None,
                pe.get("idle_cpu_s") if cpu else None,
                1 if categories else None,
            ),
        )
        for row in pe.get("categories", []) if categories else []:
            conn.execute(
                "INSERT INTO category_time VALUES (?, ?, ?, ?, ?)",
                (run_id, pe["pe"], row["access"], row["cpu_s"], row["samples"]),
            )
        for obj in pe["objects"]:
            for stat, value in obj["stats"].items():
                exact = (
                    str(value)
                    if 4 in tables_since and isinstance(value, int) and abs(value) > 2**53
                    else None
                )
                conn.execute(
                    "INSERT INTO object_stats VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        pe["pe"],
                        to_sql_u64(obj["id"]),
                        obj["module"],
                        stat,
                        float(value),
                        exact,
                    ),
                )
        for row in pe["latency"]:
            conn.execute(
                "INSERT INTO latency VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    pe["pe"],
                    row["access"],
                    row["enabler"],
                    to_sql_u64(row["count"]),
                    row["observed_s"],
                    row["critical_s"],
                ),
            )
