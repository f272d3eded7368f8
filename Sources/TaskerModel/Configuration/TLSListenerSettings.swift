import TaskerStepModel

/// The TLS keys of every listener (`worker.web`, `worker.grpc`, `orchestration.web`), the same names in
/// each table: `tls_enabled`, `tls_cert_path`, `tls_key_path` (upstream's, on `worker.grpc`, where
/// upstream accepts and ignores them), and ours, `tls_client_ca_path`.
public protocol TLSListenerSettings {
    /// Serve TLS only (a plaintext client is refused).
    var tlsEnabled: Bool { get }
    /// PEM: the server's certificate, then any intermediates.
    var tlsCertPath: String { get }
    /// PEM: the certificate's private key.
    var tlsKeyPath: String { get }
    /// PEM: CA certificates; when set, a client must present a certificate that chains to one of them
    /// (mutual TLS). Empty: clients are not asked for a certificate.
    var tlsClientCaPath: String { get }
}

extension WorkerConfiguration.Web: TLSListenerSettings {}
extension WorkerConfiguration.GRPC: TLSListenerSettings {}
extension OrchestrationConfiguration.Web: TLSListenerSettings {}
