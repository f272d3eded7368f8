"""Fleet (issue #29): N worker processes (`tasker-worker run`, the built-in handlers) on ONE PostgreSQL,
each with a small pool, all serving the bench namespace and no other (`templates`); N = 1, 4, 16, 64
(quick: 1, 4, 16), each N connected directly and through PgBouncer (transaction mode:
scripts/lib/python/pgbouncer.py), on PGMQ and on RabbitMQ (the broker of scripts/bench). Per
configuration, one fresh fleet, in this order:

  idle       the fleet idle for IDLE_S, once the connections its start opened were closed (pool
             idle_timeout_seconds = POOL_IDLE_TIMEOUT_S): PostgreSQL transactions per second (pg_stat_database
             xact_commit + xact_rollback of the bench database, the bench's own read subtracted; a VACUUM
             ANALYZE first, so that autovacuum has nothing of earlier drains to do in the window), the
             server's CPU (every server process but the bench's backend) and the workers' CPU, per
             second and per worker; server sessions (pg_stat_activity of the database, by
             application_name; through PgBouncer also the server sessions PgBouncer holds)
  drain      `steps` no-op steps enqueued as orchestration does (as the drain phase, chunks of 500):
             steps/s = completed / (last `enqueued_for_orchestration` − first `in_progress`), server
             CPU per step (server_cpu.py), the most server sessions seen (sampled every 0.25 s), and
             fairness: steps completed per worker (`worker_uuid` of the claim's transition), min/max
  recovery   SLEEP_PER_WORKER (= c) steps per worker of a template whose step sleeps SLEEP_MS (built-in
             `tasker.sleep`), sent one at a time SEND_GAP_S apart; once every worker holds some
             (`in_progress` under its `worker_uuid`; HOLD_WAIT_S at most), a quarter of the fleet (at
             least 1, holders first) is killed with SIGKILL; recovery = from the kill until no step those
             workers held is `in_progress` under them (crash recovery's retryable `worker_lost` result),
             from the steps' transitions (the database's clock; the same machine's). With N = 1 nobody is
             left to recover: a replacement worker is started right after the kill (a restarted container),
             and its start counts in the time. The issue's bound: 10 s.

No orchestration runs: results are counted in PGMQ's orchestration_step_results or on the broker's.
Through PgBouncer the workers get `transaction_pooler = true`; on PGMQ their LISTEN session goes
directly to the server (`listen_url`), on RabbitMQ they need none (`listen_url` empty); the database gets
the session settings a transaction pooler cannot carry (ALTER DATABASE … SET, reset at the end).

TASKER_BENCH_FLEET_N=1,4 (sizes), TASKER_BENCH_FLEET_ROUTES=direct,pgbouncer and
TASKER_BENCH_FLEET_TRANSPORTS=pgmq,rabbitmq choose a subset. A configuration whose fleet does not start
(e.g. a build that refuses a pooler) is recorded with its error and the phase goes on."""
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse

import psycopg

from . import capacity, worker
from .common import free_port, log, summary
from .drain import PGMQTransport, completion_window, enqueue_and_wait, in_flight
from .rabbitmq import Broker, BrokerTransport, settle_results, worker_overlay
from .server_cpu import TICKS, ServerCPU, process_ticks

