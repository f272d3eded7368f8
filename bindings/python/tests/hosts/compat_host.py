"""Test host: tasker-py's own SDK (its Worker: EventPoller, EventBridge, StepExecutionSubscriber,
HandlerRegistry) with our module in place of its compiled extension, running the handlers of
fixtures/handlers/compat_handlers.py (or of the modules in TASKER_HOST_HANDLER_PACKAGES).
Prints ``READY <worker id> <handler names>``; SIGTERM stops (exit 0)."""

import sys

import tasker_worker_swift
from tasker_py_host import serve

tasker_worker_swift.install_as_tasker_core()

if __name__ == "__main__":
    sys.exit(serve(default_packages="compat_handlers"))
