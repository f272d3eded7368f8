"""Test host: tasker-py's worker (PyPI tasker-py 0.1.8 unchanged) running the handler classes of
TASKER_HOST_HANDLER_PACKAGES, whose orchestration client (``worker.orchestration_client`` of the merged
configuration in TASKER_CONFIG_PATH) points at our orchestration's REST API. With CLIENT_HOST_CORE=swift
tasker-py runs on our module (tasker_worker_swift._tasker_core, the Swift worker's C ABI) in place of
its compiled core, so the client calls go through our ``tasker_client_*``; else upstream's core.
A call ``TaskerClient.<method>`` runs tasker-py's own high-level client (tasker_core.client) and
answers its dataclasses as dicts. Writes ``READY`` once
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
    """Runs one requested client function of tasker-py's core, or a method of its TaskerClient."""
    import dataclasses

    from tasker_core import _tasker_core
    from tasker_core.client import TaskerClient

    request = json.loads(line)
    name = str(request.get("call"))
    try:
        if name.startswith("TaskerClient."):
            method = name.split(".", 1)[1]
            if method.startswith("_") or not hasattr(TaskerClient, method):
                return {"error": f"not a TaskerClient method: {method!r}"}
            answer = getattr(TaskerClient(initiator="pytest"), method)(*request.get("args", []), **request.get("kwargs", {}))
            plain = lambda v: dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v  # noqa: E731
            return {"ok": [plain(v) for v in answer] if isinstance(answer, list) else plain(answer)}
        if name not in CALLS:
            return {"error": f"not a client function: {name!r}"}
        return {"ok": getattr(_tasker_core, name)(*request.get("args", []))}
    except Exception as error:  # the client's errors are the answer under test
        return {"error": f"{type(error).__name__}: {error}"}


def main() -> int:
    if os.environ.get("CLIENT_HOST_CORE") == "swift":
        import tasker_worker_swift

        tasker_worker_swift.install_as_tasker_core()
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
