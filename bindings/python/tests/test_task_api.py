"""The orchestration's task REST API (issue #17) as upstream's own client sees it: the client functions
of PyPI tasker-py 0.1.8 (``client_*`` of its compiled core, configured by ``worker.orchestration_client``
with an API key) against `tasker-dev orchestrate`, each answer checked against the database — and the
same calls, and tasker-py's high-level ``TaskerClient``, through our module (issue #28 item 3: tasker-py
on our C ABI's ``tasker_client_*``); the operator's step actions and DLQ investigation (issue #31 item 5),
read back by tasker-py's client; and the
`tasker-dev` task commands (`submit --wait`, `task show|list|cancel`) driven as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import HOSTS, NAMESPACE, REPO, TEMPLATES, Cluster, free_port, merged_config, upstream_url

API_KEY = "client-test-key-0123456789"


class UpstreamClient:
    """hosts/client_host.py: tasker-py's worker whose client calls our orchestration's API, on
    upstream's compiled core (``core="upstream"``) or on ours (``core="swift"``)."""

    def __init__(self, cluster: Cluster, orchestration: str, core: str = "upstream") -> None:
        web, grpc = free_port(), free_port()
        config = cluster.directory / "client.toml"
        config.write_text(merged_config(REPO, {
            "common.database.url": upstream_url(cluster.db.url),
            "worker.web.bind_address": f"127.0.0.1:{web}",
            "worker.grpc.bind_address": f"127.0.0.1:{grpc}",
            "worker.orchestration_client.base_url": f"http://{orchestration}",
            "worker.orchestration_client.auth": {"type": "api_key", "key": API_KEY, "header_name": "X-API-Key"},
        }))
        env = cluster.environment({
            "TASKER_CONFIG_PATH": str(config), "DATABASE_URL": upstream_url(cluster.db.url),
            "TASKER_TEMPLATE_PATH": str(TEMPLATES), "TASKER_WEB_BIND_ADDRESS": f"127.0.0.1:{web}",
            "TASKER_WORKER_GRPC_BIND_ADDRESS": f"127.0.0.1:{grpc}",
            "TASKER_HOST_HANDLER_PACKAGES": "compat_handlers",
            "CLIENT_HOST_CORE": core,
        })
        self.log = cluster.directory / "client_host.log"
        # The answers come on a pipe of their own; stdout (tasker-py's log lines) goes to the log.
        answers, answers_to_us = os.pipe()
        env["CLIENT_HOST_ANSWERS_FD"] = str(answers_to_us)
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(HOSTS / "client_host.py")], env=env, cwd=REPO, text=True,
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(answers_to_us,))
        os.close(answers_to_us)
        self.answers = os.fdopen(answers, "r")
        line = self._line("READY", timeout=120)
        assert line.startswith("READY"), f"client host did not start: {line!r}\n{self.log.read_text()[-3000:]}"

    def _line(self, prefix: str, timeout: float) -> str:
        """The next answer line starting with ``prefix``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.answers.readline()
            if line.startswith(prefix):
                return line.rstrip("\n")
            if not line and self.process.poll() is not None:
                break
        return f"(no {prefix} line; exit {self.process.poll()})"

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The answer of tasker-py's ``name(*args)``; fails with the client's error."""
        outcome = self.try_call(name, *args, **kwargs)
        assert "ok" in outcome, f"{name}{args}: {outcome['error']}\n{self.log.read_text()[-2000:]}"
        return outcome["ok"]

    def try_call(self, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"call": name, "args": list(args), "kwargs": kwargs}) + "\n")
        self.process.stdin.flush()
        line = self._line("RESULT ", timeout=60)
        assert line.startswith("RESULT "), f"{name}: {line}\n{self.log.read_text()[-3000:]}"
        return json.loads(line[len("RESULT "):])

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.answers.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start_orchestration_with_api_key(cluster: Cluster) -> str:
    """Restarts the test's orchestration with [orchestration.web.auth] requiring an API key (every
    task permission); answers its API address."""
    return cluster.restart_orchestration(
        '[orchestration.web.auth]\nenabled = true\napi_keys_enabled = true\n'
        f'[[orchestration.web.auth.api_keys]]\nkey = "{API_KEY}"\n'
        'permissions = ["tasks:*", "steps:read", "dlq:read"]\n')