SIZES = {"quick": [1, 4, 16], "full": [1, 4, 16, 64]}
STEPS = {"quick": 1000, "full": 4000}       # no-op steps per drain
IDLE_S = {"quick": 10.0, "full": 20.0}      # the idle window
ROUTES = ("direct", "pgbouncer")
TRANSPORTS = ("pgmq", "rabbitmq")
POOL_MAX, POOL_MIN = 4, 1                   # [common.database.pool] of every worker
# ... and its idle_timeout_seconds (default 300): the connections opened at start are closed this long
# after their last use, so that the idle window sees the steady idle fleet (min_connections) without
# waiting five minutes per configuration.
POOL_IDLE_TIMEOUT_S = 5
C = 4                                       # max_concurrent_handlers of every worker
PGBOUNCER_POOL = 20                         # PgBouncer's default_pool_size (server sessions per database/user)
SLEEP_MS = 25000                            # the recovery test's step
SLEEP_PER_WORKER = C                        # enough for every worker to fill its handler slots
SEND_GAP_S = 0.02                           # between the recovery test's sends
HOLD_WAIT_S = 8.0                           # the longest wait for every worker to hold a step
RECOVERY_BOUND_S = 10.0                     # issue #29
# What a transaction pooler cannot carry in the session (docs/capacity.md); the config's defaults.
DATABASE_SETTINGS = {"search_path": "tasker, public", "TimeZone": "UTC", "DateStyle": "ISO, MDY",
                     "statement_timeout": "30000", "lock_timeout": "10000"}
SLEEP_TEMPLATE = f"""# The fleet phase's recovery test: one step that sleeps (written by Benchmarks/benchlib/fleet.py).
name: fleet_sleep_task
namespace_name: bench
version: 1.0.0
description: "Benchmark (fleet): one step sleeping {SLEEP_MS} ms"
steps:
  - name: fleet_sleep
    handler:
      callable: tasker.sleep
      initialization:
        ms: {SLEEP_MS}
    timeout_seconds: 120
"""
# Workers started at once (each start registers templates and opens its pool: on 2 cores, 64 at once
# starve the readiness probes).
START_BATCH = 8


def templates(b):
    """The fleet's template directory: the bench namespace only (bench.yaml and the recovery test's
    template). The run's directory also holds examples/linear_workflow (the e2e phase's): a worker
    serving that namespace too would poll two queues when idle."""
    path = os.path.join(b.work, "templates-fleet")
    if not os.path.isdir(path):
        os.makedirs(path)
        shutil.copy(os.path.join(b.templates, "bench.yaml"), path)
        with open(os.path.join(path, "fleet_sleep.yaml"), "w") as f:
            f.write(SLEEP_TEMPLATE)
    return path


def _choice(name, default):
    raw = os.environ.get(name, "")
    return [x.strip() for x in raw.split(",") if x.strip()] if raw else list(default)


