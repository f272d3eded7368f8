import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing
import Yams

@testable import TaskerModel
@testable import TaskerWorker

/// The container without a Docker engine: `Dockerfile` and `docker-compose.yml` are parsed and every
/// reference they make (build-context paths, scripts, ports, env names, commands, the health check,
/// the template path) is checked against the repository; then the image's file layout is staged by
/// `scripts/container/build --binary` (the same staging the builder stage runs, with the debug binary)
/// and its entrypoint and health check are run for real against a test database.
@Suite("container files", .timeLimit(.minutes(3)))
struct ContainerFilesTests {
    // MARK: - Static checks of the Dockerfile

    @Test func dockerfileParserJoinsContinuationsAndSkipsComments() throws {
        let instructions = DockerfileParser.parse(
            """
            # syntax=docker/dockerfile:1
            FROM swift:6.3 AS builder
            RUN a \\
                # a comment inside a continuation is dropped
                && b \\

                && c
            ENV A=1 \\
                B="two words"
            HEALTHCHECK --interval=5s \\
                CMD ["/bin/check", "x"]
            """)
        #expect(instructions.map(\.keyword) == ["FROM", "RUN", "ENV", "HEALTHCHECK"])
        #expect(instructions[1].arguments.split(separator: " ").filter { !$0.isEmpty } == ["a", "&&", "b", "&&", "c"])
        #expect(DockerInstruction.environment(instructions[2]).map { "\($0.0)=\($0.1)" } == ["A=1", "B=two words"])
        let check = try #require(DockerInstruction.healthcheck(instructions[3]))
        #expect(check.options == ["interval": "5s"])
        #expect(check.command == ["/bin/check", "x"])
    }

    @Test func dockerIgnoreMatchesLikeDocker() throws {
        let ignore = DockerIgnore(text: ".build\n.build*\n**/__pycache__\n*.pyc\n!keep.pyc\n/docs/*.tmp\n")
        #expect(ignore.excludes(".build/debug/tasker-worker"))
        #expect(ignore.excludes(".build-release"))
        #expect(ignore.excludes("Sources/x/__pycache__/m.py"))
        #expect(ignore.excludes("a.pyc"))
        #expect(!ignore.excludes("keep.pyc"))
        #expect(!ignore.excludes("sub/a.pyc"))  // `*` does not cross directories
        #expect(ignore.excludes("docs/x.tmp"))
        #expect(!ignore.excludes("Sources/TaskerWorker/Runtime/Version.swift"))
    }

