"""Test host: upstream's own worker (PyPI tasker-py 0.1.8 unchanged: its compiled Rust tasker-worker,
its EventPoller, EventBridge, StepExecutionSubscriber and HandlerRegistry), running the handler
classes of the modules named in TASKER_HOST_HANDLER_PACKAGES. Configuration from TASKER_CONFIG_PATH
(one merged file) and the environment. Prints ``READY <worker id> <handler names>`` once its REST API
answers (the bootstrap returns before the server listens); SIGTERM stops (exit 0)."""

import os
import sys
import time
import urllib.request

from tasker_py_host import serve


def wait_for_rest(timeout: float = 60) -> None:
    """Until GET /health on TASKER_WEB_BIND_ADDRESS answers 200."""
    address = os.environ["TASKER_WEB_BIND_ADDRESS"]
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


if __name__ == "__main__":
    sys.exit(serve(when_started=wait_for_rest))