# ------------------------------------------------------------------------------------------ fleet
class Fleet:
    """N `tasker-worker run` processes, each with its own overlay (small pool, REST and gRPC on port 0: free
    ports picked by the kernel at bind, never raced for) and log; the REST port and the worker uuid are
    read from the log (`REST server listening address=…`, `worker_id=worker-<uuid>`)."""

    def __init__(self, b, label, database, extra):
        """database: the `[common.database]` keys; extra: more TOML (the broker's overlay)."""
        self.b, self.label, self.database, self.extra = b, label, database, extra
        self.procs, self.ports, self.uuids, self.names = [], [], [], []

    def overlay(self, i):
        path = os.path.join(self.b.work, f"{self.label}-{i}.toml")
        with open(path, "w") as f:
            f.write(f"""# bench overlay (fleet phase), merged over the built-in defaults (= config/tasker/base)
[common.database]
{self.database}
[common.database.pool]
max_connections = {POOL_MAX}
min_connections = {POOL_MIN}
idle_timeout_seconds = {POOL_IDLE_TIMEOUT_S}
[worker.event_systems.worker]
deployment_mode = "Hybrid"
[worker.mpsc_channels.handler_dispatch]
max_concurrent_handlers = {C}
[worker.web]
bind_address = "127.0.0.1:0"
[worker.grpc]
bind_address = "127.0.0.1:0"
{self.extra}""")
        return path

    def spawn(self, i):
        name = f"{self.label}-{i}"
        self.procs.append(worker.spawn(self.b, ["run"], self.overlay(i), name,
                                       env={"TASKER_TEMPLATE_PATH": templates(self.b)}))
        self.names.append(name)
        self.ports.append(None)
        self.uuids.append(None)
        return len(self.procs) - 1

    def start(self, n):
        for first in range(0, n, START_BATCH):
            for i in [self.spawn(i) for i in range(first, min(n, first + START_BATCH))]:
                self.wait_ready(i)

    def _log(self, i):
        with open(os.path.join(self.b.work, f"{self.names[i]}.log"), errors="replace") as f:
            return f.read()

    def wait_ready(self, i, timeout=180):
        """Worker i's REST port and uuid from its log, then GET /health/ready = 200 (worker.wait_ready)."""
        deadline = time.time() + timeout
        while True:
            text = self._log(i)
            port = re.findall(r"REST server listening address=127\.0\.0\.1:(\d+)", text)
            uuid = re.findall(r"worker_id=worker-([0-9a-f-]{36})", text)
            if port and uuid:
                break
            if self.procs[i].poll() is not None:
                raise SystemExit(f"{self.names[i]} exited with {self.procs[i].returncode}; see {self.b.work}/{self.names[i]}.log")
            if time.time() > deadline:
                self.procs[i].kill()
                raise SystemExit(f"{self.names[i]} did not listen within {timeout} s; see {self.b.work}/{self.names[i]}.log")
            time.sleep(0.1)
        self.ports[i], self.uuids[i] = int(port[-1]), uuid[-1]
        worker.wait_ready(self.procs[i], self.ports[i], self.names[i], self.b, timeout=max(1, deadline - time.time()))

    def alive(self):
        return [i for i, p in enumerate(self.procs) if p.poll() is None]

    def ticks(self):
        return sum(process_ticks(p.pid) for p in self.procs if p.poll() is None)

    def kill(self, indices):
        for i in indices:
            self.procs[i].send_signal(signal.SIGKILL)
        for i in indices:
            self.procs[i].wait()

    def stop(self, timeout=90):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


# ------------------------------------------------------------------------------- figures helpers
def _own_pids(b, *conns):
    return [b.q("SELECT pg_backend_pid()")[0][0]] + [c.info.backend_pid for c in conns]


def sessions(conn, exclude):
    """Server sessions of the bench database now, total and by application_name (the bench's own excluded)."""
    rows = conn.execute("""SELECT coalesce(nullif(application_name, ''), '(none)'), count(*) FROM pg_stat_activity
                            WHERE datname = current_database() AND backend_type = 'client backend'
                              AND pid <> ALL(%s) GROUP BY 1 ORDER BY 1""", (exclude,)).fetchall()
    return {"total": sum(c for _, c in rows), "by_application": {a: c for a, c in rows}}


class SessionSampler(worker.PeriodicSampler):
    """The most server sessions seen (every `period` s, own connection, excluded from the count)."""

    errors = (psycopg.Error,)

    def __init__(self, b, period=0.25):
        super().__init__(period)
        self.b = b
        self.conn = psycopg.connect(b.a.db_url, autocommit=True)
        self.exclude = _own_pids(b, self.conn)
        self.peak = {"total": 0, "by_application": {}}

    def sample(self):
        s = sessions(self.conn, self.exclude)
        if s["total"] > self.peak["total"]:
            self.peak = s

    def close(self):
        self.conn.close()


def xacts(b):
    """Committed + rolled back transactions of the bench database so far (one transaction itself)."""
    return int(b.q("""SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()""")[0][0])


def held_steps(b, a, z):
    """{worker_uuid: [step uuid…]} of steps a..z `in_progress` now."""
    out = {}
    for u, step in b.q("""SELECT t.metadata->>'worker_uuid', t.workflow_step_uuid::text
                            FROM generate_series(%s::bigint, %s::bigint) n
                            JOIN tasker.workflow_step_transitions t ON t.workflow_step_uuid = md5('s'||n)::uuid
                           WHERE t.most_recent AND t.to_state = 'in_progress'""", (a, z)):
        out.setdefault(u, []).append(step)
    return out


