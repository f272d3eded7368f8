# frozen_string_literal: true

require "test_helper"
require "minitest/mock"
require "fileutils"

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

  def require_output(env, lib: File.join(TaskerTest::RUBY_ROOT, "lib"))
    script = 'begin; require "tasker_core"; puts "LOADED"; rescue LoadError => e; puts "#{e.class}: #{e.message}"; end'
    IO.popen(env, [RbConfig.ruby, "-I", lib, "-e", script], chdir: TaskerTest::RUBY_ROOT, err: %i[child out], &:read)
  end

  def test_a_missing_library_is_a_load_error_naming_both_places
    # The gem's lib copied where the "checkout" has no .build: the library is found nowhere.
    Dir.mktmpdir("tasker-rb-nolib") do |dir|
      FileUtils.mkdir_p(File.join(dir, "bindings", "ruby"))
      FileUtils.cp_r(File.join(TaskerTest::RUBY_ROOT, "lib"), File.join(dir, "bindings", "ruby"))
      output = require_output({ "TASKER_WORKER_LIBRARY" => "" }, lib: File.join(dir, "bindings", "ruby", "lib"))
      assert_match(/\ALoadError: libTaskerWorkerFFI.so not found: set TASKER_WORKER_LIBRARY/, output)
      assert_includes output, File.join(dir, ".build", "debug", "libTaskerWorkerFFI.so")
      assert_includes output, File.join(dir, ".build", "release", "libTaskerWorkerFFI.so")
    end
    output = require_output({ "TASKER_WORKER_LIBRARY" => "/nonexistent/libTaskerWorkerFFI.so" })
    assert_match %r{LoadError: TASKER_WORKER_LIBRARY=/nonexistent/libTaskerWorkerFFI.so is not a file}, output
  end

  def test_a_library_without_the_worker_functions_is_a_load_error_naming_them
    # A real shared library that is not the worker's (Ruby's own libc): every tasker_* is missing.
    libc = Dir["/{usr/,}lib/x86_64-linux-gnu/libc.so.6", "/{usr/,}lib*/libc.so.6"].first
    skip "no libc.so.6 to load" unless libc # never on Debian 12 (the test runs there)
    output = require_output({ "TASKER_WORKER_LIBRARY" => libc })
    assert_match(/\ALoadError: #{Regexp.escape(libc)} is not a usable libTaskerWorkerFFI.so: it lacks tasker_last_error, /, output)
    assert_includes output, "tasker_poll_step_event"
    output = require_output({ "TASKER_WORKER_LIBRARY" => __FILE__ })
    assert_match(/\ALoadError: .*could not be loaded/, output)
  end

  def test_the_client_says_clearly_when_the_library_lacks_it
    # As with a library built before the tasker_client_* functions (they are attached only if present).
    TaskerCore::Native.stub(:client_function?, false) do
      error = assert_raises(TaskerCore::Errors::ClientUnavailableError) { TaskerCore::Client.health_check }
      assert_match(/has no tasker_client_health_check/, error.message)
    end
  end
end