def http_status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.parametrize("core", ["upstream", "swift"])
def test_tasker_py_client_functions_work_against_our_orchestration(cluster: Cluster, core: str) -> None:
    """Each client function of tasker-py answers from our API, through the API key, matching the
    database: on upstream's compiled core and on ours."""
    address = start_orchestration_with_api_key(cluster)
    assert http_status(f"http://{address}/v1/tasks") == 401
    assert http_status(f"http://{address}/v1/tasks", {"X-API-Key": API_KEY}) == 200
    client = UpstreamClient(cluster, address, core)
    try:
        health = client.call("client_health_check")
        assert isinstance(health, dict)

        created = client.call("client_create_task", {
            "namespace": NAMESPACE, "name": "compat_workflow", "version": "1.0.0", "context": {"value": 4},
            "initiator": "pytest", "source_system": "tasker-py", "reason": "client test"})
        task = created["task_uuid"]
        assert task == task.lower() and created["name"] == "compat_workflow"
        assert cluster.db.scalar(f"SELECT initiator FROM tasker.tasks WHERE task_uuid = '{task}'") == "pytest"
        assert cluster.wait_for_task(task) == "complete"

        got = client.call("client_get_task", task)
        assert got["status"] == "complete" == cluster.db.task_state(task)
        assert got["context"] == {"value": 4}
        assert got["completed_steps"] == got["total_steps"] == len(cluster.db.step_names(task))

        listed = client.call("client_list_tasks", 50, 0, NAMESPACE, "complete")
        assert [t["task_uuid"] for t in listed["tasks"]] == [task]
        assert listed["pagination"]["total_count"] == 1
        assert client.call("client_list_tasks", 50, 0, "no_such_namespace", None)["tasks"] == []

        steps = client.call("client_list_task_steps", task)
        states = cluster.db.step_states(task)
        assert {s["name"]: s["current_state"] for s in steps} == states
        start = next(s for s in steps if s["name"] == "compat_start")
        assert start["results"]["result"] == cluster.db.result(task, "compat_start")["result"] == {"value": 5}

        step = client.call("client_get_step", task, start["step_uuid"])
        assert step["step_uuid"] == start["step_uuid"] and step["current_state"] == "complete"

        audit = client.call("client_get_step_audit_history", task, start["step_uuid"])
        rows = int(cluster.db.scalar(
            f"SELECT count(*) FROM tasker.workflow_step_result_audit WHERE workflow_step_uuid = '{start['step_uuid']}'"))
        assert len(audit) == rows >= 1
        assert audit[0]["step_name"] == "compat_start" and audit[0]["success"] is True

        refused = client.try_call("client_cancel_task", task)   # a complete task cannot be cancelled
        assert "error" in refused, refused
        assert cluster.db.task_state(task) == "complete"
        second = client.call("client_create_task", {
            "namespace": NAMESPACE, "name": "compat_workflow", "version": "1.0.0", "context": {"value": 99},
            "initiator": "pytest", "source_system": "tasker-py", "reason": "cancel test"})
        cancelled = client.call("client_cancel_task", second["task_uuid"])
        assert cancelled["cancelled"] is True   # upstream's bridge's answer (ours adds the task)
        assert cluster.db.task_state(second["task_uuid"]) == "cancelled"

        unknown = client.try_call("client_create_task", {
            "namespace": NAMESPACE, "name": "no_such_workflow", "version": "1.0.0", "context": {},
            "initiator": "pytest", "source_system": "tasker-py", "reason": "unknown"})
        assert "error" in unknown, unknown
        if core == "swift":
            # Our answers say what failed: the request, the HTTP status, the API's own message.
            assert unknown["error"].startswith("RuntimeError: POST http://") and "HTTP 404" in unknown["error"], unknown
            assert "no_such_workflow" in unknown["error"], unknown
            assert health["healthy"] is True
            bad = client.try_call("client_get_task", "not-a-uuid")
            assert bad == {"error": "ValueError: task_uuid is not a UUID: \"not-a-uuid\""}, bad
            # tasker-py's own high-level client on our module.
            typed = client.call("TaskerClient.create_task", "compat_workflow", namespace=NAMESPACE, context={"value": 6})
            assert typed["name"] == "compat_workflow" and typed["task_uuid"]
            assert cluster.wait_for_task(typed["task_uuid"]) == "complete"
            assert client.call("TaskerClient.get_task", typed["task_uuid"])["status"] == "complete"
            assert client.call("TaskerClient.health_check")["healthy"] is True
            named = {s["name"] for s in client.call("TaskerClient.list_task_steps", typed["task_uuid"])}
            assert named == set(cluster.db.step_names(typed["task_uuid"]))
            page = client.call("TaskerClient.list_tasks", namespace=NAMESPACE, limit=2, offset=2)
            assert page["pagination"]["page"] == 2 and page["pagination"]["per_page"] == 2
    finally:
        client.close()