# ------------------------------------------------------------------------------------ the parts
def idle(b, fleet, t, pooler, psql, seconds):
    """Transactions/s, server and worker CPU of the idle fleet over `seconds` (and the broker's on
    RabbitMQ); sessions."""
    conn = psycopg.connect(b.a.db_url, autocommit=True)
    try:
        exclude = _own_pids(b, conn)
        cpu = ServerCPU(b)
        # Nothing left for autovacuum from the earlier configurations' drains (its transactions and CPU
        # would count as the fleet's); the connections opened at start closed (POOL_IDLE_TIMEOUT_S); the
        # last start-up statements flushed to the statistics.
        # (VACUUM's own transactions, one per table, reach pg_stat_database when this backend's pending
        # statistics are flushed: forced at its next idle moment, long before the window.)
        b.q("VACUUM (ANALYZE)")
        b.q("SELECT pg_stat_force_next_flush()")
        time.sleep(POOL_IDLE_TIMEOUT_S + 3.0)
        x0 = xacts(b)     # its own transaction ends after the read: counted in the delta (subtracted below)
        pid = pooler.process.pid if pooler else None
        c0, w0, o0, p0, t0 = cpu.snapshot(), fleet.ticks(), t.snapshot(), process_ticks(pid) if pid else 0, time.time()
        time.sleep(seconds)
        x1 = xacts(b)
        c1, w1, o1, p1, t1 = cpu.snapshot(), fleet.ticks(), t.snapshot(), process_ticks(pid) if pid else 0, time.time()
        s = sessions(conn, exclude)
    finally:
        conn.close()
    n = max(1, len(fleet.alive()))
    window = t1 - t0
    xps = (x1 - x0 - 1) / window
    ms = 1000.0 / TICKS
    server_ms_per_s = ((c1["total"] - c0["total"]) - (c1["bench"] - c0["bench"])) * ms / window
    worker_ms_per_s = (w1 - w0) * ms / window
    r = {"window_s": round(window, 1), "xact_per_s": round(xps, 2), "xact_per_s_per_worker": round(xps / n, 3),
         "server_cpu_ms_per_s": round(server_ms_per_s, 2), "server_cpu_ms_per_s_per_worker": round(server_ms_per_s / n, 3),
         "worker_cpu_ms_per_s_per_worker": round(worker_ms_per_s / n, 3),
         "sessions": s["total"], "sessions_per_worker": round(s["total"] / n, 2), "sessions_by_application": s["by_application"]}
    if o0 is not None:
        r["broker_cpu_ms_per_s"] = round((o1 - o0) * ms / window, 2)
    if pooler:
        r["pgbouncer_cpu_ms_per_s"] = round((p1 - p0) * ms / window, 2)
        r["pgbouncer_server_sessions"] = pooler.server_sessions(psql)
    return r