    @Test func everyCopySourceIsInTheBuildContext() throws {
        let dockerfile = try Dockerfile.load()
        let ignore = try DockerIgnore.load()
        var checked = 0
        for stage in dockerfile.stages {
            for copy in stage.copies where copy.from == nil {
                var matched = 0
                for source in copy.sources {
                    if DockerIgnore.isGlob(source) {
                        let pattern = try Regex(DockerIgnore.regex(for: source))
                        matched += try FileManager.default.contentsOfDirectory(atPath: Repo.root)
                            .filter { (try? pattern.wholeMatch(in: $0)) != nil && !ignore.excludes($0) }.count
                    } else {
                        let relative = Repo.normalize(source)
                        #expect(Repo.exists(relative), "COPY source \(source) (line \(copy.line)) does not exist")
                        #expect(
                            relative == "" || !ignore.excludes(relative),
                            "COPY source \(source) (line \(copy.line)) is excluded by .dockerignore")
                        matched += 1
                    }
                }
                #expect(matched > 0, "COPY at line \(copy.line) copies nothing")
                checked += 1
            }
        }
        #expect(checked >= 2)
        // `COPY . .` hands the whole context to the build script: what the script and SwiftPM read must be in it.
        let build = try Repo.read("scripts/container/build")
        let scriptInputs = build.matches(of: #/"\$\{ROOT\}"?/([A-Za-z0-9_./-]+)/#).map { Repo.normalize(String($0.output.1)) }
        #expect(
            Set(scriptInputs).isSuperset(of: ["migrations", "config/tasker", "config/tasks/diagnostics", "scripts/container/entrypoint"]),
            "\(scriptInputs)")
        for path in Set(scriptInputs + ["Package.swift", "Sources", "Tests"]) {
            #expect(Repo.exists(path), "the build script reads \(path), which does not exist")
            #expect(!ignore.excludes(path), "the build script reads \(path), which .dockerignore excludes")
        }
        #expect(ignore.excludes(".build/debug/tasker-worker"), ".dockerignore must keep .build out of the context")
    }

    @Test func theImageIsBuiltAndStartedByTheContainerScripts() throws {
        let dockerfile = try Dockerfile.load()
        #expect(dockerfile.stages.count >= 2, "multi-stage")
        let builder = try #require(dockerfile.stages.first { $0.name == "builder" })
        let runtime = dockerfile.runtime
        #expect(runtime.base.contains("slim"), "runtime base \(runtime.base) should be a slim Debian image")

        // Every script a RUN names exists and is executable.
        for stage in dockerfile.stages {
            for run in stage.instructions where run.keyword == "RUN" {
                for match in run.arguments.matches(of: #/(?:^|[\s;&|])((?:\./)?scripts/[A-Za-z0-9_./-]+)/#) {
                    let script = Repo.normalize(String(match.output.1))
                    #expect(FileManager.default.isExecutableFile(atPath: Repo.path(script)), "\(script) is not executable")
                }
            }
        }
        // The builder runs the build script into an output directory that the runtime stage copies.
        let buildRun = try #require(
            builder.instructions.first {
                $0.keyword == "RUN" && $0.arguments.hasPrefix("scripts/container/build ")
            }, "the builder stage must RUN scripts/container/build")
        let words = DockerInstruction.words(buildRun.arguments)
        #expect(words.count == 2 && words[1].hasPrefix("/"), "RUN scripts/container/build OUT (full build), got \(words)")
        let out = words.last!
        #expect(builder.instructions.contains { $0.keyword == "ENV" && $0.arguments.contains("SWIFT_DETERMINISTIC_HASHING=1") })
        #expect(try Repo.read("scripts/container/build").contains("--static-swift-stdlib"))
        let fromBuilder = runtime.copies.filter { $0.from == "builder" }
        #expect(!fromBuilder.isEmpty)
        for copy in fromBuilder {
            #expect(copy.sources.allSatisfy { $0.hasPrefix(out) }, "runtime copies \(copy.sources) from outside \(out)")
        }
        // Non-root, ports, health check, entrypoint through the scripts.
        let user = try #require(runtime.instructions.last { $0.keyword == "USER" })
        #expect(!["root", "0", "root:root", "0:0"].contains(user.arguments))
        let entrypoint = try #require(runtime.instructions.last { $0.keyword == "ENTRYPOINT" }?.execForm)
        #expect(entrypoint == ["/usr/local/bin/tasker-entrypoint"])
        let healthcheck = try #require(dockerfile.healthcheck)
        #expect(healthcheck.command == ["/usr/local/bin/tasker-healthcheck"])
        let build = try Repo.read("scripts/container/build")
        #expect(build.contains(#""${ROOT}/scripts/container/entrypoint" "${prefix}/${BIN_DIR}/tasker-entrypoint""#))
        #expect(build.contains(#""${ROOT}/scripts/container/healthcheck" "${prefix}/${BIN_DIR}/tasker-healthcheck""#))
        #expect(build.contains(#"BIN_DIR="usr/local/bin""#))
        for script in ["scripts/container/build", "scripts/container/entrypoint", "scripts/container/healthcheck"] {
            #expect(FileManager.default.isExecutableFile(atPath: Repo.path(script)), "\(script) is not executable")
        }
        let cmd = try #require(runtime.instructions.last { $0.keyword == "CMD" }?.execForm)
        #expect(cmd == ["run"])
    }

    @Test func exposedPortsAreTheConfiguredDefaults() throws {
        let dockerfile = try Dockerfile.load()
        let exposed = dockerfile.exposedPorts
        for environment in ConfigurationLoader.environments {
            let loaded = try ConfigurationLoader(
                environment: ["TASKER_ENV": environment],
                configRoot: Repo.path("config/tasker")
            ).load()
            let worker = loaded.configuration.worker
            let ports = Set([worker.web.bindAddress, worker.grpc.bindAddress].compactMap(Self.port(of:)))
            #expect(ports.count == 2)
            #expect(exposed == ports, "EXPOSE \(exposed.sorted()) but TASKER_ENV=\(environment) binds \(ports.sorted())")
        }
        // The health check derives its port from TASKER_WEB_BIND_ADDRESS with the same default.
        let healthcheck = try Repo.read("scripts/container/healthcheck")
        let defaultAddress = try #require(healthcheck.firstMatch(of: #/TASKER_WEB_BIND_ADDRESS:-([^}]+)\}/#)?.output.1)
        #expect(String(defaultAddress) == WorkerConfiguration.Web().bindAddress)
    }

    @Test func healthCheckProbesTheHealthRouteTheWorkerServes() throws {
        let healthcheck = try Repo.read("scripts/container/healthcheck")
        let urls = healthcheck.matches(of: #/http://[^/"\s]+(/[A-Za-z0-9_/-]*)/#).map { String($0.output.1) }
        #expect(urls == ["/health"], "the health check probes \(urls)")
        let routes = try Repo.read("Sources/TaskerWorker/Operator/Web/WorkerWebRoutes.swift")
        #expect(routes.contains(#"router.get("/health")"#), "the worker no longer serves GET /health")
        // compose's worker health check is the image's.
        let dockerfile = try Dockerfile.load()
        let image = try #require(dockerfile.healthcheck)
        let compose = try Compose.load()
        let check = try #require(compose.service("worker")?["healthcheck"] as? [String: Any])
        #expect(check["test"] as? [String] == ["CMD"] + image.command)
        for (key, option) in ["interval": "interval", "timeout": "timeout", "start_period": "start-period", "retries": "retries"] {
            #expect("\(check[key] ?? "missing")" == image.options[option] ?? "unset", "healthcheck \(key)")
        }
    }

    @Test func everyEnvironmentNameIsOneTheWorkerReads() throws {
        let allowed = try Self.environmentNamesTheWorkerReads()
        #expect(
            allowed.isSuperset(of: [
                "DATABASE_URL", "TASKER_ENV", "TASKER_TEMPLATE_PATH", "TASKER_MIGRATE_ON_START",
                "TASKER_LOG_FORMAT", "TASKER_MIGRATIONS_DIR",
            ]))
        #expect(!allowed.contains("EX_CONFIG") && !allowed.contains("TASKER_TEST_DATABASE_URL"))
        var used: [(String, String, String)] = []  // (name, value, where)
        for (name, value) in try Dockerfile.load().runtime.environment { used.append((name, value, "Dockerfile")) }
        let compose = try Compose.load()
        for name in compose.workerServiceNames {
            let environment = try #require(compose.service(name)?["environment"] as? [String: Any], "\(name) has no environment")
            for (key, value) in environment { used.append((key, "\(value)", "compose service \(name)")) }
        }
        #expect(Set(used.map(\.0)).isSuperset(of: ["DATABASE_URL", "TASKER_ENV", "TASKER_TEMPLATE_PATH"]))
        for (name, value, place) in used {
            #expect(allowed.contains(name), "\(place) sets \(name), which the worker never reads")
            if let variable = EnvironmentSubstitution.allowList.first(where: { $0.name == name }) {
                #expect(
                    EnvironmentSubstitution.matches(value, pattern: variable.pattern),
                    "\(place): \(name)=\(value) is not \(variable.meaning)")
            }
        }
    }

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

    @Test func serverProfileRunsPostgresMigrateAndTheWorker() throws {
        let compose = try Compose.load()
        let server = Set(compose.services.filter { ($0.value["profiles"] as? [String])?.contains("server") == true }.keys)
        #expect(server.isSuperset(of: ["postgres", "migrate", "worker"]), "server profile: \(server.sorted())")
        let postgres = try #require(compose.service("postgres"))
        #expect((postgres["image"] as? String)?.contains("pgmq") == true, "PostgreSQL must come with PGMQ")
        #expect(postgres["healthcheck"] != nil)
        #expect(compose.workerServiceNames.filter(server.contains) == ["migrate", "worker"])
        let images = Set(compose.workerServiceNames.compactMap { compose.service($0)?["image"] as? String })
        #expect(images.count == 1, "migrate and worker must run the same image: \(images)")
        for name in compose.workerServiceNames {
            #expect(compose.service(name)?["build"] as? String == ".", "\(name) builds the Dockerfile here")
        }
        // Start order: postgres healthy → migrate done → worker.
        let migrateDeps = compose.service("migrate")?["depends_on"] as? [String: [String: Any]]
        #expect(migrateDeps?["postgres"]?["condition"] as? String == "service_healthy")
        let workerDeps = compose.service("worker")?["depends_on"] as? [String: [String: Any]]
        #expect(workerDeps?["postgres"]?["condition"] as? String == "service_healthy")
        #expect(workerDeps?["migrate"]?["condition"] as? String == "service_completed_successfully")
        // The database URL names the postgres service and its credentials.
        let env = try #require(compose.service("worker")?["environment"] as? [String: Any])
        let databaseURL = try #require(env["DATABASE_URL"] as? String)
        let url = try #require(URLComponents(string: databaseURL))
        let pgEnv = try #require(postgres["environment"] as? [String: Any])
        #expect(url.host == "postgres" && url.port == 5432)
        #expect(url.user == pgEnv["POSTGRES_USER"] as? String)
        #expect(url.password == pgEnv["POSTGRES_PASSWORD"] as? String)
        #expect(url.path == "/" + (pgEnv["POSTGRES_DB"] as? String ?? ""))
        // Ports published by the worker are the EXPOSEd ones.
        let ports = try #require(compose.service("worker")?["ports"] as? [String])
        let containerPorts = Set(ports.compactMap { $0.split(separator: ":").last.flatMap { Int($0.split(separator: "/")[0]) } })
        #expect(containerPorts == (try Dockerfile.load()).exposedPorts)
        // Published on the loopback interface only (auth is off by default): `127.0.0.1:HOST:CONTAINER`.
        for port in ports {
            #expect(port.split(separator: ":").count == 3 && port.hasPrefix("127.0.0.1:"), "worker port \(port) not loopback-only")
        }
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

    /// Names the worker, its configuration files or the container scripts read from the environment.
    static func environmentNamesTheWorkerReads() throws -> Set<String> {
        var names = Set(EnvironmentSubstitution.allowedNames)
        // The libraries and the executable; not TaskerTestSupport (its variables are for tests only).
        for module in ["Sources/TaskerPostgres", "Sources/TaskerModel", "Sources/TaskerWorker", "Sources/TaskerWorkerCLI"] {
            let directory = Repo.path(module)
            let files =
                FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String }
                .filter { $0.hasSuffix(".swift") } ?? []
            #expect(!files.isEmpty, "no sources in \(module)")
            for file in files {
                let text = try String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)
                for match in text.matches(of: #/environment\["([A-Z][A-Z0-9_]*)"\]/#) { names.insert(String(match.output.1)) }
            }
        }
        // The container scripts read their environment as `${NAME:-…}` (set -u); plain `${NAME}` are their own variables.
        for script in ["scripts/container/entrypoint", "scripts/container/healthcheck"] {
            for match in try Repo.read(script).matches(of: #/\$\{([A-Z][A-Z0-9_]*):[-?]/#) { names.insert(String(match.output.1)) }
        }
        return names
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

    static func port(of bindAddress: String) -> Int? {
        bindAddress.split(separator: ":").last.flatMap { Int($0) }
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

// MARK: - Repository

enum Repo {
    static var root: String { TestEnvironment.repositoryRoot }
    static func path(_ relative: String) -> String { relative.isEmpty ? root : "\(root)/\(relative)" }
    static func read(_ relative: String) throws -> String { try String(contentsOfFile: path(relative), encoding: .utf8) }
    static func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: path(relative)) }
    /// `./a/b/` → `a/b`; `.` → "".
    static func normalize(_ path: String) -> String {
        var parts = path.split(separator: "/").map(String.init).filter { $0 != "." && !$0.isEmpty }
        while parts.first == ".." { parts.removeFirst() }
        return parts.joined(separator: "/")
    }
}

// MARK: - Dockerfile

struct DockerInstruction: Sendable {
    let keyword: String
    let arguments: String
    let line: Int

    /// The JSON array of an exec-form instruction, or nil for shell form.
    var execForm: [String]? {
        guard arguments.hasPrefix("["), let data = arguments.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String]
    }

    /// Shell-like words: whitespace separated, single and double quotes group (and are removed).
    static func words(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        var inWord = false
        var iterator = text.makeIterator()
        while let c = iterator.next() {
            if let q = quote {
                if c == q {
                    quote = nil
                } else if c == "\\" && q == "\"", let next = iterator.next() {
                    current.append(next)
                } else {
                    current.append(c)
                }
            } else if c == "\"" || c == "'" {
                quote = c
                inWord = true
            } else if c == "\\", let next = iterator.next() {
                current.append(next)
                inWord = true
            } else if c.isWhitespace {
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            } else {
                current.append(c)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    /// `ENV A=1 B="x y"` (or the legacy `ENV A value`) as ordered pairs.
    static func environment(_ instruction: DockerInstruction) -> [(String, String)] {
        let words = words(instruction.arguments)
        guard let first = words.first else { return [] }
        if !first.contains("=") { return [(first, words.dropFirst().joined(separator: " "))] }
        return words.compactMap { word in
            guard let eq = word.firstIndex(of: "=") else { return nil }
            return (String(word[..<eq]), String(word[word.index(after: eq)...]))
        }
    }

    /// `HEALTHCHECK [--opt=value...] CMD ...`: options and the command (exec form, or `sh -c` for shell form).
    static func healthcheck(_ instruction: DockerInstruction) -> (options: [String: String], command: [String])? {
        var rest = Substring(instruction.arguments)
        var options: [String: String] = [:]
        while rest.hasPrefix("--") {
            let end = rest.firstIndex(where: \.isWhitespace) ?? rest.endIndex
            let option = rest[rest.index(rest.startIndex, offsetBy: 2)..<end]
            let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
            options[parts[0]] = parts.count > 1 ? parts[1] : ""
            rest = rest[end...].drop(while: \.isWhitespace)
        }
        guard rest.hasPrefix("CMD") else { return nil }
        let command = String(rest.dropFirst(3).drop(while: \.isWhitespace))
        let probe = DockerInstruction(keyword: "CMD", arguments: command, line: instruction.line)
        return (options, probe.execForm ?? ["/bin/sh", "-c", command])
    }
}

struct DockerCopy {
    let from: String?
    let sources: [String]
    let destination: String
    let line: Int
}

struct DockerStage {
    let base: String
    let name: String?
    var instructions: [DockerInstruction] = []

    var copies: [DockerCopy] {
        instructions.filter { $0.keyword == "COPY" || $0.keyword == "ADD" }.map { instruction in
            var words = DockerInstruction.words(instruction.arguments)
            var from: String?
            while let flag = words.first, flag.hasPrefix("--") {
                if flag.hasPrefix("--from=") { from = String(flag.dropFirst("--from=".count)) }
                words.removeFirst()
            }
            if let exec = DockerInstruction(keyword: "COPY", arguments: words.joined(separator: " "), line: 0).execForm {
                words = exec
            }
            return DockerCopy(from: from, sources: Array(words.dropLast()), destination: words.last ?? "", line: instruction.line)
        }
    }

    var environment: [(String, String)] {
        instructions.filter { $0.keyword == "ENV" }.flatMap(DockerInstruction.environment)
    }
}

enum DockerfileParser {
    /// Instructions with line continuations (`\` at the end of a line) joined; comment lines (also inside
    /// a continuation) and blank lines dropped. Parser directives are comments here.
    static func parse(_ text: String) -> [DockerInstruction] {
        var instructions: [DockerInstruction] = []
        var pending: String?
        var start = 0
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#") || (trimmed.isEmpty && pending == nil) { continue }
            if trimmed.isEmpty { continue }
            if pending == nil { start = index + 1 }
            var line = trimmed
            let continues = line.hasSuffix("\\")
            if continues { line = String(line.dropLast()).trimmingCharacters(in: .whitespaces) }
            pending = pending.map { $0 + " " + line } ?? line
            if !continues, let complete = pending {
                let keywordEnd = complete.firstIndex(where: \.isWhitespace) ?? complete.endIndex
                instructions.append(
                    DockerInstruction(
                        keyword: complete[..<keywordEnd].uppercased(),
                        arguments: complete[keywordEnd...].trimmingCharacters(in: .whitespaces), line: start))
                pending = nil
            }
        }
        return instructions
    }
}

struct Dockerfile {
    let stages: [DockerStage]

    static func load() throws -> Dockerfile {
        var stages: [DockerStage] = []
        for instruction in DockerfileParser.parse(try Repo.read("Dockerfile")) {
            if instruction.keyword == "FROM" {
                let words = DockerInstruction.words(instruction.arguments).filter { !$0.hasPrefix("--") }
                let name = words.count >= 3 && words[1].lowercased() == "as" ? words[2] : nil
                stages.append(DockerStage(base: words.first ?? "", name: name))
            } else if !stages.isEmpty {
                stages[stages.count - 1].instructions.append(instruction)
            }
        }
        // Resolve `FROM ${ARG}` with the ARG defaults declared before the first FROM.
        let args = DockerfileParser.parse(try Repo.read("Dockerfile")).prefix { $0.keyword != "FROM" }
            .filter { $0.keyword == "ARG" }.flatMap(DockerInstruction.environment)
        let resolved = stages.map { stage in
            var base = stage.base
            for (name, value) in args { base = base.replacingOccurrences(of: "${\(name)}", with: value) }
            return DockerStage(base: base, name: stage.name, instructions: stage.instructions)
        }
        return Dockerfile(stages: resolved)
    }

    var runtime: DockerStage { stages.last! }

    var exposedPorts: Set<Int> {
        Set(
            runtime.instructions.filter { $0.keyword == "EXPOSE" }
                .flatMap { DockerInstruction.words($0.arguments) }
                .compactMap { Int($0.split(separator: "/")[0]) })
    }

    var healthcheck: (options: [String: String], command: [String])? {
        runtime.instructions.last { $0.keyword == "HEALTHCHECK" }.flatMap(DockerInstruction.healthcheck)
    }
}

// MARK: - .dockerignore

/// `.dockerignore` as Docker reads it: patterns relative to the context root, `*`/`?` within one path
/// element, `**` across elements, `!` re-includes; a path is excluded when it or one of its parent
/// directories matches, the last matching pattern deciding.
struct DockerIgnore {
    let patterns: [(negated: Bool, regex: String)]

    init(text: String) {
        patterns = text.split(separator: "\n").compactMap { raw in
            var line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { return nil }
            let negated = line.hasPrefix("!")
            if negated { line.removeFirst() }
            let cleaned = Repo.normalize(line)
            return cleaned.isEmpty ? nil : (negated, Self.regex(for: cleaned))
        }
    }

    static func load() throws -> DockerIgnore { DockerIgnore(text: try Repo.read(".dockerignore")) }

    static func isGlob(_ pattern: String) -> Bool { pattern.contains { "*?[".contains($0) } }

    static func regex(for pattern: String) -> String {
        var out = ""
        var chars = Array(pattern)[...]
        while let c = chars.popFirst() {
            switch c {
            case "*" where chars.first == "*":
                chars.removeFirst()
                if chars.first == "/" {
                    chars.removeFirst()
                    out += "(?:.*/)?"
                } else {
                    out += ".*"
                }
            case "*": out += "[^/]*"
            case "?": out += "[^/]"
            case "[":
                out += "["
                while let d = chars.popFirst() {
                    out.append(d)
                    if d == "]" { break }
                }
            case "\\":
                if let d = chars.popFirst() { out += NSRegularExpression.escapedPattern(for: String(d)) }
            default: out += NSRegularExpression.escapedPattern(for: String(c))
            }
        }
        return out
    }

    func excludes(_ path: String) -> Bool {
        let parts = Repo.normalize(path).split(separator: "/")
        let candidates = (1...max(parts.count, 1)).map { parts.prefix($0).joined(separator: "/") }
        var excluded = false
        for pattern in patterns {
            guard let regex = try? Regex(pattern.regex) else { continue }
            if candidates.contains(where: { (try? regex.wholeMatch(in: $0)) != nil }) { excluded = !pattern.negated }
        }
        return excluded
    }
}

// MARK: - docker-compose.yml

struct Compose {
    let root: [String: Any]

    static func load() throws -> Compose {
        let text = try Repo.read("docker-compose.yml")
        guard let root = try Yams.load(yaml: text) as? [String: Any] else { throw TestSetupError("compose: not a mapping") }
        return Compose(root: root)
    }

    var services: [String: [String: Any]] { root["services"] as? [String: [String: Any]] ?? [:] }
    func service(_ name: String) -> [String: Any]? { services[name] }

    /// Services that run this repository's worker image (they build the Dockerfile's default target;
    /// the `orchestration` service builds another target).
    var workerServiceNames: [String] { services.filter { $0.value["build"] as? String == "." }.keys.sorted() }

    /// The services of a profile.
    func services(inProfile profile: String) -> Set<String> {
        Set(services.filter { ($0.value["profiles"] as? [String])?.contains(profile) == true }.keys)
    }
}
