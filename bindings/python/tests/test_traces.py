"""Issue #30 item 2: one trace per task. The task API request, the orchestration's task
initialization and step enqueues and its processing of each result (``tasker-dev orchestrate``), the
worker's step spans for a Swift step and a Python step (the embedded worker of tests/hosts/python_host.py),
and the Python handler's own OpenTelemetry span all reach a real OTLP/HTTP receiver in one trace, with
the parent links the W3C ``traceparent`` in the step messages and the FFI step event makes."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from conftest import Cluster, Database, Tools, free_port
from otlp_receiver import OTLPReceiver, ReceivedSpan


def _telemetry(receiver: OTLPReceiver, encoding: str = "http/protobuf") -> dict[str, str]:
    return {"TELEMETRY_ENABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": encoding, "OTEL_BSP_SCHEDULE_DELAY": "200"}


def _start_orchestration(world: Cluster, env: dict[str, str]) -> str:
    port = free_port()
    config = world.directory / "orchestration.toml"
    config.write_text(f'[common.database]\nurl = "{world.db.url}"\n[orchestration.web]\nbind_address = "127.0.0.1:{port}"\n')
    orchestration = world.start("orchestration", [str(world.tools.dev_binary), "orchestrate"], {"TASKER_CONFIG_PATH": str(config), **env})
    orchestration.wait_for_http(f"http://127.0.0.1:{port}/health")
    return f"127.0.0.1:{port}"


def _create_task(address: str, name: str, context: dict) -> str:
    body = json.dumps({"namespace": "python_tests", "name": name, "version": "1.0.0", "context": context,
                       "initiator": "test_traces", "source_system": "pytest", "reason": "issue #30"}).encode()
    request = urllib.request.Request(f"http://{address}/v1/tasks", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["task_uuid"]


def _one(spans: list[ReceivedSpan], name: str, **attributes: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name and all(s.attributes.get(k) == v for k, v in attributes.items())]
    assert len(found) == 1, f"{len(found)} spans {name} {attributes}: {[(s.name, s.attributes) for s in spans]}"
    return found[0]


def test_a_task_with_swift_and_python_steps_is_one_trace(tools: Tools, database: Database, tmp_path: Path) -> None:
    receiver = OTLPReceiver()
    world = Cluster(tools, database, tmp_path)
    try:
        env = _telemetry(receiver)
        address = _start_orchestration(world, env)
        world.start_python_host(env={**env, "TASKER_HOST_OTEL": "1"})
        task = _create_task(address, "py_traced", {"order": 7})
        assert world.wait_for_task(task) == "complete"
        python_result = world.db.result(task, "trace_python")["result"]
        assert python_result["traced"] is True

        def complete(spans: list[ReceivedSpan]) -> bool:
            names = [s.name for s in spans if s.attributes.get("tasker.task_uuid", task) == task]
            return (names.count("tasker.step") == 2 and names.count("tasker.step.result.process") == 2
                    and "py.handler.work" in names and names.count("tasker.step.result") == 2)
        spans = receiver.wait_for(complete)
        request = next(s for s in spans if s.kind == 2 and s.attributes.get("http.route") == "/v1/tasks")
        trace = request.trace_id
        mine = [s for s in spans if s.trace_id == trace]
        by_id = {s.span_id: s for s in mine}

        initialize = _one(mine, "tasker.task.initialize")
        assert initialize.parent_span_id == request.span_id and initialize.service == "tasker-orchestration"
        steps = {s.attributes["tasker.step_name"]: s for s in mine if s.name == "tasker.step"}
        assert set(steps) == {"trace_echo", "trace_python"}, [s.name for s in mine]
        for name, step in steps.items():
            assert step.service == "tasker-worker" and step.kind == 5, step   # consumer
            enqueue = by_id[step.parent_span_id]
            assert enqueue.name == "tasker.step.enqueue" and enqueue.kind == 4, enqueue   # producer
            assert enqueue.attributes["tasker.step_uuid"] == step.attributes["tasker.step_uuid"]
            for phase in ("tasker.step.claim", "tasker.step.handler", "tasker.step.result"):
                assert [s.parent_span_id for s in mine if s.name == phase and s.parent_span_id == step.span_id], (name, phase)
            processed = [s for s in mine if s.name == "tasker.step.result.process" and s.parent_span_id == step.span_id]
            assert len(processed) == 1, name
        # The first step was enqueued by the initialization, the second by the first result's processing.
        assert by_id[steps["trace_echo"].parent_span_id].parent_span_id == initialize.span_id
        first_result = next(s for s in mine if s.name == "tasker.step.result.process" and s.parent_span_id == steps["trace_echo"].span_id)
        assert by_id[steps["trace_python"].parent_span_id].parent_span_id == first_result.span_id
        # The Python handler's own span: a child of the worker's handler span, in the same trace.
        handler = next(s for s in mine if s.name == "tasker.step.handler" and s.parent_span_id == steps["trace_python"].span_id)
        work = _one(mine, "py.handler.work")
        assert work.parent_span_id == handler.span_id and work.service == "python-handlers", work
        assert work.attributes.get("order") == 7
        assert python_result["trace_id"] == trace
        assert handler.attributes.get("tasker.handler") == "py.traced"
        assert all(s.trace_id == trace for s in spans if s.attributes.get("tasker.task_uuid") == task)
        assert "application/x-protobuf" in receiver.requests
        # The exporter's own requests are not traced (they would feed back: a span per export).
        assert not [s for s in receiver.received() if s.kind == 3 and s.service.startswith("tasker-")], \
            [(s.service, s.name) for s in receiver.received() if s.kind == 3]
    finally:
        world.close()
        receiver.close()


def test_json_encoding_and_retries_after_refusals(tools: Tools, database: Database, tmp_path: Path) -> None:
    """OTEL_EXPORTER_OTLP_PROTOCOL=http/json, and a collector that refuses the first requests (503):
    the spans arrive once it accepts (the exporter retries with backoff)."""
    receiver = OTLPReceiver()
    receiver.refuse = 2
    world = Cluster(tools, database, tmp_path)
    try:
        address = _start_orchestration(world, _telemetry(receiver, "http/json"))
        world.start_python_host()
        task = _create_task(address, "py_chain", {"number": 2})
        assert world.wait_for_task(task) == "complete"
        spans = receiver.wait_for(lambda spans: any(s.name == "tasker.step.result.process" for s in spans))
        assert receiver.requests[:3] == ["application/json"] * 3, receiver.requests
        assert any(s.name == "tasker.task.initialize" and s.service == "tasker-orchestration" for s in spans)
    finally:
        world.close()
        receiver.close()
