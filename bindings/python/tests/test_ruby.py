"""The Ruby binding (bindings/ruby, Debian's ruby-ffi) runs its example handlers on the worker."""

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
