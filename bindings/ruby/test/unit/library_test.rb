# frozen_string_literal: true

require "test_helper"
require "minitest/mock"

# Library loading and the calls that need no running worker.
class LibraryTest < Minitest::Test
  def test_loads_the_library_and_reports_its_version
    assert_match(/\A\d+\.\d+\.\d+/, TaskerCore::FFI.library_version)
    assert File.file?(TaskerCore::FFI.library_path)
    refute TaskerCore::FFI.worker_running?
  end

  def test_calls_without_a_worker_fail_with_not_running
    error = assert_raises(TaskerCore::Errors::FFIError) { TaskerCore::FFI.poll_step_events(0) }
    assert_equal TaskerCore::FFI::ERR_NOT_RUNNING, error.status
    assert_match(/tasker_poll_step_event/, error.message)
  end

  def test_a_missing_library_is_a_load_error_naming_both_places
    script = 'begin; require "tasker_core"; rescue LoadError => e; puts e.message; end'
    output = IO.popen({ "TASKER_WORKER_LIBRARY" => "" }, [RbConfig.ruby, "-I", File.join(TaskerTest::RUBY_ROOT, "lib"), "-e", script],
                      chdir: TaskerTest::RUBY_ROOT, &:read)
    # In a checkout with a build the library is found; otherwise the message names both places.
    assert(output.empty? || (output.include?("TASKER_WORKER_LIBRARY") && output.include?(".build/debug")), output)
    output = IO.popen({ "TASKER_WORKER_LIBRARY" => "/nonexistent/libTaskerWorkerFFI.so" },
                      [RbConfig.ruby, "-I", File.join(TaskerTest::RUBY_ROOT, "lib"), "-e", script], &:read)
    assert_match %r{TASKER_WORKER_LIBRARY=/nonexistent/libTaskerWorkerFFI.so is not a file}, output
  end

  def test_the_client_says_clearly_when_the_library_lacks_it
    # As with a library built before the tasker_client_* functions (they are attached only if present).
    TaskerCore::Native.stub(:client_function?, false) do
      error = assert_raises(TaskerCore::Errors::ClientUnavailableError) { TaskerCore::Client.health_check }
      assert_match(/has no tasker_client_health_check/, error.message)
    end
  end
end
