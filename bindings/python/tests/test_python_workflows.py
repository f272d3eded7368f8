"""Python handlers (our API, fixtures/handlers/py_handlers.py) on the embedded worker, through the
real orchestration and PostgreSQL."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from conftest import HOSTS, REPO, Cluster


def test_three_step_chain_completes_with_the_right_results(cluster: Cluster) -> None:
    cluster.start_python_host()
    task = cluster.submit("py_chain", {"number": 6})
    assert cluster.wait_for_task(task) == "complete"
    assert cluster.db.result(task, "chain_square")["result"] == {"value": 36}
    assert cluster.db.result(task, "chain_add")["result"] == {"value": 43}
    verify = cluster.db.result(task, "chain_verify")
    assert verify["success"] is True and verify["status"] == "completed"
    assert verify["result"]["value"] == 43 and verify["result"]["verified"] is True


def test_a_handler_exception_is_a_retryable_handler_error_with_its_message(cluster: Cluster) -> None:
    cluster.start_python_host()
    task = cluster.submit("py_error", {})
    assert cluster.wait_for_task(task) == "error"
    stored = cluster.db.result(task, "error_explode")
    assert stored["success"] is False
    assert stored["metadata"]["retryable"] is True
    assert stored["error"]["error_type"] == "handler_error"
    assert "the ledger has no entry for order 42" in stored["error"]["message"]
    assert stored["metadata"]["custom"]["exception_type"] == "KeyError"
    assert "raise KeyError" in stored["metadata"]["custom"]["traceback"]
    # People see the exception's type and trace (issue #28 item 6): task show and submit --wait.
    shown = subprocess.run([str(cluster.tools.dev_binary), "task", "show", task], env=cluster.environment(),
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "handler_error: 'the ledger has no entry for order 42'" in shown.stdout, shown.stdout
    assert "exception KeyError" in shown.stdout and "Traceback (most recent call last)" in shown.stdout, shown.stdout
    assert "raise KeyError" in shown.stdout, shown.stdout
    waited = subprocess.run([str(cluster.tools.dev_binary), "submit", "python_tests", "py_error", "1.0.0",
                             "--context", '{"again": true}', "--wait"], env=cluster.environment(),
                            capture_output=True, text=True, timeout=120)
    assert waited.returncode == 1, waited.stderr   # the task ended in error
    assert "exception KeyError" in waited.stdout and "raise KeyError" in waited.stdout, waited.stdout


def test_deep_results_fail_their_steps_for_good_and_never_kill_a_poll_thread(cluster: Cluster) -> None:
    """Issue #26 item 7: a result nested past Python's recursion limit raised RecursionError in
    json.dumps and killed its poll thread (two such steps left no pollers). Now each deep result
    fails its step for good saying why, more of them than there are poll threads, and a normal task
    still runs afterwards on the same host."""
    host = cluster.start_python_host(threads=2)
    # 5,000: past Python's recursion limit; 300: past the worker's 128; 125: readable, but over the
    # 120 levels a result may bring in (result_not_storable).
    depths = [5000, 5000, 5000, 300, 125]
    tasks = [cluster.submit("py_deep", {"depth": depth, "n": n}) for n, depth in enumerate(depths)]
    for task, depth in zip(tasks, depths):
        assert cluster.wait_for_task(task) == "error", depth
        stored = cluster.db.result(task, "deep_result")
        assert stored["success"] is False and stored["metadata"]["retryable"] is False, (depth, stored)
        message = stored["error"]["message"]
        if depth == 5000:
            assert stored["error"]["error_type"] == "handler_error"
            assert "nested too deeply" in message, message
        elif depth == 300:
            assert stored["error"]["error_type"] == "handler_error"
            assert "nested more than 128 levels" in message, message
        else:
            assert stored["error"]["error_type"] == "result_not_storable"
            assert "nested more than 120 levels" in message, message
    chain = cluster.submit("py_chain", {"number": 3})
    assert cluster.wait_for_task(chain) == "complete"
    assert host.process.poll() is None, host.log_tail()


def _config_with_completion_timeout(directory: Path, milliseconds: int) -> Path:
    """The pre-merged test configuration with [worker.mpsc_channels.ffi_dispatch] completion_timeout_ms changed."""
    text = (REPO / "config/tasker/generated/worker-test.toml").read_text()
    section = re.search(r"^\[worker\.mpsc_channels\.ffi_dispatch\]\n(?:[^\[].*\n|\n)*", text, re.M)
    assert section is not None, "worker-test.toml has no [worker.mpsc_channels.ffi_dispatch] section"
    changed = re.sub(r"^completion_timeout_ms = \d+$", f"completion_timeout_ms = {milliseconds}", section.group(0), flags=re.M)
    assert changed != section.group(0)
    path = directory / "worker-completion-timeout.toml"
    path.write_text(text.replace(section.group(0), changed))
    return path


def test_a_step_not_completed_within_the_completion_timeout_gets_handler_timeout_and_the_late_result_is_refused(
    cluster: Cluster,
) -> None:
    config = _config_with_completion_timeout(cluster.directory, 1500)
    host = cluster.start_python_host(config={"config_path": str(config)})
    task = cluster.submit("py_timeout", {})
    started = time.monotonic()
    assert cluster.wait_for_task(task) == "error"
    stored = cluster.db.result(task, "timeout_slow")
    assert stored["success"] is False
    assert stored["error"]["error_type"] == "handler_timeout"
    assert stored["metadata"]["retryable"] is True
    # The handler sleeps 8 s: the timeout result came well before it returned.
    assert time.monotonic() - started < 7
    # Its late completion is refused with a clear error (logged by the host).
    deadline = time.monotonic() + 15
    while "result not accepted" not in host.log_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    late = [line for line in host.log_text().splitlines() if "result not accepted" in line]
    assert late, host.log_tail()
    assert "timed out" in late[0]
    # The stored result is still the timeout's.
    assert cluster.db.result(task, "timeout_slow")["error"]["error_type"] == "handler_timeout"


def test_checkpoint_yield_persists_progress_and_resumes_the_step(cluster: Cluster) -> None:
    cluster.start_python_host()
    task = cluster.submit("py_checkpoint", {"total": 35})
    assert cluster.wait_for_task(task) == "complete"
    stored = cluster.db.result(task, "checkpoint_sum")
    assert stored["result"] == {"sum": sum(range(35)), "resumed_at": [10, 20, 30]}
    checkpoint = cluster.db.json(
        "SELECT ws.checkpoint FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)"
        f" WHERE ws.task_uuid = '{task}' AND ns.name = 'checkpoint_sum'")
    assert checkpoint is not None and checkpoint["cursor"] == 30 and checkpoint["items_processed"] == 30


def test_a_python_decision_point_creates_only_the_chosen_branch(cluster: Cluster) -> None:
    cluster.start_python_host()
    small = cluster.submit("py_decision", {"amount": 20})
    large = cluster.submit("py_decision", {"amount": 500})
    assert cluster.wait_for_task(small) == "complete"
    assert cluster.wait_for_task(large) == "complete"
    assert cluster.db.step_names(small) == ["decision_check", "decision_finalize", "decision_route", "decision_small"]
    assert cluster.db.step_names(large) == ["decision_check", "decision_finalize", "decision_large", "decision_route"]
    assert cluster.db.result(small, "decision_finalize")["result"] == {"ran": ["decision_small"]}
    assert cluster.db.result(large, "decision_finalize")["result"] == {"ran": ["decision_large"]}
    route = cluster.db.result(large, "decision_route")["result"]
    assert route["decision_point_outcome"] == {"type": "create_steps", "step_names": ["decision_large"]}


def test_a_python_batch_creates_cursor_workers_and_converges(cluster: Cluster) -> None:
    cluster.start_python_host()
    task = cluster.submit("py_batch", {"item_count": 45})
    assert cluster.wait_for_task(task) == "complete"
    # 45 items in batches of 10, at most 3 workers → 3 workers of 15.
    assert cluster.db.step_names(task) == ["batch_collect", "batch_plan", "batch_work_001", "batch_work_002", "batch_work_003"]
    assert cluster.db.result(task, "batch_collect")["result"] == {
        "value": sum(i * i for i in range(45)), "processed": 45, "workers": 3}
    inputs = cluster.db.json(
        "SELECT ws.inputs FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)"
        f" WHERE ws.task_uuid = '{task}' AND ns.name = 'batch_work_002'")
    assert inputs["cursor"] == {"batch_id": "002", "start_cursor": 15, "end_cursor": 30, "batch_size": 15}


def test_swift_and_python_handlers_run_in_the_same_worker(cluster: Cluster) -> None:
    host = cluster.start_python_host()
    task = cluster.submit("py_mixed", {"order": 7})
    assert cluster.wait_for_task(task) == "complete"
    echo = cluster.db.result(task, "mixed_echo")["result"]
    assert echo["config"] == {"base": 21} and echo["context"] == {"order": 7}
    assert cluster.db.result(task, "mixed_double")["result"] == {"value": 42, "echoed_context": {"order": 7}}
    assert cluster.db.result(task, "mixed_sleep")["result"] == {"slept_ms": 10}
    worker_ids = {cluster.db.result(task, step)["metadata"]["worker_id"] for step in ("mixed_echo", "mixed_double", "mixed_sleep")}
    assert len(worker_ids) == 1, worker_ids
    assert host.process.poll() is None


def test_sigterm_of_the_host_drains_python_steps_and_leaves_none_claimed_without_a_result(cluster: Cluster) -> None:
    host = cluster.start_python_host(threads=4)
    task = cluster.submit("py_drain", {})
    # Several Python handlers run at once (one per poll thread; the C calls release the GIL).
    deadline = time.monotonic() + 60
    running: list[str] = []
    while time.monotonic() < deadline:
        running = [name for name, state in cluster.db.step_states(task).items() if state == "in_progress"]
        if len(running) >= 2:
            break
        time.sleep(0.05)
    assert len(running) >= 2, f"not two steps running at once: {cluster.db.step_states(task)}"
    assert host.terminate(timeout=60) == 0, host.log_tail()
    assert "STOPPED" in host.lines
    states = cluster.db.step_states(task)
    assert "in_progress" not in states.values(), states
    for name in running:
        stored = cluster.db.result(task, name)
        assert stored["success"] is True, (name, stored)
    # A new host finishes whatever was not claimed before the stop.
    cluster.start_python_host(name="host2")
    assert cluster.wait_for_task(task) == "complete"


def test_sigterm_stops_the_host_even_with_a_handler_that_never_returns(cluster: Cluster) -> None:
    """The worker's drain deadline gives the stuck step its handler_timeout result; the poll thread
    still inside the handler is left behind after Worker.stop_grace_seconds, logged, and the host
    exits 0 instead of hanging."""
    host = cluster.start("stuck-host", [sys.executable, str(HOSTS / "python_host.py")], {"TASKER_HOST_STOP_GRACE": "1"})
    host.wait_for_line("READY")
    task = cluster.submit("py_stuck", {})
    host.wait_for_line("STARTED stuck_forever")
    assert host.terminate() == 0, host.log_tail()
    assert "STOPPED" in host.lines
    assert "left behind" in host.log_text(), host.log_tail()
    stored = cluster.db.result(task, "stuck_forever")
    assert stored["error"]["error_type"] == "handler_timeout" and stored["metadata"]["retryable"] is True, stored
