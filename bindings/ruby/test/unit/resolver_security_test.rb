# frozen_string_literal: true

require "test_helper"
require "support/events"
require "tempfile"

module SecurityFixtures
  # Counts instantiations: a class that is not a step handler must never be built by a template.
  class NotAHandler
    class << self
      attr_accessor :built
    end
    self.built = 0

    def initialize = self.class.built += 1
    def call(_context) = { "ran" => true }
    def refund(_context) = { "refund" => true }
  end

  module Extras
    def audit(_context) = { "audit" => true }
  end

  class Payments < TaskerCore::StepHandler::Base
    include Extras
    def call(_context) = success(result: { "entry" => "call" })
    def refund(_context) = success(result: { "entry" => "refund" })

    private

    def secret(_context) = success(result: { "secret" => true })
  end

  class Router < TaskerCore::StepHandler::Decision
    def call(_context) = decision_no_branches
  end
end

# A template names a constant and a method: it is configuration, and must not reach Kernel, File or
# Object's methods, nor build classes that are not step handlers.
class ResolverSecurityTest < Minitest::Test
  def setup
    @registry = TaskerCore::Registry::HandlerRegistry.new
    @executor = TaskerCore::Worker::StepExecutor.new(registry: @registry)
  end

  def resolve(callable, **fields) = @registry.resolve_handler({ "callable" => callable }.merge(fields.transform_keys(&:to_s)))
  def context = TaskerCore::StepContext.new(TaskerTest::Events.step_event)

  def outcome(callable, **fields)
    handler = { "callable" => callable }.merge(fields.transform_keys(&:to_s))
    @executor.invoke(TaskerCore::StepContext.new(TaskerTest::Events.step_event(handler: handler)))
  end

  def test_only_step_handler_subclasses_resolve_by_constant
    built = SecurityFixtures::NotAHandler.built
    assert_instance_of SecurityFixtures::Payments, resolve("SecurityFixtures::Payments")
    assert_instance_of SecurityFixtures::Router, resolve("::SecurityFixtures::Router")
    # Classes with #call that are not handlers, core classes, modules and Base itself: nothing.
    %w[SecurityFixtures::NotAHandler Object File Tempfile Kernel Proc Method BasicObject Thread
       TaskerCore::StepHandler::Base SecurityFixtures::Payments::File].each do |callable|
      failed = outcome(callable)
      assert_equal ["handler_not_found", false], [failed.error_type, failed.retryable], callable
      %w[instance_eval send system new].each do |method|
        failed = outcome(callable, method: method, resolver: "class_constant")
        assert_equal ["handler_not_found", false], [failed.error_type, failed.retryable], "#{callable}##{method}"
      end
    end
    assert_equal built, SecurityFixtures::NotAHandler.built
  end

  def test_tempfile_by_constant_creates_no_file
    before = Dir.children(Dir.tmpdir).size
    outcome("Tempfile", method: "to_s")
    assert_equal before, Dir.children(Dir.tmpdir).size
  end

  def test_method_dispatch_reaches_only_the_handlers_own_public_methods
    assert_equal({ "entry" => "refund" }, resolve("SecurityFixtures::Payments", method: "refund").call(context).result)
    assert_equal({ "audit" => true }, resolve("SecurityFixtures::Payments", method: "audit").call(context))
    refused = %w[instance_eval instance_exec send __send__ public_send method system exec eval instance_variable_get
                 define_singleton_method extend freeze to_s inspect to_json display tap then itself
                 success failure checkpoint_yield metadata capabilities config handler_name secret initialize
                 puts exit! Refund ../call refund\ ; call()]
    refused.each do |method|
      failed = outcome("SecurityFixtures::Payments", method: method)
      assert_equal ["method_not_found", false], [failed.error_type, failed.retryable], method
    end
    # Mixin helpers of the SDK are not entry points either.
    %w[decision_success decision_no_branches].each do |method|
      assert_equal "method_not_found", outcome("SecurityFixtures::Router", method: method).error_type, method
    end
  end

  def test_explicitly_registered_handlers_keep_their_own_methods_only
    @registry.register_handler("plain", SecurityFixtures::NotAHandler)
    assert_equal({ "refund" => true }, resolve("plain", method: "refund").call(context))
    assert_equal "method_not_found", outcome("plain", method: "instance_eval").error_type
    @registry.register_handler("block") { |_c| { "block" => true } }
    %w[curry yield to_proc instance_eval parameters].each do |method|
      assert_equal "method_not_found", outcome("block", method: method).error_type, method
    end
    object = Object.new
    def object.call(_context) = { "object" => true }
    def object.void(_context) = { "void" => true }
    @registry.register_handler("object", object)
    assert_equal({ "void" => true }, resolve("object", method: "void").call(context))
    assert_equal "method_not_found", outcome("object", method: "send").error_type
  end

  def test_the_wrapper_refuses_non_entry_points_when_built_directly
    wrapper = TaskerCore::Registry::Resolvers::MethodDispatchWrapper
    assert_raises(ArgumentError) { wrapper.new(SecurityFixtures::Payments.new, :instance_eval) }
    assert_raises(ArgumentError) { wrapper.new(SecurityFixtures::Payments.new, :secret) }
    assert_equal :refund, wrapper.new(SecurityFixtures::Payments.new, :refund).target_method
  end
end
