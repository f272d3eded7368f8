"""Test host: calls the C ABI the wrong way (bad JSON, unknown event ids, NULL pointers, calls
before bootstrap and after stop) and prints one JSON object: {case: {"status", "error"} or value}.
The assertions are in test_c_abi.py. Bootstraps from the environment (DATABASE_URL, …)."""

import ctypes
import json
import os
import sys
import uuid

from tasker_worker_swift import _library as lib
from tasker_worker_swift import _tasker_core as core

observed: dict = {}
L = lib.library()


def raw(case: str, function: str, *arguments) -> None:
    """Calls ``function`` and records its status and the thread's last error."""
    status = getattr(L, function)(*arguments)
    observed[case] = {"status": status, "error": lib.last_error()}


def out() -> ctypes.c_void_p:
    return ctypes.c_void_p()


def compat(case: str, fn, *arguments) -> None:
    """Calls a _tasker_core function; records its value or its exception type and message."""
    try:
        observed[case] = {"value": fn(*arguments)}
    except Exception as error:  # noqa: BLE001
        observed[case] = {"raised": type(error).__name__, "message": str(error)}


some_event = str(uuid.uuid4())
step_result = json.dumps({"step_uuid": str(uuid.uuid4()), "success": True, "result": {}})

# ---- before bootstrap ------------------------------------------------------------------------------
raw("before.poll", "tasker_poll_step_event", 0, ctypes.byref(out()))
raw("before.complete", "tasker_complete_step_event", some_event.encode(), step_result.encode())
raw("before.status", "tasker_worker_status", ctypes.byref(out()))
raw("before.metrics", "tasker_ffi_dispatch_metrics", ctypes.byref(out()))
running = ctypes.c_int32(7)
raw("before.is_running", "tasker_worker_is_running", ctypes.byref(running))
observed["before.is_running"]["value"] = running.value
stopped = out()
raw("before.stop", "tasker_worker_stop", ctypes.byref(stopped))
observed["before.stop"]["value"] = json.loads(ctypes.string_at(stopped.value).decode()) if stopped.value else None
raw("before.log", "tasker_log", lib.LOG_INFO, b"a line before bootstrap", None)
compat("compat.before.poll", core.poll_step_events)
compat("compat.before.is_running", core.is_worker_running)
compat("compat.before.status", core.get_worker_status)
compat("compat.before.stop", core.stop_worker)

# ---- bad arguments to bootstrap --------------------------------------------------------------------
raw("bootstrap.bad_json", "tasker_worker_bootstrap", b"{not json", ctypes.byref(out()))
raw("bootstrap.not_object", "tasker_worker_bootstrap", b"[1, 2]", ctypes.byref(out()))
raw("bootstrap.unknown_key", "tasker_worker_bootstrap", b'{"colour": "blue"}', ctypes.byref(out()))
raw("bootstrap.null_output", "tasker_worker_bootstrap", b"{}", None)
raw("bootstrap.bad_utf8", "tasker_worker_bootstrap", b'{"log_level": "\xff\xfe"}', ctypes.byref(out()))
compat("compat.bootstrap.unknown_key", core.bootstrap_worker, {"colour": "blue"})

# ---- running ---------------------------------------------------------------------------------------
started = out()
raw("bootstrap.ok", "tasker_worker_bootstrap", json.dumps(json.loads(os.environ.get("TASKER_HOST_CONFIG", "{}"))).encode(), ctypes.byref(started))
observed["bootstrap.ok"]["value"] = json.loads(ctypes.string_at(started.value).decode()) if started.value else None
raw("bootstrap.again", "tasker_worker_bootstrap", b"{}", ctypes.byref(out()))
compat("compat.bootstrap.again", core.bootstrap_worker, None)
raw("complete.unknown_event", "tasker_complete_step_event", some_event.encode(), step_result.encode())
raw("complete.bad_json", "tasker_complete_step_event", some_event.encode(), b'{"success": tru')
raw("complete.not_object", "tasker_complete_step_event", some_event.encode(), b'"done"')
raw("complete.null_event", "tasker_complete_step_event", None, step_result.encode())
checkpoint = json.dumps({"step_uuid": str(uuid.uuid4()), "cursor": 1, "items_processed": 1, "accumulated_results": None})
raw("checkpoint.unknown_event", "tasker_checkpoint_yield_step_event", some_event.encode(), checkpoint.encode())
raw("checkpoint.no_step_uuid", "tasker_checkpoint_yield_step_event", some_event.encode(), b'{"cursor": 1}')
raw("checkpoint.bad_json", "tasker_checkpoint_yield_step_event", some_event.encode(), b"{")
raw("poll.null_output", "tasker_poll_step_event", 0, None)
raw("log.bad_fields", "tasker_log", lib.LOG_INFO, b"a line", b"{oops")
raw("log.bad_level", "tasker_log", 42, b"a line", None)
compat("compat.complete.bad_event_id", core.complete_step_event, "not-a-uuid", {"success": True})
compat("compat.complete.unknown_event", core.complete_step_event, some_event, {"step_uuid": some_event, "success": True})
compat("compat.checkpoint.unknown_event", core.checkpoint_yield_step_event, some_event, json.loads(checkpoint))
compat("compat.complete.not_a_dict", core.complete_step_event, some_event, ["x"])
compat("compat.poll.running", core.poll_step_events)
compat("compat.poll.wait", core.poll_step_events, 50)
compat("compat.metrics", core.get_ffi_dispatch_metrics)
compat("compat.starvation", core.check_starvation_warnings)
compat("compat.cleanup", core.cleanup_timeouts)
compat("compat.in_process", core.poll_in_process_events)
compat("compat.health", core.get_health_check)
compat("compat.worker_metrics", core.get_metrics)
compat("compat.config", core.get_worker_config)
compat("compat.status", core.get_worker_status)
compat("compat.is_running", core.is_worker_running)
compat("compat.log", core.log_info, "hello from the ABI test", {"case": "log"})

# ---- after stop ------------------------------------------------------------------------------------
compat("compat.stop", core.stop_worker)
raw("after.poll", "tasker_poll_step_event", 0, ctypes.byref(out()))
raw("after.complete", "tasker_complete_step_event", some_event.encode(), step_result.encode())
raw("after.begin_shutdown", "tasker_worker_begin_shutdown", ctypes.byref(out()))
raw("after.health", "tasker_health", ctypes.byref(out()))
compat("compat.after.poll", core.poll_step_events)
compat("compat.after.shutdown", core.transition_to_graceful_shutdown)
compat("compat.after.stop", core.stop_worker)
compat("compat.after.is_running", core.is_worker_running)

print("RESULT " + json.dumps(observed, default=str), flush=True)
sys.exit(0)
