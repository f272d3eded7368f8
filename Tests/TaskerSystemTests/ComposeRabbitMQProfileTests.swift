import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel

/// docker-compose.yml's `rabbitmq` profile without a Docker engine (issue #18): a RabbitMQ broker,
/// the worker and the companion orchestration, both configured through their environment with
/// `[common.queues] backend = "rabbitmq"` against that broker (the configuration each loads with it
/// is checked), started after the broker is healthy; the orchestration from the Dockerfile's
/// `orchestration` target (`tasker-dev orchestrate`), the production image unchanged.
@Suite("compose rabbitmq profile")
struct ComposeRabbitMQProfileTests {
    @Test func theProfileRunsTheBrokerAndTheWorkerAndTheOrchestrationOnIt() throws {
        let compose = try Compose.load()
        #expect(compose.services(inProfile: "rabbitmq") == ["postgres", "migrate", "rabbitmq", "worker-rabbitmq", "orchestration"])
        let broker = try #require(compose.service("rabbitmq"))
        #expect((broker["image"] as? String)?.hasPrefix("rabbitmq:") == true)
        #expect(broker["healthcheck"] != nil)
        let brokerEnvironment = try #require(broker["environment"] as? [String: Any])
        for (name, context) in [("worker-rabbitmq", "worker"), ("orchestration", "orchestration")] {
            let service = try #require(compose.service(name))
            let environment = try #require(service["environment"] as? [String: Any], "\(name)").mapValues { "\($0)" }
            #expect(environment["TASKER_MESSAGING_BACKEND"] == "rabbitmq", "\(name)")
            let rabbitmqURL = try #require(environment["RABBITMQ_URL"], "\(name)")
            let url = try #require(URLComponents(string: rabbitmqURL))
            #expect(url.scheme == "amqp" && url.host == "rabbitmq" && url.port == 5672, "\(name): the broker service")
            #expect(url.user == brokerEnvironment["RABBITMQ_DEFAULT_USER"] as? String, "\(name)")
            #expect(url.password == brokerEnvironment["RABBITMQ_DEFAULT_PASS"] as? String, "\(name)")
            // What the process loads with this environment is on the broker.
            let loaded = try ConfigurationLoader(environment: environment, configRoot: Repo.path("config/tasker"), context: context)
                .load().configuration
            #expect(loaded.common.queues.backend == .rabbitmq, "\(name)")
            #expect(loaded.common.queues.rabbitmq.url == environment["RABBITMQ_URL"], "\(name)")
            let dependencies = service["depends_on"] as? [String: [String: Any]]
            #expect(dependencies?["rabbitmq"]?["condition"] as? String == "service_healthy", "\(name)")
            #expect(dependencies?["postgres"]?["condition"] as? String == "service_healthy", "\(name)")
            #expect(dependencies?["migrate"]?["condition"] as? String == "service_completed_successfully", "\(name)")
            for port in service["ports"] as? [String] ?? [] {
                #expect(port.hasPrefix("127.0.0.1:"), "\(name) publishes \(port) beyond loopback")
            }
        }
        // The worker: the image and command of the server profile's worker, on other host ports.
        let worker = try #require(compose.service("worker"))
        let onBroker = try #require(compose.service("worker-rabbitmq"))
        #expect(onBroker["image"] as? String == worker["image"] as? String)
        #expect(onBroker["command"] as? [String] == ["run"])
        let hostPorts = { (service: [String: Any]) in Set((service["ports"] as? [String] ?? []).map { $0.split(separator: ":")[1] }) }
        #expect(hostPorts(onBroker).isDisjoint(with: hostPorts(worker)))
        // The orchestration: the Dockerfile's target that builds and runs `tasker-dev`.
        let orchestration = try #require(compose.service("orchestration"))
        let build = try #require(orchestration["build"] as? [String: Any])
        #expect(build["context"] as? String == ".")
        let dockerfile = try Dockerfile.load()
        let stage = try #require(dockerfile.stages.first { $0.name == build["target"] as? String }, "no stage \(build)")
        #expect(stage.base == "builder")
        #expect(stage.instructions.contains { $0.keyword == "RUN" && $0.arguments.contains("--product tasker-dev") })
        #expect(stage.instructions.last { $0.keyword == "ENTRYPOINT" }?.execForm == ["/usr/local/bin/tasker-dev"])
        let command = try #require(orchestration["command"] as? [String])
        let help = try ContainerFilesTests.run(CommandLineTests.devBinary, ["--help"])
        #expect(ContainerFilesTests.subcommands(inHelp: help.stdout).contains(command[0]), "\(command) is not a tasker-dev subcommand")
        // A plain `docker build .` still builds the production image: the last stage.
        #expect(dockerfile.runtime.name == "runtime")
    }
}
