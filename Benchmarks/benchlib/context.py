"""Bench: one run's settings, database connection and results, plus the seeding and queue helpers
every phase uses (steps seeded as orchestration leaves them, sends as orchestration does)."""
import os
import shutil
import tempfile
import time

import psycopg

from . import worker
from .common import FULL, QUEUE, QUICK, RESULTS_QUEUE, log

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # Benchmarks/


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
        shutil.copy(os.path.join(BENCH_DIR, "templates", "bench.yaml"), self.templates)
        shutil.copy(os.path.join(a.repo, "config/tasks/examples/linear_workflow.yaml"), self.templates)
        self.results = {"mode": "quick" if a.quick else "full"}
        self.named_task = self.named_step = None

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

    def finish_synthetic_tasks(self):
        """Marks the seeded one-step bench tasks `complete` (no orchestration ever finishes them). Before
        an end-to-end run: otherwise a run more than the staleness threshold (30 min) after the first
        drains measures the orchestration's staleness sweep moving tens of thousands of them to the DLQ
        (seen in the full run of 2026-11-27: the e2e p50 of whichever build ran during the sweep went
        from ~70 to ~700 ms)."""
        self.q("""UPDATE tasker.task_transitions tt SET to_state = 'complete'
                    FROM tasker.tasks t
                   WHERE t.task_uuid = tt.task_uuid AND tt.most_recent AND t.named_task_uuid = %s
                     AND tt.to_state = 'steps_in_process'""", (self.named_task,))

    def setup(self):
        self.q("CREATE SCHEMA IF NOT EXISTS bench")
        self.q("CREATE TABLE IF NOT EXISTS bench.floor_map (n bigint PRIMARY KEY, msg_id bigint NOT NULL)")
        self.q("CREATE SEQUENCE IF NOT EXISTS bench.n_seq")   # step numbers n, never reused
        log("registering the bench templates (one worker start)")
        self.set_sync(True)
        worker.stop(worker.start_worker(self))
        self.named_task = self.q("""SELECT nt.named_task_uuid FROM tasker.named_tasks nt JOIN tasker.task_namespaces tn
                                     USING (task_namespace_uuid) WHERE tn.name = 'bench' AND nt.name = 'noop_task'""")[0][0]
        self.named_step = self.q("""INSERT INTO tasker.named_steps (name, created_at, updated_at) VALUES ('noop', NOW(), NOW())
                                    ON CONFLICT (name) DO UPDATE SET updated_at = NOW() RETURNING named_step_uuid""")[0][0]

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

    def msg_offset(self, a, b):
        """msg_id − n of the seeded range [a, b]; pgbench computes a step's message id from it, so the
        ids must be contiguous (they are: one INSERT … SELECT from one sequence, no concurrent sends)."""
        lo, hi, count = self.q("SELECT min(msg_id - n), max(msg_id - n), count(*) FROM bench.floor_map WHERE n BETWEEN %s AND %s",
                               (a, b))[0]
        if lo != hi or count != b - a + 1:
            raise SystemExit(f"bench: queue message ids of steps {a}..{b} are not contiguous (msg_id - n in [{lo}, {hi}], "
                             f"{count} rows); the pgbench floor cannot derive them")
        return lo

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
