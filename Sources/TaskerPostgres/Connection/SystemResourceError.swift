#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The operating system refused a resource the worker needed at run time: a file descriptor (a
/// pipe), a thread. Raised instead of aborting, so running out of descriptors or threads fails the
/// one operation that needed them (a database connect attempt, which is then retried) and never
/// takes the process down.
public struct SystemResourceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What could not be created.
    public enum Resource: String, Sendable {
        /// The wake-up pipe of a database connection (`pipe(2)`; two file descriptors).
        case wakePipe = "wake-up pipe"
        /// The dedicated OS thread of a database connection (`pthread_create(3)`).
        case thread = "thread"
    }

    public let resource: Resource
    /// The `errno` the call failed with (`EMFILE`: the process is out of file descriptors).
    public let errno: Int32

    public init(_ resource: Resource, errno: Int32) {
        self.resource = resource
        self.errno = errno
    }

    /// The symbolic name of `errno` for the cases that matter here, else `errno N`.
    public var errnoName: String {
        switch errno {
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        case EAGAIN: "EAGAIN"
        case ENOMEM: "ENOMEM"
        default: "errno \(errno)"
        }
    }

    public var description: String {
        "cannot create a \(resource.rawValue): \(String(cString: strerror(errno))) (\(errnoName))"
    }
}
