# frozen_string_literal: true

require_relative "base"
require_relative "mixins/api"

module TaskerCore
  module StepHandler
    # Base with the Api capability (see Mixins::API); or include Mixins::API in any Base subclass.
    class Api < Base
      include Mixins::API
    end
  end
end
