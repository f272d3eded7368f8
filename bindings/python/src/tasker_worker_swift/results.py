"""What a handler returns: success, failure, decision, batch and checkpoint results."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence


@dataclass(frozen=True)
class StepResult:
    """A handler's outcome. Build one with :func:`success`, :func:`failure`, :func:`decision`,
    :func:`no_branches`, :func:`batches`, :func:`no_batches` or :func:`checkpoint`.

    A handler may also return a plain ``dict`` (a success with that result) or ``None`` (``{}``).
    """

    success: bool
    result: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    error_type: str = ""
    error_code: str | None = None
    retryable: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None

    def execution_result(self, step_uuid: str, execution_time_ms: int, worker_id: str | None) -> dict[str, Any]:
        """The ``StepExecutionResult`` document for ``tasker_complete_step_event``."""
        metadata: dict[str, Any] = {
            "execution_time_ms": max(0, int(execution_time_ms)),
            "retryable": self.retryable if not self.success else False,
            "worker_id": worker_id,
            "custom": dict(self.metadata),
        }
        if self.success:
            return {
                "step_uuid": step_uuid,
                "success": True,
                "status": "completed",
                "result": self.result,
                "metadata": metadata,
            }
        metadata["error_type"] = self.error_type
        metadata["error_code"] = self.error_code
        return {
            "step_uuid": step_uuid,
            "success": False,
            "status": "failed",
            "result": {},
            "metadata": metadata,
            "error": {"message": self.message, "error_type": self.error_type, "retryable": self.retryable},
        }


def success(result: dict[str, Any] | None = None, *, metadata: dict[str, Any] | None = None) -> StepResult:
    """The step succeeded with ``result`` (a JSON object; dependants read it)."""
    return StepResult(success=True, result=dict(result or {}), metadata=dict(metadata or {}))


def failure(
    message: str,
    *,
    retryable: bool = True,
    error_type: str = "handler_error",
    error_code: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> StepResult:
    """The step failed; orchestration retries it (with backoff, up to its ``max_attempts``) when
    ``retryable``, else the task goes to error."""
    return StepResult(
        success=False,
        message=message,
        error_type=error_type,
        error_code=error_code,
        retryable=retryable,
        metadata=dict(metadata or {}),
    )


def decision(step_names: Sequence[str], *, routing_context: dict[str, Any] | None = None, **extra: Any) -> StepResult:
    """A decision step's outcome: create the named (template) steps."""
    result: dict[str, Any] = {
        **extra,
        "decision_point_outcome": {"type": "create_steps", "step_names": list(step_names)},
    }
    if routing_context:
        result["routing_context"] = routing_context
    return success(result)


def no_branches(**extra: Any) -> StepResult:
    """A decision step's outcome that creates no step."""
    return success({**extra, "decision_point_outcome": {"type": "no_branches"}})


def cursor_configs(total_items: int, batch_size: int, max_workers: int | None = None) -> list[dict[str, Any]]:
    """Cursor ranges covering ``range(total_items)``: batches of ``batch_size`` (widened so that
    there are at most ``max_workers``), ids ``"001"``, ``"002"``, …"""
    if total_items <= 0:
        return []
    if batch_size <= 0:
        raise ValueError(f"batch_size must be > 0, got {batch_size}")
    count = math.ceil(total_items / batch_size)
    if max_workers is not None and max_workers > 0 and count > max_workers:
        count = max_workers
        batch_size = math.ceil(total_items / count)
        count = math.ceil(total_items / batch_size)
    configs = []
    for index in range(count):
        start = index * batch_size
        end = min(total_items, start + batch_size)
        configs.append({"batch_id": f"{index + 1:03d}", "start_cursor": start, "end_cursor": end, "batch_size": end - start})
    return configs


def batches(worker_template: str, configs: Sequence[dict[str, Any]], total_items: int, **extra: Any) -> StepResult:
    """A batchable step's outcome: one ``worker_template`` step per cursor config (see
    :func:`cursor_configs`). No configs is :func:`no_batches`."""
    if not configs:
        return no_batches(reason="empty_dataset", **extra)
    outcome = {
        "type": "create_batches",
        "worker_template_name": worker_template,
        "worker_count": len(configs),
        "cursor_configs": list(configs),
        "total_items": total_items,
    }
    return success({
        **extra,
        "batch_processing_outcome": outcome,
        "worker_count": len(configs),
        "total_items": total_items,
        "worker_template": worker_template,
    })


def no_batches(reason: str = "empty_dataset", **extra: Any) -> StepResult:
    """A batchable step's outcome that needs no worker (one no-op worker runs)."""
    return success({**extra, "batch_processing_outcome": {"type": "no_batches"}, "reason": reason})


def checkpoint(cursor: Any, *, items_processed: int = 0, accumulated_results: Any = None) -> StepResult:
    """Yield: persist progress and run the step again (as a new event whose context carries this
    :class:`~tasker_worker_swift.context.Checkpoint`)."""
    return StepResult(
        success=True,
        checkpoint={"cursor": cursor, "items_processed": int(items_processed), "accumulated_results": accumulated_results},
    )
