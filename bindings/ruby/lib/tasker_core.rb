# frozen_string_literal: true

# TaskerCore: the Ruby SDK of the Swift Tasker worker, shaped like upstream's tasker-rb. The whole
# worker runs embedded in this process through the C ABI of libTaskerWorkerFFI.so (Debian's
# ruby-ffi); steps whose callable has no Swift handler come to the Ruby handlers registered here.
#
#   require "tasker_core"
#
#   class GreetHandler < TaskerCore::StepHandler::Base
#     def call(context) = success(result: { "greeting" => "Hello, #{context.get_input('name')}" })
#   end
#
#   TaskerCore.register_handler("shop.greet", GreetHandler)
#   TaskerCore.run_worker   # until SIGTERM / SIGINT, then drains and stops
#
# Library lookup: $TASKER_WORKER_LIBRARY, else the checkout's .build/debug or .build/release.

require_relative "tasker_core/version"
require_relative "tasker_core/errors"
require_relative "tasker_core/native"
require_relative "tasker_core/ffi"
require_relative "tasker_core/logger"
require_relative "tasker_core/client"
require_relative "tasker_core/types/handler_definition"
require_relative "tasker_core/types/step_context"
require_relative "tasker_core/types/step_handler_call_result"
require_relative "tasker_core/types/decision_point_outcome"
require_relative "tasker_core/types/batch_processing_outcome"
require_relative "tasker_core/batch_processing/batch_worker_context"
require_relative "tasker_core/step_handler/base"
require_relative "tasker_core/step_handler/api"
require_relative "tasker_core/step_handler/decision"
require_relative "tasker_core/step_handler/batchable"
require_relative "tasker_core/registry/handler_registry"
require_relative "tasker_core/step_handler/functional"
require_relative "tasker_core/domain_events/base_subscriber"
require_relative "tasker_core/worker/bootstrap"

module TaskerCore
  module_function

  # The shared handler registry (the worker's, unless it was given another).
  def registry = Registry::HandlerRegistry.instance

  # Registers a handler class, callable or block under `name` (a template's handler.callable).
  def register_handler(name, handler = nil, &block) = registry.register_handler(name, handler, &block)

  # Runs a worker until SIGTERM/SIGINT, then drains and stops (see Worker::Bootstrap#run).
  def run_worker(config: {}, concurrency: 4, poll_timeout_ms: 200, &on_start)
    Worker::Bootstrap.new(config: config, concurrency: concurrency, poll_timeout_ms: poll_timeout_ms).run(&on_start)
  end
end
