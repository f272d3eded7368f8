"""The typed view of a step event that handlers receive."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint persisted by an earlier ``checkpoint`` result of this step.

    Attributes:
        cursor: where the handler stopped (any JSON value).
        items_processed: how many items it had processed.
        accumulated_results: running totals carried across yields.
    """

    cursor: Any
    items_processed: int = 0
    accumulated_results: Any = None


@dataclass(frozen=True)
class RetryInfo:
    """Retry state of the step: ``attempts`` so far (this run included) of ``max_attempts``."""

    attempts: int
    max_attempts: int

    @property
    def is_retry(self) -> bool:
        """True when an earlier attempt of this step ran."""
        return self.attempts > 1

    @property
    def is_last_attempt(self) -> bool:
        """True when a retryable failure now would not be retried."""
        return self.attempts >= self.max_attempts


@dataclass(frozen=True)
class StepContext:
    """Everything a handler knows about the step it runs.

    Built from the worker's step event (``task_sequence_step``: task, workflow step, dependency
    results, step definition); the raw event stays available as :attr:`event`.
    """

    event_id: str
    task_uuid: str
    step_uuid: str
    correlation_id: str
    step_name: str
    handler_name: str
    #: The template's ``handler.method``: the entry point being run (``"call"`` when it names none).
    handler_method: str
    #: The template's ``handler.resolver`` hint, or None.
    handler_resolver: str | None
    namespace: str
    task_name: str
    task_context: dict[str, Any]
    inputs: dict[str, Any]
    step_config: dict[str, Any]
    dependency_results: dict[str, Any]
    retry: RetryInfo
    checkpoint: Checkpoint | None
    event: dict[str, Any] = field(repr=False)
    #: The worker's span this handler runs under (W3C ids, lowercase hex: 32 and 16 digits), or None.
    trace_id: str | None = None
    span_id: str | None = None

    @property
    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` of the worker's handler span, for continuing the step's trace with
        OpenTelemetry: ``TraceContextTextMapPropagator().extract({"traceparent": ctx.traceparent})``
        gives the context to start the handler's own spans in. None when the event carries no trace."""
        if self.trace_id is None or self.span_id is None:
            return None
        return f"00-{self.trace_id}-{self.span_id}-01"

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> "StepContext":
        """Builds the context of a polled step event (tolerates missing optional parts)."""
        sequence = _object(event.get("task_sequence_step"))
        task_wrapper = _object(sequence.get("task"))
        task = _object(task_wrapper.get("task", task_wrapper))
        step = _object(sequence.get("workflow_step"))
        definition = _object(sequence.get("step_definition"))
        handler = _object(definition.get("handler"))
        raw_checkpoint = step.get("checkpoint")
        checkpoint = None
        if isinstance(raw_checkpoint, dict) and raw_checkpoint.get("cursor") is not None:
            checkpoint = Checkpoint(
                cursor=raw_checkpoint.get("cursor"),
                items_processed=int(raw_checkpoint.get("items_processed") or 0),
                accumulated_results=raw_checkpoint.get("accumulated_results"),
            )
        return cls(
            event_id=str(event.get("event_id", "")),
            task_uuid=str(event.get("task_uuid", "")),
            step_uuid=str(event.get("step_uuid", "")),
            correlation_id=str(event.get("correlation_id", "")),
            step_name=str(step.get("name") or definition.get("name") or ""),
            handler_name=str(handler.get("callable") or step.get("template_step_name") or ""),
            handler_method=str(handler.get("method") or "call"),
            handler_resolver=str(handler["resolver"]) if handler.get("resolver") else None,
            namespace=str(task_wrapper.get("namespace_name") or task.get("namespace_name") or ""),
            task_name=str(task_wrapper.get("task_name") or task.get("name") or ""),
            task_context=_object(task.get("context")),
            inputs=_object(step.get("inputs")),
            step_config=_object(handler.get("initialization")),
            dependency_results=_object(sequence.get("dependency_results")),
            retry=RetryInfo(
                attempts=int(step.get("attempts") or 0),
                max_attempts=int(step.get("max_attempts") or 1),
            ),
            checkpoint=checkpoint,
            event=dict(event),
            trace_id=_hex_id(event.get("trace_id"), 32),
            span_id=_hex_id(event.get("span_id"), 16),
        )

    def input(self, key: str, default: Any = None) -> Any:
        """A value of the task context (the task's input), or ``default``."""
        value = self.task_context.get(key)
        return default if value is None else value

    def config(self, key: str, default: Any = None) -> Any:
        """A value of the step's handler ``initialization`` in the template, or ``default``."""
        value = self.step_config.get(key)
        return default if value is None else value

    def dependency(self, step_name: str, default: Any = None) -> Any:
        """The ``result`` a parent step returned (unwrapped from its stored result), or ``default``."""
        stored = self.dependency_results.get(step_name)
        if stored is None:
            return default
        if isinstance(stored, dict) and "result" in stored:
            return stored["result"]
        return stored

    def dependencies_with_prefix(self, prefix: str) -> list[Any]:
        """The results of every parent step whose name starts with ``prefix`` (batch workers), by name."""
        return [self.dependency(name) for name in sorted(self.dependency_results) if name.startswith(prefix)]

    @property
    def batch_cursor(self) -> dict[str, Any] | None:
        """A batch worker's cursor (``{batch_id, start_cursor, end_cursor, batch_size}``), else None."""
        cursor = self.inputs.get("cursor")
        return cursor if isinstance(cursor, dict) else None

    @property
    def is_no_op_batch(self) -> bool:
        """True for the placeholder worker of a batch with no items."""
        return bool(self.inputs.get("is_no_op", False))


def _hex_id(value: Any, digits: int) -> str | None:
    """A trace or span id as W3C Trace Context writes it (lowercase hex, not all zeros), else None."""
    if not isinstance(value, str) or len(value) != digits or value.strip("0") == "":
        return None
    return value if all(c in "0123456789abcdef" for c in value) else None
