"""Loading ``libTaskerWorkerFFI.so`` and calling the C ABI of ``tasker_worker.h``.

Every function of the header is declared here once, with its argument and result types. ``call``
runs one of them and turns a status other than ``TASKER_OK`` into a :class:`TaskerWorkerError`
carrying the library's last-error message. ``ctypes.CDLL`` releases the GIL for the duration of
each call, so several Python threads can poll and complete at once.

Library lookup, first match wins:

1. ``$TASKER_WORKER_LIBRARY`` (a path to the ``.so``);
2. the copy bundled in this package (``tasker_worker_swift/lib/libTaskerWorkerFFI.so``, in wheels
   built by ``bindings/python/build_wheel.sh``);
3. the repository's ``.build/debug`` then ``.build/release``: of the source checkout this module
   lives in, else of the current directory or one of its parents.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable

LIBRARY_NAME = "libTaskerWorkerFFI.so"

# tasker_status
OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_NOT_RUNNING = 2
ERR_ALREADY_RUNNING = 3
ERR_UNKNOWN_EVENT = 4
ERR_BOOTSTRAP = 5
ERR_REFUSED = 6
ERR_CLIENT = 7
ERR_INTERNAL = 99

STATUS_NAMES = {
    OK: "TASKER_OK",
    ERR_INVALID_ARGUMENT: "TASKER_ERR_INVALID_ARGUMENT",
    ERR_NOT_RUNNING: "TASKER_ERR_NOT_RUNNING",
    ERR_ALREADY_RUNNING: "TASKER_ERR_ALREADY_RUNNING",
    ERR_UNKNOWN_EVENT: "TASKER_ERR_UNKNOWN_EVENT",
    ERR_BOOTSTRAP: "TASKER_ERR_BOOTSTRAP",
    ERR_REFUSED: "TASKER_ERR_REFUSED",
    ERR_CLIENT: "TASKER_ERR_CLIENT",
    ERR_INTERNAL: "TASKER_ERR_INTERNAL",
}

# tasker_log_level
LOG_TRACE, LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR = range(5)


class TaskerWorkerError(Exception):
    """A C ABI call returned a status other than ``TASKER_OK``.

    Attributes:
        status: the ``tasker_status`` code.
        function: the C function that failed.
        message: the library's last-error message for the call.
    """

    def __init__(self, status: int, function: str, message: str) -> None:
        self.status = status
        self.function = function
        self.message = message
        name = STATUS_NAMES.get(status, f"status {status}")
        super().__init__(f"{function}: {name}: {message}")


class LibraryNotFoundError(RuntimeError):
    """No ``libTaskerWorkerFFI.so`` was found (the message lists where it was looked for)."""


def _candidates() -> list[Path]:
    paths: list[Path] = []
    explicit = os.environ.get("TASKER_WORKER_LIBRARY")
    if explicit:
        paths.append(Path(explicit))
    here = Path(__file__).resolve().parent
    paths.append(here / "lib" / LIBRARY_NAME)
    # A source checkout (bindings/python/src/tasker_worker_swift → the repository root), then the
    # current directory and its parents (an installed package used from inside the repository).
    roots = [here.parents[3], *[Path.cwd(), *Path.cwd().parents]]
    for root in dict.fromkeys(roots):
        for configuration in ("debug", "release"):
            paths.append(root / ".build" / configuration / LIBRARY_NAME)
    return paths


def library_path() -> Path:
    """The path of the library that :func:`library` loads (see the module docstring)."""
    explicit = os.environ.get("TASKER_WORKER_LIBRARY")
    if explicit and not Path(explicit).is_file():
        raise LibraryNotFoundError(f"TASKER_WORKER_LIBRARY={explicit} is not a file")
    candidates = _candidates()
    for path in candidates:
        if path.is_file():
            return path
    raise LibraryNotFoundError(
        f"{LIBRARY_NAME} not found; looked at: " + ", ".join(str(p) for p in candidates)
        + " (set TASKER_WORKER_LIBRARY, install a wheel that bundles it, or"
        " `swift build --product TaskerWorkerFFI` in the repository)"
    )


_c_char_pp = ctypes.POINTER(ctypes.c_void_p)

# name: (argtypes, restype)
_SIGNATURES: dict[str, tuple[list[Any], Any]] = {
    "tasker_last_error": ([], ctypes.c_void_p),
    "tasker_string_free": ([ctypes.c_void_p], None),
    "tasker_version": ([], ctypes.c_char_p),
    "tasker_worker_bootstrap": ([ctypes.c_char_p, _c_char_pp], ctypes.c_int),
    "tasker_worker_stop": ([_c_char_pp], ctypes.c_int),
    "tasker_worker_begin_shutdown": ([_c_char_pp], ctypes.c_int),
    "tasker_worker_status": ([_c_char_pp], ctypes.c_int),
    "tasker_worker_is_running": ([ctypes.POINTER(ctypes.c_int32)], ctypes.c_int),
    "tasker_poll_step_event": ([ctypes.c_int32, _c_char_pp], ctypes.c_int),
    "tasker_complete_step_event": ([ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int),
    "tasker_checkpoint_yield_step_event": ([ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int),
    "tasker_ffi_dispatch_metrics": ([_c_char_pp], ctypes.c_int),
    "tasker_check_starvation_warnings": ([ctypes.POINTER(ctypes.c_int32)], ctypes.c_int),
    "tasker_cleanup_timeouts": ([ctypes.POINTER(ctypes.c_int64)], ctypes.c_int),
    "tasker_poll_in_process_event": ([ctypes.c_int32, _c_char_pp], ctypes.c_int),
    "tasker_health": ([_c_char_pp], ctypes.c_int),
    "tasker_metrics": ([_c_char_pp], ctypes.c_int),
    "tasker_worker_config": ([_c_char_pp], ctypes.c_int),
    "tasker_log": ([ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int),
    "tasker_client_health_check": ([_c_char_pp], ctypes.c_int),
    "tasker_client_create_task": ([ctypes.c_char_p, _c_char_pp], ctypes.c_int),
    "tasker_client_get_task": ([ctypes.c_char_p, _c_char_pp], ctypes.c_int),
    "tasker_client_list_tasks": ([ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p, _c_char_pp], ctypes.c_int),
    "tasker_client_cancel_task": ([ctypes.c_char_p, _c_char_pp], ctypes.c_int),
    "tasker_client_list_task_steps": ([ctypes.c_char_p, _c_char_pp], ctypes.c_int),
    "tasker_client_get_step": ([ctypes.c_char_p, ctypes.c_char_p, _c_char_pp], ctypes.c_int),
    "tasker_client_get_step_audit_history": ([ctypes.c_char_p, ctypes.c_char_p, _c_char_pp], ctypes.c_int),
}

_lock = threading.Lock()
_library: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    """The loaded library with every function's signature declared (loaded once per process)."""
    global _library
    with _lock:
        if _library is None:
            path = library_path()
            loaded = ctypes.CDLL(str(path))
            for name, (argtypes, restype) in _SIGNATURES.items():
                function = getattr(loaded, name)
                function.argtypes = argtypes
                function.restype = restype
            _library = loaded
        return _library


