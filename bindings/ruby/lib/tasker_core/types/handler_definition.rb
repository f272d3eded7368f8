# frozen_string_literal: true

module TaskerCore
  module Types
    # A template step's `handler`: callable (the address), method (the entry point; nil = call),
    # resolver (a hint naming the resolver to use, skipping the chain) and initialization (the
    # handler's configuration).
    HandlerDefinition = Struct.new(:callable, :method_name, :resolver, :initialization, keyword_init: true) do
      # From the step definition's `handler` object of a step event (tolerates junk: strings only).
      def self.from_hash(handler)
        handler = {} unless handler.is_a?(Hash)
        text = ->(value) { value.is_a?(String) && !value.empty? ? value : nil }
        new(callable: text.call(handler["callable"]).to_s, method_name: text.call(handler["method"]),
            resolver: text.call(handler["resolver"]),
            initialization: handler["initialization"].is_a?(Hash) ? handler["initialization"] : {})
      end

      # The method to invoke: `method`, or "call".
      def effective_method = method_name || "call"

      def uses_method_dispatch? = effective_method != "call"

      def has_resolver_hint? = !resolver.nil? # rubocop:disable Naming/PredicateName -- upstream's name
    end
  end
end
