"""The faults. Each takes the run (`Chaos`) and returns a record: kind, start, hit (when the fault
struck: a signal waits until the worker holds claims), end (epoch seconds) and what it did; `stranded` (SIGKILL of a worker
or of a quarter of the fleet) lists the steps the dead workers held in_progress. Hostile queue inputs go to
the queue database (`run.qdb`: the main one unless the queues have their own); the database faults hit
the cluster, so both databases."""
import os
import signal
import subprocess
import time

from .common import log
from .poison import malformed_notifications, malformed_task_requests, poison_bodies

KINDS = ["terminate_backends", "postgres_restart", "sigterm_worker", "sigkill_worker", "sigkill_orchestration",
         "poison_messages", "malformed_notifications", "malformed_task_requests"]
# The fleet profile: a quarter of the workers SIGKILLed at once instead of one, and PgBouncer restarted.
FLEET_KINDS = ["terminate_backends", "postgres_restart", "pgbouncer_restart", "sigterm_worker", "sigkill_quarter",
               "sigkill_orchestration", "poison_messages", "malformed_notifications", "malformed_task_requests"]


def terminate_backends(run):
    """Every backend of role tasker in the cluster, whichever database it is connected to."""
    rows = run.db.q("""SELECT datname, count(pg_terminate_backend(pid)) FROM pg_stat_activity
                        WHERE usename = 'tasker' AND backend_type = 'client backend' GROUP BY datname""")
    by_database = {name: n for name, n in rows}
    if run.qdb is not run.db and not by_database.get(run.qdb.url.rsplit("/", 1)[1]):
        run.warnings.append("terminate_backends found no backend of the queue database to terminate")
    return {"terminated": sum(by_database.values()), "by_database": by_database}


def postgres_restart(run):
    a = run.args
    command = [os.path.join(a.pg_bindir, "pg_ctl"), "-D", a.pg_data, "-m", "fast", "-w", "-t", "60", "restart"]
    if a.pg_os_user:
        command = ["runuser", "-u", a.pg_os_user, "--"] + command
    started = time.time()
    done = subprocess.run(command, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"pg_ctl restart failed: {done.stderr.decode(errors='replace')}")
    return {"restart_s": round(time.time() - started, 2)}


def pgbouncer_restart(run):
    """PgBouncer killed (SIGKILL) and started again on its port: every connection through it breaks.
    Waits (≤ 20 s) until it has a client connection per worker, so that the kill meets the fleet
    connected (after a PostgreSQL restart PgBouncer refuses logins for server_login_retry, 15 s, and
    the workers' pools reconnect after that)."""
    if run.pooler is None:
        raise RuntimeError("no PgBouncer in this run (the fleet is connected directly)")
    want = len(run.fleet.worker_names) if run.args.fleet_route != "direct" else 0
    deadline = time.time() + 20
    clients = _pooler_clients(run)
    while isinstance(clients, int) and clients < want and time.time() < deadline:
        time.sleep(0.2)
        clients = _pooler_clients(run)
    run.hit = time.time()
    started = time.time()
    run.pooler.restart()
    return {"restart_s": round(time.time() - started, 2), "client_connections_broken": clients}


def _pooler_clients(run):
    try:
        return sum(1 for row in run.pooler.show("CLIENTS", run.args.psql) if row.get("database") != "pgbouncer")
    except Exception as error:
        return f"unknown ({error})"


HELD = """SELECT count(*) FROM tasker.workflow_step_transitions
            WHERE most_recent AND to_state = 'in_progress' AND metadata->>'worker_uuid' = %s"""

HELD_BY_WORKER = """SELECT metadata->>'worker_uuid', count(*) FROM tasker.workflow_step_transitions
                     WHERE most_recent AND to_state = 'in_progress' GROUP BY 1"""


def _await_claims(run, p, want, timeout=15.0):
    """Waits (bounded) until worker `p` holds at least `want` steps in_progress, so that the signal
    meets claimed work; returns how many it held."""
    uuid, held, deadline = p.current_uuid(), 0, time.time() + timeout
    while uuid and time.time() < deadline:
        held = run.db.one(HELD, (uuid,))
        if held >= want:
            break
        time.sleep(0.05)
    return held


