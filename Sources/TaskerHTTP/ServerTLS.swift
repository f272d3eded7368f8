import NIOSSL
import TaskerModel

/// A listener's TLS material (`TLSListenerSettings` of `worker.web`, `worker.grpc` or
/// `orchestration.web`), read and checked once at start: the certificate chain, the private key (which
/// must match the chain's first certificate) and, for mutual TLS, the CA certificates a client's
/// certificate must chain to. Every error names the key and the file.
///
/// The same material serves both kinds of listener: ``configuration`` for the REST servers (NIOSSL,
/// through HummingbirdTLS), the PEM bytes for the gRPC transport's own TLS configuration. TLS 1.2 is the
/// lowest version offered; for TLS 1.2 only ECDHE key exchange with AEAD ciphers (``tls12CipherSuites``)
/// on REST; gRPC uses grpc-swift's NIOSSL defaults.
package struct ServerTLS: Sendable {
    /// PEM: the server's certificate, then any intermediates (as read from `tls_cert_path`).
    package let certificateChainPEM: [UInt8]
    /// PEM: the private key (`tls_key_path`).
    package let privateKeyPEM: [UInt8]
    /// PEM: the CA certificates of mutual TLS (`tls_client_ca_path`); nil: no client certificate asked for.
    package let clientCAPEM: [UInt8]?

    let certificateChain: [NIOSSLCertificate]
    let privateKey: NIOSSLPrivateKey
    let clientCAs: [NIOSSLCertificate]?

    /// The material `settings` names, or nil when `tls_enabled` is false. `section` names the table
    /// in errors (`worker.grpc`).
    package static func load(_ settings: some TLSListenerSettings, section: String) throws(ServerTLSError) -> ServerTLS? {
        guard settings.tlsEnabled else { return nil }
        let certKey = section + ".tls_cert_path"
        let keyKey = section + ".tls_key_path"
        let caKey = section + ".tls_client_ca_path"
        for (key, path) in [(certKey, settings.tlsCertPath), (keyKey, settings.tlsKeyPath)] where path.isEmpty {
            throw ServerTLSError(description: "\(section).tls_enabled = true needs \(key): it is empty")
        }
        let chainPEM = try read(settings.tlsCertPath, key: certKey)
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(chainPEM)
        } catch {
            throw ServerTLSError(description: "\(certKey): \(settings.tlsCertPath) holds no PEM certificate that parses (\(error))")
        }
        guard !chain.isEmpty else {
            throw ServerTLSError(description: "\(certKey): \(settings.tlsCertPath) holds no PEM certificate")
        }
        let keyPEM = try read(settings.tlsKeyPath, key: keyKey)
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: keyPEM, format: .pem)
        } catch {
            throw ServerTLSError(
                description: "\(keyKey): \(settings.tlsKeyPath) holds no PEM private key that parses (an encrypted key is not "
                    + "supported: decrypt it, e.g. `openssl pkey -in key.pem -out plain.pem`) (\(error))")
        }
        var caPEM: [UInt8]?
        var cas: [NIOSSLCertificate]?
        if !settings.tlsClientCaPath.isEmpty {
            let bytes = try read(settings.tlsClientCaPath, key: caKey)
            let parsed = try? NIOSSLCertificate.fromPEMBytes(bytes)
            guard let parsed, !parsed.isEmpty else {
                throw ServerTLSError(description: "\(caKey): \(settings.tlsClientCaPath) holds no PEM certificate that parses")
            }
            caPEM = bytes
            cas = parsed
        }
        let tls = ServerTLS(
            certificateChainPEM: chainPEM, privateKeyPEM: keyPEM, clientCAPEM: caPEM,
            certificateChain: chain, privateKey: key, clientCAs: cas)
        do {
            // BoringSSL checks here that the key belongs to the chain's first certificate.
            _ = try NIOSSLContext(configuration: tls.configuration)
        } catch {
            throw ServerTLSError(
                description: "\(section): the TLS context cannot be made from \(certKey) (\(settings.tlsCertPath)), "
                    + "\(keyKey) (\(settings.tlsKeyPath))\(cas == nil ? "" : " and \(caKey)"): the key may not be the "
                    + "certificate's (\(error))")
        }
        return tls
    }

    /// A warning when `tls_enabled` is false but a `tls_*` path is set: the listener serves plaintext
    /// although its table names certificate files (a forgotten switch).
    package static func unusedKeysWarning(_ settings: some TLSListenerSettings, section: String) -> String? {
        guard !settings.tlsEnabled, !(settings.tlsCertPath + settings.tlsKeyPath + settings.tlsClientCaPath).isEmpty else { return nil }
        return "\(section).tls_enabled is false but its tls_*_path keys are set: the listener serves plaintext"
    }

    /// The server side of NIOSSL: this chain and key, TLS 1.2 or later, and with a client CA, a client
    /// certificate required and verified against it (no hostname check: clients have no host name).
    package var configuration: TLSConfiguration {
        var c = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificateChain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        c.minimumTLSVersion = .tlsv12
        c.cipherSuiteValues = Self.tls12CipherSuites
        if let clientCAs {
            c.certificateVerification = .noHostnameVerification
            c.trustRoots = .certificates(clientCAs)
            c.sendCANameList = true
        }
        return c
    }

    /// TLS 1.2's suites offered by the REST servers: forward-secret (ECDHE) and AEAD only (no static
    /// RSA key exchange, no CBC). TLS 1.3's suites are BoringSSL's fixed set.
    static let tls12CipherSuites: [NIOTLSCipher] = [
        .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ]

    private static func read(_ path: String, key: String) throws(ServerTLSError) -> [UInt8] {
        do {
            return try ConfigurationFile.read(path, key: key)
        } catch {
            throw ServerTLSError(description: error.description)
        }
    }
}

/// A listener's TLS could not be set up: the key, the file, and what was wrong.
public struct ServerTLSError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
