import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `libTaskerWorkerFFI.so` loaded at run time, and the calls of its C ABI the host makes
/// (`bindings/c/include/tasker_worker.h`).
///
/// Every call may block its calling thread: the library waits on it for its own tasks, which run on
/// Swift's cooperative pool (shared with this process). So the host calls it only from threads of
/// its own (``HostThreads``), never from a task.
///
/// Loaded with `RTLD_DEEPBIND`: the library binds to its own copies of the Swift modules it was
/// built with (swift-log, the handler API …) even where this executable has copies of the same
/// names, so the two sides share nothing but C strings.
final class WorkerLibrary: Sendable {
    static let fileName = "libTaskerWorkerFFI.so"

    /// `tasker_status` values the host tells apart.
    enum Status: Int32 {
        case ok = 0
        case invalidArgument = 1
        case notRunning = 2
        case alreadyRunning = 3
        case unknownEvent = 4
        case bootstrap = 5
        case refused = 6
        case client = 7
        case `internal` = 99
    }

    /// A call that did not return `TASKER_OK`: its status and `tasker_last_error()`'s message.
    struct CallError: Error, CustomStringConvertible {
        var status: Int32
        var message: String
        var description: String { message }
        var isNotRunning: Bool { status == Status.notRunning.rawValue }
        var isUnknownEvent: Bool { status == Status.unknownEvent.rawValue }
        var isInvalidArgument: Bool { status == Status.invalidArgument.rawValue }
    }

    typealias Output = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private typealias InOut = @convention(c) (UnsafePointer<CChar>?, Output?) -> Int32
    private typealias Out = @convention(c) (Output?) -> Int32
    private typealias Poll = @convention(c) (Int32, Output?) -> Int32
    private typealias TwoIn = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    private typealias LastError = @convention(c) () -> UnsafeMutablePointer<CChar>?
    private typealias StringFree = @convention(c) (UnsafeMutablePointer<CChar>?) -> Void
    private typealias Log = @convention(c) (Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    private typealias IntOut = @convention(c) (UnsafeMutablePointer<Int32>?) -> Int32

    /// The entry points. `@unchecked Sendable`: C function pointers capture nothing, and these are
    /// set once in `init` and never written again.
    private struct EntryPoints: @unchecked Sendable {
        let bootstrap: InOut
        let stop: Out
        let poll: Poll
        let complete: TwoIn
        let checkpoint: TwoIn
        let lastError: LastError
        let stringFree: StringFree
        let log: Log
        let isRunning: IntOut
    }

    let path: String
    private let entry: EntryPoints

    /// Loads the first existing candidate (``HandlerHost/Configuration/libraryCandidates(environment:workingDirectory:)``).
    init(candidates: [String]) throws(HandlerHostError) {
        guard let path = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw .libraryNotFound(lookedAt: candidates)
        }
        if let unsafe = Self.writableByOthers(path) { throw .libraryUnusable(path: path, reason: unsafe) }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | Int32(RTLD_DEEPBIND)) else {
            let reason = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            throw .libraryUnusable(path: path, reason: reason)
        }
        func symbol<T>(_ name: String, _ type: T.Type) throws(HandlerHostError) -> T {
            guard let address = dlsym(handle, name) else {
                throw .libraryUnusable(path: path, reason: "it has no \(name) (a library of another version?)")
            }
            return unsafeBitCast(address, to: type)
        }
        self.path = path
        // The library stays loaded until the process exits (it pins itself at bootstrap; the handle is never closed).
        entry = EntryPoints(
            bootstrap: try symbol("tasker_worker_bootstrap", InOut.self),
            stop: try symbol("tasker_worker_stop", Out.self),
            poll: try symbol("tasker_poll_step_event", Poll.self),
            complete: try symbol("tasker_complete_step_event", TwoIn.self),
            checkpoint: try symbol("tasker_checkpoint_yield_step_event", TwoIn.self),
            lastError: try symbol("tasker_last_error", LastError.self),
            stringFree: try symbol("tasker_string_free", StringFree.self),
            log: try symbol("tasker_log", Log.self),
            isRunning: try symbol("tasker_worker_is_running", IntOut.self))
    }

    /// Why loading `path` would run code someone else can change, or nil: the library and its directory
    /// must belong to this user or root and be writable by no one else (a library planted in a shared
    /// directory would run as whoever loads it).
    static func writableByOthers(_ path: String) -> String? {
        let me = getuid()
        for target in [path, (path as NSString).deletingLastPathComponent] {
            var status = stat()
            guard stat(target, &status) == 0 else { return "\(target) cannot be examined (errno \(errno))" }
            if status.st_uid != me && status.st_uid != 0 {
                return "\(target) belongs to another user (uid \(status.st_uid)); it is not loaded"
            }
            if status.st_mode & (S_IWGRP | S_IWOTH) != 0 {
                return "\(target) is writable by other users; it is not loaded"
            }
        }
        return nil
    }

    /// `tasker_worker_bootstrap`: returns the bootstrap result's JSON once the worker serves.
    func bootstrap(_ configuration: String) throws(CallError) -> String? {
        try outputCall { output in configuration.withCString { entry.bootstrap($0, output) } }
    }

    /// `tasker_worker_stop`: the graceful stop, waited for (running steps drain first).
    func stop() throws(CallError) {
        _ = try outputCall { output in entry.stop(output) }
    }

    /// `tasker_worker_is_running`: whether the embedded worker still runs.
    func isRunning() -> Bool {
        var running: Int32 = 0
        return entry.isRunning(&running) == Status.ok.rawValue && running != 0
    }

    /// `tasker_poll_step_event`: the next step event's JSON, or nil when none came within `timeoutMilliseconds`.
    func poll(timeoutMilliseconds: Int32) throws(CallError) -> String? {
        try outputCall { output in entry.poll(timeoutMilliseconds, output) }
    }

    /// `tasker_complete_step_event`.
    func complete(eventID: String, resultJSON: String) throws(CallError) {
        try check(eventID.withCString { id in resultJSON.withCString { entry.complete(id, $0) } })
    }

    /// `tasker_checkpoint_yield_step_event`.
    func checkpoint(eventID: String, checkpointJSON: String) throws(CallError) {
        try check(eventID.withCString { id in checkpointJSON.withCString { entry.checkpoint(id, $0) } })
    }

    /// `tasker_log`: a line in the worker's own log stream (its format and destination).
    func log(level: Int32, message: String, fieldsJSON: String?) {
        _ = message.withCString { text in
            if let fieldsJSON { fieldsJSON.withCString { entry.log(level, text, $0) } } else { entry.log(level, text, nil) }
        }
    }

    private func outputCall(_ call: (Output) -> Int32) throws(CallError) -> String? {
        var raw: UnsafeMutablePointer<CChar>?
        let status = withUnsafeMutablePointer(to: &raw) { call($0) }
        try check(status)
        guard let raw else { return nil }
        defer { entry.stringFree(raw) }
        return String(cString: raw)
    }

    private func check(_ status: Int32) throws(CallError) {
        guard status != Status.ok.rawValue else { return }
        var message = "status \(status)"
        if let raw = entry.lastError() {
            message = String(cString: raw)
            entry.stringFree(raw)
        }
        throw CallError(status: status, message: message)
    }
}
