"""The faults. Each takes the run (`Chaos`) and returns a record: kind, start, hit (when the fault
struck: a signal waits until the worker holds claims), end (epoch seconds) and what it did; `stranded` (SIGKILL of a worker) lists the steps the dead worker held in_progress."""
import os
import signal
import subprocess
import time

from .common import log
from .poison import malformed_notifications, malformed_task_requests, poison_bodies

KINDS = ["terminate_backends", "postgres_restart", "sigterm_worker", "sigkill_worker", "sigkill_orchestration",
         "poison_messages", "malformed_notifications", "malformed_task_requests"]


def terminate_backends(run):
    n = run.db.one("""SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                       WHERE usename = 'tasker' AND backend_type = 'client backend'""")
    return {"terminated": n}


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


HELD = """SELECT count(*) FROM tasker.workflow_step_transitions
            WHERE most_recent AND to_state = 'in_progress' AND metadata->>'worker_uuid' = %s"""


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
    p = run.fleet["worker-a"]
    held = _await_claims(run, p, run.profile["claims_at_signal"])
    run.hit = time.time()
    exit_s, status = p.signal_and_wait(signal.SIGTERM, 120)
    if status != 0:
        run.failures.append(f"worker-a exited with status {status} after SIGTERM (expected 0)")
    p.start()
    ready = p.wait_ready()
    return {"held_at_signal": held, "exit_s": round(exit_s, 2), "status": status, "_ready_at": ready}


def sigkill_worker(run):
    p = run.fleet["worker-b"]
    dead = p.current_uuid()
    _await_claims(run, p, run.profile["claims_at_signal"])
    run.hit = time.time()
    p.signal_and_wait(signal.SIGKILL, 10)
    killed_at = time.time()
    # What the dead worker held: steps whose current transition is its in_progress claim.
    rows = run.db.q("""SELECT wst.workflow_step_uuid::text, wst.sort_key FROM tasker.workflow_step_transitions wst
                        WHERE wst.most_recent AND wst.to_state = 'in_progress'
                          AND wst.metadata->>'worker_uuid' = %s""", (dead,)) if dead else []
    time.sleep(1.0)
    p.start()
    ready = p.wait_ready()
    return {"dead_worker_uuid": dead, "stranded": [[s, k] for s, k in rows], "killed_at": killed_at,
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
        _, error = run.db.try_q(sql, (queue, body))
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
            _, error = run.db.try_q("SELECT pg_notify(%s, %s)", (channel, payload))
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
    "sigterm_worker": sigterm_worker,
    "sigkill_worker": sigkill_worker,
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
