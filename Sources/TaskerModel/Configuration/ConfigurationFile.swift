import Glibc
import TaskerStepModel

/// A file a configuration key names (a TLS certificate, a key, a CA bundle, a JWT public key), read
/// whole at start with a bound: the key is operator input, and a path to `/dev/zero`, a FIFO or a huge
/// file must give an error naming the key, never a hang or unbounded memory.
///
/// The file is opened first (following symlinks, as Kubernetes secret volumes need: `tls.crt ->
/// ..data/tls.crt`), without blocking (a FIFO with no writer does not hold the boot), then checked on
/// the open descriptor (`fstat`: a regular file; no window for a swap between check and open), then
/// read up to ``maximumBytes``.
public enum ConfigurationFile {
    /// The largest file read (1 MiB: a long certificate chain is a few tens of KiB).
    public static let maximumBytes = 1 << 20

    /// The bytes of the regular file at `path`, which `key` names.
    public static func read(_ path: String, key: String, maximumBytes: Int = maximumBytes) throws(ConfigurationFileError) -> [UInt8] {
        func failure(_ reason: String) -> ConfigurationFileError { ConfigurationFileError(key: key, path: path, reason: reason) }
        guard !path.isEmpty else { throw failure("is empty") }
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(Self.reason(opening: errno)) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw failure("cannot be examined (\(Self.describe(errno)))") }
        guard status.st_mode & S_IFMT == S_IFREG else { throw failure("is not a regular file") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while bytes.count <= maximumBytes {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("cannot be read (\(Self.describe(errno)))")
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        guard bytes.count <= maximumBytes else { throw failure("is larger than \(maximumBytes) bytes") }
        guard !bytes.isEmpty else { throw failure("is empty") }
        return bytes
    }

    static func reason(opening error: Int32) -> String {
        switch error {
        case ENOENT: "does not exist"
        case EACCES, EPERM: "cannot be read: permission denied"
        case ENOTDIR: "does not exist (a part of the path is not a directory)"
        case ELOOP: "cannot be opened: too many symbolic links"
        default: "cannot be opened (\(describe(error)))"
        }
    }

    static func describe(_ error: Int32) -> String {
        String(cString: strerror(error))
    }
}

/// A file named by configuration could not be used: which key, which path, and why.
public struct ConfigurationFileError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The configuration key naming the file (`worker.web.tls_cert_path`).
    public let key: String
    public let path: String
    public let reason: String

    public init(key: String, path: String, reason: String) {
        self.key = key
        self.path = path
        self.reason = reason
    }

    public var description: String {
        path.isEmpty ? "\(key) \(reason)" : "\(key): \(path) \(reason)"
    }
}