def test_our_client_without_the_api_key_names_the_refusal(cluster: Cluster) -> None:
    """Our module's client with no credentials against an API that wants a key: the call fails with
    the request and HTTP 401, the worker (and its poll threads) run on."""
    address = start_orchestration_with_api_key(cluster)
    host = cluster.start("client-no-key", [sys.executable, "-c", CLIENT_WITHOUT_KEY], {
        "TASKER_HOST_BASE_URL": f"http://{address}"})
    line = host.wait_for_line("ANSWER")
    assert line.startswith("ANSWER RuntimeError: GET http://") and "/v1/tasks/" in line and "HTTP 401" in line, line
    assert host.process.wait(timeout=60) == 0, host.log_tail()


CLIENT_WITHOUT_KEY = """
import os, pathlib, tempfile, uuid
import tasker_worker_swift._tasker_core as core
config = pathlib.Path(tempfile.mkdtemp()) / "worker.toml"
config.write_text('[worker.orchestration_client]\\nbase_url = "' + os.environ["TASKER_HOST_BASE_URL"] + '"\\n')
core.bootstrap_worker({"config_path": str(config), "database_url": os.environ["DATABASE_URL"], "web_bind_address": "127.0.0.1:0", "grpc_bind_address": "127.0.0.1:0"})
try:
    core.client_get_task(str(uuid.uuid4()))
    print("ANSWER none", flush=True)
except Exception as error:
    print(f"ANSWER {type(error).__name__}: {error}", flush=True)
core.stop_worker()
"""


OPERATOR_KEY = "operator-test-key-0123456789"


def api(address: str, method: str, path: str, body: Any = None, key: str = OPERATOR_KEY) -> tuple[int, Any]:
    """``method path`` on our orchestration's API with ``key``: the status and the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"X-API-Key": key, **({"Content-Type": "application/json"} if data is not None else {})}
    request = urllib.request.Request(f"http://{address}{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def failed_py_error_task(cluster: Cluster, address: str, n: int) -> tuple[str, str]:
    """A task of py_error (py.error.explode raises, one attempt) created through the API and waited for
    until it failed; answers it and its step's uuid."""
    status, task = api(address, "POST", "/v1/tasks", {
        "namespace": NAMESPACE, "name": "py_error", "version": "1.0.0", "context": {"n": n},
        "initiator": "pytest", "source_system": "pytest", "reason": "step actions"})
    assert status == 201, task
    assert cluster.wait_for_task(task["task_uuid"]) == "error"
    step = cluster.db.scalar(f"SELECT workflow_step_uuid FROM tasker.workflow_steps WHERE task_uuid = '{task['task_uuid']}'")
    return task["task_uuid"], step


