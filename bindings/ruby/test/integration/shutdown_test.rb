# frozen_string_literal: true

require "test_helper"

# Stopping a host: with a handler that never returns, with SIGTERM sent twice, and with SIGTERM
# during bootstrap. Each host has its own template namespace (fixtures/templates/stuck).
class ShutdownTest < Minitest::Test
  Api = TaskerTest::Api

  def setup
    TaskerTest.require_integration!(self)
  end

  def test_sigterm_twice_with_a_handler_that_never_returns_still_stops
    stuck = TaskerTest::Host.new("stuck-host", templates: "stuck", concurrency: 1, stop_grace: 1)
    begin
      stuck.wait_for_line("READY")
      task = Api.submit("ruby_stuck", {}, namespace: "ruby_sdk_stuck")
      stuck.wait_for_line("STARTED stuck_forever")
      # The worker settles the step (completion timeout or drain deadline) and stops; the stuck
      # Ruby thread is left behind instead of holding the process forever. The second SIGTERM,
      # during the drain, changes nothing.
      assert_equal 0, stuck.terminate(times: 2), stuck.tail
      assert_includes stuck.lines, "STOPPED"
      assert stuck.lines.any? { |line| line.include?("still running (left behind)") }, stuck.tail
      stored = Api.result(task, "stuck_forever")
      assert_equal ["handler_timeout", true], [stored["error"]["error_type"], stored["metadata"]["retryable"]]
    ensure
      stuck.kill
    end
  end

  def test_sigterm_during_bootstrap_stops_cleanly
    host = TaskerTest::Host.new("bootstrap-host", templates: "stuck")
    begin
      host.wait_for_line("BOOTSTRAPPING")
      # Signal handlers are in place: whether the bootstrap is still running or just done, the
      # worker comes up, drains and stops, exiting 0.
      assert_equal 0, host.terminate, host.tail
      assert_includes host.lines, "STOPPED"
    ensure
      host.kill
    end
  end
end
