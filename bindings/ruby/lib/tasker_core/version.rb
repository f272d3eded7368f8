# frozen_string_literal: true

module TaskerCore
  # The gem's version (the Swift library reports its own through TaskerCore::FFI.library_version).
  VERSION = "0.1.0"
end
