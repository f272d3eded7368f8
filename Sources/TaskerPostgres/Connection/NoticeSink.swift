import Foundation
import Logging
import Synchronization

/// Receives libpq notices (e.g. `NOTICE: relation already exists`) and logs them at debug level
/// instead of libpq writing them to stderr.
final class NoticeSink: Sendable {
    let logger: Logger
    private let fatal = Atomic<Bool>(false)
    init(logger: Logger) { self.logger = logger }

    /// True once the server sent a FATAL message (it is about to close the connection).
    var sawFatal: Bool { fatal.load(ordering: .relaxed) }

    func receive(_ text: String) {
        if text.hasPrefix("FATAL") { fatal.store(true, ordering: .relaxed) }
        logger.debug("postgres notice", metadata: ["notice": "\(text)"])
    }
}

func noticeProcessor(_ context: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
    guard let context, let message else { return }
    let sink = Unmanaged<NoticeSink>.fromOpaque(context).takeUnretainedValue()
    sink.receive(String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines))
}
