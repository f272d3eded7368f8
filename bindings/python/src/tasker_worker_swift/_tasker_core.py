"""A drop-in for tasker-py's compiled ``tasker_core._tasker_core`` extension, over the Swift worker.

The functions have the names, arguments, return shapes and exceptions of upstream's extension
(PyPI ``tasker-py`` 0.1.8, ``_tasker_core.pyi``), so tasker-py's pure-Python SDK (``EventPoller``,
``StepExecutionSubscriber``, ``StepHandler`` subclasses, the decision and batch helpers, ``Worker``)
runs its handlers on the embedded Swift worker unchanged::

    import sys
    import tasker_worker_swift._tasker_core as core
    sys.modules["tasker_core._tasker_core"] = core   # before `import tasker_core`
    import tasker_core

Errors: ``RuntimeError`` (worker not running, bootstrap failed, anything else) and ``ValueError``
(a malformed event id, data that is not JSON or of the wrong shape), each with the library's
last-error message. Our extensions: ``poll_step_events`` and ``poll_in_process_events`` take an
optional ``timeout_ms`` (wait up to that long, woken as soon as an event arrives; 0, the default,
returns at once like upstream); ``bootstrap_worker`` also accepts the keys of
``tasker_worker_bootstrap`` (``environment``, ``database_url``, ``template_path``,
``web_bind_address``, ``grpc_bind_address``, ``log_format``).
"""

from __future__ import annotations

import functools
import platform
import uuid
from typing import Any, Callable, ParamSpec, TypeVar

from . import _library as lib
from . import _observability as _shapes
from ._version import __version__

P = ParamSpec("P")
R = TypeVar("R")

__all__ = [
    "__version__",
    "get_version",
    "get_rust_version",
    "health_check",
    "bootstrap_worker",
    "stop_worker",
    "get_worker_status",
    "transition_to_graceful_shutdown",
    "is_worker_running",
    "poll_step_events",
    "complete_step_event",
    "checkpoint_yield_step_event",
    "get_ffi_dispatch_metrics",
    "check_starvation_warnings",
    "cleanup_timeouts",
    "poll_in_process_events",
    "get_health_check",
    "get_metrics",
    "get_worker_config",
    "log_error",
    "log_warn",
    "log_info",
    "log_debug",
    "log_trace",
    "client_health_check",
    "client_create_task",
    "client_get_task",
    "client_list_tasks",
    "client_cancel_task",
    "client_list_task_steps",
    "client_get_step",
    "client_get_step_audit_history",
]

# Keys of upstream's BootstrapConfig that have no counterpart here: accepted and ignored (the
# worker id comes from the configuration; the namespaces from the templates).
_IGNORED_BOOTSTRAP_KEYS = frozenset({"worker_id", "namespace"})
_LOG_LEVELS = {"warn": "warning"}


def _raise(error: lib.TaskerWorkerError) -> None:
    """Re-raises a C ABI error as upstream would: ValueError for bad input, else RuntimeError."""
    if error.status == lib.ERR_INVALID_ARGUMENT:
        raise ValueError(error.message) from error
    if error.status == lib.ERR_NOT_RUNNING:
        # Upstream's wording, which tasker-py's wrappers look for ("not running").
        raise RuntimeError(f"Worker system not running ({error.message})") from error
    raise RuntimeError(error.message) from error


def _upstream_errors(function: Callable[P, R]) -> Callable[P, R]:
    """Raises the C ABI's errors of `function` as upstream's extension does (see `_raise`)."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except lib.TaskerWorkerError as error:
            _raise(error)
            raise

    return call


def _event_id(event_id: str) -> str:
    if not isinstance(event_id, str):
        raise ValueError(f"Invalid event_id: expected a str, got {type(event_id).__name__}")
    try:
        uuid.UUID(event_id)
    except ValueError:
        raise ValueError(f"Invalid event_id format (not a UUID): {event_id!r}") from None
    return event_id


def _dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a dict, got {type(value).__name__}")
    return value


# ---- version and health ------------------------------------------------------------------------


def get_version() -> str:
    """The package version (e.g. ``"0.1.0"``)."""
    return __version__


def get_rust_version() -> str:
    """The native library's version, for debugging (``tasker-worker-swift … (libTaskerWorkerFFI …)``)."""
    return f"tasker-worker-swift {__version__} (libTaskerWorkerFFI {lib.version()}, Python {platform.python_version()})"


