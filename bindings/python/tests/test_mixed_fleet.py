"""The mixed fleet (issue #15): our companion orchestration, OUR worker (`tasker-dev run`: the Swift
example handlers and built-ins) and UPSTREAM's worker (PyPI tasker-py 0.1.8, the tasker-py handlers
of fixtures/handlers/fleet_handlers.py) on one database, a few hundred multi-step tasks in
namespaces served by both (fleet_shared) and by one only (fleet_swift: ours; fleet_upstream:
upstream's). Judged from the database afterwards: every task terminal with its expected state and
results, steps of one implementation that hydrated dependency results stored by the other, at most
one stored result per attempt, our worker never claiming or storing over upstream's claim, no
message left in a queue, no error in our processes' logs. The figures (double claims by whom) are
written to figures.json in the test's directory and printed (pytest -s). The functions here serve the
other mixed fleets too (test_mixed_fleet_rabbitmq.py, test_mixed_fleet_queue_db.py): queue statements
go to ``cluster.queue_db`` (the main database unless the queues have their own)."""

from __future__ import annotations

import json
import re
import shutil
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conftest import TESTS, Cluster, Process, UpstreamWorker, free_port

FLEET_TEMPLATES = TESTS / "fixtures" / "fleet_templates"
OURS_NAMESPACES = ("fleet_shared", "fleet_swift")
UPSTREAM_NAMESPACES = ("fleet_shared", "fleet_upstream")
RESULT_STATES = ("enqueued_for_orchestration", "enqueued_as_error_for_orchestration")
#: The queues upstream's worker reads. Its poller leaves messages of steps already finished in them
#: (it reads them again after each visibility timeout and never archives them while the test runs;
#: in the shared queue our worker archives those it reads first): they are counted, and each must
#: belong to a finished step. Every other queue must be empty.
UPSTREAM_QUEUES = tuple(f"worker_{namespace}_queue" for namespace in UPSTREAM_NAMESPACES)
#: A line of our text log at level error or critical (`<timestamp> <level> <label>: …`).
ERROR_LINE = re.compile(r"^\S+ (error|critical) ")


@dataclass(frozen=True)
class Kind:
    """One kind of task: where it is, how many, its expected final state and a check of its results."""
    namespace: str
    name: str
    count: int
    state: str
    check: Callable[[int, dict[str, dict[str, Any]]], None]


def _result(steps: dict[str, dict[str, Any]], name: str) -> Any:
    return steps[name]["results"]["result"]


def _check_diamond(n: int, steps: dict[str, dict[str, Any]]) -> None:
    assert _result(steps, "diamond_merge") == {"value": 3 * n * n + 1, "verified": True}


def _check_retry(n: int, steps: dict[str, dict[str, Any]]) -> None:
    assert _result(steps, "retry_fetch") == {"value": n + 1, "attempts": 2}
    assert _result(steps, "retry_confirm") == {"value": n + 1, "confirmed": True}
    assert steps["retry_fetch"]["attempts"] == 2


def _check_doomed(n: int, steps: dict[str, dict[str, Any]]) -> None:
    assert _result(steps, "diamond_start") == {"value": n * n}
    failed = steps["doomed_fail"]
    assert (failed["state"], failed["attempts"]) == ("error", 2)
    assert failed["results"]["success"] is False
    assert failed["results"]["error"]["message"] == "fleet: doomed on purpose"


def _check_linear(n: int, steps: dict[str, dict[str, Any]]) -> None:
    assert _result(steps, "linear_verify") == {"value": (n * n + 5) * 3, "verified": True}


def _check_chain(n: int, steps: dict[str, dict[str, Any]]) -> None:
    assert _result(steps, "py_finish") == {"value": (n + 1) * 2 + 1}
    assert steps["py_flaky"]["attempts"] == 2


def _check_rejected(n: int, steps: dict[str, dict[str, Any]]) -> None:
    rejected = steps["py_reject"]
    assert (rejected["state"], rejected["attempts"]) == ("error", 1)
    # The tasker-py shape of a failure, which our orchestration failed for good.
    results = rejected["results"]
    assert (results["status"], results["result"], results["orchestration_metadata"]) == ("permanent_error", None, None)
    assert results["metadata"]["retryable"] is False


