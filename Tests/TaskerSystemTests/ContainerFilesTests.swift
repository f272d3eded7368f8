import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The container without a Docker engine, run for real: the commands `docker-compose.yml` gives the
/// image are subcommands of the built `tasker-worker`; the image's file layout is staged by
/// `scripts/container/build --binary` (the same staging the builder stage runs, with the debug binary)
/// and its entrypoint and health check are run against a test database. (The static checks of
/// `Dockerfile` and `docker-compose.yml` against the repository are `ContainerDefinitionTests` in
/// TaskerWorkerTests.)
@Suite("container files", .timeLimit(.minutes(3)))
struct ContainerFilesTests {
    @Test func composeCommandsAreRealSubcommands() throws {
        let help = try Self.run(Self.workerBinary, ["--help"])
        #expect(help.status == 0, "\(help.stderr)")
        let subcommands = Self.subcommands(inHelp: help.stdout)
        #expect(subcommands.isSuperset(of: ["run", "migrate"]), "\(subcommands)")
        let compose = try Compose.load()
        var commands = [try #require(Dockerfile.load().runtime.instructions.last { $0.keyword == "CMD" }?.execForm)]
        for name in compose.workerServiceNames {
            commands.append(try #require(compose.service(name)?["command"] as? [String], "\(name) has no exec-form command"))
        }
        for command in commands {
            let subcommand = try #require(command.first)
            #expect(subcommands.contains(subcommand), "\(command) is not a tasker-worker subcommand")
            guard subcommands.contains(subcommand) else { continue }
            let usage = try Self.run(Self.workerBinary, [subcommand, "--help"]).stdout
            for option in command.dropFirst() where option.hasPrefix("--") {
                #expect(usage.contains(option.components(separatedBy: "=")[0]), "\(subcommand) has no option \(option)")
            }
        }
        #expect(compose.service("migrate")?["command"] as? [String] == ["migrate"])
        // The image holds the production binary only: the demo runs its built-in handlers.
        #expect(compose.service("worker")?["command"] as? [String] == ["run"])
    }

    /// The layout `scripts/container/build` stages is what the Dockerfile's runtime stage names, and
    /// the template path and mounts in compose point at real templates.
    @Test func stagedImageHoldsEveryPathTheDockerfileAndComposeName() throws {
        let prefix = try Self.stageImage()
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let dockerfile = try Dockerfile.load()
        let runtime = dockerfile.runtime
        let workdir = try #require(runtime.instructions.last { $0.keyword == "WORKDIR" }?.arguments)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: prefix + workdir, isDirectory: &isDirectory) && isDirectory.boolValue)
        for copy in runtime.copies where copy.from == "builder" {
            #expect(copy.destination == "/", "the staged tree is copied to /")
        }
        let executables = [
            runtime.instructions.last { $0.keyword == "ENTRYPOINT" }?.execForm?.first,
            dockerfile.healthcheck?.command.first, "/usr/local/bin/tasker-worker",
        ].compactMap { $0 }
        #expect(executables.count == 3)
        for path in executables {
            #expect(FileManager.default.isExecutableFile(atPath: prefix + path), "the image has no executable \(path)")
        }
        for (name, value) in runtime.environment where value.hasPrefix("/") {
            #expect(FileManager.default.fileExists(atPath: prefix + value), "ENV \(name)=\(value) is not in the image")
        }
        // The configuration loads from WORKDIR as the worker does (relative config/tasker).
        for environment in ConfigurationLoader.environments {
            _ = try ConfigurationLoader(
                environment: ["TASKER_ENV": environment],
                configRoot: prefix + workdir + "/config/tasker"
            ).load()
        }
        // compose: TASKER_TEMPLATE_PATH is in the image; a bind mount over it brings real templates.
        let compose = try Compose.load()
        for name in compose.workerServiceNames {
            let env = try #require(compose.service(name)?["environment"] as? [String: Any])
            let templates = try #require(env["TASKER_TEMPLATE_PATH"] as? String)
            #expect(templates.hasPrefix("/"))
            let baked = TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": prefix + templates]).loadAll()
            #expect(
                baked.directory?.hasSuffix(templates) == true && !baked.templates.isEmpty && baked.problems.isEmpty,
                "\(name): no templates at \(templates) in the image: \(baked.problems)")
            // Only templates whose handlers the image's `run` has: no example workflow is served by it.
            #expect(
                baked.templates.allSatisfy { $0.template.namespaceName == "diagnostics" },
                "\(baked.templates.map(\.template.namespaceName))")
            for volume in compose.service(name)?["volumes"] as? [String] ?? [] {
                let parts = volume.split(separator: ":").map(String.init)
                guard parts.count >= 2, parts[0].hasPrefix(".") else { continue }
                let source = Repo.normalize(parts[0])
                #expect(Repo.exists(source), "\(name) mounts \(parts[0]), which does not exist")
                if parts[1] == templates {
                    let mounted = TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": Repo.path(source)]).loadAll()
                    #expect(!mounted.templates.isEmpty && mounted.problems.isEmpty, "\(mounted.problems)")
                }
            }
        }
    }