def _take_string(pointer: int | None) -> str | None:
    """Copies a library-allocated string and frees it."""
    if not pointer:
        return None
    try:
        return ctypes.string_at(pointer).decode("utf-8")
    finally:
        library().tasker_string_free(pointer)


def last_error() -> str | None:
    """The calling thread's last error message, or None when its last call succeeded."""
    return _take_string(library().tasker_last_error())


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _check(status: int, function: str) -> None:
    if status != OK:
        raise TaskerWorkerError(status, function, last_error() or "(no message)")


def call_json_out(function: str, *arguments: Any) -> Any:
    """Calls ``function(arguments…, char **out)``; returns the decoded JSON output (None if NULL)."""
    out = ctypes.c_void_p()
    status = getattr(library(), function)(*arguments, ctypes.byref(out))
    _check(status, function)
    text = _take_string(out.value)
    return None if text is None else json.loads(text)


def call(function: str, *arguments: Any) -> None:
    """Calls a function without output parameters (strings are encoded to UTF-8 here)."""
    encoded = [_encode(a) if isinstance(a, str) or a is None else a for a in arguments]
    _check(getattr(library(), function)(*encoded), function)


def call_int_out(function: str, c_type: Callable[[], Any]) -> int:
    """Calls ``function(T *out)``; returns the integer written."""
    out = c_type()
    _check(getattr(library(), function)(ctypes.byref(out)), function)
    return int(out.value)


