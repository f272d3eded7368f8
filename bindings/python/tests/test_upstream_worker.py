"""Upstream's own worker (PyPI tasker-py 0.1.8) runs in this harness next to ours: the base of the
mixed-fleet and contract tests. Here: it completes a workflow of tasker-py handlers that our
companion orchestration drives, on the same database."""

from __future__ import annotations

from conftest import Cluster


def test_the_upstream_worker_completes_a_workflow_driven_by_our_orchestration(cluster: Cluster) -> None:
    upstream = cluster.start_upstream_worker(handler_packages=("compat_handlers",))
    task = cluster.submit("compat_workflow", {"value": 4})
    assert cluster.wait_for_task(task) == "complete"
    assert cluster.db.result(task, "compat_start")["result"] == {"value": 5}
    assert cluster.db.result(task, "compat_finish")["result"] == {"value": 15, "ran": ["compat_branch"]}
    assert upstream.process.terminate() == 0, upstream.process.log_tail()
    assert "STOPPED" in upstream.process.lines
