"""Hostile inputs: poison queue messages, malformed notifications and malformed task requests. Each
generator returns a list of (label, value); the faults send them and count what the server took."""
import json
import uuid

from .load import request_message


def _uuid():
    return str(uuid.uuid4())


def poison_bodies(rng, count, real_steps):
    """`count` message bodies (JSON text) for a step queue: every JSON type, wrong shapes, bad and
    unknown uuids, deep nesting, a large body, and replays of real steps (`real_steps`: (task, step)
    uuid pairs) — a step message delivered again must not run the step a second time."""
    fixed = [
        ("null", "null"), ("number", "42"), ("string", json.dumps("{not json")), ("true", "true"),
        ("empty array", "[]"), ("array", "[1, \"two\", null]"), ("empty object", "{}"),
        ("only task", json.dumps({"task_uuid": _uuid()})),
        ("bad uuids", json.dumps({"task_uuid": "x", "step_uuid": 5, "correlation_id": None})),
        ("wrong types", json.dumps({"task_uuid": [], "step_uuid": {}, "correlation_id": 1.5})),
        ("nested", "[" * 3000 + "]" * 3000),
        ("deep object", '{"a":' * 2000 + "1" + "}" * 2000),
        ("large", json.dumps({"task_uuid": _uuid(), "step_uuid": _uuid(), "correlation_id": _uuid(),
                              "padding": "x" * 300_000})),
        ("unicode", json.dumps({"task_uuid": "\u202e\u0000\ud7ff", "step_uuid": "☃" * 50})),
        ("huge number", '{"task_uuid": 1e400, "step_uuid": -0, "correlation_id": 123456789012345678901234567890}'),
    ]
    bodies = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            bodies.append(fixed[(i // 4) % len(fixed)])
        elif kind == 1:
            bodies.append(("unknown uuids", json.dumps(
                {"task_uuid": _uuid(), "step_uuid": _uuid(), "correlation_id": _uuid()})))
        elif kind == 2 and real_steps:
            task, step = rng.choice(real_steps)
            bodies.append(("replay", json.dumps({"task_uuid": task, "step_uuid": step, "correlation_id": _uuid()})))
        elif kind == 2:
            bodies.append(fixed[i % len(fixed)])
        else:
            task, _ = rng.choice(real_steps) if real_steps else (_uuid(), None)
            bodies.append(("real task, unknown step", json.dumps(
                {"task_uuid": task, "step_uuid": _uuid(), "correlation_id": _uuid(), "extra": {"k": [1, 2]}})))
    return bodies


def malformed_notifications(rng, count):
    """Payloads for pgmq_message_ready.<ns> (at most 7,999 bytes each, as pg_notify allows)."""
    queue = "worker_examples_queue"
    fixed = [
        "", "not json", "{", "[]", "null", "{}", json.dumps({"event_type": "message_ready"}),
        json.dumps({"event_type": "message_ready", "queue_name": queue}),
        json.dumps({"event_type": "message_ready", "queue_name": queue, "msg_id": -1}),
        json.dumps({"event_type": "message_ready", "queue_name": queue, "msg_id": "12"}),
        json.dumps({"event_type": "message_ready", "queue_name": queue, "msg_id": 9223372036854775807}),
        '{"event_type": "message_ready", "queue_name": "worker_examples_queue", "msg_id": 1e400}',
        json.dumps({"event_type": "message_ready", "queue_name": "orchestration_step_results", "msg_id": 1}),
        json.dumps({"event_type": "message_ready", "queue_name": "pgmq.q_worker_examples_queue; DROP", "msg_id": 1}),
        json.dumps({"event_type": "batch_ready", "queue_name": queue}),
        json.dumps({"event_type": "batch_ready", "queue_name": queue, "msg_ids": list(range(1, 1000))}),
        json.dumps({"event_type": "batch_ready", "queue_name": queue, "msg_ids": ["a", None, {}, -5]}),
        json.dumps({"event_type": "message_with_payload", "queue_name": queue, "msg_id": 1,
                    "message": {"task_uuid": _uuid(), "step_uuid": _uuid(), "correlation_id": _uuid()}}),
        json.dumps({"event_type": "message_with_payload", "queue_name": queue, "msg_id": 2, "message": "x" * 7000}),
        json.dumps({"event_type": "queue_created", "queue_name": "worker_nobody_queue"}),
        json.dumps({"event_type": "unknown", "queue_name": queue, "msg_id": 1}),
        "[" * 3990 + "]" * 3990,
        "\u2603" * 2000,
    ]
    return [("fixed", fixed[i % len(fixed)]) if i < len(fixed) or i % 2 else
            ("random ids", json.dumps({"event_type": "message_ready", "queue_name": queue,
                                       "msg_id": rng.randint(1, 10**12)}))
            for i in range(count)]


def malformed_task_requests(rng, count):
    """Bodies for orchestration_task_requests that must not create a task (none of them names a
    registered template with a valid request; `chaos_malformed` marks the contexts)."""
    good = request_message("examples", "linear_workflow", {"number": 3, "chaos_malformed": True})
    variants = []
    for i in range(count):
        r = json.loads(json.dumps(good))
        r["request_id"] = str(uuid.uuid4())
        t = r["task_request"]
        k = i % 12
        if k == 0:
            del r["task_request"]
        elif k == 1:
            del t["namespace"]
        elif k == 2:
            t["name"] = 12
        elif k == 3:
            t["name"] = "no_such_workflow"
        elif k == 4:
            t["version"] = "9.9.9"
        elif k == 5:
            t["namespace"] = "nobody"
        elif k == 6:
            r["request_id"] = "not-a-uuid"
        elif k == 7:
            t["correlation_id"] = "not-a-uuid"
        elif k == 8:
            r["task_request"] = "linear_workflow"
        elif k == 9:
            t["tags"] = "not-a-list"
        elif k == 10:
            t["priority"] = "high"
        else:
            t["name"] = "x" * 100_000
        variants.append((f"variant {k}", json.dumps(r)))
    return variants
