# frozen_string_literal: true

# A complete Ruby worker: the handlers of the ruby_greeting template
# (bindings/python/tests/fixtures/templates/ruby.yaml):
#
#   steps:
#     - name: ruby_greet
#       handler: { callable: ruby.greet, initialization: { greeting: Hello } }
#     - name: ruby_shout
#       dependencies: [ruby_greet]
#       handler: { callable: ruby.shout }
#
# Run it inside the repository with the worker's environment (DATABASE_URL, TASKER_ENV,
# TASKER_TEMPLATE_PATH, TASKER_WORKER_LIBRARY, ...):
#
#   ruby -I bindings/ruby/lib bindings/ruby/examples/worker.rb
#
# It prints READY once the worker serves; SIGTERM (or Ctrl-C) drains the running steps and stops it.
# bindings/python/tests/test_ruby.py runs this file.

require "tasker_core"

# A class-style handler: the template's handler.initialization arrives as `config`.
class GreetHandler < TaskerCore::StepHandler::Base
  def call(context)
    name = context.get_input("name")
    return failure(message: "context.name is missing", error_type: "ValidationError") unless name

    success(result: { "greeting" => "#{config['greeting']}, #{name}" })
  end
end

TaskerCore.register_handler("ruby.greet", GreetHandler)

# A function-style handler, registered under its name; `depends_on` hands it a parent's result.
TaskerCore.step_handler("ruby.shout", depends_on: { greeted: "ruby_greet" }) do |greeted:, **|
  { "greeting" => "#{greeted['greeting'].upcase}!", "language" => "ruby" }
end

$stdout.sync = true
TaskerCore.run_worker(concurrency: 2) { |started| puts "READY #{started['worker_id']}" }
puts "STOPPED"
