# frozen_string_literal: true

require "test_helper"
require "support/events"

module RegistryFixtures
  class Refunds < TaskerCore::StepHandler::Base
    def call(_context) = success(result: { "entry" => "call", "config" => config })
    def refund(_context) = success(result: { "entry" => "refund" })
  end

  # Not a handler: no #call.
  class Plain; end
end

class RegistryTest < Minitest::Test
  Definition = TaskerCore::Types::HandlerDefinition

  def setup
    @registry = TaskerCore::Registry::HandlerRegistry.new
  end

  def resolve(callable, **fields)
    @registry.resolve_handler({ "callable" => callable }.merge(fields.transform_keys(&:to_s)))
  end

  def context = TaskerCore::StepContext.new(TaskerTest::Events.step_event)

  def test_explicit_mapping_of_classes_blocks_and_callables
    @registry.register_handler("by.class", RegistryFixtures::Refunds)
    @registry.register_handler("by.block") { |_context| { "block" => true } }
    @registry.register_handler("by.lambda", ->(_context) { { "lambda" => true } })
    handler = resolve("by.class", initialization: { "fee" => 2 })
    assert_instance_of RegistryFixtures::Refunds, handler
    assert_equal({ "fee" => 2 }, handler.call(context).result["config"])
    assert_equal({ "block" => true }, resolve("by.block").call(context))
    assert_equal({ "lambda" => true }, resolve("by.lambda").call(context))
    assert_equal %w[by.block by.class by.lambda], @registry.registered_handlers
    assert_raises(ArgumentError) { @registry.register_handler("bad", 42) }
    assert_raises(ArgumentError) { @registry.register_handler("none") }
  end

  def test_class_constant_lookup
    handler = resolve("RegistryFixtures::Refunds")
    assert_instance_of RegistryFixtures::Refunds, handler
    assert_resolution_error("handler_not_found", /no Ruby handler for callable "RegistryFixtures::Nope"/) { resolve("RegistryFixtures::Nope") }
    assert_resolution_error("handler_not_found", /RegistryFixtures::Plain/) { resolve("RegistryFixtures::Plain") }
    assert_resolution_error("handler_not_found", /explicit_mapping, class_constant/) { resolve("lower.case") }
    assert_resolution_error("handler_not_found", /Kernel\.exit/) { resolve("Kernel.exit") }
  end

  def test_explicit_mapping_wins_over_the_class_constant
    @registry.register_handler("RegistryFixtures::Refunds") { |_context| { "explicit" => true } }
    assert_equal({ "explicit" => true }, resolve("RegistryFixtures::Refunds").call(context))
  end

  def test_method_dispatch
    handler = resolve("RegistryFixtures::Refunds", method: "refund")
    assert_instance_of TaskerCore::Registry::Resolvers::MethodDispatchWrapper, handler
    assert_equal({ "entry" => "refund" }, handler.call(context).result)
    assert_equal({ "entry" => "call", "config" => {} }, resolve("RegistryFixtures::Refunds", method: "call").call(context).result)
    error = assert_resolution_error("method_not_found", /void/) { resolve("RegistryFixtures::Refunds", method: "void") }
    assert_match(/RegistryFixtures::Refunds/, error.message)
    @registry.register_handler("blocky") { |_c| {} }
    assert_resolution_error("method_not_found", /"blocky".*"refund"|"refund".*"blocky"/) { resolve("blocky", method: "refund") }
  end

  def test_resolver_hints_skip_the_chain
    @registry.register_handler("named", RegistryFixtures::Refunds)
    assert_instance_of RegistryFixtures::Refunds, resolve("named", resolver: "explicit_mapping")
    assert_instance_of RegistryFixtures::Refunds, resolve("RegistryFixtures::Refunds", resolver: "class_constant")
    # The hinted resolver alone: explicit_mapping does not know the class path.
    assert_resolution_error("handler_not_found", /resolver "explicit_mapping" has no handler/) do
      resolve("RegistryFixtures::Refunds", resolver: "explicit_mapping")
    end
    error = assert_resolution_error("unknown_resolver", /unknown resolver "nope"/) { resolve("named", resolver: "nope") }
    assert_match(/known resolvers: explicit_mapping, class_constant/, error.message)
  end

  def test_custom_resolvers_join_the_chain_by_priority
    resolver = Class.new(TaskerCore::Registry::Resolvers::BaseResolver) do
      def name = "prefix"
      def priority = 50
      def can_resolve?(definition) = definition.callable.start_with?("prefix:")
      def resolve(definition) = ->(_context) { { "via" => definition.callable } }
    end
    @registry.add_resolver(resolver.new)
    assert_equal({ "via" => "prefix:x" }, resolve("prefix:x").call(context))
    assert_equal({ "via" => "prefix:y" }, resolve("prefix:y", resolver: "prefix").call(context))
    assert_equal %w[explicit_mapping prefix class_constant], @registry.resolver_chain.resolver_names
  end

  private

  def assert_resolution_error(type, pattern, &block)
    error = assert_raises(TaskerCore::Errors::ResolutionError, &block)
    assert_equal type, error.error_type
    assert_match pattern, error.message
    error
  end
end