def health_check() -> bool:
    """True when the native library loads and answers."""
    try:
        return bool(lib.version())
    except Exception:  # noqa: BLE001 - upstream's health_check never raises
        return False


# ---- lifecycle -----------------------------------------------------------------------------------


def bootstrap_worker(config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Starts the embedded worker; returns ``{handle_id, status, message, worker_id, …}``.

    ``status`` is ``"started"``, or ``"already_running"`` when a worker already runs in this process.

    Raises:
        RuntimeError: bootstrap failed (configuration, templates or database; the message says which).
        ValueError: ``config`` is not a dict or has a key neither upstream nor this worker knows.
    """
    translated: dict[str, Any] = {}
    for key, value in _dict(config or {}, "config").items():
        if value is None or key in _IGNORED_BOOTSTRAP_KEYS:
            continue
        if key == "log_level" and isinstance(value, str):
            value = _LOG_LEVELS.get(value, value)
        translated[key] = value
    try:
        return lib.bootstrap(translated)
    except lib.TaskerWorkerError as error:
        if error.status == lib.ERR_ALREADY_RUNNING:
            status = _status_or_none() or {}
            return {
                "handle_id": "",
                "status": "already_running",
                "message": error.message,
                "worker_id": status.get("worker_id", ""),
            }
        _raise(error)
        raise  # unreachable


@_upstream_errors
def stop_worker() -> str:
    """Graceful shutdown, waited for: ``"Worker system stopped"`` or ``"Worker system not running"``."""
    result = lib.stop()
    return "Worker system not running" if result.get("status") == "not_running" else "Worker system stopped"


def _status_or_none() -> dict[str, Any] | None:
    try:
        return lib.status()
    except lib.TaskerWorkerError:
        return None


def get_worker_status() -> dict[str, Any]:
    """``{running, environment, worker_core_status, web_api_enabled, supported_namespaces,
    database_pool_size, database_pool_idle, error}`` (``running: False``, ``error: "Worker system
    not initialized"`` when no worker runs, as upstream)."""
    try:
        status = lib.status()
    except lib.TaskerWorkerError as error:
        if error.status == lib.ERR_NOT_RUNNING:
            return {"running": False, "error": "Worker system not initialized"}
        _raise(error)
        raise
    shaped = dict(status)
    shaped.setdefault("worker_core_status", "shutting_down" if status.get("shutting_down") else (
        "running" if status.get("running") else "stopped"))
    shaped.setdefault("error", None)
    return shaped


@_upstream_errors
def transition_to_graceful_shutdown() -> str:
    """Begins the graceful shutdown and returns at once (pending events can still be completed).

    Raises:
        RuntimeError: no worker runs.
    """
    lib.begin_shutdown()
    return "Worker system transitioned to graceful shutdown"


@_upstream_errors
def is_worker_running() -> bool:
    """True while a worker runs in this process."""
    return lib.is_running()


# ---- the FFI dispatch channel --------------------------------------------------------------------


@_upstream_errors
def poll_step_events(timeout_ms: int = 0) -> dict[str, Any] | None:
    """The next step event (``FfiStepEvent`` dict), or None.

    Args:
        timeout_ms: our extension: wait up to this long for a step (woken as soon as one arrives);
            0 returns at once, as upstream.

    Raises:
        RuntimeError: no worker runs.
    """
    return lib.poll_step_event(timeout_ms)


def complete_step_event(event_id: str, completion_data: dict[str, Any]) -> bool:
    """Completes a polled event with a ``StepExecutionResult`` dict.

    Returns:
        True when the result was accepted; False when the event is not pending (already completed,
        timed out, never issued) or the result was refused (the reason is logged).

    Raises:
        ValueError: ``event_id`` is not a UUID, or ``completion_data`` is not a JSON object of the
            StepExecutionResult shape.
        RuntimeError: no worker runs.
    """
    return _answer_event("complete_step_event", lib.complete_step_event, event_id, completion_data, "completion_data")


def checkpoint_yield_step_event(event_id: str, checkpoint_data: dict[str, Any]) -> bool:
    """Persists a checkpoint (``{step_uuid, cursor, items_processed, accumulated_results}``); the
    step is dispatched again as a new event carrying it in ``workflow_step.checkpoint``.

    Returns:
        True when accepted; False when the event is not pending or the checkpoint was refused.

    Raises:
        ValueError: a malformed ``event_id`` or ``checkpoint_data``.
        RuntimeError: no worker runs.
    """
    return _answer_event(
        "checkpoint_yield_step_event", lib.checkpoint_yield_step_event, event_id, checkpoint_data, "checkpoint_data")


def _answer_event(
    name: str, call: Callable[[str, dict[str, Any]], None], event_id: str, data: Any, what: str
) -> bool:
    """Answers a polled event (result or checkpoint) as upstream does: False, logged, when the
    event is not pending or the answer was refused; ValueError / RuntimeError otherwise."""
    _event_id(event_id)
    try:
        call(event_id, _dict(data, what))
    except lib.TaskerWorkerError as error:
        if error.status in (lib.ERR_UNKNOWN_EVENT, lib.ERR_REFUSED):
            _log_quietly(lib.LOG_WARN, f"{name}: {error.message}", {"event_id": event_id})
            return False
        _raise(error)
    return True


@_upstream_errors
def get_ffi_dispatch_metrics() -> dict[str, Any]:
    """``{pending_count, oldest_pending_age_ms, newest_pending_age_ms, oldest_event_id,
    starvation_detected, starving_event_count, polls, completions, timeouts}``."""
    return lib.ffi_dispatch_metrics()


@_upstream_errors
def check_starvation_warnings() -> bool:
    """Logs a warning for each pending event older than the starvation threshold; returns True."""
    lib.check_starvation_warnings()
    return True


@_upstream_errors
def cleanup_timeouts() -> int:
    """Gives every event pending past ``completion_timeout_ms`` its ``handler_timeout`` result now;
    returns their count."""
    return lib.cleanup_timeouts()


@_upstream_errors
def poll_in_process_events(timeout_ms: int = 0) -> dict[str, Any] | None:
    """The next ``fast``/``broadcast`` domain event, or None (``timeout_ms``: as ``poll_step_events``)."""
    return lib.poll_in_process_event(timeout_ms)


# ---- observability -------------------------------------------------------------------------------


@_upstream_errors
def _observe(function: Any) -> dict[str, Any]:
    return function()


def get_health_check() -> dict[str, Any]:
    """``{status, is_running, components: {name: {name, status, …}}, rust, python, swift}``
    (upstream's shape; ``swift`` is the worker's ``/health/detailed`` body)."""
    return _shapes.health(_observe(lib.health), _status_or_none() or {})


def get_metrics() -> dict[str, Any]:
    """Upstream's flat worker metrics (``dispatch_channel_pending``, ``oldest_pending_age_ms``, …,
    ``steps_processed``, ``steps_succeeded``, ``steps_failed``, ``steps_in_progress``) plus
    ``swift``: the worker's ``/metrics/worker`` body."""
    return _shapes.metrics(_observe(lib.metrics), _status_or_none() or {})


def get_worker_config() -> dict[str, Any]:
    """Upstream's flat worker configuration (``environment``, ``supported_namespaces``,
    ``web_api_enabled``, ``database_pool_size``, ``starvation_threshold_ms``,
    ``max_concurrent_handlers``, ``handler_timeout_ms``, …) plus ``swift``: the ``/config`` body."""
    return _shapes.worker_config(_observe(lib.worker_config), _status_or_none() or {})


# ---- logging -------------------------------------------------------------------------------------


@_upstream_errors
def _log(level: int, message: str, fields: dict[str, str] | None) -> None:
    lib.log(level, str(message), fields)


def _log_quietly(level: int, message: str, fields: dict[str, str] | None = None) -> None:
    try:
        lib.log(level, message, fields)
    except Exception:  # noqa: BLE001 - a log line must never turn into an error of the caller
        pass


def log_error(message: str, fields: dict[str, str] | None = None) -> None:
    """An ERROR line in the worker's log stream with ``fields`` as metadata."""
    _log(lib.LOG_ERROR, message, fields)


def log_warn(message: str, fields: dict[str, str] | None = None) -> None:
    """A WARN line in the worker's log stream."""
    _log(lib.LOG_WARN, message, fields)


def log_info(message: str, fields: dict[str, str] | None = None) -> None:
    """An INFO line in the worker's log stream."""
    _log(lib.LOG_INFO, message, fields)


def log_debug(message: str, fields: dict[str, str] | None = None) -> None:
    """A DEBUG line in the worker's log stream."""
    _log(lib.LOG_DEBUG, message, fields)


def log_trace(message: str, fields: dict[str, str] | None = None) -> None:
    """A TRACE line in the worker's log stream."""
    _log(lib.LOG_TRACE, message, fields)


# ---- the orchestration API client (upstream TAS-231) -----------------------------------------------


def _client(call: Callable[[], Any]) -> Any:
    """Runs a client call, raising as upstream's bridge does: ValueError for a malformed argument,
    RuntimeError naming the request and the API's answer otherwise."""
    try:
        return call()
    except lib.TaskerWorkerError as error:
        _raise(error)
        raise


def client_health_check() -> dict[str, Any]:
    """GET /health of the orchestration API (``worker.orchestration_client``): its answer with
    ``healthy`` true; RuntimeError when it does not answer 2xx."""
    return _client(lambda: lib.client("health_check"))


def client_create_task(request: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/tasks with ``request`` (a TaskRequest dict); the created task."""
    _dict(request, "request")
    return _client(lambda: lib.client_create_task(request))


def client_get_task(task_uuid: str) -> dict[str, Any]:
    """GET /v1/tasks/{task_uuid}."""
    return _client(lambda: lib.client_uuid_call("get_task", task_uuid))


def client_list_tasks(limit: int, offset: int, namespace: str | None, status: str | None) -> dict[str, Any]:
    """GET /v1/tasks: ``limit`` tasks from ``offset`` (the API pages by ``limit``), optionally filtered."""
    return _client(lambda: lib.client_list_tasks(limit, offset, namespace, status))


def client_cancel_task(task_uuid: str) -> dict[str, Any]:
    """DELETE /v1/tasks/{task_uuid}: ``{"cancelled": True, "task": …}``."""
    return _client(lambda: lib.client_uuid_call("cancel_task", task_uuid))


def client_list_task_steps(task_uuid: str) -> list[dict[str, Any]]:
    """GET /v1/tasks/{task_uuid}/workflow_steps."""
    return _client(lambda: lib.client_uuid_call("list_task_steps", task_uuid))


def client_get_step(task_uuid: str, step_uuid: str) -> dict[str, Any]:
    """GET /v1/tasks/{task_uuid}/workflow_steps/{step_uuid}."""
    return _client(lambda: lib.client_uuid_call("get_step", task_uuid, step_uuid))


def client_get_step_audit_history(task_uuid: str, step_uuid: str) -> list[dict[str, Any]]:
    """GET /v1/tasks/{task_uuid}/workflow_steps/{step_uuid}/audit."""
    return _client(lambda: lib.client_uuid_call("get_step_audit_history", task_uuid, step_uuid))
