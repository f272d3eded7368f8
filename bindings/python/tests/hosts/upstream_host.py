"""Test host: upstream's own worker (PyPI tasker-py 0.1.8 unchanged: its compiled Rust tasker-worker,
its EventPoller, EventBridge, StepExecutionSubscriber and HandlerRegistry), running the handler
classes of the modules named in TASKER_HOST_HANDLER_PACKAGES (comma-separated, importable from
fixtures/handlers). Configuration from TASKER_CONFIG_PATH (one merged file) and the environment.
Prints ``READY <worker id> <handler names>`` once its REST API answers; SIGTERM stops (exit 0)."""

import os
import signal
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures" / "handlers"))

import tasker_core  # noqa: E402  (tasker-py, unchanged: upstream's worker)
from tasker_core.types import BootstrapConfig  # noqa: E402


def wait_for_rest(address: str, timeout: float = 60) -> None:
    """Until GET /health on ``address`` answers 200 (the bootstrap returns before the server listens)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://{address}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"upstream worker's REST API on {address} did not answer within {timeout} s")
        time.sleep(0.1)


def main() -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    packages = [p for p in os.environ.get("TASKER_HOST_HANDLER_PACKAGES", "").split(",") if p]
    level = os.environ.get("TASKER_HOST_LOG_LEVEL", "warn")
    worker = tasker_core.Worker.start(handler_packages=packages, config=BootstrapConfig(log_level=level))
    wait_for_rest(os.environ["TASKER_WEB_BIND_ADDRESS"])
    registry = tasker_core.HandlerRegistry.instance()
    print("READY " + worker.worker_id + " " + ",".join(sorted(registry.list_handlers())), flush=True)
    while not stop.wait(0.2):
        pass
    worker.stop()
    print("STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
