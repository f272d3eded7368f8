"""Quiescence and the verdict, from the database and the processes. Every check appends a line to
`failures`; figures go into `figures`. Queues are judged in the queue database (`run.qdb`), tasks
and steps in the main one (`run.db`); with the queues in their own database, the main database's
queues (if it has PGMQ at all) must never have received a message."""
import json
import os
import re
import time

from .common import log

CHAOS_TASKS = """SELECT t.context->>'chaos_id', t.task_uuid::text, t.complete,
                        (SELECT tt.to_state FROM tasker.task_transitions tt
                          WHERE tt.task_uuid = t.task_uuid AND tt.most_recent)
                   FROM tasker.tasks t WHERE t.context ? 'chaos_id'"""

OPEN_STEPS = """SELECT count(*) FROM tasker.workflow_step_transitions
                 WHERE most_recent AND to_state IN ('in_progress', 'enqueued', 'enqueued_for_orchestration',
                                                    'enqueued_as_error_for_orchestration')"""


def queues(db):
    return [name for (name,) in db.q("SELECT queue_name FROM pgmq.list_queues()")
            if name.startswith(("worker_", "orchestration_"))]


def queue_depths(db):
    depths = {}
    for name in queues(db):
        depths[name] = db.one(f'SELECT count(*) FROM pgmq."q_{name}"')
    return depths


def wait_for_quiescence(run, timeout):
    """Until every submitted task is complete and the queues are empty, at most `timeout` s."""
    start = time.time()
    expected = set(run.load.submitted)
    last = None
    while True:
        done = {cid for cid, _, complete, _ in run.db.q(CHAOS_TASKS) if complete}
        depth = sum(queue_depths(run.qdb).values())
        waiting = len(expected - done)
        if waiting == 0 and depth == 0:
            return time.time() - start
        if time.time() - start > timeout:
            log(f"not quiescent after {timeout} s: {waiting} tasks not complete, {depth} messages queued")
            return None
        if (waiting, depth) != last:
            log(f"waiting for quiescence: {waiting} tasks not complete, {depth} messages queued")
            last = (waiting, depth)
        time.sleep(1.0)


def longest_line(path):
    longest = 0
    with open(path, "rb") as f:
        for line in f:
            longest = max(longest, len(line))
    return longest


def judge(run):
    f, db = run.failures, run.db
    figures = run.figures
    # Processes: alive and ready, none exited by itself.
    for p in run.fleet.processes.values():
        if not p.ready(timeout=5):
            f.append(f"{p.name} is not alive and ready at the end (alive={p.alive()})")
            run.failing_logs.add(p.log_path)
        for at, status in p.unexpected_exits:
            run.failing_logs.add(p.log_path)
        longest = longest_line(p.log_path)
        figures.setdefault("longest_log_line", {})[p.name] = longest
        if longest > 16 * 1024:
            # The log handler cuts every value at 2,048 characters: a longer line is a hostile input
            # echoed in full.
            f.append(f"{p.name} wrote a log line of {longest} bytes (a hostile input echoed in full?)")
            run.failing_logs.add(p.log_path)
    # Tasks: every submitted one created once and complete.
    rows = db.q(CHAOS_TASKS)
    by_id = {}
    for cid, task, complete, state in rows:
        by_id.setdefault(cid, []).append((task, complete, state))
    submitted = run.load.submitted
    missing = [cid for cid in submitted if cid not in by_id]
    duplicated = {cid: v for cid, v in by_id.items() if len(v) > 1}
    incomplete = {cid: v[0] for cid, v in by_id.items() if not any(c for _, c, _ in v)}
    figures["tasks"] = len(submitted)
    figures["tasks_complete"] = len(submitted) - len(missing) - len(incomplete)
    if missing:
        f.append(f"{len(missing)} submitted tasks were never created (e.g. {missing[:3]})")
    if duplicated:
        f.append(f"{len(duplicated)} tasks created more than once (e.g. {list(duplicated.items())[:2]})")
    if incomplete:
        states = {}
        for _, _, state in incomplete.values():
            states[state] = states.get(state, 0) + 1
        f.append(f"{len(incomplete)} tasks not complete, by state {states} (e.g. {list(incomplete.items())[:3]})")
    malformed = db.one("SELECT count(*) FROM tasker.tasks WHERE context ? 'chaos_malformed'")
    if malformed:
        f.append(f"{malformed} tasks created from malformed task requests")
    # Steps.
    figures["steps"] = db.one("SELECT count(*) FROM tasker.workflow_steps")
    in_progress = db.q("""SELECT workflow_step_uuid::text, metadata->>'worker_uuid', created_at::text
                            FROM tasker.workflow_step_transitions WHERE most_recent AND to_state = 'in_progress'""")
    if in_progress:
        f.append(f"{len(in_progress)} steps still in_progress (step, worker_uuid, since): {in_progress[:5]}")
    twice = db.q("""SELECT workflow_step_uuid::text, count(*) FILTER (WHERE to_state = 'enqueued_for_orchestration'),
                           count(*) FILTER (WHERE to_state = 'complete')
                      FROM tasker.workflow_step_transitions GROUP BY workflow_step_uuid
                    HAVING count(*) FILTER (WHERE to_state = 'enqueued_for_orchestration') > 1
                        OR count(*) FILTER (WHERE to_state = 'complete') > 1""")
    if twice:
        f.append(f"{len(twice)} steps with two successful results (step, successes, completes): {twice[:5]}")
    figures["step_retries"] = db.one("""SELECT count(*) FROM tasker.workflow_step_transitions
                                         WHERE to_state = 'enqueued_as_error_for_orchestration'""")
    check_results(run)
    # Queues.
    qdb = run.qdb
    depths = {q: n for q, n in queue_depths(qdb).items() if n}
    if depths:
        f.append(f"messages left in queues: {depths}")
    figures["archived_messages"] = sum(qdb.one(f'SELECT count(*) FROM pgmq."a_{q}"') for q in queues(qdb))
    if qdb is not db:
        used = main_database_queues_used(db)
        figures["main_database_pgmq"] = used is not None
        if used:
            f.append(f"the queues have their own database, yet the main database's queues received messages: {used}")


