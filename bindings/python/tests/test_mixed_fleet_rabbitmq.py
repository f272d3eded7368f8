"""The mixed fleet on RabbitMQ (issue #18 item 4): our companion orchestration, OUR worker
(`tasker-dev run`) and UPSTREAM's worker (PyPI tasker-py 0.1.8, bootstrapped the upstream way with
``TASKER_MESSAGING_BACKEND=rabbitmq`` and ``RABBITMQ_URL``) on one database and one broker vhost.
The kinds of test_mixed_fleet.py at a fifth of their counts, their task requests published to the
broker's ``orchestration_task_requests`` by an independent client (pika). Judged by
test_mixed_fleet.py's functions: every task terminal with its expected state and results, steps of
one implementation that read dependency results stored by the other, at most one result per
attempt, our worker never claiming or storing over upstream's claim. Then: no message left in any
queue of the vhost (ready or unacked, dead-letter queues included), and no message ever sent
through PGMQ (the transport was the broker alone)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import TESTS, BrokerCluster, Cluster
from test_mixed_fleet import (KINDS, Kind, _error_lines, _wait_until_all_terminal, assert_fleet_figures, judge_run,
                              start_fleet)

# scripts/test's broker must stay up: never beside test_rabbitmq_broker_restart.py, which stops it
# (conftest's resource locks).
pytestmark = pytest.mark.resource("test_broker", exclusive=False)

#: test_mixed_fleet.py's kinds at a fifth of their counts (50 tasks; every kind at least twice).
BROKER_KINDS = tuple(replace(kind, count=max(2, kind.count // 5)) for kind in KINDS)
PUBLISHER = TESTS / "tools" / "publish_task_requests.py"


def _task_requests(kinds: tuple[Kind, ...]) -> list[str]:
    """The task request documents of ``kinds`` (context {"number": n, "fleet": i}, unique per task),
    interleaved so that the kinds run together, as test_mixed_fleet.py submits them through PGMQ."""
    requests: list[str] = []
    for index in range(max(kind.count for kind in kinds)):
        for kind in kinds:
            if index < kind.count:
                requests.append(json.dumps({
                    "request_id": str(uuid.uuid4()), "metadata": {},
                    "task_request": {
                        "namespace": kind.namespace, "name": kind.name, "version": "1.0.0",
                        "initiator": "test_mixed_fleet_rabbitmq", "source_system": "pytest", "reason": "mixed fleet",
                        "context": {"number": index % 17 + 1, "fleet": len(requests)}}}))
    return requests


def _publish(cluster: Cluster, requests: list[str]) -> None:
    """Publishes ``requests`` to the cluster's broker (tools/publish_task_requests.py, pika)."""
    python = os.environ.get("TASKER_TEST_PYTHON")
    assert python, "TASKER_TEST_PYTHON is not set: run these tests through scripts/test"
    assert cluster.broker_url
    done = subprocess.run([python, str(PUBLISHER), cluster.broker_url], input="\n".join(requests) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"published {len(requests)}", (
        f"publishing failed ({done.returncode}): {done.stdout}{done.stderr}\n{cluster.logs()}")


def _wait_for_empty_broker(world: BrokerCluster, timeout: float = 45) -> dict[str, dict[str, int]]:
    """The queues of the test's vhost that still hold a message (ready or unacked) once none does,
    or after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        left = {name: queue for name, queue in world.queues().items() if queue["ready"] or queue["unacked"]}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(1)


def _pgmq_messages_ever_sent(cluster: Cluster) -> dict[str, int]:
    """Per PGMQ queue, the messages ever sent to it (its msg_id sequence), where any was."""
    return cluster.db.json(
        "SELECT coalesce(json_object_agg(queue_name, total_messages), '{}') FROM pgmq.metrics_all()"
        " WHERE total_messages > 0") or {}


def test_mixed_fleet_of_our_worker_and_upstreams_on_rabbitmq(rabbitmq_cluster: BrokerCluster, tmp_path: Path) -> None:
    """Fifty tasks through both workers on the broker; every check of the module docstring."""
    cluster = rabbitmq_cluster.cluster
    ours, upstream = start_fleet(cluster, tmp_path)
    total = sum(kind.count for kind in BROKER_KINDS)
    started = time.monotonic()
    _publish(cluster, _task_requests(BROKER_KINDS))
    _wait_until_all_terminal(cluster, total, timeout=75)
    elapsed = time.monotonic() - started

    histories, figures, _, wrong = judge_run(cluster, BROKER_KINDS)
    assert wrong == [], f"{len(wrong)} tasks ended wrongly, e.g. {wrong[:3]}"
    left = _wait_for_empty_broker(rabbitmq_cluster)
    report = {"tasks": total, "seconds": round(elapsed, 1), "steps": figures.steps, "claims": dict(figures.claims),
              "results": dict(figures.results), "double_claims": dict(figures.double_claims),
              "double_results": figures.double_results, "cross_reads": dict(figures.cross), "broker_left": left}
    (cluster.directory / "figures.json").write_text(json.dumps(report, indent=2))
    print("mixed fleet on RabbitMQ:", json.dumps(report))

    assert_fleet_figures(histories, figures, report)
    assert left == {}, f"messages left on the broker: {report}"
    assert _pgmq_messages_ever_sent(cluster) == {}, "a message went through PGMQ instead of the broker"
    assert upstream.process.terminate() == 0, upstream.process.log_tail()
    for process in (ours, cluster.processes[0]):
        assert _error_lines(process) == [], f"{process.log}: {_error_lines(process)[:10]}"
