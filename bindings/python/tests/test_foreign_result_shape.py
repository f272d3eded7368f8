"""Results of handlers of other languages (issue #15): the same tasker-py handlers run by upstream's
worker and by tasker-py's SDK on our worker (the FFI dispatch channel) are stored alike."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from conftest import HOSTS, Cluster
from test_mixed_fleet import _template_directory


#: Values that differ from run to run (ids, clocks, the host): compared by JSON type only.
VOLATILE = {"step_uuid", "metadata.completed_at", "metadata.started_at", "metadata.execution_time_ms",
            "metadata.worker_id", "metadata.worker_hostname"}


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf (and empty container) of ``value`` by dotted key path."""
    if isinstance(value, dict) and value:
        return {k: v for key, item in value.items() for k, v in _flatten(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): value}


def _shape(results: dict[str, Any]) -> dict[str, Any]:
    """A stored result with its volatile values replaced by their JSON type."""
    return {path: (type(value).__name__ if path in VOLATILE and value is not None else value)
            for path, value in _flatten(results).items()}


def _python_results(cluster: Cluster, number: int) -> dict[str, dict[str, Any]]:
    """The stored results of one `chain` and one `rejected` task (context number ``number``), by
    `<task>.<step>`."""
    tasks = {}
    for name in ("chain", "rejected"):
        tasks[name] = cluster.db.scalar(
            "SELECT tasker.pgmq_send_with_notify('orchestration_task_requests', jsonb_build_object("
            " 'request_id', gen_random_uuid(), 'task_request', jsonb_build_object('namespace', 'fleet_upstream',"
            f" 'name', '{name}', 'version', '1.0.0', 'context', jsonb_build_object('number', {number}))), 0)")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = cluster.db.json(
            "SELECT json_object_agg(nt.name || '.' || ns.name, ws.results) FROM tasker.workflow_steps ws"
            " JOIN tasker.named_steps ns USING (named_step_uuid) JOIN tasker.tasks t USING (task_uuid)"
            " JOIN tasker.named_tasks nt USING (named_task_uuid)"
            " JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent"
            f" WHERE (t.context->>'number')::int = {number} AND tt.to_state IN ('complete', 'error')")
        if rows and len(rows) == 5:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"the python tasks of number {number} did not finish\n{cluster.logs()}")


def test_the_ffi_channel_stores_what_upstreams_worker_stores_for_the_same_python_handlers(
        cluster: Cluster, tmp_path: Path) -> None:
    """The same tasker-py handlers (successes, a retried failure, a permanent failure) run first by
    upstream's worker, then by tasker-py's SDK on our worker (FFI dispatch channel, hosts/compat_host.py):
    the stored results have the same key paths and values, volatile values (ids, clocks, host) the
    same JSON types."""
    templates = _template_directory(tmp_path / "templates", ("fleet_upstream",))
    upstream = cluster.start_upstream_worker(handler_packages=("fleet_handlers",), templates=templates)
    theirs = _python_results(cluster, 1)
    assert upstream.process.terminate() == 0
    host = cluster.start("compat-host", [sys.executable, str(HOSTS / "compat_host.py")], {
        "TASKER_TEMPLATE_PATH": str(templates), "TASKER_HOST_HANDLER_PACKAGES": "fleet_handlers"})
    host.wait_for_line("READY")
    ours = _python_results(cluster, 1 + 1000)
    # The values that depend on the context number (py_start = n + 1 …) are compared by type too.
    for step in ("chain.py_start", "chain.py_flaky", "chain.py_finish", "rejected.py_start"):
        for stored in (theirs, ours):
            stored[step]["result"] = {k: type(v).__name__ for k, v in stored[step]["result"].items()}
    differences = [(step, path, _shape(theirs[step]).get(path, "<absent>"), _shape(ours[step]).get(path, "<absent>"))
                   for step in sorted(theirs)
                   for path in sorted(set(_shape(theirs[step])) | set(_shape(ours[step])))
                   if _shape(theirs[step]).get(path, "<absent>") != _shape(ours[step]).get(path, "<absent>")]
    assert sorted(ours) == sorted(theirs)
    assert differences == [], "(step, key path, upstream's, ours):\n" + "\n".join(map(str, differences))
    assert theirs["rejected.py_reject"]["status"] == "permanent_error"
