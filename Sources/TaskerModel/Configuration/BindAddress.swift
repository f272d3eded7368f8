import Foundation
import TaskerStepModel

/// A `bind_address` setting (`worker.web`, `worker.grpc`): `host:port` with an IPv4 address or a
/// hostname, or `[ipv6]:port`; port 0–65535 (0 picks a free port). The one parser the REST server,
/// the gRPC server and `config check` share.
public struct BindAddress: Equatable, Sendable, CustomStringConvertible {
    /// The host without brackets (`0.0.0.0`, `localhost`, `::1`).
    public var host: String
    public var port: Int

    /// True when `host` is an IPv6 literal (it was written in brackets).
    public var isIPv6: Bool { host.contains(":") }

    /// `host:port`, `[host]:port` for IPv6.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A value that is not a valid bind address.
    public struct Invalid: Error, CustomStringConvertible, Sendable, Equatable {
        public var value: String
        public var description: String { "invalid bind address '\(value)': expected host:port or [ipv6]:port, port 0-65535" }
    }

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port` or `[ipv6]:port`. An unbracketed IPv6 address (`::1:80`), an empty host,
    /// whitespace, or a port that is not 0–65535 in decimal digits is refused.
    public init(parsing value: String) throws(Invalid) {
        let host: Substring
        let port: Substring
        if value.hasPrefix("[") {
            guard let close = value.range(of: "]:") else { throw Invalid(value: value) }
            host = value[value.index(after: value.startIndex)..<close.lowerBound]
            port = value[close.upperBound...]
        } else {
            guard let colon = value.lastIndex(of: ":") else { throw Invalid(value: value) }
            host = value[..<colon]
            port = value[value.index(after: colon)...]
            if host.contains(":") { throw Invalid(value: value) }
        }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "[" || $0 == "]" }),
            !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }),
            let number = Int(port), (0...65_535).contains(number)
        else { throw Invalid(value: value) }
        self.init(host: String(host), port: number)
    }

    /// True when `value` parses.
    public static func isValid(_ value: String) -> Bool {
        (try? BindAddress(parsing: value)) != nil
    }
}
