#!/usr/bin/env python3
"""The benchmark driver behind scripts/bench (issue #6). Run it through scripts/bench, which starts
the private PostgreSQL, migrates it and builds the release binary; see docs/benchmarks.md.

Phases (all against the same server and database, in one run):
  floor     pgbench: our per-step SQL (pgbench/ours.sql) and the upstream-shaped SQL
            (pgbench/upstream.sql), c = 1, 4, 16, durable and synchronous_commit=off
  drain     tasker-worker run, max_concurrent_handlers = c, N no-op steps enqueued as orchestration does
  pgqueuer  PgQueuer draining N no-op jobs with an entrypoint concurrency limit of c
  latency   open-loop pgmq_send_with_notify at fixed rates, Hybrid / EventDrivenOnly / PollingOnly
  memory    worker RSS idle and peak (VmHWM) during the largest drain
  e2e       tasker-worker orchestrate + run, 4-step linear task, request → task `complete`
"""
import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))
QUEUE = "worker_bench_queue"
RESULTS_QUEUE = "orchestration_step_results"

# floor_steps / drain_n per concurrency c; async_c: the c measured with synchronous_commit=off too.
QUICK = dict(floor_steps={1: 100, 4: 200, 16: 400}, drain_n={1: 200, 4: 400, 16: 1000}, async_c=[16],
             rates=[50, 200], rate_seconds=2.0, e2e_tasks=20, e2e_rate=10, e2e_cli=3)
FULL = dict(floor_steps={1: 1000, 4: 3000, 16: 8000}, drain_n={1: 2000, 4: 5000, 16: 10000}, async_c=[1, 4, 16],
            rates=[50, 200, 1000], rate_seconds=10.0, e2e_tasks=200, e2e_rate=10, e2e_cli=10)