    // MARK: - The entrypoint and health check, for real

    /// Runs the staged image as the Dockerfile describes it (WORKDIR, ENV, ENTRYPOINT + CMD, with the
    /// image's absolute paths under the staging prefix) against an empty database: the entrypoint
    /// migrates (TASKER_MIGRATE_ON_START), the worker boots with the image's templates, `/health`
    /// answers 200 and the image's health check passes; SIGTERM stops it with status 0.
    @Test func entrypointRunsTheStagedImageAgainstARealDatabase() async throws {
        let prefix = try Self.stageImage()
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let pgmqScript = try #require(TestEnvironment.pgmqScript, "PGMQ's SQL script is needed (scripts/test installs it)")
        try await withEmptyTestDatabase { db in
            let dockerfile = try Dockerfile.load()
            let runtime = dockerfile.runtime
            let workdir = try #require(runtime.instructions.last { $0.keyword == "WORKDIR" }?.arguments)
            let entrypoint = try #require(runtime.instructions.last { $0.keyword == "ENTRYPOINT" }?.execForm)
            let cmd = try #require(runtime.instructions.last { $0.keyword == "CMD" }?.execForm)
            let healthcheck = try #require(dockerfile.healthcheck?.command)
            let port = try freeLoopbackPort()
            var environment = Self.imageEnvironment(prefix: prefix, runtime: runtime)
            environment["TASKER_ENV"] = "production"
            environment["DATABASE_URL"] = db.url
            environment["TASKER_MIGRATE_ON_START"] = "true"
            environment["TASKER_PGMQ_SQL"] = pgmqScript  // plain Debian PostgreSQL has no pgmq extension
            environment["TASKER_WEB_BIND_ADDRESS"] = "127.0.0.1:\(port)"
            environment["TASKER_WORKER_GRPC_BIND_ADDRESS"] = "127.0.0.1:0"

            let child = try Subprocess.start(
                prefix + entrypoint[0], Array(entrypoint.dropFirst()) + cmd, environment: environment,
                directory: prefix + workdir, combinedOutput: true)
            let process = child.process
            defer { if process.isRunning { Self.killWithChildren(process.processIdentifier) } }
            let output = { child.output }

            // GET /health over a real socket.
            var health: TestClient.Response?
            let deadline = ContinuousClock.now.advanced(by: .seconds(90))
            while health == nil, process.isRunning, ContinuousClock.now < deadline {
                health = try? await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                    try await client.execute(TestClient.Request("/health", method: .get))
                }
                if health == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let response = try #require(health, "no answer on /health; worker output:\n\(output())")
            #expect(response.status == .ok)
            let body = try JSONSerialization.jsonObject(with: Data(String(buffer: response.body ?? ByteBuffer()).utf8)) as? [String: Any]
            #expect(body?["status"] as? String == "healthy")

            // exec: the process started as the entrypoint is now the worker itself (so it gets SIGTERM).
            let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/exe")
            #expect(executable == prefix + "/usr/local/bin/tasker-worker", "the entrypoint did not exec the worker")

            // The entrypoint migrated the empty database, and the worker registered the image's templates.
            #expect(output().contains("TASKER_MIGRATE_ON_START"), "\(output())")
            let admin = try await db.connect()
            #expect(try await !admin.query("SELECT 1 FROM tasker.task_namespaces WHERE name = 'diagnostics'").isEmpty)
            await admin.close()

            // The image's health check, with the image's environment.
            let probe = try Self.run(prefix + healthcheck[0], Array(healthcheck.dropFirst()), environment: environment)
            #expect(probe.status == 0, "health check failed: \(probe.stderr)")

            process.terminate()  // SIGTERM: the entrypoint exec'd the worker, so the worker gets it
            try await waitUntil(timeout: .seconds(30)) { !process.isRunning }
            if process.isRunning {
                Issue.record("the worker did not stop within 30 s of SIGTERM:\n\(output())")
                return
            }
            #expect(process.terminationStatus == 0, "\(output())")
            #expect(output().contains("tasker worker stopped"))

            // Nothing listens any more: the health check must fail.
            let down = try Self.run(prefix + healthcheck[0], Array(healthcheck.dropFirst()), environment: environment)
            #expect(down.status != 0)
        }
    }

