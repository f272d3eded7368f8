"""A template's handler.method and handler.resolver on our Python API (issue #28 item 4): the step
event carries them, the named entry point runs (a function registered for the method, or the
method of a registered object), and a missing method or an unknown resolver fails for good,
saying which."""

from __future__ import annotations

from conftest import Cluster


def test_the_templates_method_runs_and_a_missing_one_fails_for_good(cluster: Cluster) -> None:
    host = cluster.start_python_host()
    task = cluster.submit("py_method", {"amount": 12})
    assert cluster.wait_for_task(task) == "error"   # the three failing steps
    result = lambda step: cluster.db.result(task, step)  # noqa: E731
    assert result("fn_charge")["result"] == {"did": "charge", "method": "call"}
    assert result("fn_refund")["result"] == {"did": "refund", "method": "refund", "reason": "duplicate"}
    assert result("obj_charge")["result"] == {"did": "charge", "by": "object"}
    assert result("obj_void")["result"] == {"did": "void", "by": "object", "amount": 12}

    missing = result("fn_missing")
    assert missing["success"] is False and missing["metadata"]["retryable"] is False
    assert missing["error"]["error_type"] == "method_not_found"
    assert missing["error"]["message"] == (
        "handler py.payments.functions has no method 'void' (the template's handler.method); its methods: call, refund")
    object_missing = result("obj_missing")
    assert object_missing["error"]["error_type"] == "method_not_found"
    assert "has no method 'refund'" in object_missing["error"]["message"] and "call, void" in object_missing["error"]["message"]

    unknown = result("unknown_resolver")
    assert unknown["error"]["error_type"] == "handler_not_found" and unknown["metadata"]["retryable"] is False
    assert "handler.resolver 'class_lookup'" in unknown["error"]["message"]
    # Each failure is permanent: one attempt each, no retry.
    for step in ("fn_missing", "obj_missing", "unknown_resolver"):
        assert cluster.db.step_states(task)[step] == "error", step
    assert host.terminate() == 0, host.log_tail()