KINDS = (
    Kind("fleet_shared", "diamond", 110, "complete", _check_diamond),
    Kind("fleet_shared", "retry", 40, "complete", _check_retry),
    Kind("fleet_shared", "doomed", 20, "error", _check_doomed),
    Kind("fleet_swift", "linear", 40, "complete", _check_linear),
    Kind("fleet_upstream", "chain", 30, "complete", _check_chain),
    Kind("fleet_upstream", "rejected", 10, "error", _check_rejected),
)


def _failed_by_upstream_race(kind: Kind, task: dict[str, Any], raced: Counter) -> bool:
    """Whether ``task`` is a retry task that ended in error only because upstream's claim raced ours
    on retry_fetch: each raced claim counted one more attempt, so retry_fetch's handler saw attempt
    2 + r and stored it, and retry_confirm (which insists on 2) failed saying so. Anything else about
    the task must still be right."""
    if (kind.namespace, kind.name) != ("fleet_shared", "retry") or task["state"] != "error":
        return False
    fetch, confirm = task["steps"]["retry_fetch"], task["steps"]["retry_confirm"]
    r = raced.get(str(fetch["uuid"]), 0)
    seen = 2 + r
    return (r > 0 and fetch["state"] == "complete"
            and _result(task["steps"], "retry_fetch") == {"value": task["context"]["number"] + 1, "attempts": seen}
            and confirm["state"] == "error"
            and confirm["results"]["error"]["message"] == f"attempts of retry_fetch: expected 2, got {seen}")


def _wrong_outcome(kind: Kind, task: dict[str, Any], raced: Counter) -> str | None:
    """What is wrong with ``task``'s final state or results, or None. ``raced``: per step uuid, the
    attempts in which upstream's claim landed on ours (upstream's race: its claim is not atomic with
    ours, and each such claim counts one more attempt); they are taken off the step's attempts first,
    and counted in the figures. A retry task failed by such a race (``_failed_by_upstream_race``) is
    not wrong: it is upstream's race showing through the example's own check."""
    if _failed_by_upstream_race(kind, task, raced):
        return None
    for step in task["steps"].values():
        step["attempts"] -= raced.get(str(step["uuid"]), 0)
    try:
        assert task["state"] == kind.state, f"state {task['state']}"
        kind.check(task["context"]["number"], task["steps"])
    except (AssertionError, KeyError, TypeError) as problem:
        return f"{kind.namespace}/{kind.name} {task['context']}: {problem!r}; steps {task['steps']}"
    return None


def _template_directory(root: Path, namespaces: tuple[str, ...]) -> Path:
    """A copy of the fleet templates of ``namespaces`` only (what one worker serves)."""
    root.mkdir()
    for path in sorted(FLEET_TEMPLATES.glob("*.yaml")):
        if re.search(r"^namespace_name: (\S+)$", path.read_text(), re.M).group(1) in namespaces:
            shutil.copy(path, root / path.name)
    return root


def start_fleet(cluster: Cluster, tmp_path: Path) -> tuple[Process, UpstreamWorker]:
    """Our worker (`tasker-dev run`, OURS_NAMESPACES) and upstream's (UPSTREAM_NAMESPACES, the handlers
    of fleet_handlers.py), each serving its copy of the fleet templates; both ready."""
    web = f"127.0.0.1:{free_port()}"
    ours = cluster.start("ours", [str(cluster.tools.dev_binary), "run"], {
        "TASKER_TEMPLATE_PATH": str(_template_directory(tmp_path / "ours-templates", OURS_NAMESPACES)),
        "TASKER_WEB_BIND_ADDRESS": web})
    ours.wait_for_http(f"http://{web}/health")
    upstream = cluster.start_upstream_worker(
        handler_packages=("fleet_handlers",),
        templates=_template_directory(tmp_path / "upstream-templates", UPSTREAM_NAMESPACES))
    return ours, upstream


def _submit_all(cluster: Cluster) -> None:
    """Every task request of KINDS onto orchestration_task_requests in one statement (context
    {"number": n, "fleet": i}, unique per task), interleaved so that the kinds run together."""
    rows = []
    for index in range(max(kind.count for kind in KINDS)):
        for kind in KINDS:
            if index < kind.count:
                rows.append(f"('{kind.namespace}', '{kind.name}', {index % 17 + 1}, {len(rows)})")
    cluster.queue_db.scalar(
        "SELECT count(tasker.pgmq_send_with_notify('orchestration_task_requests', jsonb_build_object("
        " 'request_id', gen_random_uuid(), 'metadata', '{}'::jsonb, 'task_request', jsonb_build_object("
        "  'namespace', ns, 'name', name, 'version', '1.0.0', 'initiator', 'test_mixed_fleet',"
        "  'source_system', 'pytest', 'reason', 'mixed fleet',"
        "  'context', jsonb_build_object('number', n, 'fleet', i))), 0))"
        f" FROM (VALUES {', '.join(rows)}) AS r(ns, name, n, i)")