def drain(b, fleet, t, n, pooler, psql):
    t.purge_results()
    a, z = b.seed(n)
    b.q("CHECKPOINT")
    time.sleep(1.0)
    cpu = ServerCPU(b)
    before = (cpu.snapshot(), fleet.ticks(), t.snapshot(), process_ticks(pooler.process.pid) if pooler else 0)
    with SessionSampler(b) as sampler:
        enqueue_s, ok = enqueue_and_wait(b, t, a, z)
    after = (cpu.snapshot(), fleet.ticks(), t.snapshot(), process_ticks(pooler.process.pid) if pooler else 0)
    first, last, done = completion_window(b, a, z)
    if not done or first is None or last is None:
        raise RuntimeError(f"the fleet completed no step of {n}")
    per_worker = dict(b.q("""
        SELECT t.metadata->>'worker_uuid', count(*) FROM generate_series(%s::bigint, %s::bigint) n
          JOIN tasker.workflow_step_transitions t ON t.workflow_step_uuid = md5('s'||n)::uuid
         WHERE t.to_state = 'in_progress' GROUP BY 1""", (a, z)))
    counts = [int(per_worker.get(u, 0)) for u in fleet.uuids]
    unknown = sum(int(v) for u, v in per_worker.items() if u not in fleet.uuids)
    ms = 1000.0 / TICKS
    seconds = float(last - first)
    r = {"steps": n, "completed": done, "ok": ok and done == n, "enqueue_s": round(enqueue_s, 3),
         "seconds": round(seconds, 3), "steps_per_s": round(done / seconds, 1) if seconds > 0 else None,
         **in_flight(b, a, z), **ServerCPU.per_step(before[0], after[0], done),
         "worker_cpu_ms_per_step": round((after[1] - before[1]) * ms / max(1, done), 3),
         **t.per_step(before[2], after[2], done),
         "sessions_peak": sampler.peak["total"], "sessions_peak_by_application": sampler.peak["by_application"],
         "steps_per_worker": {"min": min(counts), "max": max(counts), "mean": round(sum(counts) / len(counts), 1),
                              "workers_with_none": counts.count(0), "unattributed": unknown, "counts": counts}}
    if pooler:
        r["pgbouncer_cpu_ms_per_step"] = round((after[3] - before[3]) * ms / max(1, done), 3)
        r["pgbouncer_server_sessions_after"] = pooler.server_sessions(psql)
    return r


def _sleep_ids(b):
    """(named task, named step) of the recovery test's template (registered by the fleet's workers)."""
    task = b.q("""SELECT nt.named_task_uuid FROM tasker.named_tasks nt JOIN tasker.task_namespaces tn
                   USING (task_namespace_uuid) WHERE tn.name = 'bench' AND nt.name = 'fleet_sleep_task'""")
    if not task:
        raise RuntimeError("the fleet_sleep_task template is not registered (see the workers' logs)")
    step = b.q("""INSERT INTO tasker.named_steps (name, created_at, updated_at) VALUES ('fleet_sleep', NOW(), NOW())
                  ON CONFLICT (name) DO UPDATE SET updated_at = NOW() RETURNING named_step_uuid""")[0][0]
    return task[0][0], step


