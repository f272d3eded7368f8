"""Latency: steps committed `enqueued`, then one pgmq_send_with_notify per step at an open-loop
rate with Poisson arrivals (exponential gaps, fixed seed: the same arrival times in every mode), so
that a step's wait for the PollingOnly poller is spread uniformly over the poll interval instead of
depending on the phase of a fixed period against it."""
import json
import os
import random
import subprocess
import sys
import threading
import time

import psycopg

from . import worker
from .common import LATENCY_C, LATENCY_SEED, MODES, POLL_MS, log, summary

PGQUEUER = "PgQueuer"   # its entry in results["latency"], next to the worker's modes
READY_TIMEOUT_S = 60


def arrivals(rate, count, seed=LATENCY_SEED):
    """Send times (s from the start) of `count` Poisson arrivals at `rate`/s, the same for a given
    rate: a Poisson process conditioned on `count` arrivals in count/rate seconds, i.e. sorted uniform
    times (the gaps are exponential; the run lasts exactly count/rate, so the rate is the target's)."""
    rng = random.Random(seed * 1_000_003 + rate)
    span = count / rate
    return sorted(rng.uniform(0, span) for _ in range(count))


def send_at(schedule, send):
    """Calls send(i) for the i-th arrival at its time (s after the start); returns {i: time.time()
    after send(i) returned, i.e. after the commit} and the rate achieved."""
    commits = {}
    t0 = time.time() + 0.05
    for i, at in enumerate(schedule):
        delay = t0 + at - time.time()
        if delay > 0:
            time.sleep(delay)
        send(i)
        commits[i] = time.time()
    return commits, len(schedule) / (time.time() - t0)


def _log(mode, rate, s, got, count, achieved):
    log(f"latency {mode:15} {rate:5}/s: start p50 {s['p50']:.2f} p99 {s['p99']:.2f} ms "
        f"({got}/{count}, sent at {achieved:.0f}/s)")


def measure(b, sender, rate):
    """One latency run against the running worker: `rate`/s Poisson arrivals for rate_seconds, each
    step committed `enqueued` first, then one send per arrival on `sender`; from each send's commit
    to its handler's start and to its result message. Returns the run's figures."""
    count = int(rate * b.cfg["rate_seconds"])
    a, z = b.seed(count)
    b.mark_enqueued(a, z)   # committed before any send, as orchestration does
    b.purge_results()
    sent, achieved = send_at(arrivals(rate, count), lambda i: b.send_steps(a + i, a + i, conn=sender))
    commits = {a + i: t for i, t in sent.items()}
    b.wait_results(count, timeout=30 + count / 50)
    rows = b.q("""
        SELECT n, extract(epoch FROM (ws.results->'metadata'->>'started_at')::timestamptz),
               extract(epoch FROM r.enqueued_at)
          FROM generate_series(%s::bigint, %s::bigint) n
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = md5('s'||n)::uuid
          JOIN pgmq.q_orchestration_step_results r ON (r.message->>'step_uuid')::uuid = ws.workflow_step_uuid
    """, (a, z))
    start = [(float(s) - commits[n]) * 1000 for n, s, _ in rows if s is not None]
    result = [(float(e) - commits[n]) * 1000 for n, _, e in rows]
    return {"achieved_rate": round(achieved, 1), "sent": count, "received": len(rows), "arrivals": "poisson",
            "seed": LATENCY_SEED, "to_handler_start_ms": summary(start), "to_result_ms": summary(result)}


def sender_connection(b):
    """The sender's own commits skip the WAL flush wait (the worker's stay durable): one durable
    commit per send caps a single sender at ~170/s on this machine, below the rates to measure."""
    return psycopg.connect(b.a.db_url, autocommit=True, options="-c TimeZone=UTC -c synchronous_commit=off")


def latency(b):
    out = {}
    sender = sender_connection(b)
    for mode in MODES:
        w = worker.start_worker(b, mode, LATENCY_C)
        try:
            for rate in b.cfg["rates"]:
                r = out.setdefault(mode, {})[str(rate)] = measure(b, sender, rate)
                s = r["to_handler_start_ms"]
                if s["p50"] is None:
                    raise SystemExit(f"bench: no result in latency {mode} {rate}/s; see {b.work}")
                _log(mode, rate, s, r.pop("received"), r["sent"], r["achieved_rate"])
        finally:
            worker.stop(w)
    out[PGQUEUER] = pgqueuer_latency(b, sender)
    sender.close()
    b.results["latency"] = out


def pgqueuer_latency(b, sender):
    """PgQueuer at the same rates with the same Poisson arrival times, measured as ours: from the
    enqueue's commit (its INSERT, whose trigger NOTIFYs, on the same synchronous_commit=off sender
    connection) to the handler's start (time.time() in the consumer process, benchlib/pgqueuer_consumer.py:
    batch_size = LATENCY_C, max_concurrent_tasks = 2 × LATENCY_C, dequeue_timeout = POLL_MS).
    No result message: `to_result_ms` is empty. `consumer_rss_idle_mb`: the consumer's VmRSS 1 s
    after it is ready (the same in every rate's entry)."""
    from pgqueuer.adapters.drivers.psycopg import SyncPsycopgDriver
    from pgqueuer.queries import SyncQueries
    starts_file = os.path.join(b.work, "pgqueuer-latency-starts.json")
    logf = open(os.path.join(b.work, "pgqueuer-latency.log"), "ab")
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "pgqueuer_consumer.py"),
                             b.a.db_url, str(LATENCY_C), str(POLL_MS), starts_file],
                            stdout=subprocess.PIPE, stderr=logf, text=True)
    out, commits = {}, {}
    try:
        timer = threading.Timer(READY_TIMEOUT_S, proc.kill)   # a consumer that never gets ready ends the read
        timer.start()
        ready = proc.stdout.readline().strip()
        timer.cancel()
        if ready != "READY":
            raise SystemExit(f"bench: PgQueuer's consumer did not start (said {ready!r}); see {b.work}/pgqueuer-latency.log")
        time.sleep(1.0)
        idle = worker.memory(proc)   # the consumer's RSS, idle, as the worker's is taken
        q = SyncQueries(SyncPsycopgDriver(sender))
        for rate in b.cfg["rates"]:
            count = int(rate * b.cfg["rate_seconds"])
            sent, achieved = send_at(arrivals(rate, count), lambda i: q.enqueue("noop", f"{rate}:{i}".encode(), 0))
            commits.update({f"{rate}:{i}": t for i, t in sent.items()})
            out[str(rate)] = {"achieved_rate": round(achieved, 1), "sent": count, "arrivals": "poisson", "seed": LATENCY_SEED}
            deadline = time.time() + 30 + count / 50
            while b.q("SELECT count(*) FROM pgqueuer")[0][0] and time.time() < deadline:
                time.sleep(0.1)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        logf.close()
    with open(starts_file) as f:
        starts = json.load(f)
    for rate, r in out.items():
        lat = [(starts[k] - commits[k]) * 1000 for k in commits if k.startswith(f"{rate}:") and k in starts]
        r.update({"to_handler_start_ms": summary(lat), "to_result_ms": summary([]),
                  "consumer_rss_idle_mb": round(idle["VmRSS"], 1)})
        if not lat:
            raise SystemExit(f"bench: PgQueuer started no job in latency {rate}/s; see {b.work}/pgqueuer-latency.log")
        _log(PGQUEUER, int(rate), r["to_handler_start_ms"], len(lat), r["sent"], r["achieved_rate"])
    return out
