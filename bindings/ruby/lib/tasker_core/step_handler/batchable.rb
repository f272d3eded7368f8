# frozen_string_literal: true

require_relative "base"
require_relative "mixins/batchable"

module TaskerCore
  module StepHandler
    # Base with the Batchable capability (see Mixins::Batchable); or include Mixins::Batchable in any Base subclass.
    class Batchable < Base
      include Mixins::Batchable
    end
  end
end