def sigterm_worker(run):
    """Worker a (two workers) or the busiest worker once it holds a step (the fleet), SIGTERMed and
    restarted when it exited."""
    if len(run.fleet.worker_names) > 2:
        (p,), held = _busiest(run, 1, 1)
    else:
        p = run.fleet[run.fleet.worker_names[0]]
        held = _await_claims(run, p, run.profile["claims_at_signal"])
    run.hit = time.time()
    exit_s, status = p.signal_and_wait(signal.SIGTERM, 120)
    if status != 0:
        run.failures.append(f"{p.name} exited with status {status} after SIGTERM (expected 0)")
    p.start()
    ready = p.wait_ready()
    return {"worker": p.name, "held_at_signal": held, "exit_s": round(exit_s, 2), "status": status, "_ready_at": ready}


STRANDED = """SELECT wst.workflow_step_uuid::text, wst.sort_key FROM tasker.workflow_step_transitions wst
                WHERE wst.most_recent AND wst.to_state = 'in_progress'
                  AND wst.metadata->>'worker_uuid' = %s"""


def sigkill_worker(run):
    p = run.fleet[run.fleet.worker_names[1]]
    dead = p.current_uuid()
    _await_claims(run, p, run.profile["claims_at_signal"])
    run.hit = time.time()
    p.signal_and_wait(signal.SIGKILL, 10)
    killed_at = time.time()
    # What the dead worker held: steps whose current transition is its in_progress claim.
    rows = run.db.q(STRANDED, (dead,)) if dead else []
    time.sleep(1.0)
    p.start()
    ready = p.wait_ready()
    return {"dead_worker_uuid": dead, "stranded": [[s, k] for s, k in rows], "killed_at": killed_at,
            "_ready_at": ready}


