"""The serving loop shared by the test hosts that run tasker-py's own SDK (its Worker: EventPoller,
EventBridge, StepExecutionSubscriber, HandlerRegistry): on upstream's compiled core
(upstream_host.py) or on ours in its place (compat_host.py). Handler classes come from the modules
named in TASKER_HOST_HANDLER_PACKAGES (comma-separated, importable from fixtures/handlers)."""

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures" / "handlers"))


def serve(default_packages: str = "", when_started: Callable[[], None] | None = None) -> int:
    """Starts tasker_core.Worker, runs ``when_started`` (e.g. waiting for its REST API), prints
    ``READY <worker id> <handler names>``; on SIGTERM stops it and prints ``STOPPED``."""
    import tasker_core
    from tasker_core.types import BootstrapConfig

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    packages = [p for p in os.environ.get("TASKER_HOST_HANDLER_PACKAGES", default_packages).split(",") if p]
    level = os.environ.get("TASKER_HOST_LOG_LEVEL", "warn")
    worker = tasker_core.Worker.start(handler_packages=packages, config=BootstrapConfig(log_level=level))
    if when_started:
        when_started()
    registry = tasker_core.HandlerRegistry.instance()
    print("READY " + worker.worker_id + " " + ",".join(sorted(registry.list_handlers())), flush=True)
    while not stop.wait(0.2):
        pass
    worker.stop()
    print("STOPPED", flush=True)
    return 0
