# frozen_string_literal: true

require_relative "ffi"

module TaskerCore
  # Writes into the worker's log stream (same format and destination as the worker's own lines)
  # through tasker_log; never raises (a log line must not fail a handler or the poll thread).
  #
  #   TaskerCore::Logger.instance.info("charged", "order" => 42)
  class Logger
    LEVELS = %i[trace debug info warn error].freeze

    # The shared logger.
    def self.instance = (@instance ||= new)

    # @param component [String, nil] added to every line's fields as "component"
    def initialize(component = nil)
      @component = component
    end

    LEVELS.each do |level|
      define_method(level) do |message = nil, fields = nil, &block|
        message = block.call if block
        write(level, message, fields)
      end
    end

    # Always true: the worker filters by its own log level.
    def level = 0

    private

    def write(level, message, fields)
      fields = (fields || {}).to_h
      fields = fields.merge("component" => @component) if @component
      TaskerCore::FFI.log(level, message.to_s, fields.empty? ? nil : fields)
    rescue StandardError => e
      begin
        warn "[tasker_core #{level}] #{message} (tasker_log failed: #{e.message})"
      rescue StandardError
        nil
      end
    end
  end
end
