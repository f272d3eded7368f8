import TaskerWorker

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `tasker_worker.h`: errors and memory.

/// The library's version, in static storage. `nonisolated(unsafe)` is safe: the pointer is
/// written once by the global's (thread-safe, one-time) initialisation, and the memory it points
/// to is never written or freed after.
nonisolated(unsafe) private let versionCString: UnsafePointer<CChar> = UnsafePointer(strdup(TaskerWorkerVersion.current)!)

@_cdecl("tasker_last_error")
public func tasker_last_error() -> UnsafeMutablePointer<CChar>? {
    LastError.copy()
}

@_cdecl("tasker_string_free")
public func tasker_string_free(_ string: UnsafeMutablePointer<CChar>?) {
    free(string)
}

@_cdecl("tasker_version")
public func tasker_version() -> UnsafePointer<CChar> {
    versionCString
}

/// Runs a call whose output is one library-allocated string: `out` is checked and cleared
/// first, and set only on success.
func withStringOutput(
    _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ name: String,
    _ body: () throws(FFIError) -> UnsafeMutablePointer<CChar>?
) -> Int32 {
    FFICall.run { () throws(FFIError) in
        let out = try CStrings.require(out, name)
        out.pointee = nil
        out.pointee = try body()
    }
}

/// Runs a call whose output is one number: `out` is checked and zeroed first, and set only on success.
func withNumberOutput<T: BinaryInteger>(
    _ out: UnsafeMutablePointer<T>?, _ name: String, _ body: () throws(FFIError) -> T
) -> Int32 {
    FFICall.run { () throws(FFIError) in
        let out = try CStrings.require(out, name)
        out.pointee = 0
        out.pointee = try body()
    }
}
