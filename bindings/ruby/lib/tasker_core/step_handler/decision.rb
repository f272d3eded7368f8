# frozen_string_literal: true

require_relative "base"
require_relative "mixins/decision"

module TaskerCore
  module StepHandler
    # Base with the Decision capability (see Mixins::Decision); or include Mixins::Decision in any Base subclass.
    class Decision < Base
      include Mixins::Decision
    end
  end
end
