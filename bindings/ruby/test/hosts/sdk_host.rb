# frozen_string_literal: true

# Test host: the embedded worker with the test handlers (fixtures/handlers.rb). Configured by
# TASKER_HOST_CONFIG (bootstrap JSON), TASKER_HOST_CONCURRENCY and TASKER_HOST_STOP_GRACE. Prints
# "BOOTSTRAPPING" before bootstrap, "READY <worker_id>" once
# it serves, "EVENT <name> <task_uuid>" per in-process domain event, and "STOPPED" after a
# SIGTERM/SIGINT drain.

require "json"
require_relative "../fixtures/handlers"

$stdout.sync = true
RubySdk.register!
RubySdk.define_functional!

worker = TaskerCore::Worker::Bootstrap.new(config: JSON.parse(ENV.fetch("TASKER_HOST_CONFIG", "{}")),
                                           concurrency: Integer(ENV.fetch("TASKER_HOST_CONCURRENCY", "4")),
                                           stop_grace: Float(ENV.fetch("TASKER_HOST_STOP_GRACE", "10")))
# Says when bootstrap begins (signal handlers installed): the SIGTERM-during-bootstrap test waits for it.
worker.define_singleton_method(:start!) do
  puts "BOOTSTRAPPING"
  super()
end
worker.subscribe("ruby_sdk.*") { |event| puts "EVENT #{event['event_name']} #{event.dig('metadata', 'task_uuid')}" }
worker.run { |started| puts "READY #{started['worker_id']}" }
puts "STOPPED"
