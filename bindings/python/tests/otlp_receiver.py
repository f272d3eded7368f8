"""A real OTLP/HTTP trace receiver for the tests (issue #30): POST /v1/traces with a protobuf body
(`application/x-protobuf`, decoded with PyPI's opentelemetry-proto) or a JSON one (`application/json`,
OTLP's JSON mapping: hex ids), on a free loopback port, in a thread of the test process. It keeps every
span it received, flattened, and can be told to refuse requests (to test the exporter's retries)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    attributes: dict[str, Any] = field(hash=False)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def _json_value(value: dict[str, Any]) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_json_value(v) for v in value["arrayValue"].get("values", [])]
    return None


class OTLPReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests: list[str] = []   # the content types received, one per request
        self.refuse = 0                 # answer this many requests with 503 first
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                content_type = self.headers.get("Content-Type", "")
                with receiver._lock:
                    receiver.requests.append(content_type)
                    if receiver.refuse > 0:
                        receiver.refuse -= 1
                        self.send_response(503)
                        self.end_headers()
                        return
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                spans = receiver._decode(body, content_type)
                with receiver._lock:
                    receiver.spans.extend(spans)
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def _decode(body: bytes, content_type: str) -> list[ReceivedSpan]:
        out: list[ReceivedSpan] = []
        if content_type.startswith("application/json"):
            document = json.loads(body)
            for resource_spans in document.get("resourceSpans", []):
                attributes = {a["key"]: _json_value(a["value"]) for a in resource_spans.get("resource", {}).get("attributes", [])}
                for scope in resource_spans.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        out.append(ReceivedSpan(
                            str(attributes.get("service.name")), span["traceId"], span["spanId"], span.get("parentSpanId", ""),
                            span["name"], int(span.get("kind", 0)),
                            {a["key"]: _json_value(a["value"]) for a in span.get("attributes", [])}))
            return out
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            attributes = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    out.append(ReceivedSpan(
                        str(attributes.get("service.name")), span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(),
                        span.name, span.kind, {a.key: _value(a.value) for a in span.attributes}))
        return out

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    def wait_for(self, predicate, timeout: float = 60) -> list[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        while True:
            spans = self.received()
            if predicate(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError("the receiver did not get the expected spans; got:\n"
                                     + "\n".join(f"{s.service} {s.name} {s.trace_id} {s.span_id}<-{s.parent_span_id}" for s in spans))
            time.sleep(0.1)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