def recovery(b, fleet, t):
    """Steps that sleep, held by every worker; a quarter of the fleet (≥ 1) killed with SIGKILL; the time
    until none of the steps they held is `in_progress` under them."""
    n = len(fleet.procs)
    count = SLEEP_PER_WORKER * n
    saved = b.named_task, b.named_step
    b.named_task, b.named_step = _sleep_ids(b)
    try:
        a, z = b.seed(count)
    finally:
        b.named_task, b.named_step = saved
    t.purge_results()
    b.mark_enqueued(a, z)
    # One send per step, SEND_GAP_S apart (orchestration enqueues steps as their tasks become ready): in
    # one statement, the first worker to read the burst hides every message of it and sheds what it has
    # no room for, and the others see the shed ones only at their next poll.
    for i in range(a, z + 1):
        t.send_steps(i, i)
        time.sleep(SEND_GAP_S)
    # Every worker holding a step, or HOLD_WAIT_S (a worker that got none is noted, not waited for;
    # the kill comes well before the first sleeping step ends).
    deadline = time.time() + HOLD_WAIT_S
    while True:
        held = held_steps(b, a, z)
        holders = [i for i, u in enumerate(fleet.uuids) if u in held]
        if len(holders) == n or time.time() > deadline:
            break
        time.sleep(0.1)
    k = max(1, n // 4)
    victims = (holders + [i for i in range(n) if i not in holders])[:k]
    victim_uuids = {fleet.uuids[i] for i in victims}
    t_kill = time.time()
    fleet.kill(victims)
    killed_s = time.time() - t_kill
    held = held_steps(b, a, z)   # the workers are dead: what they held is fixed now
    lost = [s for u in victim_uuids for s in held.get(u, [])]
    replacement = None
    if not fleet.alive():   # N = 1: a restarted container recovers its predecessor's steps
        replacement = fleet.spawn(len(fleet.procs))
        fleet.wait_ready(replacement, timeout=120)
    limit = time.time() + 60
    while lost and time.time() < limit:
        left = b.q("""SELECT count(*) FROM tasker.workflow_step_transitions t
                       WHERE t.workflow_step_uuid = ANY(%s::uuid[]) AND t.most_recent AND t.to_state = 'in_progress'
                         AND t.metadata->>'worker_uuid' = ANY(%s)""", (lost, list(victim_uuids)))[0][0]
        if left == 0:
            break
        time.sleep(0.1)
    polled_s = time.time() - t_kill
    rows = b.q("""SELECT t.to_state, extract(epoch FROM t.created_at), t.metadata->>'worker_uuid' = ANY(%s)
                    FROM tasker.workflow_step_transitions t
                   WHERE t.workflow_step_uuid = ANY(%s::uuid[]) AND t.most_recent""", (list(victim_uuids), lost))
    # A step whose success was committed as the kill came (the victim's own result, not a recovery)
    # is not a recovered step.
    recovered = [float(at) - t_kill for state, at, theirs in rows
                 if not (state == "in_progress" and theirs) and state != "enqueued_for_orchestration"]
    finished_by_victim = sum(1 for state, _, _ in rows if state == "enqueued_for_orchestration")
    lost_count = len(lost) - finished_by_victim
    states = {}
    for state, _, _ in rows:
        states[state] = states.get(state, 0) + 1
    error_types = dict(b.q("""SELECT coalesce(ws.results->'metadata'->>'error_type', ws.results->>'error_type',
                                              ws.results->'error'->>'error_type', '?'), count(*)
                                FROM tasker.workflow_steps ws WHERE ws.workflow_step_uuid = ANY(%s::uuid[]) GROUP BY 1""",
                              (lost,))) if lost else {}
    # The survivors' sleeping steps end within SLEEP_MS; wait for them, so the fleet stops idle.
    limit = time.time() + SLEEP_MS / 1000 + 45
    while time.time() < limit and held_steps(b, a, z):
        time.sleep(0.5)
    r = {"workers": n, "killed": len(victims), "kill_s": round(killed_s, 3),
         "workers_holding_steps_at_kill": len(holders), "steps": count, "lost_steps": lost_count,
         "finished_by_victim_at_kill": finished_by_victim,
         "recovered": len(recovered), "states_after": states, "result_error_types": error_types,
         "replacement_started": replacement is not None,
         "recovery_s": round(max(recovered), 2) if recovered and len(recovered) == lost_count else None,
         "recovery_s_per_step": summary(recovered), "polled_s": round(polled_s, 2),
         "within_bound": bool(recovered) and len(recovered) == lost_count and max(recovered) <= RECOVERY_BOUND_S}
    if not lost_count:
        r["note"] = "the killed workers held no step at the kill"
    return r


# ------------------------------------------------------------------------------------- the phase
def _pgbouncer(b, directory):
    """scripts/lib/python/pgbouncer.py's PgBouncer (on sys.path: benchlib/common.py) in front of the bench's
    server, on a free port, transaction mode."""
    from pgbouncer import PgBouncer
    os.chmod(directory, 0o755)
    u = urllib.parse.urlsplit(b.a.db_url)
    os_user = None
    if os.geteuid() == 0:   # PgBouncer refuses root: the cluster's owner (scripts/lib/common.sh _pg_os_user)
        os_user = pwd.getpwuid(os.stat(b.q("SHOW data_directory")[0][0]).st_uid).pw_name
    return PgBouncer(directory, server_host=u.hostname, server_port=u.port, port=free_port(),
                     default_pool_size=PGBOUNCER_POOL, os_user=os_user)


def _database_settings(b, on):
    db = b.q("SELECT current_database()")[0][0]
    for name, value in DATABASE_SETTINGS.items():
        if on:
            b.q(f'ALTER DATABASE "{db}" SET {name} = ' + ", ".join(f"'{v.strip()}'" for v in value.split(","))
                if name == "search_path" else f'ALTER DATABASE "{db}" SET {name} = \'{value}\'')
        else:
            b.q(f'ALTER DATABASE "{db}" RESET {name}')


def configuration(b, n, route, transport, broker, psql):
    """One fresh fleet of n workers (route: direct or through a fresh PgBouncer; transport: PGMQ or the
    broker): idle, drain, recovery. An error (a fleet that does not start, PgBouncer that does not) is
    recorded in the result and ends only this configuration."""
    label = f"fleet-{transport}-{route}-{n}"
    r = {"workers": n, "route": route, "transport": transport}
    pooler = fleet = None
    if transport == "rabbitmq":
        settle_results(b)
        t, overlay = BrokerTransport(b, broker), worker_overlay(b.a.rabbitmq_url)
    else:
        t, overlay = PGMQTransport(b), ""
    try:
        if route == "pgbouncer":
            pooler = _pgbouncer(b, tempfile.mkdtemp(prefix="pgbouncer-", dir="/tmp"))
            pooler.start()
            u = urllib.parse.urlsplit(b.a.db_url)
            # PGMQ: the LISTEN session directly to the server; RabbitMQ: none needed.
            listen = b.a.db_url if transport == "pgmq" else ""
            database = (f'url = "{pooler.url(u.path.lstrip("/"), u.username)}"\ntransaction_pooler = true\n'
                        f'listen_url = "{listen}"\n')
        else:
            database = f'url = "{b.a.db_url}"\n'
        fleet = Fleet(b, label, database, overlay)
        t0 = time.time()
        fleet.start(n)
        r["start_s"] = round(time.time() - t0, 1)
        r["idle"] = idle(b, fleet, t, pooler, psql, IDLE_S[b.results["mode"]])
        r["drain"] = drain(b, fleet, t, STEPS[b.results["mode"]], pooler, psql)
        r["recovery"] = recovery(b, fleet, t)
    except (SystemExit, RuntimeError, psycopg.Error, OSError) as e:   # PgBouncerError is a RuntimeError
        r["error"] = str(e)
        log(f"fleet {label}: {e}")
    finally:
        if fleet:
            fleet.stop()
        if pooler:
            pooler.stop()
            if os.path.exists(pooler.log_path):   # kept with the workers' logs
                shutil.copy(pooler.log_path, os.path.join(b.work, f"{label}-pgbouncer.log"))
            shutil.rmtree(pooler.directory, ignore_errors=True)
    if transport == "rabbitmq":
        settle_results(b)
    return r


def fleet(b):
    mode = b.results["mode"]
    sizes = [int(x) for x in _choice("TASKER_BENCH_FLEET_N", SIZES[mode])]
    routes = _choice("TASKER_BENCH_FLEET_ROUTES", ROUTES)
    transports = _choice("TASKER_BENCH_FLEET_TRANSPORTS", TRANSPORTS)
    bad = sorted(set(routes) - set(ROUTES)) + sorted(set(transports) - set(TRANSPORTS))
    if bad:
        raise SystemExit(f"fleet: unknown route/transport {', '.join(bad)} (routes {ROUTES}, transports {TRANSPORTS})")
    if "rabbitmq" in transports and not (b.a.rabbitmq_url and b.a.rabbitmq_pid_file):
        raise SystemExit("the fleet phase's RabbitMQ runs need --rabbitmq-url and --rabbitmq-pid-file (scripts/bench "
                         "starts a broker)")
    psql = os.path.join(os.path.dirname(b.a.pgbench), "psql")
    b.set_sync(True)
    broker = Broker(b) if "rabbitmq" in transports else None
    R = b.results["fleet"] = {"settings": {"pool_max_connections": POOL_MAX, "pool_min_connections": POOL_MIN,
                                           "pool_idle_timeout_seconds": POOL_IDLE_TIMEOUT_S,
                                           "max_concurrent_handlers": C, "pgbouncer_default_pool_size": PGBOUNCER_POOL,
                                           "pgbouncer_pool_mode": "transaction", "deployment_mode": "Hybrid",
                                           "steps_per_drain": STEPS[mode], "idle_window_s": IDLE_S[mode],
                                           "sleep_ms": SLEEP_MS, "sleep_steps_per_worker": SLEEP_PER_WORKER,
                                           "recovery_bound_s": RECOVERY_BOUND_S,
                                           "database_settings_for_the_pooler": DATABASE_SETTINGS,
                                           **capacity.DEFAULTS},
                              "runs": []}
    if "pgbouncer" in routes:
        _database_settings(b, True)
    try:
        for n in sizes:
            for transport in transports:
                for route in routes:
                    r = configuration(b, n, route, transport, broker, psql)
                    R["runs"].append(r)
                    for line in _lines([r], header=False):
                        log(f"fleet {line}")
    finally:
        if "pgbouncer" in routes:
            _database_settings(b, False)
        if broker:
            broker.purge()
            broker.close()
    R["check"] = capacity.check(R, os.cpu_count())


# ------------------------------------------------------------------------------------- the table
HEADER = (f"{'transport':9} {'route':9} {'N':>3} {'steps/s':>8} {'srv ms/st':>9} {'sess idle':>9} {'peak':>5}"
          f" {'idle xact/s':>11} {'/wkr':>6} {'idle srv ms/s':>13} {'/wkr':>6} {'recovery s':>10} {'killed':>6}"
          f" {'steps/wkr min-max':>17}")


def _f(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def _lines(runs, header=True):
    out = [HEADER] if header else []
    for r in runs:
        head = f"{r['transport']:9} {r['route']:9} {r['workers']:>3}"
        if "error" in r and "drain" not in r:
            out.append(f"{head} error: {r['error'][:120]}")
            continue
        i, d, k = r.get("idle", {}), r.get("drain", {}), r.get("recovery", {})
        spw = d.get("steps_per_worker", {})
        out.append(f"{head} {_f(d.get('steps_per_s'), '8.0f')} {_f(d.get('server_cpu_ms_per_step'), '9.3f')}"
                   f" {_f(i.get('sessions'), '9d')} {_f(d.get('sessions_peak'), '5d')}"
                   f" {_f(i.get('xact_per_s'), '11.1f')} {_f(i.get('xact_per_s_per_worker'), '6.2f')}"
                   f" {_f(i.get('server_cpu_ms_per_s'), '13.1f')} {_f(i.get('server_cpu_ms_per_s_per_worker'), '6.2f')}"
                   f" {_f(k.get('recovery_s'), '10.2f')} {_f(k.get('killed'), '6d')}"
                   f" {(str(spw.get('min')) + '-' + str(spw.get('max'))) if spw else '-':>17}"
                   + (f"  error: {r['error'][:80]}" if "error" in r else ""))
    return out


def lines(R):
    """The phase's block of the printed table."""
    f = R.get("fleet")
    if not f:
        return []
    s = f["settings"]
    return (["", f"Fleet (issue #29): N × tasker-worker run (pool {s['pool_min_connections']}–{s['pool_max_connections']}, "
                 f"c = {s['max_concurrent_handlers']}, Hybrid) on one PostgreSQL; PgBouncer transaction mode, "
                 f"default_pool_size {s['pgbouncer_default_pool_size']}; drains of {s['steps_per_drain']} no-op steps, "
                 f"idle window {s['idle_window_s']:.0f} s"]
            + _lines(f["runs"])
            + ["  srv ms/st = PostgreSQL's CPU per drained step; sess = server sessions of the database (idle; peak during "
               "the drain); idle xact/s = transactions/s of the idle fleet; recovery = SIGKILL of N/4 workers (≥ 1) → "
               "none of their steps in_progress (N = 1: a replacement worker started); steps/wkr = fairness"]
            + capacity.check_lines(f, R.get("machine", {}).get("cores") or os.cpu_count()))
