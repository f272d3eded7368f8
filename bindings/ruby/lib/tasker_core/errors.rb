# frozen_string_literal: true

module TaskerCore
  # Exceptions of the SDK and for handlers to raise. A handler that raises one of the
  # PermanentError family fails its step for good; RetryableError (and any other exception) fails
  # it retryably, as upstream's tasker-rb classifies them.
  module Errors
    # Base class of every TaskerCore error.
    class Error < StandardError; end

    # A handler failure that retrying cannot fix.
    class PermanentError < Error
      attr_reader :error_code, :context

      def initialize(message = nil, error_code: nil, error_category: nil, context: {})
        @error_code = error_code
        @context = error_category ? { "error_category" => error_category }.merge(context || {}) : (context || {})
        super(message)
      end
    end

    # A handler failure that may succeed later; `retry_after` (seconds) is the server's hint, if any.
    class RetryableError < Error
      attr_reader :retry_after, :context

      def initialize(message = nil, retry_after: nil, error_category: nil, context: {})
        @retry_after = retry_after
        @context = error_category ? { "error_category" => error_category }.merge(context || {}) : (context || {})
        super(message)
      end
    end

    # Input the handler cannot accept (permanent).
    class ValidationError < PermanentError
      attr_reader :field

      def initialize(message = nil, field: nil, **options)
        @field = field
        super(message, **options)
      end
    end

    # Missing or invalid configuration (permanent).
    class ConfigurationError < Error; end

    # A call into libTaskerWorkerFFI returned a status other than TASKER_OK.
    class FFIError < Error
      attr_reader :status, :function

      def initialize(status, function, message)
        @status = status
        @function = function
        super("#{function}: status #{status}: #{message}")
      end
    end

    # An orchestration client call failed: the API answered an error or could not be reached.
    class ClientError < FFIError; end

    # The loaded library predates the orchestration client (tasker_client_* symbols absent).
    class ClientUnavailableError < ConfigurationError; end

    # Handler resolution failed (no handler, unknown resolver hint, missing method): permanent.
    class ResolutionError < ConfigurationError
      attr_reader :error_type

      def initialize(message, error_type: "handler_not_found")
        @error_type = error_type
        super(message)
      end
    end

    # Exceptions that fail a step for good; everything else is retryable.
    PERMANENT = [PermanentError, ConfigurationError, FFIError].freeze

    # Whether a step whose handler raised `error` should be retried (upstream's ErrorClassifier).
    # Module#=== only: no method of `error` is called (it may be hostile).
    def self.retryable?(error)
      return true if RetryableError === error # rubocop:disable Style/CaseEquality

      PERMANENT.none? { |klass| klass === error } # rubocop:disable Style/CaseEquality
    end
  end

  Error = Errors::Error
  PermanentError = Errors::PermanentError
  RetryableError = Errors::RetryableError
  ValidationError = Errors::ValidationError
end