def to_json(value: Any, what: str) -> str:
    """``json.dumps`` that names ``what`` when the value is not JSON-serialisable."""
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except RecursionError as error:
        # A value nested deeper than Python's recursion limit (the worker refuses anything past
        # 128 levels anyway): a clear error, not a dead poll thread.
        raise ValueError(f"{what} is nested too deeply to be written as JSON") from error
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} is not JSON-serialisable: {error}") from error


# ---- the header's functions, typed -------------------------------------------------------------


def version() -> str:
    """``tasker_version()``."""
    raw = library().tasker_version()
    return raw.decode("utf-8") if raw else ""


def configuration_root() -> Path | None:
    """The worker's configuration tree (``base/``, ``environments/``) for a process that runs
    outside the repository: the copy a wheel bundles, else the source checkout's ``config/tasker``."""
    here = Path(__file__).resolve().parent
    roots = [here / "config", here.parents[3] / "config" / "tasker"]
    try:  # the checkout whose .build/<configuration>/ holds the library
        roots.append(library_path().parents[2] / "config" / "tasker")
    except (LibraryNotFoundError, IndexError):
        pass
    for root in roots:
        if (root / "base" / "worker.toml").is_file():
            return root
    return None


def bootstrap(config: dict[str, Any] | None) -> dict[str, Any]:
    """``tasker_worker_bootstrap``: starts the embedded worker (blocks until it serves).

    When neither ``config_path``, ``$TASKER_CONFIG_PATH`` nor ``$WORKSPACE_PATH`` says where the
    configuration is and the current directory has no ``config/tasker``, the worker reads
    :func:`configuration_root` (so a handler script runs from any directory)."""
    if isinstance(config, dict) and "config_path" not in config and not any(
        os.environ.get(name) for name in ("TASKER_CONFIG_PATH", "WORKSPACE_PATH")
    ) and not (Path.cwd() / "config" / "tasker" / "base" / "worker.toml").is_file():
        root = configuration_root()
        if root is not None:
            config = {**config, "config_path": str(root)}
    text = None if config is None else to_json(config, "the bootstrap configuration")
    return call_json_out("tasker_worker_bootstrap", _encode(text))


def stop() -> dict[str, Any]:
    """``tasker_worker_stop``: graceful shutdown, waited for."""
    return call_json_out("tasker_worker_stop")


def begin_shutdown() -> dict[str, Any]:
    """``tasker_worker_begin_shutdown``: begins the graceful shutdown and returns at once."""
    return call_json_out("tasker_worker_begin_shutdown")


def status() -> dict[str, Any]:
    """``tasker_worker_status``."""
    return call_json_out("tasker_worker_status")


def is_running() -> bool:
    """``tasker_worker_is_running``."""
    return call_int_out("tasker_worker_is_running", ctypes.c_int32) != 0


def poll_step_event(timeout_ms: int = 0) -> dict[str, Any] | None:
    """``tasker_poll_step_event``: the next step event, waiting up to ``timeout_ms``."""
    return call_json_out("tasker_poll_step_event", ctypes.c_int32(_clamp_ms(timeout_ms)))


