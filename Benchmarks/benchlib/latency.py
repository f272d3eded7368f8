"""Latency: steps committed `enqueued`, then one pgmq_send_with_notify per step at an open-loop
rate with Poisson arrivals (exponential gaps, fixed seed: the same arrival times in every mode), so
that a step's wait for the PollingOnly poller is spread uniformly over the poll interval instead of
depending on the phase of a fixed period against it."""
import random
import time

import psycopg

from . import worker
from .common import LATENCY_C, LATENCY_SEED, MODES, log, summary


def arrivals(rate, count, seed=LATENCY_SEED):
    """Send times (s from the start) of `count` Poisson arrivals at `rate`/s, the same for a given
    rate: a Poisson process conditioned on `count` arrivals in count/rate seconds, i.e. sorted uniform
    times (the gaps are exponential; the run lasts exactly count/rate, so the rate is the target's)."""
    rng = random.Random(seed * 1_000_003 + rate)
    span = count / rate
    return sorted(rng.uniform(0, span) for _ in range(count))


def latency(b):
    out = {}
    # The sender's own commits skip the WAL flush wait (the worker's stay durable): one durable commit
    # per send caps a single sender at ~170/s on this machine, below the rates to measure.
    sender = psycopg.connect(b.a.db_url, autocommit=True, options="-c TimeZone=UTC -c synchronous_commit=off")
    for mode in MODES:
        w = worker.start_worker(b, mode, LATENCY_C)
        try:
            for rate in b.cfg["rates"]:
                count = int(rate * b.cfg["rate_seconds"])
                schedule = arrivals(rate, count)
                a, z = b.seed(count)
                b.mark_enqueued(a, z)   # committed before any send, as orchestration does
                b.purge_results()
                commits = {}
                t0 = time.time() + 0.05
                for at, n in zip(schedule, range(a, z + 1)):
                    delay = t0 + at - time.time()
                    if delay > 0:
                        time.sleep(delay)
                    b.send_steps(n, n, conn=sender)
                    commits[n] = time.time()
                achieved = count / (time.time() - t0)
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
                out.setdefault(mode, {})[str(rate)] = {
                    "achieved_rate": round(achieved, 1), "sent": count, "arrivals": "poisson", "seed": LATENCY_SEED,
                    "to_handler_start_ms": summary(start), "to_result_ms": summary(result)}
                s = out[mode][str(rate)]["to_handler_start_ms"]
                if s["p50"] is None:
                    raise SystemExit(f"bench: no result in latency {mode} {rate}/s; see {b.work}")
                log(f"latency {mode:15} {rate:5}/s: start p50 {s['p50']:.2f} p99 {s['p99']:.2f} ms "
                    f"({len(rows)}/{count}, sent at {achieved:.0f}/s)")
        finally:
            worker.stop(w)
    sender.close()
    b.results["latency"] = out
