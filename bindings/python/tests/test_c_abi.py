"""The C ABI's errors: bad JSON, unknown event ids, NULL pointers, calls before bootstrap and
after stop, and how the tasker-py-compatible module raises them (tests/hosts/abi_errors_host.py
makes the calls in a process of its own; the assertions are here)."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import HOSTS, Cluster

OK, INVALID, NOT_RUNNING, ALREADY_RUNNING, UNKNOWN_EVENT = 0, 1, 2, 3, 4


@pytest.fixture
def observed(cluster: Cluster) -> dict:
    host = cluster.start("abi-host", [sys.executable, str(HOSTS / "abi_errors_host.py")])
    line = host.wait_for_line("RESULT", timeout=120)
    assert host.process.wait(timeout=60) == 0, host.log_tail()
    return json.loads(line.removeprefix("RESULT "))


def _error(observed: dict, case: str, status: int, *words: str) -> None:
    entry = observed[case]
    assert entry["status"] == status, (case, entry)
    message = entry["error"] or ""
    assert message, (case, "no last-error message")
    for word in words:
        assert word.lower() in message.lower(), (case, message)


def test_calls_before_bootstrap_say_that_no_worker_runs(observed: dict) -> None:
    for case in ("before.poll", "before.complete", "before.status", "before.metrics"):
        _error(observed, case, NOT_RUNNING)
    assert observed["before.is_running"] == {"status": OK, "error": None, "value": 0}
    assert observed["before.stop"]["status"] == OK and observed["before.stop"]["value"] == {"status": "not_running"}
    assert observed["before.log"] == {"status": OK, "error": None}
    assert observed["compat.before.poll"]["raised"] == "RuntimeError"
    assert observed["compat.before.is_running"] == {"value": False}
    assert observed["compat.before.status"]["value"] == {"running": False, "error": "Worker system not initialized"}
    assert observed["compat.before.poll"]["message"].startswith("Worker system not running")
    assert observed["compat.before.stop"] == {"value": "Worker system not running"}


def test_bootstrap_refuses_malformed_configuration_naming_what_was_wrong(observed: dict) -> None:
    _error(observed, "bootstrap.bad_json", INVALID, "json")
    _error(observed, "bootstrap.not_object", INVALID, "object")
    _error(observed, "bootstrap.unknown_key", INVALID, "colour")
    _error(observed, "bootstrap.null_output", INVALID)
    _error(observed, "bootstrap.bad_utf8", INVALID)
    assert observed["compat.bootstrap.unknown_key"]["raised"] == "ValueError"
    assert "colour" in observed["compat.bootstrap.unknown_key"]["message"]


def test_while_running_unknown_events_and_bad_arguments_are_refused(observed: dict) -> None:
    assert observed["bootstrap.ok"]["status"] == OK, observed["bootstrap.ok"]
    assert observed["bootstrap.ok"]["value"]["status"] == "started"
    _error(observed, "bootstrap.again", ALREADY_RUNNING)
    assert observed["compat.bootstrap.again"]["value"]["status"] == "already_running"
    _error(observed, "complete.unknown_event", UNKNOWN_EVENT)
    _error(observed, "complete.bad_json", INVALID, "json")
    _error(observed, "complete.not_object", INVALID)
    _error(observed, "complete.null_event", INVALID)
    _error(observed, "checkpoint.unknown_event", UNKNOWN_EVENT)
    _error(observed, "checkpoint.bad_json", INVALID)
    _error(observed, "checkpoint.no_step_uuid", INVALID, "step_uuid")
    _error(observed, "poll.null_output", INVALID)
    _error(observed, "log.bad_fields", INVALID)
    _error(observed, "log.bad_level", INVALID)
    assert observed["compat.complete.bad_event_id"]["raised"] == "ValueError"
    assert observed["compat.complete.unknown_event"] == {"value": False}
    assert observed["compat.checkpoint.unknown_event"] == {"value": False}
    assert observed["compat.complete.not_a_dict"]["raised"] == "ValueError"
    assert observed["compat.poll.running"] == {"value": None}
    assert observed["compat.poll.wait"] == {"value": None}
    metrics = observed["compat.metrics"]["value"]
    for key in ("pending_count", "oldest_pending_age_ms", "starvation_detected", "starving_event_count",
                "polls", "completions", "timeouts"):
        assert key in metrics, (key, metrics)
    assert metrics["pending_count"] == 0 and metrics["polls"] >= 2
    assert observed["compat.starvation"] == {"value": True}
    assert observed["compat.cleanup"] == {"value": 0}
    assert observed["compat.in_process"] == {"value": None}
    health = observed["compat.health"]["value"]
    assert health["is_running"] is True and "database" in health["components"]
    assert observed["compat.worker_metrics"]["value"]["dispatch_channel_pending"] == 0
    config = observed["compat.config"]["value"]
    assert config["environment"] == "test" and config["supported_namespaces"]
    assert observed["compat.status"]["value"]["running"] is True
    assert observed["compat.is_running"] == {"value": True}
    assert observed["compat.log"] == {"value": None}


def test_calls_after_stop_say_that_no_worker_runs(observed: dict) -> None:
    assert observed["compat.stop"] == {"value": "Worker system stopped"}
    for case in ("after.poll", "after.complete", "after.begin_shutdown", "after.health"):
        _error(observed, case, NOT_RUNNING)
    assert observed["compat.after.poll"]["raised"] == "RuntimeError"
    assert observed["compat.after.shutdown"]["raised"] == "RuntimeError"
    assert observed["compat.after.stop"] == {"value": "Worker system not running"}
    assert observed["compat.after.is_running"] == {"value": False}
