"""Phase `commit`: the floor of every latency target (issue #16). A claim commits before its handler
starts, so no worker starts a handler sooner than one durable commit round trip after the step's
message is committed. Measured in the run, on the direct connection (`network.round_trips`:
`SELECT 1`, `BEGIN; SELECT 1; COMMIT`, which flushes nothing, and the durable commit of a one-row
UPDATE, which waits for the WAL flush; p50 and p99), and the disk's own flush time: `pg_test_fsync` in the cluster's directory, its
"one 8kB write" fdatasync figure (wal_sync_method's Linux default). pg_test_fsync is stopped once
that section is printed (about 5 s at `-s 1`), so the phase is bounded."""
import os
import re
import subprocess
import threading

from .common import log
from .network import round_trips

FSYNC_SECONDS_PER_TEST = 1
FSYNC_TIMEOUT_S = 60
SECTION = "using one 8kB write"
FDATASYNC = re.compile(r"^\s+fdatasync\s+([\d.]+) ops/sec\s+(\d+) usecs/op")


def pg_test_fsync(b):
    """{"fdatasync_8kb_ms", "fdatasync_8kb_ops_per_s", "file"} or {"not_measured": why}."""
    binary = os.path.join(os.path.dirname(b.a.pgbench), "pg_test_fsync")
    if not os.access(binary, os.X_OK):
        return {"not_measured": f"{binary} not found"}
    data_dir = b.q("SHOW data_directory")[0][0]
    path = os.path.join(os.path.dirname(data_dir), "bench_pg_test_fsync.tmp")   # the cluster's directory
    proc = subprocess.Popen([binary, "-s", str(FSYNC_SECONDS_PER_TEST), "-f", path],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, in_section, found = [], False, None
    timer = threading.Timer(FSYNC_TIMEOUT_S, proc.kill)   # a stalled disk ends the read below
    timer.start()
    try:
        for line in proc.stdout:   # pg_test_fsync flushes each line: read as it goes
            out.append(line.rstrip())
            if SECTION in line:
                in_section = True
            elif in_section and FDATASYNC.match(line):
                found = FDATASYNC.match(line)
            elif in_section and not line.strip():
                break   # end of the one-8kB-write section
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
        if os.path.exists(path):
            os.remove(path)
    if not found:
        return {"not_measured": f"no fdatasync line in pg_test_fsync's '{SECTION}' section: {out[-5:]}"}
    return {"fdatasync_8kb_ms": int(found.group(2)) / 1000, "fdatasync_8kb_ops_per_s": float(found.group(1)),
            "seconds_per_test": FSYNC_SECONDS_PER_TEST, "section": [l.strip() for l in out if "ops/sec" in l or "n/a" in l]}


def commit_floor(b):
    b.set_sync(True)
    r = {"direct": round_trips(b.a.db_url, n=b.cfg["commit_round_trips"])}
    r["pg_test_fsync"] = pg_test_fsync(b)
    b.results["commit_floor"] = r
    d, f = r["direct"], r["pg_test_fsync"]
    log(f"commit floor: durable commit round trip p50 {d['durable_commit_ms']} p99 {d['durable_commit_p99_ms']} ms; "
        f"BEGIN;SELECT 1;COMMIT p50 {d['commit_ms']} ms; SELECT 1 p50 {d['select_ms']} ms; "
        + (f"pg_test_fsync fdatasync 8 kB {f['fdatasync_8kb_ms']} ms" if "not_measured" not in f else f["not_measured"]))