def _wait_until_all_terminal(cluster: Cluster, total: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    done = 0
    while time.monotonic() < deadline:
        done = int(cluster.db.scalar(
            "SELECT count(*) FROM tasker.task_transitions WHERE most_recent AND to_state IN ('complete', 'error')"))
        if done == total:
            return
        for process in cluster.processes:
            if process.process.poll() is not None:
                raise AssertionError(f"{process.argv[-1]} exited\n{process.log_tail()}")
        time.sleep(0.5)
    states = cluster.db.scalar(
        "SELECT string_agg(to_state || ' ' || n, ', ') FROM (SELECT to_state, count(*) n FROM tasker.task_transitions"
        " WHERE most_recent GROUP BY 1) s")
    raise AssertionError(f"{done}/{total} tasks terminal after {timeout} s ({states})\n{cluster.logs()}")


def _tasks(cluster: Cluster) -> list[dict[str, Any]]:
    """Every task: namespace, name, context, state and its steps by name (state, attempts, results)."""
    return cluster.db.json(
        "SELECT json_agg(json_build_object('namespace', tn.name, 'name', nt.name, 'context', t.context,"
        " 'state', tt.to_state, 'steps', (SELECT json_object_agg(ns.name, json_build_object("
        "   'uuid', ws.workflow_step_uuid, 'state', st.to_state, 'attempts', ws.attempts, 'results', ws.results))"
        "  FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)"
        "  JOIN tasker.workflow_step_transitions st ON st.workflow_step_uuid = ws.workflow_step_uuid AND st.most_recent"
        "  WHERE ws.task_uuid = t.task_uuid)))"
        " FROM tasker.tasks t JOIN tasker.named_tasks nt USING (named_task_uuid)"
        " JOIN tasker.task_namespaces tn USING (task_namespace_uuid)"
        " JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent") or []


@dataclass
class StepHistory:
    """One step's transitions in order: (to_state, from_state, worker_uuid of the metadata or None)."""
    uuid: str
    namespace: str
    parents: list[str]
    transitions: list[tuple[str, str | None, str | None]]
    by: list[str] = field(default_factory=list)  # who wrote each transition: ours / upstream / orchestration


def _histories(cluster: Cluster) -> dict[str, StepHistory]:
    rows = cluster.db.json(
        "SELECT json_agg(json_build_object('uuid', ws.workflow_step_uuid, 'namespace', tn.name,"
        " 'parents', (SELECT coalesce(json_agg(e.from_step_uuid), '[]') FROM tasker.workflow_step_edges e"
        "             WHERE e.to_step_uuid = ws.workflow_step_uuid),"
        " 'transitions', (SELECT json_agg(json_build_array(x.to_state, x.from_state, x.metadata->>'worker_uuid')"
        "                 ORDER BY x.sort_key) FROM tasker.workflow_step_transitions x"
        "                 WHERE x.workflow_step_uuid = ws.workflow_step_uuid)))"
        " FROM tasker.workflow_steps ws JOIN tasker.tasks t USING (task_uuid)"
        " JOIN tasker.named_tasks nt USING (named_task_uuid) JOIN tasker.task_namespaces tn USING (task_namespace_uuid)")
    return {row["uuid"]: StepHistory(row["uuid"], row["namespace"], row["parents"],
                                     [tuple(t) for t in row["transitions"]]) for row in rows}


def _our_worker_uuids(histories: dict[str, StepHistory]) -> set[str]:
    """The worker_uuid our worker writes (every claim of namespace fleet_swift is ours)."""
    return {t[2] for h in histories.values() if h.namespace == "fleet_swift"
            for t in h.transitions if t[0] == "in_progress" and t[2]}


def _attribute(history: StepHistory, ours: set[str]) -> None:
    """Who wrote each claim and result: our worker (its worker_uuid) or upstream's (anything else)."""
    history.by = [("ours" if worker in ours else "upstream") if state == "in_progress" or state in RESULT_STATES
                  else "orchestration" for state, _, worker in history.transitions]


def _final_result_writer(history: StepHistory) -> str | None:
    writers = [by for (state, _, _), by in zip(history.transitions, history.by) if state == "enqueued_for_orchestration"]
    return writers[-1] if writers else None


@dataclass
class Figures:
    steps: int = 0
    claims: Counter = field(default_factory=Counter)  # in_progress transitions by writer
    results: Counter = field(default_factory=Counter)  # result transitions by writer
    double_claims: Counter = field(default_factory=Counter)  # attempts with two claims: "first>second"
    double_results: int = 0  # attempts with two result transitions
    over_upstream: list[str] = field(default_factory=list)  # ours claimed or stored over upstream's claim
    upstream_races: Counter = field(default_factory=Counter)  # step uuid → attempts where upstream claimed over ours
    cross: Counter = field(default_factory=Counter)  # steps that read a parent's result of the other implementation


def _judge_transitions(histories: dict[str, StepHistory], ours: set[str]) -> Figures:
    figures = Figures(steps=len(histories))
    for history in histories.values():
        _attribute(history, ours)
    for history in histories.values():
        attempt: list[tuple[str, str]] = []  # (state, writer) since the last enqueue
        previous: tuple[str, str] | None = None
        for (state, _, _), by in zip(history.transitions, history.by):
            if state == "enqueued":
                _close_attempt(attempt, figures, history.uuid)
                attempt = []
            elif state == "in_progress" or state in RESULT_STATES:
                (figures.claims if state == "in_progress" else figures.results)[by] += 1
                attempt.append((state, by))
                if by == "ours" and previous == ("in_progress", "upstream"):
                    figures.over_upstream.append(f"{history.uuid}: ours wrote {state} over upstream's claim")
            previous = (state, by)
        _close_attempt(attempt, figures, history.uuid)
        writer = _final_result_writer(history)
        readers = {_final_result_writer(histories[p]) for p in history.parents}
        if writer and readers - {writer}:
            figures.cross[f"{writer} read {'/'.join(sorted(readers - {writer}))}"] += 1
    return figures


def _close_attempt(attempt: list[tuple[str, str]], figures: Figures, uuid: str) -> None:
    claims = [by for state, by in attempt if state == "in_progress"]
    if len(claims) > 1:
        figures.double_claims[">".join(claims)] += 1
        if claims == ["ours", "upstream"]:
            figures.upstream_races[uuid] += 1
    if sum(1 for state, _ in attempt if state in RESULT_STATES) > 1:
        figures.double_results += 1


def judge_run(cluster: Cluster, kinds: tuple[Kind, ...], ours: set[str] | None = None
              ) -> tuple[dict[str, StepHistory], Figures, list[dict[str, Any]], list[str]]:
    """A finished run of ``kinds`` judged from the database: the step histories, the figures (who
    claimed and stored what), the tasks, and what is wrong with each task's outcome (upstream's
    raced claims taken off first). Checks that every kind has its count of tasks and that our worker
    claimed under one worker_uuid (``ours``; by default the one of fleet_swift's claims)."""
    histories = _histories(cluster)
    our_uuids = ours if ours is not None else _our_worker_uuids(histories)
    assert len(our_uuids) == 1, f"our worker's claims carry worker_uuids {our_uuids}"
    figures = _judge_transitions(histories, our_uuids)
    tasks = _tasks(cluster)
    by_name = {(kind.namespace, kind.name): kind for kind in kinds}
    assert Counter((t["namespace"], t["name"]) for t in tasks) == {k: kind.count for k, kind in by_name.items()}
    wrong = [problem for task in tasks
             if (problem := _wrong_outcome(by_name[(task["namespace"], task["name"])], task, figures.upstream_races))]
    return histories, figures, tasks, wrong


def assert_fleet_figures(histories: dict[str, StepHistory], figures: Figures, report: dict[str, Any]) -> None:
    """What every mixed fleet must show: each worker claimed in the namespaces it serves (and only
    those), each read results stored by the other, ours never claimed or stored over upstream's
    claim nor upstream over ours, and no attempt has two results."""
    namespaces_by = {by: {h.namespace for h in histories.values() for b in h.by if b == by} for by in ("ours", "upstream")}
    assert namespaces_by == {"ours": set(OURS_NAMESPACES), "upstream": set(UPSTREAM_NAMESPACES)}, namespaces_by
    assert figures.cross["ours read upstream"] > 0 and figures.cross["upstream read ours"] > 0, report
    assert figures.over_upstream == [], figures.over_upstream[:10]
    assert figures.double_claims.get("upstream>ours", 0) == 0, report
    assert figures.double_results == 0, report


def _queued_messages(cluster: Cluster) -> dict[str, int]:
    rows = cluster.queue_db.json(
        "SELECT coalesce(json_object_agg(queue_name, queue_length), '{}') FROM pgmq.metrics_all() WHERE queue_length > 0")
    return rows or {}


def _wait_for_empty_queues(cluster: Cluster, timeout: float = 45) -> dict[str, int]:
    """The lengths of the queues other than UPSTREAM_QUEUES once they are all empty, or what is
    left after ``timeout`` s (a message read but not archived comes back after its visibility
    timeout, then is consumed)."""
    deadline = time.monotonic() + timeout
    while True:
        left = {queue: n for queue, n in _queued_messages(cluster).items() if queue not in UPSTREAM_QUEUES}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(1)


def _leftovers(cluster: Cluster, queues: list[str]) -> list[Any]:
    """Each message left in ``queues``: its reads, age, and the current state of its step (read from
    the main database: the queues may have their own)."""
    selects = [f"SELECT '{queue}' AS queue, q.msg_id, q.read_ct, q.enqueued_at, q.vt, q.message"
               f" FROM pgmq.q_{queue} q" for queue in queues]
    messages = (cluster.queue_db.json(f"SELECT json_agg(m) FROM ({' UNION ALL '.join(selects)}) m")
                if selects else None) or []
    steps = sorted({step for m in messages if (step := _step_of(m["message"]))})
    states = cluster.db.json(
        "SELECT coalesce(json_object_agg(workflow_step_uuid, to_state), '{}') FROM tasker.workflow_step_transitions"
        f" WHERE most_recent AND workflow_step_uuid = ANY('{{{','.join(steps)}}}'::uuid[])") if steps else {}
    return [{**m, "step_state": states.get(_step_of(m["message"]))} for m in messages]


def _step_of(message: Any) -> str | None:
    """The step uuid a queue message names, if any (a task request names none)."""
    try:
        return str(uuid.UUID(message["step_uuid"]))
    except (TypeError, KeyError, ValueError, AttributeError):
        return None


def _error_lines(process: Process) -> list[str]:
    return [line for line in process.log_text().splitlines() if ERROR_LINE.match(line)]


def test_mixed_fleet_of_our_worker_and_upstreams(cluster: Cluster, tmp_path: Path) -> None:
    """A few hundred tasks through both workers; every check of the module docstring."""
    ours, _ = start_fleet(cluster, tmp_path)
    total = sum(kind.count for kind in KINDS)
    started = time.monotonic()
    _submit_all(cluster)
    _wait_until_all_terminal(cluster, total, timeout=150)
    elapsed = time.monotonic() - started

    kinds = {(kind.namespace, kind.name): kind for kind in KINDS}
    histories, figures, tasks, wrong = judge_run(cluster, KINDS)
    assert wrong == [], f"{len(wrong)} tasks ended wrongly, e.g. {wrong[:3]}"
    failed_by_race = sum(1 for task in tasks
                         if _failed_by_upstream_race(kinds[(task["namespace"], task["name"])], task, figures.upstream_races))
    left = _wait_for_empty_queues(cluster)
    stale = _leftovers(cluster, list(UPSTREAM_QUEUES))
    report = {"tasks": total, "seconds": round(elapsed, 1), "steps": figures.steps, "claims": dict(figures.claims),
              "results": dict(figures.results), "double_claims": dict(figures.double_claims),
              "double_claim_percent": round(100 * sum(figures.double_claims.values()) / figures.steps, 2),
              "double_results": figures.double_results, "retry_tasks_failed_by_upstream_race": failed_by_race,
              "cross_reads": dict(figures.cross), "queued": left,
              "upstream_stale_messages": dict(Counter(m["queue"] for m in stale))}
    (cluster.directory / "figures.json").write_text(json.dumps(report, indent=2))
    print("mixed fleet:", json.dumps(report))

    assert_fleet_figures(histories, figures, report)
    assert left == {}, f"{report}; left: {_leftovers(cluster, list(left))[:5]}"
    unfinished = [m for m in stale if m["step_state"] not in ("complete", "error")]
    assert unfinished == [], f"messages of unfinished steps left: {unfinished[:5]}"
    for process in (ours, cluster.processes[0]):
        assert _error_lines(process) == [], f"{process.log}: {_error_lines(process)[:10]}"

