"""Test host: upstream's own worker (PyPI tasker-py 0.1.8 unchanged) running the handler classes of
TASKER_HOST_HANDLER_PACKAGES, whose orchestration client (``worker.orchestration_client`` of the merged
configuration in TASKER_CONFIG_PATH) points at our orchestration's REST API. Writes ``READY`` once
started, then answers one call per stdin line: ``{"call": "client_get_task", "args": [...]}`` →
``RESULT {"ok": <answer>}`` or ``RESULT {"error": "<message>"}``. Stops at end of input.

The lines go to the file descriptor CLIENT_HOST_ANSWERS_FD (a pipe of the test), not to stdout:
tasker-py's core logs to stdout from threads of its own, and a log line written between an answer
and its newline made the answer unreadable."""

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures" / "handlers"))

CALLS = {
    "client_create_task", "client_get_task", "client_list_tasks", "client_cancel_task",
    "client_list_task_steps", "client_get_step", "client_get_step_audit_history", "client_health_check",
}


def answer(line: str) -> dict[str, Any]:
    """Runs one requested client function of tasker-py's compiled core."""
    from tasker_core import _tasker_core

    request = json.loads(line)
    if request.get("call") not in CALLS:
        return {"error": f"not a client function: {request.get('call')!r}"}
    try:
        return {"ok": getattr(_tasker_core, request["call"])(*request.get("args", []))}
    except Exception as error:  # the client's errors are the answer under test
        return {"error": f"{type(error).__name__}: {error}"}


def main() -> int:
    import tasker_core
    from tasker_core.types import BootstrapConfig

    packages = [p for p in os.environ.get("TASKER_HOST_HANDLER_PACKAGES", "").split(",") if p]
    worker = tasker_core.Worker.start(handler_packages=packages, config=BootstrapConfig(log_level="warn"))
    answers = os.fdopen(int(os.environ["CLIENT_HOST_ANSWERS_FD"]), "w", buffering=1)
    answers.write("READY " + worker.worker_id + "\n")
    for line in sys.stdin:
        if line.strip():
            answers.write("RESULT " + json.dumps(answer(line)) + "\n")
    worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
