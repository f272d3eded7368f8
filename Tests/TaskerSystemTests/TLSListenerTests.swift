import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerHTTP
@testable import TaskerModel
@testable import TaskerWorker

/// TLS on every listener (issue #30 item 1): the worker's REST and gRPC servers and the
/// orchestration's task API, with real clients: `curl --cacert`, Python's grpcio with root
/// certificates, and the container's health check. A client trusting another CA is refused, a
/// plaintext client on a TLS port is refused (and the server goes on serving), mutual TLS refuses a
/// client without a certificate from the configured CA (REST and gRPC), a trickled handshake is closed
/// on both servers. Configuration errors name the key and file.
@Suite("TLS listeners", .timeLimit(.minutes(3)))
struct TLSListenerTests {
    /// `settings` with TLS on from `certificates` (mutual TLS when `mutual`).
    static func tls<S: TLSListenerKeys>(_ settings: inout S, _ certificates: TestCertificates, mutual: Bool = false) {
        settings.tlsEnabled = true
        settings.tlsCertPath = certificates.serverCertificate
        settings.tlsKeyPath = certificates.serverKey
        settings.tlsClientCaPath = mutual ? certificates.clientCA : ""
    }

    /// `curl` for `url` with `arguments`: exit status, HTTP status (0 when none), body. Never through a proxy.
    static func curl(_ url: String, _ arguments: [String]) async throws -> (status: Int32, http: Int, body: String) {
        var environment = ProcessInfo.processInfo.environment
        for proxy in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"] {
            environment[proxy] = nil
        }
        let run = try await Subprocess.run(
            "/usr/bin/curl",
            ["--silent", "--show-error", "--max-time", "20", "--write-out", "\n%{http_code}"] + arguments + [url],
            environment: environment, timeout: .seconds(30))
        let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (run.status, Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    // MARK: - The worker's REST server

    @Test("REST over TLS: curl --cacert gets /health; a wrong CA and plaintext are refused, and serving goes on")
    func restServesHTTPSOnly() async throws {
        let certificates = try TestCertificates.shared()
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db, waitForReady: false) { Self.tls(&$0.worker.web, certificates) }
            do {
                let url = "https://127.0.0.1:\(worker.port)/health"
                let ok = try await Self.curl(url, ["--cacert", certificates.ca])
                #expect(ok.status == 0 && ok.http == 200, "curl --cacert: \(ok)")
                #expect(ok.body.contains("\"status\""), "\(ok.body)")

                // The name in the certificate is checked too: localhost is in it.
                let byName = try await Self.curl(
                    "https://localhost:\(worker.port)/health",
                    ["--cacert", certificates.ca, "--resolve", "localhost:\(worker.port):127.0.0.1"])
                #expect(byName.status == 0 && byName.http == 200, "curl by name: \(byName)")

                // Another CA: curl cannot verify the server (60: peer certificate cannot be authenticated).
                let wrongCA = try await Self.curl(url, ["--cacert", certificates.otherCA])
                #expect(wrongCA.status == 60, "curl trusting another CA: \(wrongCA)")
                #expect(wrongCA.http == 0)

                // Plaintext on the TLS port: no HTTP answer.
                let plaintext = try await Self.curl("http://127.0.0.1:\(worker.port)/health", [])
                #expect(plaintext.status != 0 && plaintext.http == 0, "plaintext on a TLS port: \(plaintext)")

                // The server still serves.
                let after = try await Self.curl(url, ["--cacert", certificates.ca])
                #expect(after.http == 200, "after the refused clients: \(after)")
            } catch {
                try? await worker.stop()
                throw error
            }
            try await worker.stop()
        }
    }

    @Test("a client that trickles its TLS handshake is closed: REST by header_read_timeout_seconds, gRPC by tls_handshake_timeout_seconds")
    func trickledHandshakeIsClosed() async throws {
        let certificates = try TestCertificates.shared()
        try await ConnectionLimitTests.withWorker(configure: {
            Self.tls(&$0.worker.web, certificates)
            $0.worker.web.headerReadTimeoutSeconds = 1
            $0.worker.web.idleTimeoutSeconds = 120
            Self.tls(&$0.worker.grpc, certificates)
            $0.worker.grpc.tlsHandshakeTimeoutSeconds = 1
        }) { worker, connections in
            // Both ports speak TLS (so what follows tests a TLS handshake, not a plaintext parser).
            let rest = try await Self.curl("https://127.0.0.1:\(worker.port)/health", ["--cacert", certificates.ca])
            #expect(rest.http == 200, "\(rest)")
            let grpc = try await ConnectionLimitTests.grpcAddress(worker)
            let grpcTLS = try await Self.curl("https://127.0.0.1:\(grpc.port)/", ["--cacert", certificates.ca, "--http2"])
            #expect(grpcTLS.status == 0 || grpcTLS.http > 0, "the gRPC port did not complete a TLS handshake: \(grpcTLS)")

            for (name, port) in [("REST", worker.port), ("gRPC", grpc.port)] {
                let trickling = try await connections.connect(host: worker.host, port: port)
                // The start of a ClientHello record, then one byte every 200 ms: never a complete handshake.
                try await trickling.send([0x16, 0x03, 0x01, 0x02, 0x00])
                let started = ContinuousClock.now
                while !trickling.isClosed, started.duration(to: .now) < .seconds(15) {
                    try? await trickling.send([0x01])
                    try await Task.sleep(for: .milliseconds(200))
                }
                #expect(trickling.isClosed, "\(name): a trickled TLS handshake was not closed within 15 s (limit 1 s)")
            }
        }
    }

    @Test("REST with mutual TLS: only a client certificate from tls_client_ca_path is accepted")
    func restMutualTLS() async throws {
        let certificates = try TestCertificates.shared()
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db, waitForReady: false) {
                Self.tls(&$0.worker.web, certificates, mutual: true)
            }
            do {
                let url = "https://127.0.0.1:\(worker.port)/health"
                let ok = try await Self.curl(
                    url, ["--cacert", certificates.ca, "--cert", certificates.clientCertificate, "--key", certificates.clientKey])
                #expect(ok.status == 0 && ok.http == 200, "with the client certificate: \(ok)")

                let none = try await Self.curl(url, ["--cacert", certificates.ca])
                #expect(none.status != 0 && none.http == 0, "without a client certificate: \(none)")

                let other = try await Self.curl(
                    url, ["--cacert", certificates.ca, "--cert", certificates.otherClientCertificate, "--key", certificates.otherClientKey])
                #expect(other.status != 0 && other.http == 0, "a client certificate of another CA: \(other)")
            } catch {
                try? await worker.stop()
                throw error
            }
            try await worker.stop()
        }
    }

    @Test("the container's health check probes a TLS REST server (and presents a client certificate when told)")
    func containerHealthCheckWithTLS() async throws {
        let certificates = try TestCertificates.shared()
        let script = TestEnvironment.repositoryRoot + "/scripts/container/healthcheck"
        try await withTestDatabase { db in
            for mutual in [false, true] {
                let worker = try await WebTestWorker.start(db, waitForReady: false) {
                    Self.tls(&$0.worker.web, certificates, mutual: mutual)
                }
                do {
                    var environment = ProcessInfo.processInfo.environment
                    environment["TASKER_WEB_BIND_ADDRESS"] = "0.0.0.0:\(worker.port)"
                    if mutual {
                        let bare = try await Subprocess.run(script, [], environment: environment, timeout: .seconds(30))
                        #expect(bare.status == 1 && bare.stderr.contains("curl: ("), "mutual TLS without a client certificate: \(bare)")
                        // The server's own certificate is not from the client CA (nor for client use): refused.
                        environment["TASKER_HEALTHCHECK_CERT"] = certificates.serverCertificate
                        environment["TASKER_HEALTHCHECK_KEY"] = certificates.serverKey
                        let own = try await Subprocess.run(script, [], environment: environment, timeout: .seconds(30))
                        #expect(own.status == 1 && own.stderr.contains("curl: ("), "mutual TLS with the server's own certificate: \(own)")
                        environment["TASKER_HEALTHCHECK_CERT"] = certificates.otherClientCertificate
                        environment["TASKER_HEALTHCHECK_KEY"] = certificates.otherClientKey
                        let other = try await Subprocess.run(script, [], environment: environment, timeout: .seconds(30))
                        #expect(other.status == 1 && other.stderr.contains("unknown ca"), "a client certificate of another CA: \(other)")
                        environment["TASKER_HEALTHCHECK_CERT"] = certificates.clientCertificate
                        environment["TASKER_HEALTHCHECK_KEY"] = certificates.clientKey
                    }
                    let probe = try await Subprocess.run(script, [], environment: environment, timeout: .seconds(30))
                    #expect(probe.status == 0, "health check (mutual \(mutual)): \(probe)")
                } catch {
                    try? await worker.stop()
                    throw error
                }
                try await worker.stop()
            }
        }
    }

    // MARK: - The worker's gRPC server

    @Test(
        "gRPC over TLS: grpcio with the root certificate calls every RPC; a wrong CA and plaintext fail",
        .enabled(if: InteropEnvironment.python != nil, "TASKER_TEST_PYTHON is not set: scripts/test sets it"))
    func grpcOverTLS() async throws {
        let certificates = try TestCertificates.shared()
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db, waitForReady: false) {
                Self.tls(&$0.worker.grpc, certificates)
                $0.worker.web.configEndpointEnabled = true  // grpc_client.py calls GetConfig
            }
            do {
                let address = try #require(worker.daemon.boundAddresses.grpc)
                let template = ["--template", "webtest", "greet", "1.0.0"]
                let ok = try await InteropTests.runPython(
                    "grpc_client.py", [address] + template + ["--tls-ca", certificates.ca, "--tls-server-name", "localhost"])
                let json = try InteropTests.decode(ok, "grpc_client.py")
                #expect(ok.status == 0, "grpc_client.py over TLS: \(json["failures"].map(String.init(describing:)) ?? "?")")
                #expect(json["health"]?[""]?["status"] == .string("SERVING"))

                let wrongCA = try await InteropTests.runPython(
                    "grpc_client.py",
                    [address] + template + ["--tls-ca", certificates.otherCA, "--tls-server-name", "localhost", "--timeout", "3"])
                #expect(wrongCA.status == 1, "grpcio trusting another CA: \(wrongCA.stdout)")
                #expect(Self.couldNotConnect(try InteropTests.decode(wrongCA, "grpc_client.py")), "\(wrongCA.stdout)")

                let plaintext = try await InteropTests.runPython("grpc_client.py", [address] + template + ["--timeout", "3"])
                #expect(plaintext.status == 1, "a plaintext grpcio client on a TLS port: \(plaintext.stdout)")
                #expect(Self.couldNotConnect(try InteropTests.decode(plaintext, "grpc_client.py")), "\(plaintext.stdout)")
            } catch {
                try? await worker.stop()
                throw error
            }
            try await worker.stop()
        }
    }

    @Test(
        "gRPC with mutual TLS: grpcio with a client certificate from tls_client_ca_path is served, without one it is not",
        .enabled(if: InteropEnvironment.python != nil, "TASKER_TEST_PYTHON is not set: scripts/test sets it"))
    func grpcMutualTLS() async throws {
        let certificates = try TestCertificates.shared()
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db, waitForReady: false) {
                Self.tls(&$0.worker.grpc, certificates, mutual: true)
                $0.worker.web.configEndpointEnabled = true
            }
            do {
                let address = try #require(worker.daemon.boundAddresses.grpc)
                let base = [
                    address, "--template", "webtest", "greet", "1.0.0", "--tls-ca", certificates.ca, "--tls-server-name", "localhost",
                ]
                let ok = try await InteropTests.runPython(
                    "grpc_client.py", base + ["--tls-cert", certificates.clientCertificate, "--tls-key", certificates.clientKey])
                let json = try InteropTests.decode(ok, "grpc_client.py")
                #expect(ok.status == 0, "with the client certificate: \(json["failures"].map(String.init(describing:)) ?? "?")")
                for (what, extra) in [
                    ("without a client certificate", [String]()),
                    (
                        "with a certificate of another CA",
                        ["--tls-cert", certificates.otherClientCertificate, "--tls-key", certificates.otherClientKey]
                    ),
                ] {
                    let refused = try await InteropTests.runPython("grpc_client.py", base + extra + ["--timeout", "3"])
                    let answer = try InteropTests.decode(refused, "grpc_client.py")
                    #expect(refused.status == 1, "\(what): \(refused.stdout)")
                    #expect(Self.couldNotConnect(answer), "\(what): \(refused.stdout)")
                }
            } catch {
                try? await worker.stop()
                throw error
            }
            try await worker.stop()
        }
    }

    /// grpc_client.py's report of a channel that never became ready.
    static func couldNotConnect(_ json: JSONValue) -> Bool {
        json["failures"]?.arrayValue?.contains { $0.stringValue?.hasPrefix("could not connect to") == true } == true
    }

    // MARK: - The orchestration's task API

    @Test("the orchestration's task API over TLS: curl --cacert is answered, plaintext is not")
    func orchestrationAPIOverTLS() async throws {
        let certificates = try TestCertificates.shared()
        try await LiveOrchestrationAPI.with(configure: { Self.tls(&$0, certificates) }) { api in
            let url = "https://127.0.0.1:\(api.port)/health"
            let ok = try await Self.curl(url, ["--cacert", certificates.ca])
            #expect(ok.status == 0 && ok.http == 200, "curl --cacert: \(ok)")
            let plaintext = try await Self.curl("http://127.0.0.1:\(api.port)/health", [])
            #expect(plaintext.http == 0, "plaintext on a TLS port: \(plaintext)")
            let wrongCA = try await Self.curl(url, ["--cacert", certificates.otherCA])
            #expect(wrongCA.status == 60, "another CA: \(wrongCA)")
        }
    }

    // MARK: - Configuration errors

    @Test("TLS configuration errors name the key and the file, and stop the worker's boot")
    func configurationErrors() async throws {
        let certificates = try TestCertificates.shared()
        func error(_ configure: (inout WorkerConfiguration.GRPC) -> Void) -> String? {
            var grpc = WorkerConfiguration.GRPC()
            Self.tls(&grpc, certificates)
            configure(&grpc)
            do {
                _ = try ServerTLS.load(grpc, section: "worker.grpc")
                return nil
            } catch {
                return error.description
            }
        }
        #expect(error { _ in } == nil)
        #expect(error { $0.tlsClientCaPath = certificates.clientCA } == nil)
        #expect(error { $0.tlsCertPath = "" } == "worker.grpc.tls_enabled = true needs worker.grpc.tls_cert_path: it is empty")
        #expect(error { $0.tlsKeyPath = "" } == "worker.grpc.tls_enabled = true needs worker.grpc.tls_key_path: it is empty")
        #expect(error { $0.tlsCertPath = "/nonexistent/server.pem" } == "worker.grpc.tls_cert_path: /nonexistent/server.pem does not exist")
        #expect(error { $0.tlsKeyPath = "/dev/zero" } == "worker.grpc.tls_key_path: /dev/zero is not a regular file")
        #expect(
            error { $0.tlsClientCaPath = certificates.directory }
                == "worker.grpc.tls_client_ca_path: \(certificates.directory) is not a regular file")
        // A key file holding a certificate, a certificate file holding a key, the key of another certificate.
        #expect(
            error { $0.tlsKeyPath = certificates.ca }?.hasPrefix("worker.grpc.tls_key_path: \(certificates.ca) holds no PEM private key")
                == true)
        #expect(
            error { $0.tlsCertPath = certificates.serverKey }?.hasPrefix(
                "worker.grpc.tls_cert_path: \(certificates.serverKey) holds no PEM certificate") == true)
        #expect(
            error { $0.tlsKeyPath = certificates.clientKey }?.hasPrefix(
                "worker.grpc: the TLS context cannot be made from worker.grpc.tls_cert_path (\(certificates.serverCertificate)), "
                    + "worker.grpc.tls_key_path (\(certificates.clientKey)): the key may not be the certificate's") == true)
        #expect(
            error {
                $0.tlsEnabled = false
                $0.tlsCertPath = "/nonexistent"
            } == nil, "TLS off: the paths are not read")

        // Symbolic links are followed (Kubernetes secret volumes are links into ..data/).
        let link = certificates.path("link-\(UUID().uuidString).pem")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: certificates.serverCertificate)
        #expect(error { $0.tlsCertPath = link } == nil)
        // A FIFO with no writer: refused at once, not waited on.
        let fifo = certificates.path("fifo-\(UUID().uuidString)")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(error { $0.tlsKeyPath = fifo } == "worker.grpc.tls_key_path: \(fifo) is not a regular file")
        #expect(
            error { $0.tlsCertPath = certificates.serverCertificate + "/x" }?.hasSuffix(
                "does not exist (a part of the path is not a directory)") == true)
        // Paths set while TLS is off: a warning, not silence.
        var off = WorkerConfiguration.GRPC()
        off.tlsCertPath = certificates.serverCertificate
        #expect(ServerTLS.unusedKeysWarning(off, section: "worker.grpc")?.contains("serves plaintext") == true)
        #expect(ServerTLS.unusedKeysWarning(WorkerConfiguration.GRPC(), section: "worker.grpc") == nil)

        // An unreadable file (as a non-root user would see it; root reads anything, so only then).
        if geteuid() != 0 {
            let locked = certificates.path("locked.key")
            try FileManager.default.copyItem(atPath: certificates.serverKey, toPath: locked)
            try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: locked)
            #expect(error { $0.tlsKeyPath = locked }?.hasSuffix("cannot be read: permission denied") == true)
        }
        // A file larger than the bound: an error, not a read of all of it.
        let huge = certificates.path("huge.pem")
        if !FileManager.default.fileExists(atPath: huge) {
            try Data(count: ConfigurationFile.maximumBytes + 1).write(to: URL(fileURLWithPath: huge))
        }
        #expect(error { $0.tlsCertPath = huge } == "worker.grpc.tls_cert_path: \(huge) is larger than 1048576 bytes")

        // The worker's boot stops on it, naming the key, before it serves anything.
        try await withTestDatabase { db in
            var configuration = WebTestWorker.configuration(db)
            configuration.worker.web.tlsEnabled = true
            configuration.worker.web.tlsCertPath = "/nonexistent/server.pem"
            configuration.worker.web.tlsKeyPath = certificates.serverKey
            let daemon = WorkerDaemon(
                configuration: configuration, handlers: .withBuiltIns(),
                templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": certificates.directory]))
            await #expect {
                try await daemon.run()
            } throws: { error in
                (error as? ServerTLSError)?.description == "worker.web.tls_cert_path: /nonexistent/server.pem does not exist"
            }
            #expect(daemon.boundAddresses.web == nil)
        }
    }
}

/// The TLS keys as the tests write them (every listener's table has them).
protocol TLSListenerKeys {
    var tlsEnabled: Bool { get set }
    var tlsCertPath: String { get set }
    var tlsKeyPath: String { get set }
    var tlsClientCaPath: String { get set }
}

extension WorkerConfiguration.Web: TLSListenerKeys {}
extension WorkerConfiguration.GRPC: TLSListenerKeys {}
extension OrchestrationConfiguration.Web: TLSListenerKeys {}
