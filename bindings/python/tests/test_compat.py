"""tasker-py's own SDK (PyPI tasker-py 0.1.8, unchanged) on the Swift worker, with our module in
place of its compiled extension."""

from __future__ import annotations

import sys

from conftest import HOSTS, Cluster


def test_tasker_py_event_poller_and_step_handler_subclasses_complete_a_workflow(cluster: Cluster) -> None:
    host = cluster.start("compat-host", [sys.executable, str(HOSTS / "compat_host.py")])
    ready = host.wait_for_line("READY")
    assert {"compat_start", "compat_route", "compat_branch", "compat_finish"} <= set(ready.split()[2].split(","))
    task = cluster.submit("compat_workflow", {"value": 4})
    assert cluster.wait_for_task(task) == "complete"
    # The decision handler created only compat_branch; compat_unused never existed.
    assert cluster.db.step_names(task) == ["compat_branch", "compat_finish", "compat_route", "compat_start"]
    assert cluster.db.result(task, "compat_start")["result"] == {"value": 5}
    route = cluster.db.result(task, "compat_route")["result"]
    assert route["decision_point_outcome"] == {"type": "create_steps", "step_names": ["compat_branch"]}
    branch = cluster.db.result(task, "compat_branch")["result"]
    assert branch["value"] == 15 and isinstance(branch["retry_count"], int)
    assert cluster.db.result(task, "compat_finish")["result"] == {"value": 15, "ran": ["compat_branch"]}
    assert host.terminate() == 0, host.log_tail()
    assert "STOPPED" in host.lines
