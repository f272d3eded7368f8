# frozen_string_literal: true

require_relative "lib/tasker_core/version"

Gem::Specification.new do |spec|
  spec.name = "tasker_worker_swift"
  spec.version = TaskerCore::VERSION
  spec.summary = "Ruby SDK (TaskerCore) for the Swift Tasker worker, embedded through its C ABI"
  spec.description = <<~TEXT
    Ruby step handlers for Tasker workflows, run by the Swift Tasker worker embedded in the Ruby
    process (libTaskerWorkerFFI.so through ffi). The API is shaped like upstream's tasker-rb:
    TaskerCore::StepHandler::Base with Api, Decision and Batchable capabilities, a function-style
    DSL, a handler registry with a resolver chain and method dispatch, checkpoints, in-process
    domain events and the orchestration client.
  TEXT
  spec.authors = ["Tasker Swift contributors"]
  spec.homepage = "https://github.com/tasker-systems/tasker-core"
  spec.required_ruby_version = ">= 3.1"
  spec.files = Dir["lib/**/*.rb", "examples/*.rb", "README.md"]
  spec.require_paths = ["lib"]
  # The only runtime dependency; Debian ships it as ruby-ffi. libTaskerWorkerFFI.so is not part of
  # the gem: set TASKER_WORKER_LIBRARY (or run from a checkout with .build/{debug,release}).
  spec.add_runtime_dependency "ffi", "~> 1.15"
  spec.metadata["rubygems_mfa_required"] = "true"
end
