"""The Ruby SDK (bindings/ruby, TaskerCore over Debian's ruby-ffi) runs its README example and test hosts on the worker."""

from __future__ import annotations

from conftest import HOSTS, REPO, Cluster


def test_the_ruby_example_handlers_complete_a_task(cluster: Cluster) -> None:
    host = cluster.start("ruby-host", ["ruby", "-I", str(REPO / "bindings/ruby/lib"), str(REPO / "bindings/ruby/examples/worker.rb")])
    host.wait_for_line("READY")
    task = cluster.submit("ruby_greeting", {"name": "Ada"})
    assert cluster.wait_for_task(task) == "complete"
    assert cluster.db.result(task, "ruby_greet")["result"] == {"greeting": "Hello, Ada"}
    assert cluster.db.result(task, "ruby_shout")["result"] == {"greeting": "HELLO, ADA!", "language": "ruby"}
    assert host.terminate() == 0, host.log_tail()
    assert "STOPPED" in host.lines


def test_the_library_stays_loaded_when_ruby_unloads_it_after_stop(cluster: Cluster) -> None:
    # Ruby's ffi loads lazily and dlcloses at exit; unpinned, the worker's threads ran unmapped code.
    host = cluster.start("ruby-unload", ["ruby", "-I", str(REPO / "bindings/ruby/lib"), str(HOSTS / "ruby_unload_host.rb")])
    assert host.wait_for_line("MAPPED") == "MAPPED true", host.log_tail()
    assert host.process.wait(timeout=60) == 0, host.log_tail()   # it exits by itself (no SIGTERM race)


def test_deep_ruby_results_fail_their_steps_for_good_and_the_poll_thread_lives_on(cluster: Cluster) -> None:
    """Issue #26: a result Ruby cannot write (nested past its max_nesting) or the worker refuses
    (past 128 levels, or past the 120 a result may bring in) fails its step for good; the one poll
    thread survives every one of them and runs the greeting afterwards."""
    host = cluster.start("ruby-deep", ["ruby", "-I", str(REPO / "bindings/ruby/lib"), str(HOSTS / "ruby_deep_host.rb")])
    host.wait_for_line("READY")
    expected = {5000: "handler_error", 300: "handler_error", 140: "handler_error", 125: "result_not_storable"}
    tasks = {depth: cluster.submit("ruby_deep", {"depth": depth}) for depth in expected}
    for depth, task in tasks.items():
        assert cluster.wait_for_task(task) == "error", depth
        stored = cluster.db.result(task, "ruby_deep_result")
        assert stored["success"] is False and stored["metadata"]["retryable"] is False, (depth, stored)
        assert stored["error"]["error_type"] == expected[depth], (depth, stored)
    assert "nested more than 128 levels" in cluster.db.result(tasks[140], "ruby_deep_result")["error"]["message"]
    greeting = cluster.submit("ruby_greeting", {"name": "Ada"})
    assert cluster.wait_for_task(greeting) == "complete"
    assert host.terminate() == 0, host.log_tail()
