import Testing

@testable import TaskerAMQP

/// URL parsing: percent-decoding, the default vhost, and the password never shown.
@Suite("AMQP configuration")
struct AMQPConfigurationTests {
    @Test func aURLIsParsedAndPercentDecoded() throws {
        let configuration = try AMQPConfiguration(url: "amqp://us%40er:p%3Ass@broker.example:5673/%2F?heartbeat=15&frame_max=8192")
        #expect(configuration.user == "us@er" && configuration.password == "p:ss")
        #expect(configuration.host == "broker.example" && configuration.port == 5673)
        #expect(configuration.virtualHost == "/" && configuration.heartbeatSeconds == 15 && configuration.frameMax == 8192)
        let plain = try AMQPConfiguration(url: "amqp://guest:guest@localhost")
        #expect(plain.port == 5672 && plain.virtualHost == "/")
        #expect(try AMQPConfiguration(url: "amqp://u:p@h:1/tasker").virtualHost == "tasker")
    }

    @Test func thePasswordNeverAppearsInDescriptionsOrErrors() throws {
        let configuration = try AMQPConfiguration(url: "amqp://guest:s3cret@localhost:5672/%2F")
        #expect(!configuration.description.contains("s3cret"))
        #expect(configuration.description == "amqp://guest:***@localhost:5672/%2F")
        for bad in ["http://guest:s3cret@localhost/", "amqp://guest:s3cret@localhost:99999/", "amqp://guest:s3cret%zz@localhost/"] {
            do {
                _ = try AMQPConfiguration(url: bad)
                Issue.record("\(bad) parsed")
            } catch {
                #expect(!error.description.contains("s3cret"), "\(error)")
            }
        }
    }
}
