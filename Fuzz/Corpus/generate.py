#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target (Fuzz/Corpus/<Target>/): valid inputs of every shape
the decoder takes, and the inputs that crashed or stalled a process in issue #26 (JSON nested 365,
400, 510, 600 and 5,000 levels; a NOTIFY payload with thousands of ids; malformed AMQP frames; a
YAML alias bomb; TOML with deeply nested inline tables). Run from anywhere; rewrites the files."""
import base64
import json
import os
import struct

ROOT = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(ROOT))
# 129 and 200: just over the limit (128), refused; 365–510 overflowed the 1 MiB stack; 600 and 5,000:
# refused by Foundation itself (≥ 512) but no cheaper.
DEPTHS = [129, 200, 365, 400, 510, 600, 5000]
TASK = "0190c3a4-7b6e-7f00-8000-0000000000aa"
STEP = "0190c3a4-7b6e-7f00-8000-0000000000bb"
CORR = "0190c3a4-7b6e-7f00-8000-0000000000cc"


def write(target, name, data):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def deep_array(n):
    return "[" * n + "]" * n


def deep_object(n):
    """Objects to 600 levels; deeper ones as arrays (the files stay small: libFuzzer's default -max_len
    is the largest seed)."""
    if n > 600:
        return deep_array(n)
    return '{"d":' * n + "1" + "}" * n


STEP_MESSAGE = json.dumps({"task_uuid": TASK, "step_uuid": STEP, "correlation_id": CORR})
RESULT = json.dumps({
    "step_uuid": STEP, "success": True, "result": {"total": 42, "items": [1, 2.5, "x", None, True]},
    "metadata": {"execution_time_ms": 12, "handler_version": None, "retryable": False,
                 "completed_at": "2026-12-01T15:00:00.000000Z", "worker_id": "worker_0190c3a4",
                 "worker_hostname": "host", "started_at": None, "custom": {}, "error_code": None,
                 "error_type": None, "context": {}},
    "status": "completed", "error": None, "orchestration_metadata": None})
FAILURE = json.dumps({
    "step_uuid": STEP, "success": False, "result": None,
    "metadata": {"execution_time_ms": 3, "retryable": True},
    "status": "failed", "error": {"message": "boom", "error_type": "handler_error", "retryable": True}})
CHECKPOINT = json.dumps({"step_uuid": STEP, "cursor": {"page": 3}, "items_processed": 300,
                         "accumulated_results": {"sum": 7}})


def queue_message():
    write("QueueMessage", "step-message.json", STEP_MESSAGE)
    write("QueueMessage", "empty-object.json", "{}")
    write("QueueMessage", "null.json", "null")
    for n in DEPTHS:
        write("QueueMessage", f"deep-array-{n}.json", deep_array(n))
        write("QueueMessage", f"deep-step-message-{n}.json",
              STEP_MESSAGE[:-1] + ', "extra": ' + deep_object(n) + "}")


def delivery_body():
    write("DeliveryBody", "step-message.json", STEP_MESSAGE)
    write("DeliveryBody", "result.json", RESULT)
    write("DeliveryBody", "not-json.txt", "task_uuid=1")
    for n in DEPTHS:
        write("DeliveryBody", f"deep-array-{n}.json", deep_array(n))


def queue_notification():
    q = "worker_fuzz_queue"
    write("QueueNotification", "message-ready.json",
          json.dumps({"event_type": "message_ready", "queue_name": q, "msg_id": 12, "namespace": "fuzz"}))
    write("QueueNotification", "message-with-payload.json",
          json.dumps({"event_type": "message_with_payload", "queue_name": q, "msg_id": 12,
                      "message": json.loads(STEP_MESSAGE), "namespace": "fuzz"}))
    write("QueueNotification", "queue-created.json",
          json.dumps({"event_type": "queue_created", "queue_name": q, "namespace": "fuzz"}))
    write("QueueNotification", "batch-ready.json",
          json.dumps({"event_type": "batch_ready", "queue_name": q, "msg_ids": [1, 2, 3], "namespace": "fuzz"}))
    # issue #26 item 5: 3,954 ids in one payload (under PostgreSQL's 8,000-byte NOTIFY limit).
    write("QueueNotification", "batch-ready-3954-ids.json",
          '{"event_type":"batch_ready","queue_name":"orchestration_step_results","msg_ids":['
          + ",".join(["1"] * 3954) + "]}")
    for n in DEPTHS:
        write("QueueNotification", f"deep-message-{n}.json",
              '{"event_type":"message_with_payload","queue_name":"%s","msg_id":1,"message":%s}' % (q, deep_array(n)))


def jwt(header):
    """A compact JWS with `header`, an empty claims object and a placeholder signature."""
    encoded = base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=")
    return encoded + b".e30.c2ln"


def task_request():
    body = {"namespace": "examples", "name": "linear_workflow", "version": "1.0.0",
            "context": {"even_number": 6, "nested": {"list": [1, 2, {"a": None}]}},
            "initiator": "fuzz", "source_system": "fuzz", "reason": "seed", "tags": ["a"], "priority": 3,
            "correlation_id": CORR}
    write("TaskRequest", "body.json", b"\x00" + json.dumps(body).encode())
    write("TaskRequest", "body-minimal.json",
          b"\x00" + b'{"namespace":"n","name":"t","version":"1.0.0","context":{}}')
    write("TaskRequest", "queued.json",
          b"\x01" + json.dumps({"request_id": CORR, "task_request": body, "metadata": {}}).encode())
    write("TaskRequest", "query.txt", b"\x02page=2&per_page=50&namespace=examples&status=complete&initiator=x")
    write("TaskRequest", "query-bad.txt", b"\x02page=0&per_page=99999999999999999999&status=nope")
    # Bearer tokens: the header is decoded before the signature is checked.
    write("TaskRequest", "token.txt", b"\x03" + jwt({"alg": "HS256", "typ": "JWT"}))
    write("TaskRequest", "token-two-parts.txt", b"\x03" + jwt({"alg": "none"}).rsplit(b".", 1)[0])
    write("TaskRequest", "token-not-base64.txt", b"\x03%%%.e30.sig")
    for n in DEPTHS:
        write("TaskRequest", f"token-deep-header-{n}.txt",
              b"\x03" + base64.urlsafe_b64encode(('{"alg":"HS256","x":%s}' % deep_array(n)).encode()).rstrip(b"=")
              + b".e30.c2ln")
    for n in DEPTHS:
        write("TaskRequest", f"body-deep-context-{n}.json",
              b"\x00" + ('{"namespace":"n","name":"t","version":"1.0.0","context":{"d":%s}}' % deep_array(n)).encode())
        write("TaskRequest", f"queued-deep-context-{n}.json",
              b"\x01" + ('{"task_request":{"namespace":"n","name":"t","version":"1.0.0","context":%s}}'
                         % deep_object(n)).encode())


def step_result():
    write("StepResult", "success.json", RESULT)
    write("StepResult", "failure.json", FAILURE)
    for n in DEPTHS:
        write("StepResult", f"deep-result-{n}.json", RESULT.replace('{"total": 42', '{"d": %s, "total": 42' % deep_array(n), 1))


def foreign_result():
    write("ForeignResult", "complete.json", b"\x00" + RESULT.encode())
    write("ForeignResult", "complete-failure.json", b"\x00" + FAILURE.encode())
    write("ForeignResult", "checkpoint.json", b"\x01" + CHECKPOINT.encode())
    for n in DEPTHS:
        write("ForeignResult", f"complete-deep-{n}.json",
              b"\x00" + RESULT.replace('{"total": 42', '{"d": %s, "total": 42' % deep_array(n), 1).encode())
        write("ForeignResult", f"checkpoint-deep-{n}.json",
              b"\x01" + CHECKPOINT.replace('{"page": 3}', deep_object(n)).encode())
        write("ForeignResult", f"argument-deep-{n}.json", b"\x02" + ('{"d":%s}' % deep_array(n)).encode())
        write("ForeignResult", f"row-deep-{n}.json", b"\x03" + ('{"context":%s}' % deep_object(n)).encode())
    # C ABI arguments: an object, a non-object, bytes after a NUL (C reads up to it), invalid UTF-8.
    write("ForeignResult", "argument.json", b"\x02" + json.dumps({"even_number": 6, "tags": ["a"]}).encode())
    write("ForeignResult", "argument-array.json", b"\x02[1,2]")
    write("ForeignResult", "argument-nul.json", b'\x02{"a":1}\x00{"b":')
    write("ForeignResult", "argument-bad-utf8.json", b'\x02{"a":"\xff\xfe"}')
    # Stored rows as row_to_json gives them.
    write("ForeignResult", "row-task.json", b"\x03" + json.dumps({
        "task_uuid": TASK, "context": {"n": 1}, "tags": None, "priority": 0, "complete": False,
        "created_at": "2026-12-01T15:00:00.123456"}).encode())
    write("ForeignResult", "row-not-object.json", b'\x03"text"')
    # A task row, then (after a NUL) a step row.
    write("ForeignResult", "rows-task-and-step.json", b"\x03" + json.dumps({"task_uuid": TASK, "tags": {"a": [1]}}).encode()
          + b"\x00" + json.dumps({"workflow_step_uuid": TASK, "results": None, "retryable": True}).encode())
    write("ForeignResult", "rows-step-not-object.json", b"\x03{}\x00[]")


def frame(kind, channel, payload):
    return struct.pack(">BHI", kind, channel, len(payload)) + payload + b"\xce"


def shortstr(s):
    b = s.encode()
    return struct.pack(">B", len(b)) + b


def longstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">I", len(b)) + b


def table(entries):
    body = b""
    for key, tag, value in entries:
        body += shortstr(key) + tag + value
    return struct.pack(">I", len(body)) + body


def amqp_frames():
    start = frame(1, 0, struct.pack(">HHBB", 10, 10, 0, 9)
                  + table([("product", b"S", longstr("RabbitMQ")),
                           ("capabilities", b"F", table([("publisher_confirms", b"t", b"\x01")]))])
                  + longstr("PLAIN AMQPLAIN") + longstr("en_US"))
    tune = frame(1, 0, struct.pack(">HHHIH", 10, 30, 2047, 131072, 60))
    deliver = frame(1, 1, struct.pack(">HH", 60, 60) + shortstr("ctag") + struct.pack(">QB", 7, 0)
                    + shortstr("") + shortstr("worker_fuzz_queue"))
    body = STEP_MESSAGE.encode()
    # content header: class 60, weight 0, body size, flags: content-type (bit 15) + headers (bit 13)
    header = frame(2, 1, struct.pack(">HHQH", 60, 0, len(body), 0xA000) + shortstr("application/json")
                   + table([("x-death", b"A", struct.pack(">I", 0))]))
    heartbeat = frame(8, 0, b"")
    write("AMQPFrames", "handshake.bin", b"\x00" + start + tune)
    write("AMQPFrames", "delivery.bin", b"\x03" + deliver + header + frame(3, 1, body[:20]) + frame(3, 1, body[20:]) + heartbeat)
    write("AMQPFrames", "server-protocol-header.bin", b"\x00AMQP\x00\x00\x09\x01")
    bad_end = bytearray(tune)
    bad_end[-1] = 0x00
    write("AMQPFrames", "bad-frame-end.bin", b"\x00" + bytes(bad_end))
    write("AMQPFrames", "frame-too-large.bin", b"\x00" + struct.pack(">BHI", 1, 0, 0xFFFFFFF0) + b"\x00" * 16)
    write("AMQPFrames", "unknown-frame-type.bin", b"\x00" + frame(9, 0, b"xx"))
    # a field table nested 40 deep (each level an 'F' value holding the next table; the limit is 16)
    nested = b""
    for _ in range(40):
        nested = shortstr("t") + b"F" + struct.pack(">I", len(nested)) + nested
    write("AMQPFrames", "deep-field-table.bin", b"\x01" + frame(1, 0, struct.pack(">HHBB", 10, 10, 0, 9)
                                                             + struct.pack(">I", len(nested)) + nested
                                                             + longstr("PLAIN") + longstr("en_US")))
    write("AMQPFrames", "body-without-header.bin", b"\x02" + frame(3, 1, b"abc"))
    write("AMQPFrames", "oversize-body.bin", b"\x04" + deliver
          + frame(2, 1, struct.pack(">HHQH", 60, 0, 1 << 40, 0)) + frame(3, 1, b"x" * 100))


def orchestration_answer():
    task = {"task_uuid": TASK, "name": "t", "namespace": "ns", "version": "1.0.0", "status": "complete"}
    write("OrchestrationAnswer", "task.json", json.dumps(task))
    failed = {"step_uuid": STEP, "name": "s", "current_state": "error", "results": None}
    result = {"success": False, "status": "failed", "error": {"message": "'price'", "error_type": "handler_error"},
              "metadata": {"custom": {"exception_type": "KeyError", "traceback": "Traceback (most recent call last):\n"}}}
    write("OrchestrationAnswer", "failed-result.json", json.dumps(result))
    write("OrchestrationAnswer", "steps.json", json.dumps([failed, {**failed, "results": result}, result]))
    write("OrchestrationAnswer", "error.json", json.dumps({"error": {"code": "not_found", "message": "no task\u001b[2J"}}))
    write("OrchestrationAnswer", "long-error.json", json.dumps({"message": "x" * 5000}))
    write("OrchestrationAnswer", "not-json.html", "<html><body>502 Bad Gateway</body></html>")
    for n in DEPTHS:
        write("OrchestrationAnswer", f"deep-array-{n}.json", deep_array(n))


def worker_config():
    with open(os.path.join(REPO, "config/tasker/base/worker.toml"), "rb") as f:
        write("WorkerConfig", "base-worker.toml", f.read())
    write("WorkerConfig", "minimal.toml", '[worker]\nworker_id = "${TASKER_FUZZ_SET}"\n')
    write("WorkerConfig", "deep-inline-tables.toml", "a = " + "{b = " * 2000 + "1" + "}" * 2000 + "\n")
    write("WorkerConfig", "deep-arrays.toml", "a = " + "[" * 2000 + "]" * 2000 + "\n")
    write("WorkerConfig", "bad-header.toml", "[[[a]]\n")
    write("WorkerConfig", "bad-time.toml", "a = 1979-05-27Tx7:32:00\n")


def template_yaml():
    with open(os.path.join(REPO, "config/tasks/examples/linear_workflow.yaml"), "rb") as f:
        write("TemplateYAML", "linear-workflow.yaml", f.read())
    with open(os.path.join(REPO, "config/tasks/examples/diamond_workflow.yaml"), "rb") as f:
        write("TemplateYAML", "diamond-workflow.yaml", f.read())
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i-1}"] * 9) + "]")
    write("TemplateYAML", "alias-bomb.yaml", "\n".join(lines) + "\n")
    write("TemplateYAML", "deep-flow.yaml", "name: " + "[" * 5000 + "]" * 5000 + "\n")
    write("TemplateYAML", "deep-block.yaml", "".join("  " * i + "k:\n" for i in range(100)) + "  " * 100 + "v\n")


def trace_parent():
    ids = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"
    write("TraceParent", "valid-sampled.txt", f"00-{ids}-01")
    write("TraceParent", "valid-unsampled.txt", f"00-{ids}-00")
    write("TraceParent", "future-version.txt", f"01-{ids}-01-extra-field")
    write("TraceParent", "version-ff.txt", f"ff-{ids}-01")
    write("TraceParent", "version-00-longer.txt", f"00-{ids}-01-")
    write("TraceParent", "zero-trace.txt", "00-00000000000000000000000000000000-00f067aa0ba902b7-01")
    write("TraceParent", "zero-span.txt", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01")
    write("TraceParent", "uppercase.txt", f"00-{ids.upper()}-01")
    write("TraceParent", "too-long.txt", f"01-{ids}-01-" + "x" * 600)
    write("TraceParent", "empty.txt", "")


for generate in (queue_message, delivery_body, queue_notification, task_request, step_result, foreign_result,
                 orchestration_answer, amqp_frames, worker_config, template_yaml, trace_parent):
    generate()
