# frozen_string_literal: true

# Test host: Ruby's ffi loads the library lazily (RTLD_LAZY) and dlcloses it at interpreter exit,
# while the worker's threads may still be finishing in its code. The first bootstrap must pin the
# library (RTLD_NODELETE), or the process dies of SIGSEGV on its way out. This host bootstraps,
# stops, then drops every reference to the library itself (its own dlopen handle twice: the one
# taken here and Ruby's), and prints "MAPPED true" when the library is still mapped.

require "tasker_core"

module Libdl
  extend FFI::Library
  ffi_lib FFI::Library::LIBC
  attach_function :dlopen, %i[string int], :pointer
  attach_function :dlclose, [:pointer], :int
end

RTLD_LAZY = 0x1
RTLD_NOLOAD = 0x4

TaskerCore::FFI.bootstrap_worker({})
TaskerCore::FFI.stop_worker
library = File.realpath(TaskerCore::FFI.library_path)
handle = Libdl.dlopen(library, RTLD_LAZY | RTLD_NOLOAD)
raise "#{library} is not loaded" if handle.null?

2.times { Libdl.dlclose(handle) }
mapped = File.foreach("/proc/self/maps").any? { |line| line.chomp.end_with?(library) }
puts "MAPPED #{mapped}"
$stdout.flush