def test_step_actions_and_the_dlq_as_upstreams_client_reads_them(cluster: Cluster) -> None:
    """#31 item 5 on the running processes: failed Python steps reset for retry (run again), completed and
    resolved by hand through ``PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}`` (upstream's
    StepManualAction bodies), then read by tasker-py's client functions (``client_get_task``,
    ``client_get_step``, ``client_get_step_audit_history``: upstream's decoding of our answers); the DLQ
    investigation updated and read, and the task summary, over HTTP (tasker-py 0.1.8 has no call for them)."""
    address = cluster.restart_orchestration(
        '[orchestration.web.auth]\nenabled = true\napi_keys_enabled = true\n'
        f'[[orchestration.web.auth.api_keys]]\nkey = "{API_KEY}"\npermissions = ["tasks:*", "steps:read", "dlq:read"]\n'
        f'[[orchestration.web.auth.api_keys]]\nkey = "{OPERATOR_KEY}"\npermissions = ["tasks:*", "steps:*", "dlq:*"]\n')
    cluster.start_python_host()

    # Reset for retry: the step runs again (and, still exploding, fails again).
    retried, retried_step = failed_py_error_task(cluster, address, 1)
    status, step = api(address, "PATCH", f"/v1/tasks/{retried}/workflow_steps/{retried_step}",
                       {"action_type": "reset_for_retry", "reason": "ledger repaired", "reset_by": "ops@example.com"})
    assert status == 200 and step["step_uuid"] == retried_step, step
    deadline = time.monotonic() + 60
    while cluster.db.step_transitions(retried, "error_explode").count("error") < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.db.step_transitions(retried, "error_explode").count("error") == 2
    assert cluster.wait_for_task(retried) == "error"

    # Complete by hand: the task completes with the operator's result.
    completed, completed_step = failed_py_error_task(cluster, address, 2)
    status, step = api(address, "PATCH", f"/v1/tasks/{completed}/workflow_steps/{completed_step}", {
        "action_type": "complete_manually", "completion_data": {"result": {"balance": 42}, "metadata": {"ticket": "OPS-7"}},
        "reason": "entered by hand", "completed_by": "ops@example.com"})
    assert status == 200 and step["current_state"] == "complete", step
    assert cluster.wait_for_task(completed) == "complete"
    assert cluster.db.result(completed, "error_explode")["result"] == {"balance": 42}

    # Resolve by hand; the refusals keep upstream's error shape.
    resolved, resolved_step = failed_py_error_task(cluster, address, 3)
    status, refusal = api(address, "PATCH", f"/v1/tasks/{resolved}/workflow_steps/{resolved_step}",
                          {"action_type": "resolve_manually", "reason": "skip", "resolved_by": "ops"}, key=API_KEY)
    assert status == 403 and refusal["error"]["message"] == "Missing required permission: steps:resolve", refusal
    status, refusal = api(address, "PATCH", f"/v1/tasks/{resolved}/workflow_steps/{resolved_step}", {"action_type": "retry_all"})
    assert status == 400 and refusal["error"]["code"] == "BAD_REQUEST" and "unknown action_type" in refusal["error"]["message"]
    status, step = api(address, "PATCH", f"/v1/tasks/{resolved}/workflow_steps/{resolved_step}",
                       {"action_type": "resolve_manually", "reason": "skip", "resolved_by": "ops"})
    assert status == 200 and step["current_state"] == "resolved_manually", step
    assert cluster.wait_for_task(resolved) == "complete"

    # The DLQ: an investigation of the failed task (upstream's own create_dlq_entry), updated and read.
    entry = cluster.db.scalar(
        f"SELECT tasker.create_dlq_entry('{retried}', '{NAMESPACE}', 'py_error', 'steps_in_process', 40, 30, 'staleness_timeout')")
    status, stats = api(address, "GET", "/v1/dlq/stats")
    assert status == 200 and [(s["dlq_reason"], s["pending"]) for s in stats] == [("StalenessTimeout", 1)], stats
    status, queue = api(address, "GET", "/v1/dlq/investigation-queue?limit=10")
    assert status == 200 and [q["dlq_entry_uuid"] for q in queue] == [entry], queue
    status, summary = api(address, "GET", f"/v1/tasks/{retried}/summary", key=API_KEY)
    assert status == 200 and summary["task"]["status"] == "error", summary
    assert summary["dlq"] == {"in_dlq": True, "dlq_reason": "staleness_timeout", "resolution_status": "pending"}
    assert [s["name"] for s in summary["steps"]] == ["error_explode"]
    assert summary["steps"][0]["error"] == {"error_type": "handler_error", "retryable": True, "status_code": None}
    status, answer = api(address, "PATCH", f"/v1/dlq/entry/{entry}", {
        "resolution_status": "PermanentlyFailed", "resolution_notes": "the ledger is gone", "resolved_by": "ops@example.com"})
    assert status == 200 and answer == {
        "success": True, "message": "Investigation status updated successfully", "dlq_entry_uuid": entry}, answer
    status, stored = api(address, "GET", f"/v1/dlq/task/{retried}", key=API_KEY)
    assert stored["resolution_status"] == "PermanentlyFailed" and stored["resolved_by"] == "ops@example.com", stored
    status, staleness = api(address, "GET", "/v1/dlq/staleness")
    assert status == 200 and isinstance(staleness, list)

    # Upstream's client reads what the actions left (its worker serves no python_tests step still open).
    client = UpstreamClient(cluster, address)
    try:
        step = client.call("client_get_step", completed, completed_step)
        assert step["current_state"] == "complete" and step["results"]["result"] == {"balance": 42}
        assert step["results"]["metadata"]["custom"]["completed_by"] == "ops@example.com"
        assert client.call("client_get_step", resolved, resolved_step)["current_state"] == "resolved_manually"
        assert client.call("client_get_task", resolved)["status"] == "complete"
        assert client.call("client_get_task", retried)["status"] == "error"
        audit = client.call("client_get_step_audit_history", retried, retried_step)
        assert len(audit) == 2 and all(row["success"] is False for row in audit), audit
        steps = client.call("client_list_task_steps", completed)
        assert [s["current_state"] for s in steps] == ["complete"]
    finally:
        client.close()


