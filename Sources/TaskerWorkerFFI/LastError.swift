import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calling thread's last error message (`tasker_last_error`): a `malloc`ed C string kept in a
/// pthread key, freed when replaced, cleared on success, and by the key's destructor when the
/// thread exits.
enum LastError {
    /// Created once (Swift initialises globals once, thread-safely) and never deleted.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { pointer in free(pointer) }
        precondition(created == 0, "pthread_key_create failed: \(created)")
        return key
    }()

    /// Replaces the thread's message (nil: the call succeeded).
    static func set(_ message: String?) {
        let old = pthread_getspecific(key)
        let new: UnsafeMutableRawPointer? = message.flatMap { text in
            strdup(text.replacingNULs()).map { UnsafeMutableRawPointer($0) }
        }
        guard old != nil || new != nil else { return }
        pthread_setspecific(key, new)
        free(old)
    }

    /// A copy of the thread's message for the caller to free, or nil.
    static func copy() -> UnsafeMutablePointer<CChar>? {
        guard let current = pthread_getspecific(key) else { return nil }
        return strdup(current.assumingMemoryBound(to: CChar.self))
    }
}

extension String {
    /// The text with NUL characters shown as `\0` (a C string ends at the first NUL).
    func replacingNULs() -> String {
        contains("\u{0}") ? replacingOccurrences(of: "\u{0}", with: "\\0") : self
    }
}
