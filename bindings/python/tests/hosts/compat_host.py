"""Test host: tasker-py's own SDK (its Worker: EventPoller, EventBridge, StepExecutionSubscriber,
HandlerRegistry) with our module in place of its compiled extension, running the handlers of
fixtures/handlers/compat_handlers.py. Prints ``READY <worker id>``; SIGTERM stops (exit 0)."""

import os
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures" / "handlers"))

import tasker_worker_swift  # noqa: E402

tasker_worker_swift.install_as_tasker_core()

import tasker_core  # noqa: E402  (tasker-py, unchanged)
from tasker_core.types import BootstrapConfig  # noqa: E402


def main() -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    packages = [p for p in os.environ.get("TASKER_HOST_HANDLER_PACKAGES", "compat_handlers").split(",") if p]
    worker = tasker_core.Worker.start(handler_packages=packages, config=BootstrapConfig(log_level="warn"))
    registry = tasker_core.HandlerRegistry.instance()
    print("READY " + worker.worker_id + " " + ",".join(sorted(registry.list_handlers())), flush=True)
    while not stop.wait(0.2):
        pass
    worker.stop()
    print("STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
