# frozen_string_literal: true

# A no-op Ruby step handler serving the bench queue, for the `ffi` phase of scripts/bench: the Ruby
# SDK (bindings/ruby, Debian's ruby-ffi), the Swift worker embedded in this Ruby process, the handler
# on its FFI dispatch channel, `--threads` handler threads.
#
# Takes the run's settings from the environment (TASKER_CONFIG_PATH, DATABASE_URL, TASKER_TEMPLATE_PATH,
# TASKER_WORKER_LIBRARY) like Benchmarks/ffi_worker.py; serves until SIGTERM, then drains and exits.
#
#   ruby -I bindings/ruby/lib Benchmarks/ffi_worker.rb --threads 16

require "tasker_core"

CALLABLE = "bench.python_noop" # the bench template's foreign callable (benchlib/ffi.py)
at = ARGV.index("--threads")
threads = at ? Integer(ARGV.fetch(at + 1)) : 16

TaskerCore.step_handler(CALLABLE) { |_context| { "ok" => true } }
TaskerCore.run_worker(concurrency: threads)