    struct RefusalCase: Sendable, CustomTestStringConvertible {
        let name: String
        let environment: [String: String]
        let message: String
        var testDescription: String { name }
    }

    @Test(arguments: [
        RefusalCase(
            name: "no DATABASE_URL", environment: ["TASKER_ENV": "production"],
            message: "DATABASE_URL is not set"),
        RefusalCase(
            name: "empty DATABASE_URL", environment: ["TASKER_ENV": "production", "DATABASE_URL": ""],
            message: "DATABASE_URL is not set"),
        RefusalCase(
            name: "not a PostgreSQL URL", environment: ["TASKER_ENV": "production", "DATABASE_URL": "mysql://db/x"],
            message: "DATABASE_URL must be a postgres:// or postgresql:// URL"),
        RefusalCase(
            name: "no TASKER_ENV", environment: ["DATABASE_URL": "postgresql://tasker@127.0.0.1:1/x"],
            message: "TASKER_ENV is not set"),
        RefusalCase(
            name: "bad TASKER_ENV", environment: ["TASKER_ENV": "staging", "DATABASE_URL": "postgresql://tasker@127.0.0.1:1/x"],
            message: "TASKER_ENV='staging' is not one of"),
        RefusalCase(
            name: "bad TASKER_MIGRATE_ON_START",
            environment: [
                "TASKER_ENV": "test", "DATABASE_URL": "postgresql://tasker@127.0.0.1:1/x",
                "TASKER_MIGRATE_ON_START": "sometimes",
            ],
            message: "TASKER_MIGRATE_ON_START='sometimes' must be true or false"),
        RefusalCase(
            name: "missing worker binary",
            environment: [
                "TASKER_ENV": "test", "DATABASE_URL": "postgresql://tasker@127.0.0.1:1/x",
                "TASKER_WORKER_BIN": "/nonexistent/tasker-worker",
            ],
            message: "worker executable not found"),
    ])
    func entrypointRefusesToStartWhenMisconfigured(_ refusal: RefusalCase) throws {
        var environment = ["TASKER_WORKER_BIN": Self.workerBinary]
        environment.merge(refusal.environment) { _, new in new }
        let outcome = try Self.run(Repo.path("scripts/container/entrypoint"), ["run"], environment: environment)
        #expect(outcome.status == 78, "status \(outcome.status): \(outcome.stderr)")
        #expect(outcome.stderr.hasPrefix("tasker-entrypoint: error: "), "\(outcome.stderr)")
        #expect(outcome.stderr.contains(refusal.message), "\(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n").count == 1, "one clear line, and the worker never started: \(outcome.stderr)")
    }

