# frozen_string_literal: true

# Shared by the SDK's minitest suites. Unit tests need only the library; integration tests
# (test/integration) need a migrated database and our orchestration's REST API, which the pytest
# wrapper bindings/python/tests/test_ruby_sdk.py provides through the environment:
#   TASKER_TEST_ORCHESTRATION_URL  http://host:port of the orchestration
#   DATABASE_URL, TASKER_ENV, TASKER_WORKER_LIBRARY, ...  for the embedded workers

require "minitest/autorun"
require "json"
require "net/http"
require "securerandom"
require "tmpdir"
require "rbconfig"
require "tasker_core"

module TaskerTest
  RUBY_ROOT = File.expand_path("..", __dir__)
  REPO = File.expand_path("../../..", __dir__)
  TEMPLATES = File.join(__dir__, "fixtures", "templates")
  HOSTS = File.join(__dir__, "hosts")

  module_function

  # Skips the calling test unless the integration environment is there.
  def require_integration!(test)
    missing = %w[TASKER_TEST_ORCHESTRATION_URL DATABASE_URL].reject { |name| ENV[name] && !ENV[name].empty? }
    test.skip("integration environment missing (#{missing.join(', ')}): run through bindings/python/tests/test_ruby_sdk.py") unless missing.empty?
  end

  # Waits for the block to answer truthy (checked every 0.1 s); the deadline only stops a hang.
  def wait_until(what, timeout: 90)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      value = yield
      return value if value
      raise Minitest::Assertion, "timed out after #{timeout} s waiting for #{what}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.1
    end
  end

  # The pre-merged test configuration (config/tasker/generated/worker-test.toml) with `changes`
  # ({"section" => {"key" => toml_value_text}}) applied, written to a temporary file.
  def worker_config(changes)
    text = File.read(File.join(REPO, "config/tasker/generated/worker-test.toml"))
    changes.each do |section, values|
      header = "[#{section}]\n"
      start = text.index(header) or raise ArgumentError, "worker-test.toml has no [#{section}]"
      finish = text.index(/^\[/, start + header.size) || text.size
      body = text[start...finish]
      values.each do |key, value|
        body = body.match?(/^#{Regexp.escape(key)} = /) ? body.sub(/^#{Regexp.escape(key)} = .*$/, "#{key} = #{value}") : body.sub(header, "#{header}#{key} = #{value}\n")
      end
      text = text[0...start] + body + text[finish..]
    end
    path = File.join(Dir.mktmpdir("tasker-rb-config"), "worker.toml")
    File.write(path, text)
    path
  end

  # A child Ruby process running an embedded worker (one per process), whose stdout and stderr
  # lines are collected.
  class Host
    attr_reader :pid, :name

    # @param templates [String] the template directory under fixtures/templates it serves
    def initialize(name, templates:, config: {}, concurrency: 4, stop_grace: 10, script: File.join(HOSTS, "sdk_host.rb"))
      @name = name
      @lines = []
      @lock = Mutex.new
      @changed = ConditionVariable.new
      env = { "TASKER_TEMPLATE_PATH" => File.join(TEMPLATES, templates), "TASKER_HOST_CONFIG" => JSON.generate(config),
              "TASKER_HOST_CONCURRENCY" => concurrency.to_s, "TASKER_HOST_STOP_GRACE" => stop_grace.to_s }
      reader, writer = IO.pipe
      @pid = Process.spawn(env, RbConfig.ruby, "-I", File.join(RUBY_ROOT, "lib"), script,
                           chdir: REPO, in: File::NULL, out: writer, err: writer, pgroup: true)
      writer.close
      @reader = Thread.new { read(reader) }
    end

    def lines = @lock.synchronize { @lines.dup }
    def alive?
      return false if @status

      pid, status = Process.waitpid2(@pid, Process::WNOHANG)
      @status = status if pid
      @status.nil?
    end

    # The first line matching `pattern` (a String prefix or a Regexp); fails if the host exits first.
    def wait_for_line(pattern, timeout: 120)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      @lock.synchronize do
        loop do
          found = @lines.find { |line| pattern.is_a?(Regexp) ? line.match?(pattern) : line.start_with?(pattern) }
          return found if found
          raise Minitest::Assertion, "#{name} ended before printing #{pattern.inspect}\n#{tail}" if @eof

          remaining = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          raise Minitest::Assertion, "no #{pattern.inspect} from #{name} within #{timeout} s\n#{tail}" if remaining <= 0

          @changed.wait(@lock, remaining)
        end
      end
    end

    # SIGTERM (`times` times), then the exit status (SIGKILL after `timeout`).
    def terminate(timeout: 90, times: 1)
      return wait(timeout) unless alive?

      times.times { Process.kill("TERM", @pid) }
      wait(timeout)
    rescue Errno::ESRCH
      wait(timeout)
    end

    # Waits for the process to exit by itself.
    def wait(timeout = 90)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      until (@status ||= Process.waitpid2(@pid, Process::WNOHANG)&.last)
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          Process.kill("KILL", -@pid)
          @status = Process.waitpid2(@pid).last
          raise Minitest::Assertion, "#{name} did not exit within #{timeout} s\n#{tail}"
        end
        sleep 0.1
      end
      @reader.join(10)
      @status.exitstatus || (128 + @status.termsig.to_i)
    end

    def kill
      Process.kill("KILL", -@pid) if @status.nil?
      wait(30)
    rescue Errno::ESRCH, Minitest::Assertion
      nil
    end

    def tail(count = 60) = "--- last lines of #{name} ---\n#{lines.last(count).join("\n")}"

    private

    def read(reader)
      reader.each_line do |line|
        @lock.synchronize do
          @lines << line.chomp
          @changed.broadcast
        end
      end
    ensure
      @lock.synchronize do
        @eof = true
        @changed.broadcast
      end
    end
  end

  # The orchestration's REST API (TASKER_TEST_ORCHESTRATION_URL).
  module Api
    module_function

    def base = URI(ENV.fetch("TASKER_TEST_ORCHESTRATION_URL"))

    # Creates a task of `namespace/name` 1.0.0; answers its uuid. A nonce keeps identical
    # contexts distinct tasks.
    def submit(name, context = {}, namespace: "ruby_sdk")
      body = { "name" => name, "namespace" => namespace, "version" => "1.0.0",
               "context" => context.merge("nonce" => SecureRandom.uuid), "initiator" => "minitest",
               "source_system" => "tasker-rb-swift-tests", "reason" => "Ruby SDK test" }
      created = request(:post, "/v1/tasks", body)
      created.fetch("task_uuid")
    end

    def task(uuid) = request(:get, "/v1/tasks/#{uuid}")

    # {step name => step (results, current_state, attempts, ...)}.
    def steps(uuid) = request(:get, "/v1/tasks/#{uuid}/workflow_steps").to_h { |step| [step["name"], step] }

    # The stored result (StepExecutionResult) of a step by name.
    def result(uuid, step) = steps(uuid).fetch(step).fetch("results")

    # Waits for the task to reach one of `states`; fails fast when a host died.
    def wait_for_task(uuid, states: %w[complete error], hosts: [], timeout: 120)
      TaskerTest.wait_until("task #{uuid} in #{states.join('/')}", timeout: timeout) do
        dead = hosts.find { |host| !host.alive? }
        raise Minitest::Assertion, "#{dead.name} exited while task #{uuid} ran\n#{dead.tail}" if dead

        status = task(uuid)["status"]
        states.include?(status) && status
      end
    end

    def request(method, path, body = nil)
      uri = base
      http = Net::HTTP.new(uri.host, uri.port)
      http.open_timeout = 10
      http.read_timeout = 30
      request = Net::HTTP.const_get(method.to_s.capitalize).new(path, "Content-Type" => "application/json")
      request.body = JSON.generate(body) if body
      response = http.request(request)
      raise Minitest::Assertion, "#{method.upcase} #{path}: HTTP #{response.code}: #{response.body}" unless response.code.start_with?("2")

      JSON.parse(response.body)
    end
  end

  # The host running the ruby_sdk templates, started once for the integration tests that share it.
  def shared_host
    @shared_host ||= Host.new("sdk-host", templates: "sdk").tap do |host|
      host.wait_for_line("READY")
      Minitest.after_run { host.terminate }
    end
  end
end