def _busiest(run, count, want, timeout=15.0):
    """`count` workers holding the most steps in_progress (ties in the seed's order), once (within
    `timeout` s) they hold `want` together; with workers of several connection modes (pooler+listen,
    pooler+poll), an equal share of each, and each share holding at least one step (else the deadline
    decides). Returns (workers, what they held)."""
    workers = run.fleet.workers()
    order = {p.name: i for i, p in enumerate(run.rng.sample(workers, len(workers)))}
    groups = {}
    for p in workers:
        groups.setdefault(run.fleet.specs[p.name].mode, []).append(p)
    share = max(1, count // len(groups)) if count >= len(groups) else count
    deadline = time.time() + timeout
    while True:
        held = {uuid: n for uuid, n in run.db.q(HELD_BY_WORKER)}
        def rank(ps):
            return sorted(ps, key=lambda p: (-held.get(p.current_uuid(), 0), order[p.name]))
        if len(groups) > 1 and count >= len(groups):
            shares = [rank(ps)[:share] for ps in groups.values()]
            chosen = [p for group in shares for p in group][:count]
            every_share = all(sum(held.get(p.current_uuid(), 0) for p in group) > 0 for group in shares)
        else:
            chosen, every_share = rank(workers)[:count], True
        total = sum(held.get(p.current_uuid(), 0) for p in chosen)
        if (total >= want and every_share) or time.time() >= deadline:
            return chosen, total
        time.sleep(0.05)


def sigkill_quarter(run):
    """A quarter of the workers SIGKILLed at once, restarted a second later (as a supervisor would).
    The victims: the busiest workers (half of them among those with a LISTEN session, half among the
    polling ones) once (within 15 s) they hold `claims_at_signal` steps in_progress together, so that
    the kill strands claims."""
    victims, total = _busiest(run, max(1, len(run.fleet.worker_names) // 4), run.profile["claims_at_signal"])
    dead = {p.name: p.current_uuid() for p in victims}
    run.hit = time.time()
    for p in victims:
        with p.lock:
            p.expected_exit = True
            p.popen.send_signal(signal.SIGKILL)
    for p in victims:
        status = p.popen.wait()
        p.exit_statuses.append((time.time(), status, "SIGKILL"))
    killed_at = time.time()
    stranded, per_worker = [], {}
    for p in victims:
        rows = run.db.q(STRANDED, (dead[p.name],)) if dead[p.name] else []
        per_worker[p.name] = {"uuid": dead[p.name], "mode": run.fleet.specs[p.name].mode, "held": len(rows)}
        stranded.extend([s, k] for s, k in rows)
    time.sleep(1.0)
    for p in victims:
        p.start()
    ready = max(p.wait_ready() for p in victims)
    return {"victims": per_worker, "held_at_signal": total, "stranded": stranded, "killed_at": killed_at,
            "_ready_at": ready}


def sigkill_orchestration(run):
    p = run.fleet["orchestration"]
    p.signal_and_wait(signal.SIGKILL, 10)
    time.sleep(1.0)
    p.start()
    return {"_ready_at": p.wait_ready()}


def _send_all(run, queue, bodies, notify_every=2):
    sent = refused = 0
    for i, (_, body) in enumerate(bodies):
        sql = ("SELECT tasker.pgmq_send_with_notify(%s::text, %s::jsonb, 0)" if i % notify_every == 0
               else "SELECT pgmq.send(%s::text, %s::jsonb)")
        _, error = run.qdb.try_q(sql, (queue, body))
        if error is None:
            sent += 1
        else:
            refused += 1
    return sent, refused


def poison_messages(run):
    real = [(t, s) for t, s in run.db.q(
        """SELECT ws.task_uuid::text, ws.workflow_step_uuid::text FROM tasker.workflow_steps ws
            ORDER BY ws.workflow_step_uuid DESC LIMIT 500""")]
    per_queue = run.profile["poison_per_queue"]
    out = {}
    for queue in ("worker_examples_queue", "worker_chaos_queue", "orchestration_step_results",
                  "orchestration_task_finalizations"):
        sent, refused = _send_all(run, queue, poison_bodies(run.rng, per_queue, real))
        out[queue] = {"sent": sent, "refused_by_server": refused}
        run.poison_sent += sent
    return out


def malformed_notifications_fault(run):
    payloads = malformed_notifications(run.rng, run.profile["notifications"])
    sent = refused = 0
    for channel in ("pgmq_message_ready.examples", "pgmq_message_ready.chaos", "pgmq_message_ready.orchestration"):
        for _, payload in payloads:
            _, error = run.qdb.try_q("SELECT pg_notify(%s, %s)", (channel, payload))
            sent, refused = (sent + 1, refused) if error is None else (sent, refused + 1)
    run.notifications_sent += sent
    return {"sent": sent, "refused_by_server": refused}


def malformed_task_requests_fault(run):
    sent, refused = _send_all(run, "orchestration_task_requests",
                              malformed_task_requests(run.rng, run.profile["bad_requests"]))
    run.bad_requests_sent += sent
    return {"sent": sent, "refused_by_server": refused}


ACTIONS = {
    "terminate_backends": terminate_backends,
    "postgres_restart": postgres_restart,
    "pgbouncer_restart": pgbouncer_restart,
    "sigterm_worker": sigterm_worker,
    "sigkill_worker": sigkill_worker,
    "sigkill_quarter": sigkill_quarter,
    "sigkill_orchestration": sigkill_orchestration,
    "poison_messages": poison_messages,
    "malformed_notifications": malformed_notifications_fault,
    "malformed_task_requests": malformed_task_requests_fault,
}


def inject(run, kind):
    log(f"fault: {kind}")
    start = run.hit = time.time()
    try:
        record = ACTIONS[kind](run)
    except Exception as error:
        run.failures.append(f"fault {kind} could not be injected: {error}")
        record = {"error": str(error)}
    record.update(kind=kind, start=start, hit=run.hit, end=time.time())
    ready_at = record.pop("_ready_at", None)
    if ready_at is not None:
        record["restarted_ready_s"] = round(ready_at - run.hit, 2)
    log(f"fault: {kind} done in {record['end'] - start:.1f} s "
        + ", ".join(f"{k}={v}" for k, v in record.items()
                    if k not in ("kind", "start", "hit", "end", "stranded", "killed_at")))
    return record
