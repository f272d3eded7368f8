# frozen_string_literal: true

module TaskerCore
  module DomainEvents
    # A subscriber to in-process domain events (templates' publishes_events with delivery_mode
    # fast/broadcast). Declare patterns (exact names or globs: "orders.*", "*") and implement
    # #handle; register it with `worker.domain_events.register(OrderEvents)`.
    #
    #   class OrderEvents < TaskerCore::DomainEvents::BaseSubscriber
    #     subscribes_to "orders.*"
    #     def handle(event) = logger.info("#{event['event_name']} for #{event.dig('metadata', 'task_uuid')}")
    #   end
    class BaseSubscriber
      class << self
        def subscribes_to(*patterns)
          @patterns = patterns.flatten.map(&:to_s)
        end

        def patterns = @patterns || []
      end

      attr_reader :logger

      def initialize(logger: TaskerCore::Logger.new(self.class.name))
        @logger = logger
      end

      def patterns = self.class.patterns

      # Called for each matching event (a Hash: event_id, event_name, event_version, payload,
      # metadata).
      def handle(_event) = raise(NotImplementedError, "#{self.class} must implement #handle(event)")

      # Called when #handle raised; logs by default.
      def on_handle_error(event, error)
        logger.error("domain event subscriber #{self.class} failed on #{event['event_name']}: #{error.class}: #{error.message}")
      end
    end
  end
end
