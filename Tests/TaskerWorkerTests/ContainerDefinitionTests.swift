import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The container without a Docker engine, statically: `Dockerfile`, `.dockerignore` and
/// `docker-compose.yml` are parsed and every reference they make (build-context paths, scripts, ports,
/// env names, the health check, the services of the server profile) is checked against the repository.
/// Running the image's staged layout, its entrypoint and the built binary is `ContainerFilesTests` in
/// TaskerSystemTests.
@Suite("container definition files", .timeLimit(.minutes(3)))
struct ContainerDefinitionTests {
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
        // Plaintext first, then HTTPS when the port speaks TLS.
        let urls = healthcheck.matches(of: #/https?://[^/"\s]+(/[A-Za-z0-9_/-]*)/#).map { String($0.output.0) }
        #expect(
            urls == ["http://${host}:${port}/health", "https://${host}:${port}/health"], "the health check probes \(urls)")
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

    // MARK: - Helpers

    /// Names the worker, its configuration files or the container scripts read from the environment.
    static func environmentNamesTheWorkerReads() throws -> Set<String> {
        var names = Set(EnvironmentSubstitution.allowedNames)
        // The libraries and the executable; not TaskerTestSupport (its variables are for tests only).
        // TaskerTelemetry: the worker's traces (TELEMETRY_ENABLED, OTEL_*; compose's production profile).
        for module in [
            "Sources/TaskerPostgres", "Sources/TaskerModel", "Sources/TaskerTelemetry", "Sources/TaskerWorker",
            "Sources/TaskerWorkerCLI",
        ] {
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

    static func port(of bindAddress: String) -> Int? {
        bindAddress.split(separator: ":").last.flatMap { Int($0) }
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