def main_database_queues_used(db):
    """None when the database has no PGMQ; else the queues that ever received a message (each
    queue's message id sequence, pgmq.metrics_all's total_messages) and their counts."""
    if db.one("SELECT to_regnamespace('pgmq') IS NULL"):
        return None
    return {name: n for name, n in db.q("SELECT queue_name, total_messages FROM pgmq.metrics_all()") if n}


def _values(db, template):
    out = {}
    for task, name, results in db.q(STEP_RESULTS, (template,)):
        out.setdefault(task, {})[name] = results
    return out


STEP_RESULTS = """SELECT ws.task_uuid::text, ns.name, ws.results
                    FROM tasker.workflow_steps ws
                    JOIN tasker.named_steps ns USING (named_step_uuid)
                    JOIN tasker.tasks t USING (task_uuid)
                    JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
                   WHERE nt.name = %s AND t.complete"""


def check_results(run):
    """A dependent step saw what its parent stored: linear (square → add → multiply → verify) from
    the context's number, and chaos hold → echo → check from the echoed dependencies."""
    f, db = run.failures, run.db
    contexts = {task: ctx for task, ctx in db.q("SELECT task_uuid::text, context FROM tasker.tasks")}
    bad, checked = [], 0

    def value(results, *path):
        v = results
        for key in ("result",) + path:
            v = v.get(key) if isinstance(v, dict) else None
        return v

    for task, steps in _values(db, "linear_workflow").items():
        n = contexts[task]["number"]
        expected = {"linear_square": n * n, "linear_add": n * n + 5, "linear_multiply": (n * n + 5) * 3,
                    "linear_verify": (n * n + 5) * 3}
        for name, want in expected.items():
            got = value(steps.get(name) or {}, "value")
            if got != want:
                bad.append((task, name, got, want))
        checked += 1
    template = os.path.join(run.args.repo, "Chaos", "templates", "chaos_hold_workflow.yaml")
    slept = {"slept_ms": int(re.search(r"ms: (\d+)", open(template).read()).group(1))}
    for task, steps in _values(db, "hold_workflow").items():
        hold = value(steps.get("chaos_hold") or {})
        echo = value(steps.get("chaos_echo") or {}) or {}
        check = value(steps.get("chaos_check") or {}) or {}
        if hold != slept:
            bad.append((task, "chaos_hold", hold, slept))
        if (echo.get("dependencies") or {}).get("chaos_hold") != hold:
            bad.append((task, "chaos_echo saw", (echo.get("dependencies") or {}).get("chaos_hold"), hold))
        if (check.get("dependencies") or {}).get("chaos_echo") != echo:
            bad.append((task, "chaos_check saw", "(differs)", "chaos_echo's stored result"))
        if echo.get("context") != contexts[task]:
            bad.append((task, "chaos_echo context", echo.get("context"), contexts[task]))
        checked += 1
    run.figures["results_checked_tasks"] = checked
    if bad:
        f.append(f"{len(bad)} step results not as their dependents saw/computed them: "
                 + json.dumps(bad[:3], default=str))
    if checked == 0:
        f.append("no completed linear_workflow or hold_workflow task to check results on")
