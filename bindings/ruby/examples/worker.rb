# frozen_string_literal: true

# Example: Ruby handlers for the ruby_greeting template (bindings/python/tests/fixtures/templates/
# ruby.yaml). Run inside the repository with the worker's environment (DATABASE_URL, TASKER_ENV,
# TASKER_TEMPLATE_PATH, …):
#
#   ruby -I bindings/ruby/lib bindings/ruby/examples/worker.rb
#
# Prints READY once the worker serves; SIGTERM drains and stops it.

require "tasker_worker"

worker = TaskerWorker::Worker.new

worker.handler("ruby.greet") do |step|
  name = step.input("name")
  next TaskerWorker.failure("context.name is missing", retryable: false) unless name

  { "greeting" => "#{step.config('greeting')}, #{name}" }
end

worker.handler("ruby.shout") do |step|
  TaskerWorker.success("greeting" => "#{step.dependency('ruby_greet')['greeting'].upcase}!", "language" => "ruby")
end

worker.run { |started| puts "READY #{started['worker_id']}"; $stdout.flush }
puts "STOPPED"
$stdout.flush