def dev(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """`tasker-dev ARGS…` in the test's environment."""
    return subprocess.run([str(cluster.tools.dev_binary), *args], env=cluster.environment(), cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_the_dev_cli_submits_waits_shows_lists_and_cancels(cluster: Cluster) -> None:
    """`submit --wait` prints the uuid, then the outcome with the step results; `task show|list|cancel`
    read what the database holds; unknown templates and duplicates fail with a clear message."""
    cluster.start_upstream_worker(handler_packages=("compat_handlers",))
    done = dev(cluster, "submit", NAMESPACE, "compat_workflow", "1.0.0", "--context", '{"value": 4}', "--wait")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    task = lines[0]
    assert task == task.lower() and cluster.db.task_state(task) == "complete"
    assert f"task {task}" in done.stdout and "status     complete" in done.stdout
    assert any(line.strip().startswith("compat_start") and '"value":5' in line.replace(" ", "") for line in lines), done.stdout

    shown = dev(cluster, "task", "show", task.upper(), "--json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert document["task"]["status"] == "complete"
    assert {s["name"]: s["current_state"] for s in document["workflow_steps"]} == cluster.db.step_states(task)

    duplicate = dev(cluster, "submit", NAMESPACE, "compat_workflow", "1.0.0", "--context", '{"value": 4}')
    assert duplicate.returncode != 0 and "same identity already exists" in duplicate.stderr, duplicate.stderr
    unknown = dev(cluster, "submit", NAMESPACE, "no_such_workflow", "1.0.0")
    assert unknown.returncode != 0 and "no_such_workflow" in unknown.stderr and "not registered" in unknown.stderr

    listed = dev(cluster, "task", "list", "--namespace", NAMESPACE, "--state", "complete", "--json")
    assert [t["task_uuid"] for t in json.loads(listed.stdout)["tasks"]] == [task]
    text = dev(cluster, "task", "list", "--limit", "1000")
    assert text.returncode == 0 and task in text.stdout and "page 1 of 1 (1 tasks)" in text.stdout, text.stdout
    none = dev(cluster, "task", "list", "--namespace", "no_such_namespace")
    assert none.returncode == 0 and none.stdout.strip() == "no tasks match", none.stdout
    bad = dev(cluster, "task", "list", "--state", "exploded")
    assert bad.returncode != 0 and "is not a task state" in bad.stderr

    cluster.close()   # nothing runs the next task: it stays open until cancelled
    cluster.processes.clear()
    pending = dev(cluster, "submit", NAMESPACE, "compat_workflow", "1.0.0", "--context", '{"value": 5}')
    assert pending.returncode == 0, pending.stderr
    second = pending.stdout.strip()
    cancelled = dev(cluster, "task", "cancel", second)
    assert cancelled.returncode == 0 and "status     cancelled" in cancelled.stdout, cancelled.stderr
    assert cluster.db.task_state(second) == "cancelled"
    again = dev(cluster, "task", "cancel", second)
    assert again.returncode != 0 and "cannot be cancelled" in again.stderr
    missing = dev(cluster, "task", "show", "not-a-uuid")
    assert missing.returncode != 0 and "ID is not a uuid" in missing.stderr
