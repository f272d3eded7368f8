#!/usr/bin/env python3
"""A no-op Python step handler serving the bench queue, for the `ffi` phase of scripts/bench.

  --impl ours      this repository's Python package (`tasker_worker_swift`): the Swift worker embedded
                   in this process, the handler on its FFI dispatch channel, `--threads` poll threads
                   (waiting polls, no sleep loop)
  --impl upstream  PyPI tasker-py 0.1.8: upstream's compiled Rust worker embedded in this process, its
                   own Worker (EventPoller, EventBridge, StepExecutionSubscriber), the handler a
                   StepHandler subclass registered by callable name

Both take the run's settings from the environment (TASKER_CONFIG_PATH, DATABASE_URL,
TASKER_TEMPLATE_PATH, TASKER_WEB_BIND_ADDRESS, TASKER_WORKER_GRPC_BIND_ADDRESS), serve until SIGTERM,
then stop gracefully. The handler does nothing and returns {"ok": true}.
"""
import argparse
import json
import signal
import sys
import threading

CALLABLE = "bench.python_noop"


def run_ours(threads, metrics_out):
    from tasker_worker_swift import Worker, _tasker_core, success

    worker = Worker({}, threads=threads)

    @worker.handler(CALLABLE)
    def noop(context):
        return success({"ok": True})

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    worker.start()
    try:
        stop.wait()
        if metrics_out:   # the channel's figures (wake-up latency after a claim) before it stops
            with open(metrics_out, "w") as f:
                json.dump(_tasker_core.get_ffi_dispatch_metrics(), f)
    finally:
        worker.stop()     # drains: running handlers finish, results are stored


def run_upstream():
    from tasker_core import Worker
    from tasker_core.handler import HandlerRegistry
    from tasker_core.step_handler import StepHandler
    from tasker_core.types import StepHandlerResult

    class PythonNoop(StepHandler):
        handler_name = CALLABLE

        def call(self, context):
            return StepHandlerResult.success({"ok": True})

    HandlerRegistry.instance().register(CALLABLE, PythonNoop)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    worker = Worker.start()
    try:
        stop.wait()
    finally:
        worker.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", choices=("ours", "upstream"), required=True)
    p.add_argument("--threads", type=int, default=16, help="poll threads (ours)")
    p.add_argument("--metrics-out", help="ours: write the FFI dispatch metrics here at SIGTERM")
    a = p.parse_args()
    if a.impl == "ours":
        run_ours(a.threads, a.metrics_out)
    else:
        run_upstream()
    return 0


if __name__ == "__main__":
    sys.exit(main())
