"""Test host: the embedded worker plus the py.* handlers (fixtures/handlers/py_handlers.py) on our
own API, in this process. Prints ``READY <bootstrap result JSON>`` once the worker serves; SIGTERM
drains and stops it (exit 0).

Environment: TASKER_HOST_CONFIG (JSON bootstrap configuration, default {}), TASKER_HOST_THREADS
(poll threads, default 4), TASKER_HOST_STOP_GRACE (Worker.stop_grace_seconds), TASKER_HOST_OTEL=1
(the OpenTelemetry SDK exports the handlers' spans), plus what the worker reads (DATABASE_URL,
TASKER_ENV, TELEMETRY_ENABLED, OTEL_*, …).
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures" / "handlers"))

import py_handlers  # noqa: E402

from tasker_worker_swift import Worker  # noqa: E402


def _telemetry() -> None:
    """With TASKER_HOST_OTEL=1, the OpenTelemetry SDK exports the handlers' spans over OTLP/HTTP to
    OTEL_EXPORTER_OTLP_ENDPOINT (each span as it ends), as a handler author would set it up."""
    if os.environ.get("TASKER_HOST_OTEL") != "1":
        return
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "python-handlers"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)


def main() -> int:
    _telemetry()
    worker = Worker(json.loads(os.environ.get("TASKER_HOST_CONFIG", "{}")),
                    threads=int(os.environ.get("TASKER_HOST_THREADS", "4")))
    if os.environ.get("TASKER_HOST_STOP_GRACE"):
        worker.stop_grace_seconds = float(os.environ["TASKER_HOST_STOP_GRACE"])
    py_handlers.register(worker)
    worker.run(on_start=lambda result: print("READY " + json.dumps(result), flush=True))
    print("STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