    /// With a valid environment the entrypoint execs the worker with its arguments; `TASKER_MIGRATE_ON_START`
    /// only applies to `run` (here the database is unreachable, so a migration would fail).
    @Test func entrypointPassesItsArgumentsToTheWorker() throws {
        let outcome = try Self.run(
            Repo.path("scripts/container/entrypoint"), ["config", "check"],
            environment: [
                "TASKER_WORKER_BIN": Self.workerBinary, "TASKER_ENV": "test", "TASKER_MIGRATE_ON_START": "true",
                "DATABASE_URL": "postgresql://tasker:s3cret-pw@127.0.0.1:1/tasker_test",
            ], directory: Repo.root)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("max_concurrent_handlers"))
        #expect(outcome.stdout.contains("127.0.0.1:1/tasker_test") && !outcome.stdout.contains("s3cret-pw"))
        #expect(!outcome.stderr.contains("migrate"), "\(outcome.stderr)")
        let help = try Self.run(
            Repo.path("scripts/container/entrypoint"), ["--help"],
            environment: ["TASKER_WORKER_BIN": Self.workerBinary])
        #expect(help.status == 0 && help.stdout.contains("SUBCOMMANDS"), "help needs no configuration: \(help.stderr)")
    }

    // MARK: - Helpers

    static var workerBinary: String { CommandLineTests.binary }

    /// `scripts/container/build --binary <debug tasker-worker> PREFIX`: the image's layout in a temp dir.
    static func stageImage() throws -> String {
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("tasker-image-\(UUID().uuidString)").path
        let outcome = try run(Repo.path("scripts/container/build"), ["--binary", workerBinary, prefix])
        guard outcome.status == 0 else {
            try? FileManager.default.removeItem(atPath: prefix)
            throw TestSetupError("scripts/container/build --binary failed (\(outcome.status)):\n\(outcome.stderr)")
        }
        return prefix
    }

    /// The runtime stage's ENV with absolute paths moved under `prefix`, plus PATH and HOME.
    static func imageEnvironment(prefix: String, runtime: DockerStage) -> [String: String] {
        var environment = [
            "PATH": "\(prefix)/usr/local/bin:/usr/local/bin:/usr/bin:/bin",
            "HOME": prefix, "TMPDIR": NSTemporaryDirectory(),
        ]
        for (name, value) in runtime.environment {
            environment[name] = value.hasPrefix("/") ? prefix + value : value
        }
        return environment
    }

    static func subcommands(inHelp help: String) -> Set<String> {
        guard let range = help.range(of: "SUBCOMMANDS:") else { return [] }
        var names: Set<String> = []
        for line in help[range.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).dropFirst() {
            if line.isEmpty || !line.hasPrefix(" ") { if !names.isEmpty { break } else { continue } }
            if let match = line.wholeMatch(of: #/  ([a-z][a-z-]*)\b.*/#) { names.insert(String(match.output.1)) }
        }
        return names
    }

    /// SIGKILL to `pid` and its direct children (a broken entrypoint that forks instead of exec'ing
    /// must not leave a worker behind).
    static func killWithChildren(_ pid: Int32) {
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        kill(pid, SIGKILL)
        for child in children.split(separator: " ").compactMap({ Int32($0) }) { kill(child, SIGKILL) }
    }

    typealias Outcome = Subprocess.Outcome

    /// Runs `executable` with exactly `environment` (nothing inherited but PATH), output in temp files.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        directory: String? = nil
    ) throws -> Outcome {
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        env.merge(environment) { _, new in new }
        return try Subprocess.run(executable, arguments, environment: env, directory: directory)
    }
}
