"""Throughput: the worker draining N enqueued steps, PgQueuer draining N jobs, and the phase that
interleaves them with the SQL floors per (durability, c)."""
import asyncio
import time

import psycopg

from . import floor, worker
from .common import log
from .server_cpu import ServerCPU, process_ticks, worker_per_step


def _mb(m, k):
    return round(m[k], 1) if m and k in m else None


def drain_one(b, c, durable, measure_memory=False):
    """The worker (Hybrid, max_concurrent_handlers = c) started idle; then n steps enqueued as
    orchestration does (see `drain_with`)."""
    return drain_with(b, b.cfg["drain_n"][c], lambda: worker.start_worker(b, "Hybrid", c), measure_memory)


class PGMQTransport:
    """Where a drain's steps go and its results come back: PGMQ (every drain's default). Another
    transport (benchlib/rabbitmq.py: the broker) has the same methods; `snapshot`/`per_step` add
    figures of its own (e.g. the broker's CPU per step)."""

    def __init__(self, b):
        self.b = b

    def purge_results(self):
        self.b.purge_results()

    def send_steps(self, lo, hi):
        self.b.send_steps(lo, hi)

    def wait_results(self, n, timeout):
        return self.b.wait_results(n, timeout)

    def snapshot(self):
        return None

    def per_step(self, before, after, steps):
        return {}


def enqueue_and_wait(b, t, a, z):
    """Steps a..z enqueued as orchestration does, in chunks of 500 (`pending→enqueued` committed,
    then `t` sends them), then waits for their results. Returns (seconds enqueueing, all results seen)."""
    t0 = time.time()
    for lo in range(a, z + 1, 500):
        hi = min(lo + 499, z)
        b.mark_enqueued(lo, hi)
        t.send_steps(lo, hi)
    enqueue_s = time.time() - t0
    n = z - a + 1
    return enqueue_s, t.wait_results(n, timeout=max(60, n / 20))


def completion_window(b, a, z):
    """(first claim, last result stored, steps completed) of steps a..z, by the database's clock."""
    return b.q("""
        SELECT extract(epoch FROM min(t.created_at) FILTER (WHERE t.to_state = 'in_progress')),
               extract(epoch FROM max(t.created_at) FILTER (WHERE t.to_state = 'enqueued_for_orchestration')),
               count(*) FILTER (WHERE t.to_state = 'enqueued_for_orchestration')
          FROM generate_series(%s::bigint, %s::bigint) n
          JOIN tasker.workflow_step_transitions t ON t.workflow_step_uuid = md5('s'||n)::uuid""", (a, z))[0]


def drain_with(b, n, start, measure_memory=False, transport=None):
    """`start()` gives a ready worker process; then n steps enqueued as orchestration does, in
    chunks of 500: `pending→enqueued` committed, then one pgmq_send_with_notify per step (in one
    statement per chunk, so enqueueing is never the bound); `transport` (default PGMQ) sends them
    and counts the results.
    steps/s = completed / (last `enqueued_for_orchestration` − first `in_progress`)."""
    t = transport or PGMQTransport(b)
    t.purge_results()
    w = start()
    try:
        a, z = b.seed(n)
        b.q("CHECKPOINT")
        time.sleep(1.0)
        idle = worker.memory(w)
        cpu = ServerCPU(b)
        cpu_before, worker_before, own_before = cpu.snapshot(), process_ticks(w.pid), t.snapshot()
        with worker.MemorySampler(w) as sampler:
            enqueue_s, ok = enqueue_and_wait(b, t, a, z)
        cpu_after, worker_after, own_after = cpu.snapshot(), process_ticks(w.pid), t.snapshot()
        after = worker.memory(w)
    finally:
        worker.stop(w)
    first, last, done = completion_window(b, a, z)
    if not done or first is None or last is None:
        raise SystemExit(f"bench: the worker completed no step of {n}; see {b.work}")
    r = {"steps": n, "completed": done, "ok": ok and done == n, "enqueue_s": round(enqueue_s, 3),
         "seconds": float(last - first), "steps_per_s": done / float(last - first), **in_flight(b, a, z),
         **ServerCPU.per_step(cpu_before, cpu_after, done), **worker_per_step(worker_before, worker_after, done),
         **t.per_step(own_before, own_after, done)}
    if "floor_payload_check" not in b.results and hasattr(b, "floor_vars"):   # the throughput phase ran
        b.results["floor_payload_check"] = floor.payload_check(b, a, z)
    if measure_memory:
        peak = sampler.peak or after
        r.update({"rss_idle_mb": _mb(idle, "VmRSS"), "rss_peak_mb": _mb(after, "VmHWM"), "rss_after_mb": _mb(after, "VmRSS"),
                  "rss_anon_idle_mb": _mb(idle, "RssAnon"), "rss_file_idle_mb": _mb(idle, "RssFile"),
                  "rss_shmem_idle_mb": _mb(idle, "RssShmem"), "threads_idle": idle.get("Threads"),
                  "rss_sampled_peak_mb": _mb(peak, "VmRSS"), "rss_anon_peak_mb": _mb(peak, "RssAnon"),
                  "rss_file_peak_mb": _mb(peak, "RssFile"), "rss_shmem_peak_mb": _mb(peak, "RssShmem"),
                  "threads_peak": max(sampler.max_threads, after.get("Threads", 0))})
    return r


