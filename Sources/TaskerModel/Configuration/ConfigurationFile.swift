import Foundation

/// A file a configuration key names (a TLS certificate, a key, a CA bundle), read whole at start with
/// a bound: the key is operator input, and a path to `/dev/zero`, a FIFO or a huge file must give an
/// error naming the key, never a hang or unbounded memory.
public enum ConfigurationFile {
    /// The largest file read (1 MiB: a long certificate chain is a few tens of KiB).
    public static let maximumBytes = 1 << 20

    /// The bytes of the regular file at `path`, which `key` names.
    public static func read(_ path: String, key: String, maximumBytes: Int = maximumBytes) throws(ConfigurationFileError) -> [UInt8] {
        guard !path.isEmpty else { throw ConfigurationFileError(key: key, path: path, reason: "is empty") }
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw ConfigurationFileError(key: key, path: path, reason: "does not exist")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw ConfigurationFileError(key: key, path: path, reason: "is not a regular file")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationFileError(key: key, path: path, reason: "cannot be read (permission denied?)")
        }
        defer { try? handle.close() }
        let data: Data?
        do {
            data = try handle.read(upToCount: maximumBytes + 1)
        } catch {
            throw ConfigurationFileError(key: key, path: path, reason: "cannot be read: \(error)")
        }
        let bytes = [UInt8](data ?? Data())
        guard bytes.count <= maximumBytes else {
            throw ConfigurationFileError(key: key, path: path, reason: "is larger than \(maximumBytes) bytes")
        }
        guard !bytes.isEmpty else { throw ConfigurationFileError(key: key, path: path, reason: "is empty") }
        return bytes
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
