# frozen_string_literal: true

# The Ruby example's handlers plus ruby.deep.result, whose result is nested context.depth levels
# deep (issue #26: a deep result must fail its step, never the poll thread), on the Ruby SDK
# (bindings/ruby, TaskerCore) with one handler thread. Prints READY once the worker serves;
# SIGTERM drains and stops it.

require "tasker_core"

TaskerCore.register_handler("ruby.greet") do |context|
  { "greeting" => "#{context.get_config('greeting')}, #{context.get_input('name')}" }
end

TaskerCore.register_handler("ruby.shout") do |context|
  { "greeting" => "#{context.get_dependency_result('ruby_greet')['greeting'].upcase}!", "language" => "ruby" }
end

TaskerCore.register_handler("ruby.deep.result") do |context|
  value = 1
  (context.get_input("depth") - 1).times { value = [value] }
  { "d" => value }
end

$stdout.sync = true
TaskerCore.run_worker(concurrency: 1) { |started| puts "READY #{started['worker_id']}" }
puts "STOPPED"