def in_flight(b, a, z):
    """Steps claimed and not yet stored during the drain of steps a..z, from their transitions (no
    sampling, nothing added to the run): +1 at `in_progress`, −1 at `enqueued_for_orchestration`;
    the most at once and the time-weighted mean (what bounds a worker that cannot keep c steps in
    flight)."""
    most, mean = b.q("""
        WITH ev AS (
            SELECT t.created_at AS at, CASE t.to_state WHEN 'in_progress' THEN 1 ELSE -1 END AS d
              FROM generate_series(%s::bigint, %s::bigint) n
              JOIN tasker.workflow_step_transitions t ON t.workflow_step_uuid = md5('s'||n)::uuid
             WHERE t.to_state IN ('in_progress', 'enqueued_for_orchestration')),
        run AS (
            SELECT at, sum(d) OVER w AS inflight, lead(at) OVER w AS next FROM ev
            WINDOW w AS (ORDER BY at, d ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
        SELECT max(inflight),
               sum(inflight * extract(epoch FROM next - at)) / nullif(extract(epoch FROM max(at) - min(at)), 0)
          FROM run""", (a, z))[0]
    return {"in_flight_max": most, "in_flight_mean": round(float(mean), 2) if mean is not None else None}


def pgqueuer_one(b, c):
    """PgQueuer (psycopg driver) draining n no-op jobs: batch_size = c and max_concurrent_tasks = 2c
    (PgQueuer's minimum for that batch; an entrypoint concurrency_limit = c stalls its drain mode),
    drain mode; jobs/s from the first handler start to the return of run(). Server CPU per job as
    for the worker (every server process but the bench's own backend: PgQueuer's connection is its
    own); "worker" CPU per job = this process's CPU during run() (PgQueuer runs in the bench's
    interpreter here)."""
    import os
    from datetime import timedelta
    from pgqueuer import PsycopgDriver, Queries, QueueManager
    from pgqueuer.domain.types import QueueExecutionMode
    n = b.cfg["drain_n"][c]

    async def run():
        conn = await psycopg.AsyncConnection.connect(b.a.db_url, autocommit=True)
        q = Queries(PsycopgDriver(conn))
        if not await q.has_table("pgqueuer"):
            await q.install()
        await q.clear_queue(None)
        await q.enqueue(["noop"] * n, [None] * n, [0] * n)
        await conn.execute("CHECKPOINT")
        qm = QueueManager(q)
        first = []
        cpu = ServerCPU(b)

        @qm.entrypoint("noop")
        async def noop(job):
            if not first:
                first.append(time.time())

        cpu_before, own_before = cpu.snapshot(), process_ticks(os.getpid())
        await qm.run(mode=QueueExecutionMode.drain, batch_size=c, max_concurrent_tasks=2 * c,
                     dequeue_timeout=timedelta(seconds=1))
        end = time.time()
        cpu_after, own_after = cpu.snapshot(), process_ticks(os.getpid())
        left = (await (await conn.execute("SELECT count(*) FROM pgqueuer")).fetchone())[0]
        await conn.close()
        return {"jobs": n, "left": left, "seconds": end - first[0], "steps_per_s": n / (end - first[0]),
                **ServerCPU.per_step(cpu_before, cpu_after, n), **worker_per_step(own_before, own_after, n)}

    return asyncio.run(run())


MEMORY_KEYS = ("rss_anon_idle_mb", "rss_file_idle_mb", "rss_shmem_idle_mb", "threads_idle", "rss_sampled_peak_mb",
               "rss_anon_peak_mb", "rss_file_peak_mb", "rss_shmem_peak_mb", "threads_peak")


def throughput(b, phases):
    """Interleaved per (durability, c): SQL floors, worker drain, PgQueuer, back to back, so that
    each ratio compares runs minutes apart at most."""
    floor.prepare(b)
    if "floor" in phases:
        b.results["floor_statements"] = {script: list(slots.values()) for script, slots in floor.SCRIPT_STATEMENTS.items()}
    R = b.results
    for durable in (True, False):
        key = "durable" if durable else "async"
        b.set_sync(durable)
        for c in ((1, 4, 16) if durable else b.cfg["async_c"]):
            if "floor" in phases:
                floor.run_floors(b, key, c)
            if "drain" in phases:
                r = drain_one(b, c, durable, measure_memory=(durable and c == 16))
                R.setdefault("drain", {}).setdefault(key, {})[str(c)] = r
                log(f"drain worker   {key:7} c={c:2}: {r['steps_per_s']:8.1f} steps/s ({r['completed']}/{r['steps']}), "
                    f"server CPU {r['server_cpu_ms_per_step']:.3f} ms/step")
                if "rss_idle_mb" in r:
                    R["memory"] = {"queued": r["steps"], "rss_idle_mb": r["rss_idle_mb"], "rss_peak_mb": r["rss_peak_mb"],
                                   "rss_after_drain_mb": r["rss_after_mb"], **{k: r[k] for k in MEMORY_KEYS}}
            if "pgqueuer" in phases:
                r = R.setdefault("pgqueuer", {}).setdefault(key, {})[str(c)] = pgqueuer_one(b, c)
                log(f"drain pgqueuer {key:7} c={c:2}: {r['steps_per_s']:8.1f} jobs/s")
    b.set_sync(True)
