"""The package's pure-Python parts (no worker needed): result documents, cursors, context."""

from __future__ import annotations

import pytest

from tasker_worker_swift import StepContext, batches, checkpoint, cursor_configs, decision, failure, success


def test_cursor_configs_cover_every_item_within_max_workers() -> None:
    assert cursor_configs(0, 10) == []
    assert cursor_configs(25, 10) == [
        {"batch_id": "001", "start_cursor": 0, "end_cursor": 10, "batch_size": 10},
        {"batch_id": "002", "start_cursor": 10, "end_cursor": 20, "batch_size": 10},
        {"batch_id": "003", "start_cursor": 20, "end_cursor": 25, "batch_size": 5},
    ]
    wide = cursor_configs(100, 10, max_workers=4)
    assert len(wide) == 4 and wide[-1]["end_cursor"] == 100
    with pytest.raises(ValueError, match="batch_size"):
        cursor_configs(5, 0)


def test_results_have_the_step_execution_result_shape() -> None:
    ok = success({"a": 1}).execution_result("s", 5, "w")
    assert ok["success"] is True and ok["status"] == "completed" and ok["result"] == {"a": 1}
    assert ok["metadata"]["retryable"] is False and ok["metadata"]["execution_time_ms"] == 5
    bad = failure("boom", retryable=False, error_code="E1").execution_result("s", 1, None)
    assert bad["success"] is False and bad["status"] == "failed" and bad["result"] == {}
    assert bad["error"] == {"message": "boom", "error_type": "handler_error", "retryable": False}
    assert bad["metadata"]["retryable"] is False and bad["metadata"]["error_code"] == "E1"
    assert decision(["x"]).result["decision_point_outcome"] == {"type": "create_steps", "step_names": ["x"]}
    assert batches("w", [], 0).result["batch_processing_outcome"] == {"type": "no_batches"}
    assert checkpoint(3, items_processed=3).checkpoint == {"cursor": 3, "items_processed": 3, "accumulated_results": None}


def test_context_reads_the_task_sequence_step_document() -> None:
    event = {
        "event_id": "e", "task_uuid": "t", "step_uuid": "s", "correlation_id": "c",
        "task_sequence_step": {
            "task": {"task": {"context": {"n": 2}}, "namespace_name": "ns", "task_name": "tn"},
            "workflow_step": {"name": "step", "attempts": 2, "max_attempts": 3, "inputs": {"cursor": {"start_cursor": 0}},
                              "checkpoint": {"cursor": 5, "items_processed": 5, "accumulated_results": {"sum": 10}}},
            "dependency_results": {"parent": {"result": {"v": 1}}},
            "step_definition": {"name": "step", "handler": {"callable": "py.x", "initialization": {"k": "v"}}},
        },
    }
    context = StepContext.from_event(event)
    assert (context.handler_name, context.step_name, context.namespace, context.task_name) == ("py.x", "step", "ns", "tn")
    assert context.input("n") == 2 and context.config("k") == "v" and context.dependency("parent") == {"v": 1}
    assert context.retry.is_retry and not context.retry.is_last_attempt
    assert context.checkpoint is not None and context.checkpoint.cursor == 5
    assert context.checkpoint.accumulated_results == {"sum": 10}
    assert context.batch_cursor == {"start_cursor": 0}
