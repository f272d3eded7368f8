# frozen_string_literal: true

require_relative "../ffi"
require_relative "../logger"
require_relative "../domain_events/base_subscriber"
require_relative "../types/step_handler_call_result"

module TaskerCore
  module Worker
    # Delivers in-process domain events (tasker_poll_in_process_event) to subscriptions: blocks
    # by pattern (`subscribe("orders.*") { |event| ... }`) and BaseSubscriber instances. One
    # thread polls with a timeout (GVL released); a subscriber that raises is logged and the
    # others still run.
    class InProcessDomainEventPoller
      attr_reader :delivered

      # @param stop_grace [Numeric] seconds #stop! waits for a subscriber still running
      def initialize(poll_timeout_ms: 200, stop_grace: 10, logger: TaskerCore::Logger.new("ruby_domain_events"))
        @poll_timeout_ms = poll_timeout_ms
        @stop_grace = stop_grace
        @logger = logger
        @lock = Mutex.new
        @subscriptions = []
        @stopping = false
        @delivered = 0
      end

      # Calls the block with every event whose name matches `pattern` (File.fnmatch glob).
      def subscribe(pattern, &block)
        raise ArgumentError, "subscribe(#{pattern.inspect}) needs a block" unless block

        @lock.synchronize { @subscriptions << [pattern.to_s, block] }
        self
      end

      # Registers a BaseSubscriber (class or instance) for its patterns.
      def register(subscriber)
        subscriber = subscriber.new if subscriber.is_a?(Class)
        raise ArgumentError, "#{subscriber.class} has no subscribes_to patterns" if subscriber.patterns.empty?

        subscriber.patterns.each do |pattern|
          subscribe(pattern) do |event|
            subscriber.handle(event)
          rescue Exception => e # rubocop:disable Lint/RescueException -- see #dispatch
            subscriber.on_handle_error(event, e)
          end
        end
        self
      end

      def subscriber_count = @lock.synchronize { @subscriptions.size }

      def start!
        @lock.synchronize do
          return self if @thread&.alive?

          @stopping = false
          @thread = Thread.new do
            Thread.current.name = "tasker-domain-events"
            poll_loop
          end
        end
        self
      end

      def active? = @thread&.alive? || false

      # Stops polling; waits up to stop_grace seconds for a subscriber still running (a stuck one is
      # left behind, logged).
      def stop!
        @lock.synchronize { @stopping = true }
        return unless @thread
        return if @thread.join(@stop_grace)

        @logger.warn("stopped with a domain event subscriber still running (left behind)")
      end

      private

      def poll_loop
        until @lock.synchronize { @stopping }
          begin
            event = TaskerCore::FFI.poll_in_process_events(@poll_timeout_ms)
          rescue Errors::FFIError => e
            break if e.status == TaskerCore::FFI::ERR_NOT_RUNNING

            @logger.error("domain event poll failed: #{e.message}")
            sleep 0.1 # a failing library: do not spin
            next
          rescue StandardError => e
            @logger.error("domain event poll failed: #{e.class}: #{e.message}")
            next
          end
          dispatch(event) if event.is_a?(Hash)
        end
      end

      def dispatch(event)
        name = event["event_name"].to_s
        handlers = @lock.synchronize { @subscriptions.select { |pattern, _| File.fnmatch?(pattern, name) }.map(&:last) }
        handlers.each do |handler|
          handler.call(event)
        rescue Exception => e # rubocop:disable Lint/RescueException -- `exit` in a subscriber must not end delivery
          failed = Types::StepHandlerCallResult.from_exception(e)
          @logger.error("domain event handler for #{name} failed: #{failed.metadata['exception_class']}: #{failed.message}")
        end
        @lock.synchronize { @delivered += 1 }
      end
    end
  end
end