LATENCY_C = 16          # max_concurrent_handlers of the latency and end-to-end workers
POLL_MS = 100           # fallback_poller.polling_interval_ms of every bench worker
MODES = ["Hybrid", "EventDrivenOnly", "PollingOnly"]


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def pct(values, p):
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summary(values):
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95), "p99": pct(values, 99),
            "max": max(values) if values else None}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bench:
    def __init__(self, a):
        self.a = a
        self.cfg = QUICK if a.quick else FULL
        self.db = psycopg.connect(a.db_url, autocommit=True, options="-c TimeZone=UTC")
        logs = os.path.join(a.repo, ".tasker", "bench")   # worker/orchestration logs and configs of this run
        os.makedirs(logs, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix="run-", dir=logs)
        self.templates = os.path.join(self.work, "templates")
        os.makedirs(self.templates)
        shutil.copy(os.path.join(HERE, "templates", "bench.yaml"), self.templates)
        shutil.copy(os.path.join(a.repo, "config/tasks/examples/linear_workflow.yaml"), self.templates)
        self.results = {"mode": "quick" if a.quick else "full"}

    # ---------------------------------------------------------------- database helpers
    def q(self, sql, params=None):
        cur = self.db.execute(sql, params)
        return cur.fetchall() if cur.description else None

    def set_sync(self, durable):
        self.q(f"ALTER SYSTEM SET synchronous_commit = {'on' if durable else 'off'}")
        self.q("SELECT pg_reload_conf()")
        time.sleep(0.2)

    def purge_results(self):
        self.q("SELECT pgmq.purge_queue(%s)", (RESULTS_QUEUE,))

    def seed(self, count, enqueued=False):
        """`count` one-step bench tasks with their `noop` step `pending` (orchestration's task
        initializer); with `enqueued`, also `pending→enqueued` and a queue message (pgmq.send,
        recorded in bench.floor_map) for pgbench. Uuids are md5('t'|'s'|'c' || n)."""
        a = self.q("SELECT nextval('bench.n_seq')")[0][0]
        b = a + count - 1
        self.q("SELECT setval('bench.n_seq', %s)", (b,))
        p = {"a": a, "b": b, "nt": self.named_task, "ns": self.named_step}
        with self.db.transaction():
            self.q("""INSERT INTO tasker.tasks (task_uuid, named_task_uuid, requested_at, identity_hash, correlation_id,
                          context, created_at, updated_at)
                      SELECT md5('t'||n)::uuid, %(nt)s, NOW(), md5('t'||n), md5('c'||n)::uuid, '{}'::jsonb, NOW(), NOW()
                        FROM generate_series(%(a)s::bigint, %(b)s::bigint) n""", p)
            self.q("""INSERT INTO tasker.task_transitions (task_uuid, to_state, from_state, metadata, sort_key, most_recent,
                          created_at, updated_at)
                      SELECT md5('t'||n)::uuid, 'steps_in_process', NULL, '{}', 1, true, NOW(), NOW()
                        FROM generate_series(%(a)s::bigint, %(b)s::bigint) n""", p)
            self.q("""INSERT INTO tasker.workflow_steps (workflow_step_uuid, task_uuid, named_step_uuid, retryable, max_attempts,
                          created_at, updated_at)
                      SELECT md5('s'||n)::uuid, md5('t'||n)::uuid, %(ns)s, true, 3, NOW(), NOW()
                        FROM generate_series(%(a)s::bigint, %(b)s::bigint) n""", p)
            self.q("""INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key,
                          most_recent, created_at, updated_at)
                      SELECT md5('s'||n)::uuid, 'pending', NULL, '{}', 1, NOT %(e)s, NOW(), NOW()
                        FROM generate_series(%(a)s::bigint, %(b)s::bigint) n""", {**p, "e": enqueued})
            if enqueued:
                self.q("""INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata,
                              sort_key, most_recent, created_at, updated_at)
                          SELECT md5('s'||n)::uuid, 'enqueued', 'pending', '{"event":"{\\"type\\":\\"Enqueue\\"}"}', 2, true,
                                 NOW(), NOW() FROM generate_series(%(a)s::bigint, %(b)s::bigint) n""", p)
                self.q("""INSERT INTO bench.floor_map (n, msg_id)
                          SELECT n, pgmq.send(%(q)s::text, jsonb_build_object('task_uuid', md5('t'||n)::uuid,
                                 'step_uuid', md5('s'||n)::uuid, 'correlation_id', md5('c'||n)::uuid), 0)
                            FROM generate_series(%(a)s::bigint, %(b)s::bigint) n""", {**p, "q": QUEUE})
        return a, b

    def mark_enqueued(self, a, b):
        """Orchestration's step 3 (§3.4): `pending→enqueued` committed before anything is sent."""
        self.q("""WITH s AS (SELECT md5('s'||n)::uuid AS u FROM generate_series(%(a)s::bigint, %(b)s::bigint) n),
                       old AS (UPDATE tasker.workflow_step_transitions t SET most_recent = false, updated_at = NOW()
                                 FROM s WHERE t.workflow_step_uuid = s.u AND t.most_recent RETURNING t.workflow_step_uuid)
                  INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key,
                         most_recent, created_at, updated_at)
                  SELECT workflow_step_uuid, 'enqueued', 'pending', '{"event":"{\\"type\\":\\"Enqueue\\"}"}', 2, true,
                         NOW(), NOW() FROM old""", {"a": a, "b": b})

    def send_steps(self, a, b, conn=None):
        """Orchestration's step 4: pgmq_send_with_notify of each StepMessage (one statement for the range)."""
        (conn or self.db).execute(
            """SELECT tasker.pgmq_send_with_notify(%(q)s::text, jsonb_build_object('task_uuid', md5('t'||n)::uuid,
                      'step_uuid', md5('s'||n)::uuid, 'correlation_id', md5('c'||n)::uuid), 0)
                 FROM generate_series(%(a)s::bigint, %(b)s::bigint) n""", {"q": QUEUE, "a": a, "b": b})

    def results_count(self):
        return self.q(f"SELECT count(*) FROM pgmq.q_{RESULTS_QUEUE}")[0][0]

    def wait_results(self, expected, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.results_count() >= expected:
                return True
            time.sleep(0.1)
        log(f"timeout: {self.results_count()} of {expected} results")
        return False

    # ---------------------------------------------------------------- processes
    def worker_config(self, mode, c):
        path = os.path.join(self.work, f"worker-{mode}-{c}.toml")
        with open(path, "w") as f:
            f.write(f"""# bench overlay, merged over the built-in defaults (= config/tasker/base)
[common.database]
url = "{self.a.db_url}"
[common.database.pool]
max_connections = {c + 10}
min_connections = 2
[worker.event_systems.worker]
deployment_mode = "{mode}"
[worker.event_systems.worker.metadata.fallback_poller]
polling_interval_ms = {POLL_MS}
[worker.mpsc_channels.handler_dispatch]
max_concurrent_handlers = {c}
[worker.web]
bind_address = "127.0.0.1:{free_port()}"
[worker.grpc]
bind_address = "127.0.0.1:{free_port()}"
""")
        return path

    def spawn(self, args, config, name):
        env = dict(os.environ, TASKER_CONFIG_PATH=config, TASKER_TEMPLATE_PATH=self.templates,
                   DATABASE_URL=self.a.db_url, TASKER_LOG_LEVEL=os.environ.get("TASKER_LOG_LEVEL", "info"))
        logf = open(os.path.join(self.work, f"{name}.log"), "ab")
        return subprocess.Popen([self.a.worker_bin] + args, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                cwd=self.a.repo)

    def start_worker(self, mode="Hybrid", c=LATENCY_C):
        config = self.worker_config(mode, c)
        port = int(re.search(r'web\]\nbind_address = "127.0.0.1:(\d+)"', open(config).read()).group(1))
        proc = self.spawn(["run"], config, f"worker-{mode}-{c}")
        deadline = time.time() + 60
        while time.time() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"worker exited with {proc.returncode}; see {self.work}/worker-{mode}-{c}.log")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=1) as r:
                    if r.status == 200:
                        time.sleep(0.3)   # listener connected, first catch-up read done
                        return proc
            except Exception:
                pass
            time.sleep(0.1)
        proc.kill()
        raise SystemExit("worker not ready after 60 s")

    @staticmethod
    def stop(proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    @staticmethod
    def memory(proc):
        fields = {}
        with open(f"/proc/{proc.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    fields[k] = int(v.split()[0]) / 1024.0
        return fields

    # ---------------------------------------------------------------- phases
    def setup(self):
        self.q("CREATE SCHEMA IF NOT EXISTS bench")
        self.q("CREATE TABLE IF NOT EXISTS bench.floor_map (n bigint PRIMARY KEY, msg_id bigint NOT NULL)")
        self.q("CREATE SEQUENCE IF NOT EXISTS bench.n_seq")   # step numbers n, never reused
        log("registering the bench templates (one worker start)")
        self.set_sync(True)
        w = self.start_worker()
        self.stop(w)
        self.named_task = self.q("""SELECT nt.named_task_uuid FROM tasker.named_tasks nt JOIN tasker.task_namespaces tn
                                     USING (task_namespace_uuid) WHERE tn.name = 'bench' AND nt.name = 'noop_task'""")[0][0]
        self.named_step = self.q("""INSERT INTO tasker.named_steps (name, created_at, updated_at) VALUES ('noop', NOW(), NOW())
                                    ON CONFLICT (name) DO UPDATE SET updated_at = NOW() RETURNING named_step_uuid""")[0][0]

    def floor_variables(self):
        """-D values for the pgbench scripts: the metadata and result JSON the worker writes for a no-op."""
        start_meta = '{"event":"{\\"type\\":\\"Start\\"}","timestamp":"2026-11-23T22:00:00.123456+00:00"}'
        result = json.dumps({
            "step_uuid": str(uuid.uuid4()), "success": True, "result": {}, "status": "completed", "error": None,
            "metadata": {"execution_time_ms": 0, "handler_version": None, "retryable": False,
                         "completed_at": "2026-11-23T22:00:00.123456Z", "worker_id": "worker_0193", "worker_hostname": "bench",
                         "started_at": "2026-11-23T22:00:00.123400Z", "custom": {}, "error_code": None, "error_type": None,
                         "context": {}},
            "orchestration_metadata": {"headers": {}, "error_context": None, "backoff_hint": None, "custom": {}}},
            separators=(",", ":"))
        done_meta = json.dumps({"event": json.dumps({"type": "EnqueueForOrchestration", "data": json.loads(result)},
                                                    separators=(",", ":")),
                                "timestamp": "2026-11-23T22:00:00.123456+00:00", "worker_uuid": str(uuid.uuid4()),
                                "correlation_id": str(uuid.uuid4())}, separators=(",", ":"))
        return ["-D", f"start_meta={start_meta}", "-D", f"done_meta={done_meta}", "-D", f"result={result}"]

    def floor_one(self, shape, c):
        """pgbench -t: every client runs `per_client` steps, each on its own freshly enqueued step.
        Ours with -M extended (libpq PQexecParams, as the worker); ours_prepared is the same SQL with
        -M prepared (what preparing statements would give); upstream with -M prepared (sqlx caches
        prepared statements)."""
        per_client = max(1, self.cfg["floor_steps"][c] // c)
        a, _ = self.seed(per_client * c, enqueued=True)
        self.purge_results()
        self.q("CHECKPOINT")
        script = "upstream" if shape == "upstream" else "ours"
        cmd = [self.a.pgbench, "-n", "-M", "extended" if shape == "ours" else "prepared", "-c", str(c),
               "-j", str(min(c, 2)), "-t", str(per_client), "-f", os.path.join(HERE, "pgbench", f"{script}.sql"),
               "-D", "i=-1", "-D", f"base={a}", "-D", f"per_client={per_client}"] + self.floor_vars + [self.a.db_url]
        p = subprocess.run(cmd, capture_output=True, text=True)
        m = re.search(r"tps = ([\d.]+)", p.stdout)
        failed = re.search(r"number of failed transactions: (\d+)", p.stdout)
        if p.returncode != 0 or not m or (failed and int(failed.group(1)) > 0):
            raise SystemExit(f"pgbench {shape} c={c} failed:\n{p.stdout}\n{p.stderr}")
        lat = re.search(r"latency average = ([\d.]+) ms", p.stdout)
        return {"steps_per_s": float(m.group(1)), "latency_ms": float(lat.group(1)) if lat else None,
                "steps": per_client * c}

    def drain_one(self, c, durable, measure_memory=False):
        """The worker (Hybrid, max_concurrent_handlers = c) started idle; then n steps enqueued as
        orchestration does, in chunks of 500: `pending→enqueued` committed, then one
        pgmq_send_with_notify per step (in one statement per chunk, so enqueueing is never the bound).
        steps/s = completed / (last `enqueued_for_orchestration` − first `in_progress`)."""
        n = self.cfg["drain_n"][c]
        self.purge_results()
        w = self.start_worker("Hybrid", c)
        try:
            a, b = self.seed(n)
            self.q("CHECKPOINT")
            time.sleep(1.0)
            idle = self.memory(w)
            t0 = time.time()
            for lo in range(a, b + 1, 500):
                hi = min(lo + 499, b)
                self.mark_enqueued(lo, hi)
                self.send_steps(lo, hi)
            enqueue_s = time.time() - t0
            ok = self.wait_results(n, timeout=max(60, n / 20))
            peak = self.memory(w)
        finally:
            self.stop(w)
        first, last, done = self.q("""
            SELECT extract(epoch FROM min(t.created_at) FILTER (WHERE t.to_state = 'in_progress')),
                   extract(epoch FROM max(t.created_at) FILTER (WHERE t.to_state = 'enqueued_for_orchestration')),
                   count(*) FILTER (WHERE t.to_state = 'enqueued_for_orchestration')
              FROM generate_series(%s::bigint, %s::bigint) n
              JOIN tasker.workflow_step_transitions t ON t.workflow_step_uuid = md5('s'||n)::uuid""", (a, b))[0]
        r = {"steps": n, "completed": done, "ok": ok and done == n, "enqueue_s": round(enqueue_s, 3),
             "seconds": float(last - first), "steps_per_s": done / float(last - first)}
        if measure_memory:
            r["rss_idle_mb"] = round(idle["VmRSS"], 1)
            r["rss_peak_mb"] = round(peak["VmHWM"], 1)
            r["rss_after_mb"] = round(peak["VmRSS"], 1)
        return r

    def pgqueuer_one(self, c):
        """PgQueuer (psycopg driver) draining n no-op jobs: batch_size = c and max_concurrent_tasks = 2c
        (PgQueuer's minimum for that batch; an entrypoint concurrency_limit = c stalls its drain mode),
        drain mode; jobs/s from the first handler start to the return of run()."""
        from datetime import timedelta
        from pgqueuer import PsycopgDriver, Queries, QueueManager
        from pgqueuer.domain.types import QueueExecutionMode
        n = self.cfg["drain_n"][c]

        async def run():
            conn = await psycopg.AsyncConnection.connect(self.a.db_url, autocommit=True)
            q = Queries(PsycopgDriver(conn))
            if not await q.has_table("pgqueuer"):
                await q.install()
            await q.clear_queue(None)
            await q.enqueue(["noop"] * n, [None] * n, [0] * n)
            await conn.execute("CHECKPOINT")
            qm = QueueManager(q)
            first = []

            @qm.entrypoint("noop")
            async def noop(job):
                if not first:
                    first.append(time.time())

            await qm.run(mode=QueueExecutionMode.drain, batch_size=c, max_concurrent_tasks=2 * c,
                         dequeue_timeout=timedelta(seconds=1))
            end = time.time()
            left = (await (await conn.execute("SELECT count(*) FROM pgqueuer")).fetchone())[0]
            await conn.close()
            return {"jobs": n, "left": left, "seconds": end - first[0], "steps_per_s": n / (end - first[0])}

        return asyncio.run(run())

    def throughput(self, phases):
        """Interleaved per (durability, c): SQL floor, upstream-shaped floor, worker drain, PgQueuer,
        back to back, so that each ratio compares runs minutes apart at most."""
        self.floor_vars = self.floor_variables()
        R = self.results
        for durable in (True, False):
            key = "durable" if durable else "async"
            self.set_sync(durable)
            for c in ((1, 4, 16) if durable else self.cfg["async_c"]):
                if "floor" in phases:
                    for shape in ("ours", "ours_prepared", "upstream"):
                        r = R.setdefault("floor", {}).setdefault(shape, {}).setdefault(key, {})[str(c)] = self.floor_one(shape, c)
                        log(f"floor {shape:13} {key:7} c={c:2}: {r['steps_per_s']:8.1f} steps/s")
                if "drain" in phases:
                    r = self.drain_one(c, durable, measure_memory=(durable and c == 16))
                    R.setdefault("drain", {}).setdefault(key, {})[str(c)] = r
                    log(f"drain worker   {key:7} c={c:2}: {r['steps_per_s']:8.1f} steps/s ({r['completed']}/{r['steps']})")
                    if "rss_idle_mb" in r:
                        R["memory"] = {"queued": r["steps"], "rss_idle_mb": r["rss_idle_mb"],
                                       "rss_peak_mb": r["rss_peak_mb"], "rss_after_drain_mb": r["rss_after_mb"]}
                if "pgqueuer" in phases:
                    r = R.setdefault("pgqueuer", {}).setdefault(key, {})[str(c)] = self.pgqueuer_one(c)
                    log(f"drain pgqueuer {key:7} c={c:2}: {r['steps_per_s']:8.1f} jobs/s")
        self.set_sync(True)

    def latency(self):
        out = {}
        # The sender's own commits skip the WAL flush wait (the worker's stay durable): one durable commit
        # per send caps a single sender at ~170/s on this machine, below the rates to measure.
        sender = psycopg.connect(self.a.db_url, autocommit=True, options="-c TimeZone=UTC -c synchronous_commit=off")
        for mode in MODES:
            w = self.start_worker(mode, LATENCY_C)
            try:
                for rate in self.cfg["rates"]:
                    count = int(rate * self.cfg["rate_seconds"])
                    a, b = self.seed(count)
                    self.mark_enqueued(a, b)   # committed before any send, as orchestration does
                    self.purge_results()
                    commits = {}
                    t0 = time.time() + 0.05
                    for i, n in enumerate(range(a, b + 1)):
                        delay = t0 + i / rate - time.time()
                        if delay > 0:
                            time.sleep(delay)
                        self.send_steps(n, n, conn=sender)
                        commits[n] = time.time()
                    achieved = count / (time.time() - t0)
                    self.wait_results(count, timeout=30 + count / 50)
                    rows = self.q("""
                        SELECT n, extract(epoch FROM (ws.results->'metadata'->>'started_at')::timestamptz),
                               extract(epoch FROM r.enqueued_at)
                          FROM generate_series(%s::bigint, %s::bigint) n
                          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = md5('s'||n)::uuid
                          JOIN pgmq.q_orchestration_step_results r ON (r.message->>'step_uuid')::uuid = ws.workflow_step_uuid
                    """, (a, b))
                    start = [(float(s) - commits[n]) * 1000 for n, s, _ in rows if s is not None]
                    result = [(float(e) - commits[n]) * 1000 for n, _, e in rows]
                    out.setdefault(mode, {})[str(rate)] = {"achieved_rate": round(achieved, 1), "sent": count,
                                                            "to_handler_start_ms": summary(start),
                                                            "to_result_ms": summary(result)}
                    s = out[mode][str(rate)]["to_handler_start_ms"]
                    log(f"latency {mode:15} {rate:5}/s: start p50 {s['p50']:.2f} p99 {s['p99']:.2f} ms ({len(rows)}/{count})")
            finally:
                self.stop(w)
        sender.close()
        self.results["latency"] = out

    def e2e(self):
        self.purge_results()
        orch = self.spawn(["orchestrate"], self.worker_config("Hybrid", LATENCY_C), "orchestrate")
        w = self.start_worker("Hybrid", LATENCY_C)
        tag = uuid.uuid4().hex[:8]
        try:
            time.sleep(1.0)
            sends = {}
            count, rate = self.cfg["e2e_tasks"], self.cfg["e2e_rate"]
            t0 = time.time()
            for i in range(count):
                delay = t0 + i / rate - time.time()
                if delay > 0:
                    time.sleep(delay)
                corr = str(uuid.uuid4())
                msg = {"request_id": str(uuid.uuid4()), "metadata": {},
                       "task_request": {"namespace": "examples", "name": "linear_workflow", "version": "1.0.0",
                                        "context": {"number": i, "bench": tag}, "initiator": "bench",
                                        "source_system": "bench", "reason": "bench", "tags": [], "priority": 0,
                                        "correlation_id": corr}}
                # The message `tasker-worker submit` sends (TaskRequestMessage), with our correlation id.
                self.q("SELECT tasker.pgmq_send_with_notify('orchestration_task_requests'::text, %s::jsonb, 0)",
                       (json.dumps(msg),))
                sends[corr] = time.time()
            cli = {}
            for i in range(self.cfg["e2e_cli"]):
                t = time.time()
                subprocess.run([self.a.worker_bin, "submit", "examples", "linear_workflow", "1.0.0", "--context",
                                json.dumps({"number": 1000 + i, "bench": tag, "cli": i})],
                               env=dict(os.environ, TASKER_CONFIG_PATH=self.worker_config("Hybrid", 1),
                                        TASKER_LOG_LEVEL="warning"), check=True, capture_output=True)
                cli[i] = t
                time.sleep(0.2)
            total = count + len(cli)
            deadline = time.time() + 60
            while time.time() < deadline:
                done = self.q("""SELECT count(*) FROM tasker.tasks t JOIN tasker.task_transitions tt USING (task_uuid)
                                  WHERE t.context->>'bench' = %s AND tt.to_state = 'complete'""", (tag,))[0][0]
                if done >= total:
                    break
                time.sleep(0.2)
            rows = self.q("""SELECT t.correlation_id::text, t.context->>'cli', extract(epoch FROM tt.created_at)
                               FROM tasker.tasks t JOIN tasker.task_transitions tt USING (task_uuid)
                              WHERE t.context->>'bench' = %s AND tt.to_state = 'complete'""", (tag,))
            worker_ms = [float(v) * 1000 for (v,) in self.q("""
                SELECT sum(extract(epoch FROM d.created_at - e.created_at))
                  FROM tasker.tasks t JOIN tasker.workflow_steps ws USING (task_uuid)
                  JOIN tasker.workflow_step_transitions e ON e.workflow_step_uuid = ws.workflow_step_uuid AND e.to_state = 'enqueued'
                  JOIN tasker.workflow_step_transitions d ON d.workflow_step_uuid = ws.workflow_step_uuid
                                                         AND d.to_state = 'enqueued_for_orchestration'
                 WHERE t.context->>'bench' = %s GROUP BY t.task_uuid""", (tag,))]
        finally:
            self.stop(w)
            self.stop(orch)
        lat = [(float(e) - sends[c]) * 1000 for c, k, e in rows if k is None and c in sends]
        cli_lat = [(float(e) - cli[int(k)]) * 1000 for c, k, e in rows if k is not None]
        self.results["e2e"] = {"workflow": "examples/linear_workflow (4 steps)", "rate_per_s": rate, "tasks": count,
                               "completed": len(lat), "submit_to_complete_ms": summary(lat),
                               "cli_submit_to_complete_ms": summary(cli_lat),
                               # per task: Σ over its 4 steps of `enqueued` → `enqueued_for_orchestration` (the
                               # worker's share); the rest of submit→complete is orchestration and queueing.
                               "worker_share_ms": summary(worker_ms)}
        s = self.results["e2e"]["submit_to_complete_ms"]
        log(f"e2e linear 4-step: p50 {s['p50']:.1f} p99 {s['p99']:.1f} ms ({len(lat)}/{count})")

    # ---------------------------------------------------------------- report
    def machine(self):
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
        return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(int(mem) / 1048576, 1),
                "kernel": platform.release(), "postgres": self.q("SHOW server_version")[0][0],
                "load_average_start": self.load_start, "load_average_end": list(os.getloadavg())}

    def ratios(self):
        r = {}
        f, d, p = self.results.get("floor", {}), self.results.get("drain", {}), self.results.get("pgqueuer", {})
        for key in ("durable", "async"):
            for c, w in d.get(key, {}).items():
                entry = {}
                for name, src in (("worker_over_sql_floor", f.get("ours")), ("worker_over_upstream_floor", f.get("upstream"))):
                    if src and c in src.get(key, {}):
                        entry[name] = round(w["steps_per_s"] / src[key][c]["steps_per_s"], 3)
                if c in p.get(key, {}):
                    entry["worker_over_pgqueuer"] = round(w["steps_per_s"] / p[key][c]["steps_per_s"], 3)
                if f.get("ours") and f.get("upstream") and c in f["ours"].get(key, {}):
                    entry["sql_floor_over_upstream_floor"] = round(
                        f["ours"][key][c]["steps_per_s"] / f["upstream"][key][c]["steps_per_s"], 3)
                r.setdefault(key, {})[c] = entry
        return r

    def targets(self):
        t = {}
        ratio = self.results["ratios"].get("durable", {}).get("16", {})
        if "worker_over_sql_floor" in ratio:
            t["drain >= 0.8x SQL floor (c=16 durable)"] = [ratio["worker_over_sql_floor"], ratio["worker_over_sql_floor"] >= 0.8]
        if "worker_over_upstream_floor" in ratio:
            t["drain >= 1.5x upstream floor (c=16 durable)"] = [ratio["worker_over_upstream_floor"],
                                                              ratio["worker_over_upstream_floor"] >= 1.5]
        h = self.results.get("latency", {}).get("Hybrid", {}).get("200", {}).get("to_handler_start_ms")
        if h:
            t["Hybrid 200/s start p50 <= 1.5 ms"] = [round(h["p50"], 2), h["p50"] <= 1.5]
            t["Hybrid 200/s start p99 <= 5 ms"] = [round(h["p99"], 2), h["p99"] <= 5]
        pol = self.results.get("latency", {}).get("PollingOnly", {})
        if pol:
            p50 = min(v["to_handler_start_ms"]["p50"] for v in pol.values())
            t[f"PollingOnly p50 within 10% of {POLL_MS / 2:g} ms"] = [round(p50, 2), abs(p50 - POLL_MS / 2) <= POLL_MS / 20]
        m = self.results.get("memory")
        if m:
            t["RSS idle <= 40 MB"] = [m["rss_idle_mb"], m["rss_idle_mb"] <= 40]
            t[f"RSS peak <= 80 MB ({m['queued']} queued; target at 10000)"] = [m["rss_peak_mb"], m["rss_peak_mb"] <= 80]
        e = self.results.get("e2e", {}).get("submit_to_complete_ms")
        if e and e["p50"] is not None:
            t["e2e 4-step p50 <= 40 ms"] = [round(e["p50"], 1), e["p50"] <= 40]
        return t

    def table(self):
        R = self.results
        lines = [f"tasker-worker benchmark ({R['mode']}), {R['machine']['cpu']}, {R['machine']['cores']} cores, "
                 f"PostgreSQL {R['machine']['postgres']}, load {R['machine']['load_average_start'][0]:.1f}→"
                 f"{R['machine']['load_average_end'][0]:.1f}", "",
                 f"{'throughput (steps/s)':24} {'c':>3} {'SQL floor':>10} {'(prepared)':>10} {'upstream':>10} {'worker':>10} {'PgQueuer':>10}"
                 f" {'w/floor':>8} {'w/upstr':>8} {'w/PgQ':>8}"]
        for key in ("durable", "async"):
            for c in ("1", "4", "16"):
                g = lambda src: R.get(src, {}).get(key, {}).get(c, {}).get("steps_per_s")
                fl = R.get("floor", {}).get("ours", {}).get(key, {}).get(c, {}).get("steps_per_s")
                up = R.get("floor", {}).get("upstream", {}).get(key, {}).get(c, {}).get("steps_per_s")
                pr = R.get("floor", {}).get("ours_prepared", {}).get(key, {}).get(c, {}).get("steps_per_s")
                rt = R.get("ratios", {}).get(key, {}).get(c, {})
                fmt = lambda v, spec: format(v, spec) if v is not None else "-"
                lines.append(f"{key:24} {c:>3} {fmt(fl, '10.0f'):>10} {fmt(pr, '10.0f'):>10} {fmt(up, '10.0f'):>10} {fmt(g('drain'), '10.0f'):>10}"
                             f" {fmt(g('pgqueuer'), '10.0f'):>10} {fmt(rt.get('worker_over_sql_floor'), '8.2f'):>8}"
                             f" {fmt(rt.get('worker_over_upstream_floor'), '8.2f'):>8} {fmt(rt.get('worker_over_pgqueuer'), '8.2f'):>8}")
        lines += ["", f"{'latency (ms, c=%d)' % LATENCY_C:24} {'rate':>5} {'sent/s':>7} {'start p50':>10} {'p95':>8} {'p99':>8}"
                      f" {'result p50':>11} {'p95':>8} {'p99':>8}"]
        for mode, rates in R.get("latency", {}).items():
            for rate, v in rates.items():
                s, r = v["to_handler_start_ms"], v["to_result_ms"]
                lines.append(f"{mode:24} {rate:>5} {v['achieved_rate']:7.0f} {s['p50']:10.2f} {s['p95']:8.2f} {s['p99']:8.2f}"
                             f" {r['p50']:11.2f} {r['p95']:8.2f} {r['p99']:8.2f}")
        m = R.get("memory")
        if m:
            lines += ["", f"memory: RSS idle {m['rss_idle_mb']} MB, peak (VmHWM) {m['rss_peak_mb']} MB with {m['queued']} queued"]
        e = R.get("e2e")
        if e:
            s, c = e["submit_to_complete_ms"], e["cli_submit_to_complete_ms"]
            lines.append(f"end to end (linear 4-step, {e['completed']} tasks at {e['rate_per_s']}/s): p50 {s['p50']:.1f} ms,"
                         f" p99 {s['p99']:.1f} ms; via `tasker-worker submit` (process start included) p50 "
                         f"{c['p50'] if c['p50'] is None else round(c['p50'], 1)} ms; worker share p50 "
                         f"{e['worker_share_ms']['p50'] and round(e['worker_share_ms']['p50'], 1)} ms")
        lines += ["", "targets:"] + [f"  {'ok  ' if ok else 'MISS'} {name}: {value}" for name, (value, ok) in R["targets"].items()]
        return "\n".join(lines)

    def plot(self, path):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
        for ax, key, title in ((axes[0], "to_handler_start_ms", "send commit → handler start"),
                               (axes[1], "to_result_ms", "send commit → result message")):
            for mode, rates in self.results.get("latency", {}).items():
                xs = [int(r) for r in rates]
                for p, style in (("p50", "-o"), ("p99", "--x")):
                    ax.plot(xs, [rates[r][key][p] for r in rates], style, label=f"{mode} {p}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks([int(r) for r in self.cfg["rates"]], [str(r) for r in self.cfg["rates"]])
            ax.minorticks_off()
            ax.set_xlabel("open-loop enqueue rate (steps/s)")
            ax.set_title(title)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel("latency (ms)")
        axes[1].legend(fontsize=7)
        fig.suptitle(f"tasker-worker latency ({self.results['mode']}, max_concurrent_handlers={LATENCY_C}, poll {POLL_MS} ms)")
        fig.tight_layout()
        fig.savefig(path, dpi=110)

    def run(self):
        self.load_start = list(os.getloadavg())
        t0 = time.time()
        self.setup()
        phases = self.a.phases.split(",")
        p0 = time.time()
        if {"floor", "drain", "pgqueuer"} & set(phases):
            self.throughput(phases)
            log(f"throughput: {time.time() - p0:.1f} s")
        for name in ("latency", "e2e"):
            if name in phases:
                p0 = time.time()
                getattr(self, name)()
                log(f"{name}: {time.time() - p0:.1f} s")
        self.results["machine"] = self.machine()
        self.results["settings"] = {"latency_and_e2e_max_concurrent_handlers": LATENCY_C, "polling_interval_ms": POLL_MS,
                                    "server": self.a.server_settings, "config": self.cfg}
        self.results["ratios"] = self.ratios()
        self.results["targets"] = self.targets()
        self.results["elapsed_s"] = round(time.time() - t0, 1)
        with open(self.a.out, "w") as f:
            json.dump(self.results, f, indent=2, default=str)
        if "latency" in self.results:
            self.plot(self.a.plot)
        print(self.table())
        log(f"wrote {self.a.out}" + (f" and {self.a.plot}" if "latency" in self.results else "")
            + f" in {self.results['elapsed_s']} s (logs: {self.work})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db-url", required=True)
    p.add_argument("--worker-bin", required=True)
    p.add_argument("--pgbench", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--phases", default="floor,drain,pgqueuer,latency,e2e")
    p.add_argument("--out", default="bench-results.json")
    p.add_argument("--plot", default="bench-latency.png")
    p.add_argument("--server-settings", default="")
    Bench(p.parse_args()).run()


if __name__ == "__main__":
    main()
