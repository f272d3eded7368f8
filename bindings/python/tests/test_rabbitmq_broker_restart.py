"""The broker restarted mid-load loses nothing (issue #18 item 4): our companion orchestration and
OUR worker (`tasker-dev run`) on a vhost of the test broker run 60 tasks of three chained steps that
sleep 300, 300 and 2,000 ms (the built-in `tasker.sleep`): the last steps alone keep the worker's 10
handler permits busy for 12 s after the first task ends, far beyond the seconds a `rabbitmqctl` call
takes to start on a loaded machine (300 ms last steps were all done before it had, once, with the
suite on three processes and a build beside it); once a few tasks are terminal, the broker's application is
stopped (`rabbitmqctl stop_app`: every connection drops, publishes and acks fail) and started again
a few seconds later. Then every task ends with its expected state and
results, no step attempt has two claims or two results, nothing is left on the broker (ready or
unacked, dead-letter queues included) and nothing went through PGMQ.

The Swift suite "Worker on RabbitMQ" closes connections by force under load; this test stops the
broker itself, which it may do only here: it holds the broker's resource lock exclusively (the other
test that uses this broker waits for it, on whichever pytest process it runs), and the Swift suites
that share the broker have finished."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import BrokerCluster, free_port
from test_mixed_fleet import Kind, _histories, _wait_until_all_terminal, judge_run
from test_mixed_fleet_rabbitmq import _pgmq_messages_ever_sent, _publish, _task_requests, _wait_for_empty_broker

# This test stops scripts/test's broker (rabbitmqctl stop_app): no other test that uses it runs
# meanwhile, whichever pytest process runs it (conftest's resource locks).
pytestmark = pytest.mark.resource("test_broker")

SLOW_TEMPLATE = """\
name: slow
namespace_name: restart_slow
version: 1.0.0
steps:
  - name: first
    handler: { callable: tasker.sleep, initialization: { ms: 300 } }
  - name: second
    dependencies: [first]
    handler: { callable: tasker.sleep, initialization: { ms: 300 } }
  - name: third
    dependencies: [second]
    handler: { callable: tasker.sleep, initialization: { ms: 2000 } }
"""


def _check_slow(n: int, steps: dict[str, dict[str, Any]]) -> None:
    for name, ms in (("first", 300), ("second", 300), ("third", 2000)):
        assert steps[name]["results"]["result"] == {"slept_ms": ms}, name
        assert steps[name]["attempts"] == 1, name


SLOW = Kind("restart_slow", "slow", 60, "complete", _check_slow)
#: Terminal tasks before the broker stops (the rest still running or not started).
STOP_AFTER = 5
#: How long the broker stays stopped.
DOWN_SECONDS = 4


def _terminal(cluster) -> int:
    return int(cluster.db.scalar(
        "SELECT count(*) FROM tasker.task_transitions WHERE most_recent AND to_state IN ('complete', 'error')"))


def test_the_broker_restarted_mid_load_loses_nothing(rabbitmq_cluster: BrokerCluster, tmp_path: Path) -> None:
    """Every check of the module docstring."""
    cluster, broker = rabbitmq_cluster.cluster, rabbitmq_cluster.broker
    web = f"127.0.0.1:{free_port()}"
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "slow.yaml").write_text(SLOW_TEMPLATE)
    ours = cluster.start("ours", [str(cluster.tools.dev_binary), "run"], {
        "TASKER_TEMPLATE_PATH": str(templates), "TASKER_WEB_BIND_ADDRESS": web})
    ours.wait_for_http(f"http://{web}/health")
    total = SLOW.count
    _publish(cluster, _task_requests((SLOW,)))
    deadline = time.monotonic() + 60
    while _terminal(cluster) < STOP_AFTER:
        assert time.monotonic() < deadline, f"fewer than {STOP_AFTER} tasks terminal after 60 s\n{cluster.logs()}"
        time.sleep(0.2)
    broker.rabbitmqctl("stop_app")
    at_stop = _terminal(cluster)
    try:
        time.sleep(DOWN_SECONDS)
    finally:
        broker.rabbitmqctl("start_app")
    assert at_stop < total, f"every task was terminal before the broker stopped ({at_stop}/{total}): nothing was in flight"
    _wait_until_all_terminal(cluster, total, timeout=150)

    histories = _histories(cluster)
    workers = {t[2] for h in histories.values() for t in h.transitions if t[0] == "in_progress" and t[2]}
    _, figures, _, wrong = judge_run(cluster, (SLOW,), ours=workers)
    left = _wait_for_empty_broker(rabbitmq_cluster)
    # The stop reached both processes while they worked: each lost its connection and reconnected.
    lost = {process.log.stem: process.log_text().count("AMQP connection lost; reconnecting") for process in cluster.processes}
    retried = ours.log_text().count("publishing a step result failed; retrying")
    report = {"tasks": total, "terminal_at_stop": at_stop, "connections_lost": lost, "result_publishes_retried": retried, "steps": figures.steps, "claims": dict(figures.claims),
              "results": dict(figures.results), "double_claims": dict(figures.double_claims),
              "double_results": figures.double_results, "broker_left": left}
    print("broker restart:", json.dumps(report))
    assert wrong == [], f"{len(wrong)} tasks ended wrongly, e.g. {wrong[:3]}"
    assert all(count > 0 for count in lost.values()), report
    assert figures.double_claims == {} and figures.double_results == 0, report
    assert left == {}, f"messages left on the broker: {report}"
    assert _pgmq_messages_ever_sent(cluster) == {}, "a message went through PGMQ instead of the broker"
