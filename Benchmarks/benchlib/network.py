"""Phase `network`: a network between the workers and PostgreSQL. On loopback a round trip costs
~0.05 ms, which hides how many round trips a step needs (upstream's worker: ~24 per step; ours: 2).
Here every connection goes through delay_proxy (Benchmarks/delayproxy, built by scripts/bench), which
delays each direction by d (0.25 ms and 1 ms: round trips of 0.5 ms and 2 ms), and at c = 16 durable
the same run measures: round trips through the proxy (`SELECT 1`, `BEGIN; SELECT 1; COMMIT`, and a
durable commit: see `round_trips`), our SQL floor and the upstream-shaped floor (pgbench), our worker's drain
(Swift no-op) and upstream's worker's drain (tasker-py 0.1.8, Python no-op). Seeding and checks use
the direct connection, so only the measured parties pay the delay."""
import contextlib
import re
import subprocess
import time

import psycopg

from . import floor, worker
from .common import log, pct
from .drain import drain_with
from .ffi import upstream_drain

DELAYS_US = (250, 1000)
C = 16


@contextlib.contextmanager
def proxied(b, delay_us):
    """b.a.db_url pointing at a delay_proxy in front of the server while the block runs."""
    direct = b.a.db_url
    m = re.match(r"^(postgres(?:ql)?://[^@/]*@)([^:/]+):(\d+)(/.*)$", direct)
    if not m:
        raise SystemExit(f"bench: network phase: cannot read host and port from {direct}")
    proxy = subprocess.Popen([b.a.delay_proxy, "0", m.group(2), m.group(3), str(delay_us)],
                             stdout=subprocess.PIPE, text=True)
    line = proxy.stdout.readline().split()
    if len(line) != 2 or line[0] != "READY":
        proxy.kill()
        raise SystemExit(f"bench: delay_proxy did not start (said {line})")
    b.a.db_url = f"{m.group(1)}127.0.0.1:{line[1]}{m.group(4)}"
    try:
        yield b.a.db_url
    finally:
        b.a.db_url = direct
        proxy.kill()
        proxy.wait()


def round_trips(url, n=200):
    """Round trips (ms) on one connection to url, n of each, p50 and p99:
      select_ms          `SELECT 1`
      commit_ms          `BEGIN; SELECT 1; COMMIT` in one message (a read-only transaction: its
                         commit writes no WAL, so no flush: a round trip and a commit's own work)
      durable_commit_ms  `BEGIN; UPDATE bench.commit_probe …; COMMIT` in one message: the transaction
                         writes WAL, so its commit waits for the WAL flush (synchronous_commit = on;
                         PostgreSQL does not flush for a transaction that wrote no WAL, even one with
                         an xid): the floor of any claim that commits before its handler starts
    (`*_p99_ms` the p99 of each)."""
    with psycopg.connect(url, autocommit=True) as conn:
        def timed(sql):
            out = []
            for _ in range(n):
                t = time.perf_counter()
                conn.execute(sql)   # no parameters: the simple protocol, one message, one round trip
                out.append((time.perf_counter() - t) * 1000)
            return round(pct(out, 50), 3), round(pct(out, 99), 3)

        conn.execute("CREATE TABLE IF NOT EXISTS bench.commit_probe (id int PRIMARY KEY, n bigint NOT NULL)")
        conn.execute("INSERT INTO bench.commit_probe VALUES (1, 0) ON CONFLICT (id) DO NOTHING")
        r = {"n": n}
        for key, sql in (("select", "SELECT 1"), ("commit", "BEGIN; SELECT 1; COMMIT"),
                         ("durable_commit", "BEGIN; UPDATE bench.commit_probe SET n = n + 1 WHERE id = 1; COMMIT")):
            r[f"{key}_ms"], r[f"{key}_p99_ms"] = timed(sql)
        return r


def network(b):
    R = b.results.setdefault("network", {})
    b.set_sync(True)
    if not hasattr(b, "floor_vars"):
        floor.prepare(b)
    R["direct"] = round_trips(b.a.db_url)
    for delay_us in DELAYS_US:
        r = R.setdefault(f"{delay_us}us", {"delay_each_way_ms": delay_us / 1000})
        with proxied(b, delay_us) as url:
            r["round_trip"] = round_trips(url)
            log(f"network {delay_us:4} us: SELECT 1 p50 {r['round_trip']['select_ms']} ms, "
                f"BEGIN;SELECT 1;COMMIT p50 {r['round_trip']['commit_ms']} ms")
            for shape in ("ours", "upstream"):
                r[f"floor_{shape}"] = floor.floor_one(b, shape, C)
                log(f"network {delay_us:4} us: floor {shape:8} c={C}: {r[f'floor_{shape}']['steps_per_s']:8.1f} steps/s")
            n = b.cfg["drain_n"][C]
            r["worker"] = drain_with(b, n, lambda: worker.start_worker(b, "Hybrid", C))
            log(f"network {delay_us:4} us: worker         c={C}: {r['worker']['steps_per_s']:8.1f} steps/s")
            r["upstream_worker"] = upstream_drain(b, C, b.cfg["ffi_upstream_n"])
            log(f"network {delay_us:4} us: upstream worker c={C}: {r['upstream_worker']['steps_per_s']:8.1f} steps/s "
                "(tasker-py 0.1.8, Python no-op)")
        w = r["worker"]["steps_per_s"]
        r["worker_over_upstream_floor"] = round(w / r["floor_upstream"]["steps_per_s"], 2)
        r["worker_over_sql_floor"] = round(w / r["floor_ours"]["steps_per_s"], 2)
        r["worker_over_upstream_worker"] = round(w / r["upstream_worker"]["steps_per_s"], 2)
        log(f"network {delay_us:4} us: worker ÷ upstream-shaped floor {r['worker_over_upstream_floor']}, "
            f"÷ our SQL floor {r['worker_over_sql_floor']}, ÷ upstream worker {r['worker_over_upstream_worker']}")