def complete_step_event(event_id: str, result: dict[str, Any]) -> None:
    """``tasker_complete_step_event``."""
    call("tasker_complete_step_event", event_id, to_json(result, "the step result"))


def checkpoint_yield_step_event(event_id: str, checkpoint: dict[str, Any]) -> None:
    """``tasker_checkpoint_yield_step_event``."""
    call("tasker_checkpoint_yield_step_event", event_id, to_json(checkpoint, "the checkpoint"))


def ffi_dispatch_metrics() -> dict[str, Any]:
    """``tasker_ffi_dispatch_metrics``."""
    return call_json_out("tasker_ffi_dispatch_metrics")


def check_starvation_warnings() -> int:
    """``tasker_check_starvation_warnings``: the number of starving events."""
    return call_int_out("tasker_check_starvation_warnings", ctypes.c_int32)


def cleanup_timeouts() -> int:
    """``tasker_cleanup_timeouts``: the number of events timed out now."""
    return call_int_out("tasker_cleanup_timeouts", ctypes.c_int64)


def poll_in_process_event(timeout_ms: int = 0) -> dict[str, Any] | None:
    """``tasker_poll_in_process_event``."""
    return call_json_out("tasker_poll_in_process_event", ctypes.c_int32(_clamp_ms(timeout_ms)))


def health() -> dict[str, Any]:
    """``tasker_health``: the ``/health/detailed`` body."""
    return call_json_out("tasker_health")


def metrics() -> dict[str, Any]:
    """``tasker_metrics``: the ``/metrics/worker`` body plus ``ffi_dispatch``."""
    return call_json_out("tasker_metrics")


def worker_config() -> dict[str, Any]:
    """``tasker_worker_config``: the ``/config`` body (secrets redacted)."""
    return call_json_out("tasker_worker_config")


def log(level: int, message: str, fields: dict[str, str] | None = None) -> None:
    """``tasker_log``: a line in the worker's log stream (values of ``fields`` become strings)."""
    text = None if not fields else to_json({str(k): str(v) for k, v in fields.items()}, "the log fields")
    call("tasker_log", ctypes.c_int32(level), message, text)


def _clamp_ms(timeout_ms: int) -> int:
    if timeout_ms < 0:
        raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms}")
    return min(int(timeout_ms), 2**31 - 1)


# ---- the orchestration client (tasker_client_*) --------------------------------------------------


def _text_argument(value: Any, name: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}")
    return value.encode("utf-8")


def client(function: str, *arguments: Any) -> Any:
    """Calls ``tasker_client_<function>(arguments…, char **out)``: str arguments are UTF-8 encoded,
    None stays NULL; answers the API's JSON (decoded). Raises TaskerWorkerError (status
    ERR_CLIENT for the API's refusal or no answer)."""
    encoded = [a.encode("utf-8") if isinstance(a, str) else a for a in arguments]
    return call_json_out(f"tasker_client_{function}", *encoded)


def client_create_task(request: dict[str, Any]) -> Any:
    return client("create_task", to_json(request, "the task request"))


def client_list_tasks(limit: int, offset: int, namespace: str | None, status: str | None) -> Any:
    for name, value in (("limit", limit), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{name} must be an int, got {type(value).__name__}")
        if not -2**31 <= value < 2**31:
            raise ValueError(f"{name} is out of range: {value}")
    return client("list_tasks", ctypes.c_int32(limit), ctypes.c_int32(offset),
                  None if namespace is None else _text_argument(namespace, "namespace"),
                  None if status is None else _text_argument(status, "status"))


def client_uuid_call(function: str, *uuids: Any) -> Any:
    """A client call whose arguments are uuid strings (task, then step)."""
    names = ("task_uuid", "step_uuid")
    return client(function, *(_text_argument(value, names[i]) for i, value in enumerate(uuids)))
