"""Phase `network`: a network between the workers and PostgreSQL. On loopback a round trip costs
~0.05 ms, which hides how many round trips a step needs (upstream's worker: ~24 per step; ours: 2).
Here every connection goes through delay_proxy (Benchmarks/delayproxy, built by scripts/bench), which
delays each direction by d (0.25 ms and 1 ms: round trips of 0.5 ms and 2 ms), and at c = 16 durable
the same run measures: one round trip through the proxy (`SELECT 1`, and a durable
`BEGIN; SELECT 1; COMMIT`), our SQL floor and the upstream-shaped floor (pgbench), our worker's drain
(Swift no-op) and upstream's worker's drain (tasker-py 0.1.8, Python no-op). Seeding and checks use
the direct connection, so only the measured parties pay the delay."""
import contextlib
import re
import statistics
import subprocess
import time

import psycopg

from . import floor, worker
from .common import log
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
    """p50 of `SELECT 1` and of a durable `BEGIN; SELECT 1; COMMIT` (ms) on one connection to url."""
    with psycopg.connect(url, autocommit=True) as conn:
        def timed(fn):
            out = []
            for _ in range(n):
                t = time.perf_counter()
                fn()
                out.append((time.perf_counter() - t) * 1000)
            return round(statistics.median(out), 3)

        def commit():
            with conn.transaction():
                conn.execute("SELECT 1")
        return {"select_ms": timed(lambda: conn.execute("SELECT 1").fetchone()), "commit_ms": timed(commit)}


def network(b):
    R = b.results.setdefault("network", {})
    b.set_sync(True)
    if not hasattr(b, "floor_vars"):
        b.floor_vars = floor.variables()
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
