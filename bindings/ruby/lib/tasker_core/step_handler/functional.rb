# frozen_string_literal: true

require_relative "base"
require_relative "mixins/api"
require_relative "mixins/decision"
require_relative "mixins/batchable"

module TaskerCore
  module StepHandler
    # Function-style handlers (upstream's DSL): each helper builds a Base subclass around a block
    # and, with `register: true` (the default), registers it under `name` in the shared registry.
    #
    # The block takes either the context (`{ |context| ... }`) or keywords, as upstream's do:
    # `context:`, one keyword per `depends_on` entry (keyword => parent step name: that step's
    # result) and one per `inputs` key (a task context field).
    #
    #   TaskerCore.step_handler("shop.total", depends_on: { cart: "load_cart" }, inputs: [:currency]) do |cart:, currency:, **|
    #     { "total" => cart["items"].sum { |i| i["price"] }, "currency" => currency }
    #   end
    #
    # Return what a class handler returns (a Hash, nil, success/failure results); decision
    # handlers may return Decision.route / Decision.skip, batch analyzers a BatchConfig.
    module Functional
      # A decision handler's choice.
      Decision = Struct.new(:type, :steps, :reason, :routing_context, keyword_init: true) do
        def self.route(steps, **routing_context) = new(type: "create_steps", steps: Array(steps), routing_context: routing_context)
        def self.skip(reason = nil, **routing_context) = new(type: "no_branches", steps: [], reason: reason, routing_context: routing_context)
      end

      # A batch analyzer's plan: total_items in batches of batch_size (at most max_workers).
      BatchConfig = Struct.new(:total_items, :batch_size, :max_workers, :metadata, keyword_init: true)

      module_function

      def step_handler(name, **options, &block) = build(name, [], options, block) { |_handler, raw| raw }

      def decision_handler(name, **options, &block)
        build(name, [Mixins::Decision], options, block) do |handler, raw|
          next raw unless raw.is_a?(Decision)

          if raw.type == "create_steps"
            handler.decision_success(steps: raw.steps, routing_context: raw.routing_context)
          else
            handler.decision_no_branches(result_data: raw.reason ? { "reason" => raw.reason } : {},
                                         routing_context: raw.routing_context)
          end
        end
      end

      def batch_analyzer(name, worker_template:, **options, &block)
        build(name, [Mixins::Batchable], options, block) do |handler, raw|
          next raw unless raw.is_a?(BatchConfig)

          configs = handler.cursor_configs_for(raw.total_items, batch_size: raw.batch_size, max_workers: raw.max_workers)
          handler.create_batches_outcome(worker_template_name: worker_template, cursor_configs: configs,
                                         total_items: raw.total_items, metadata: raw.metadata || {})
        end
      end

      # The block also gets `batch_context:` (keywords) or (context, batch_context) (positional).
      def batch_worker(name, **options, &block)
        build(name, [Mixins::Batchable], options.merge(batch_context: true), block) { |_handler, raw| raw }
      end

      # The block also gets `api:` (the handler: get/post/put/delete) or (context, api).
      def api_handler(name, base_url:, timeout: nil, open_timeout: nil, headers: {}, **options, &block)
        defaults = { "url" => base_url, "timeout" => timeout, "open_timeout" => open_timeout, "headers" => headers }.compact
        build(name, [Mixins::API], options.merge(api: true, defaults: defaults), block) { |_handler, raw| raw }
      end

      # Builds (and registers) the handler class.
      def build(name, mixins, options, block, &finish)
        raise ArgumentError, "#{name}: a block is required" unless block

        depends_on = options.fetch(:depends_on, {})
        inputs = options.fetch(:inputs, [])
        extras = options.slice(:batch_context, :api)
        defaults = options.fetch(:defaults, {})
        klass = Class.new(Base) do
          mixins.each { |mixin| include mixin }
          handler_name name
          handler_version options.fetch(:version, "1.0.0")
          define_method(:initialize) { |config: {}, logger: nil| super(config: defaults.merge((config || {}).to_h.transform_keys(&:to_s)), logger: logger) }
          define_method(:call) do |context|
            raw = Functional.invoke(block, self, context, depends_on, inputs, extras)
            Types::StepHandlerCallResult.from_handler_output(finish.call(self, raw))
          end
        end
        TaskerCore::Registry::HandlerRegistry.instance.register_handler(name, klass) if options.fetch(:register, true)
        klass
      end

      # Calls the block with the context or with upstream's keywords.
      def invoke(block, handler, context, depends_on, inputs, extras)
        extra_values = {}
        extra_values[:batch_context] = handler.get_batch_context(context) if extras[:batch_context]
        extra_values[:api] = handler if extras[:api]
        return block.call(context, *extra_values.values) unless keywords?(block)

        args = { context: context }.merge(extra_values)
        depends_on.each { |key, step| args[key.to_sym] = context.get_dependency_result(step.to_s) }
        Array(inputs).each { |key| args[key.to_sym] = context.get_input(key.to_s) }
        block.call(**accepted(block, args))
      end

      def keywords?(block) = block.parameters.any? { |type, _| %i[key keyreq keyrest].include?(type) }

      # The keywords the block takes (all of them with **).
      def accepted(block, args)
        return args if block.parameters.any? { |type, _| type == :keyrest }

        names = block.parameters.filter_map { |type, name| name if %i[key keyreq].include?(type) }
        args.slice(*names)
      end
    end
  end

  # TaskerCore.step_handler / decision_handler / batch_analyzer / batch_worker / api_handler.
  %i[step_handler decision_handler batch_analyzer batch_worker api_handler].each do |helper|
    define_singleton_method(helper) { |*args, **options, &block| StepHandler::Functional.public_send(helper, *args, **options, &block) }
  end
end
