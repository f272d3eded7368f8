import Foundation
import TaskerTestSupport

/// Certificates for the TLS tests, made once per test run by the `openssl` command line (Debian's
/// `openssl` package; scripts/test installs it when missing) in a directory of their own: P-256 keys,
/// valid for two days from their making.
///
/// - `ca.pem` signs `server.pem` (`server.key`): subject alternative names `localhost` and 127.0.0.1.
/// - `client-ca.pem` signs `client.pem` (`client.key`), client authentication: mutual TLS.
/// - `other-ca.pem` signs `other-client.pem` (`other-client.key`): a CA nobody trusts.
struct TestCertificates: Sendable {
    let directory: String

    func path(_ file: String) -> String { directory + "/" + file }
    var ca: String { path("ca.pem") }
    var serverCertificate: String { path("server.pem") }
    var serverKey: String { path("server.key") }
    var clientCA: String { path("client-ca.pem") }
    var clientCertificate: String { path("client.pem") }
    var clientKey: String { path("client.key") }
    var otherCA: String { path("other-ca.pem") }
    var otherClientCertificate: String { path("other-client.pem") }
    var otherClientKey: String { path("other-client.key") }

    /// The run's certificates (made at the first use).
    static func shared() throws -> TestCertificates {
        try made.get()
    }

    private static let made = Result { try TestCertificates.make() }

    private static func make() throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificates = TestCertificates(directory: directory)
        for ca in ["ca", "client-ca", "other-ca"] {
            try certificates.openssl([
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "\(ca).key", "-out", "\(ca).pem", "-days", "2", "-subj", "/CN=Tasker test \(ca)",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        }
        try certificates.leaf(
            "server", signedBy: "ca", subject: "localhost",
            extensions: "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        try certificates.leaf("client", signedBy: "client-ca", subject: "tasker-test-client", extensions: "extendedKeyUsage=clientAuth\n")
        try certificates.leaf(
            "other-client", signedBy: "other-ca", subject: "tasker-test-client", extensions: "extendedKeyUsage=clientAuth\n")
        return certificates
    }

    private func leaf(_ name: String, signedBy ca: String, subject: String, extensions: String) throws {
        try ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n" + extensions)
            .write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name).key",
            "-out", "\(name).csr", "-subj", "/CN=\(subject)",
        ])
        try openssl([
            "x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key", "-CAcreateserial",
            "-out", "\(name).pem", "-days", "2", "-extfile", "\(name).ext",
        ])
    }

    private func openssl(_ arguments: [String]) throws {
        let run = try Subprocess.run(
            "/usr/bin/openssl", arguments, environment: ProcessInfo.processInfo.environment, directory: directory)
        guard run.status == 0 else {
            throw TestSetupError("openssl \(arguments.joined(separator: " ")) failed: \(run.stderr)")
        }
    }
}
