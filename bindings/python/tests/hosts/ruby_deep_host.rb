# frozen_string_literal: true

# The Ruby example's handlers plus ruby.deep.result, whose result is nested context.depth levels
# deep (issue #26: a deep result must fail its step, never the poll thread). Prints READY once the
# worker serves; SIGTERM drains and stops it.

require "tasker_worker"

worker = TaskerWorker::Worker.new(threads: 1)

worker.handler("ruby.greet") do |step|
  { "greeting" => "#{step.config('greeting')}, #{step.input('name')}" }
end

worker.handler("ruby.shout") do |step|
  TaskerWorker.success("greeting" => "#{step.dependency('ruby_greet')['greeting'].upcase}!", "language" => "ruby")
end

worker.handler("ruby.deep.result") do |step|
  value = 1
  (step.input("depth") - 1).times { value = [value] }
  { "d" => value }
end

worker.run { |started| puts "READY #{started['worker_id']}"; $stdout.flush }
puts "STOPPED"
$stdout.flush
