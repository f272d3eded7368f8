"""End to end: tasker-dev orchestrate + run (Hybrid, c = 16); TaskRequestMessages for
examples/linear_workflow (4 steps) at a fixed rate, send → the task's `complete` transition; plus a
few real `tasker-dev submit` processes (process start included)."""
import json
import os
import subprocess
import time
import uuid

from . import worker
from .common import LATENCY_C, log, summary


def e2e(b):
    b.results["e2e"] = measure(b, b.a.dev_bin)
    s = b.results["e2e"]["submit_to_complete_ms"]
    log(f"e2e linear 4-step: p50 {s['p50']:.1f} p99 {s['p99']:.1f} ms ({b.results['e2e']['completed']}/{b.cfg['e2e_tasks']})")


def measure(b, dev_bin):
    """One end-to-end run with `dev_bin` as orchestration, worker (its example handlers) and submit."""
    b.purge_results()
    b.finish_synthetic_tasks()
    orch = worker.spawn(b, ["orchestrate"], worker.worker_config(b, "Hybrid", LATENCY_C), "orchestrate",
                        binary=dev_bin)
    w = worker.start_worker(b, "Hybrid", LATENCY_C, examples=True, binary=dev_bin)
    tag = uuid.uuid4().hex[:8]
    try:
        time.sleep(1.0)
        sends = {}
        count, rate = b.cfg["e2e_tasks"], b.cfg["e2e_rate"]
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
            b.q("SELECT tasker.pgmq_send_with_notify('orchestration_task_requests'::text, %s::jsonb, 0)",
                (json.dumps(msg),))
            sends[corr] = time.time()
        cli = {}
        for i in range(b.cfg["e2e_cli"]):
            t = time.time()
            subprocess.run([dev_bin, "submit", "examples", "linear_workflow", "1.0.0", "--context",
                            json.dumps({"number": 1000 + i, "bench": tag, "cli": i})],
                           env=dict(os.environ, TASKER_CONFIG_PATH=worker.worker_config(b, "Hybrid", 1),
                                    TASKER_LOG_LEVEL="warning"), check=True, capture_output=True)
            cli[i] = t
            time.sleep(0.2)
        total = count + len(cli)
        deadline = time.time() + 60
        while time.time() < deadline:
            done = b.q("""SELECT count(*) FROM tasker.tasks t JOIN tasker.task_transitions tt USING (task_uuid)
                           WHERE t.context->>'bench' = %s AND tt.to_state = 'complete'""", (tag,))[0][0]
            if done >= total:
                break
            time.sleep(0.2)
        rows = b.q("""SELECT t.correlation_id::text, t.context->>'cli', extract(epoch FROM tt.created_at)
                        FROM tasker.tasks t JOIN tasker.task_transitions tt USING (task_uuid)
                       WHERE t.context->>'bench' = %s AND tt.to_state = 'complete'""", (tag,))
        worker_ms = [float(v) * 1000 for (v,) in b.q("""
            SELECT sum(extract(epoch FROM d.created_at - e.created_at))
              FROM tasker.tasks t JOIN tasker.workflow_steps ws USING (task_uuid)
              JOIN tasker.workflow_step_transitions e ON e.workflow_step_uuid = ws.workflow_step_uuid AND e.to_state = 'enqueued'
              JOIN tasker.workflow_step_transitions d ON d.workflow_step_uuid = ws.workflow_step_uuid
                                                     AND d.to_state = 'enqueued_for_orchestration'
             WHERE t.context->>'bench' = %s GROUP BY t.task_uuid""", (tag,))]
    finally:
        worker.stop(w)
        worker.stop(orch)
    lat = [(float(e) - sends[c]) * 1000 for c, k, e in rows if k is None and c in sends]
    cli_lat = [(float(e) - cli[int(k)]) * 1000 for c, k, e in rows if k is not None]
    r = {"workflow": "examples/linear_workflow (4 steps)", "rate_per_s": rate, "tasks": count,
         "completed": len(lat), "submit_to_complete_ms": summary(lat),
         "cli_submit_to_complete_ms": summary(cli_lat),
         # per task: Σ over its 4 steps of `enqueued` → `enqueued_for_orchestration` (the
         # worker's share); the rest of submit→complete is orchestration and queueing.
         "worker_share_ms": summary(worker_ms)}
    if r["submit_to_complete_ms"]["p50"] is None:
        raise SystemExit(f"bench: no end-to-end task completed ({dev_bin}); see {b.work}")
    return r
