import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// The orchestration REST API as the C ABI's `tasker_client_*` calls it (upstream's FFI client
/// bridge): `[worker.orchestration_client]`'s base URL, credentials, per-attempt timeout and retries.
///
/// What an answer may be is bounded: at most ``maximumAnswerBytes``, JSON nested no deeper than
/// `UntrustedJSON`'s limit; anything else is a `TASKER_ERR_CLIENT` naming the request.
struct OrchestrationAPIClient: Sendable {
    /// The largest answer read (the API bounds its own documents well below this).
    static let maximumAnswerBytes = 16 * 1024 * 1024

    let settings: WorkerConfiguration.OrchestrationClient

    /// One request of the API: a method, a path below the base URL (with its query) and a JSON body.
    struct Request: Sendable {
        var method: HTTPMethod
        var path: String
        var body: String?

        /// Whether sending it twice does no harm: reads and cancellation (a second cancel is refused
        /// with the task's state, never a second effect). A creation is sent again only when it
        /// surely never arrived.
        var isIdempotent: Bool { method != .POST }
    }

    /// Sends `request` (again, after a growing pause, while it got no answer or a 502/503/504 and
    /// retries are left) and returns the 2xx answer's JSON, checked.
    func send(_ request: Request) async throws(FFIError) -> JSONValue {
        guard settings.transport == .rest else {
            throw FFIError(
                .client,
                "worker.orchestration_client.transport = \"\(settings.transport.rawValue)\" is not supported by this worker's client; use \"rest\""
            )
        }
        let url = Self.trimmedBase(settings.baseUrl) + request.path
        let label = "\(request.method.rawValue) \(url)"
        var attempt = 0
        while true {
            attempt += 1
            let outcome = await Self.attempt(
                request, url: url, headers: authorizationHeaders, timeout: .milliseconds(Int64(settings.timeoutMs)))
            switch outcome {
            case .answered(let status, let body):
                if (200..<300).contains(status) { return try Self.document(body, label: label) }
                let retryable = status == 503 || (request.isIdempotent && (status == 502 || status == 504))
                if !retryable || attempt > settings.maxRetries {
                    throw FFIError(.client, "\(label): HTTP \(status): \(Self.apiMessage(body))")
                }
            case .unanswered(let error, let neverSent):
                if !(request.isIdempotent || neverSent) || attempt > settings.maxRetries {
                    throw FFIError(
                        .client,
                        "\(label): no answer after \(attempt) attempt\(attempt == 1 ? "" : "s") (timeout \(settings.timeoutMs) ms each): \(error)"
                    )
                }
            }
            try? await Task.sleep(for: Self.pause(beforeRetry: attempt))
        }
    }

    /// Upstream's pauses between attempts: 1 s, 2 s, 4 s, … (at most 8 s).
    static func pause(beforeRetry attempt: Int) -> Duration {
        .seconds(1 << min(attempt - 1, 3))
    }

    private var authorizationHeaders: [(String, String)] {
        switch settings.auth.type {
        case .none: []
        case .bearer: [("Authorization", "Bearer \(settings.auth.token)")]
        case .apiKey: [(settings.auth.headerName, settings.auth.key)]
        }
    }

    private enum Outcome {
        case answered(status: Int, body: Data)
        /// No answer; `neverSent`: the connection was never made, so the server saw nothing.
        case unanswered(String, neverSent: Bool)
    }

    private static func attempt(
        _ request: Request, url: String, headers: [(String, String)], timeout: TimeAmount
    ) async -> Outcome {
        var http = HTTPClientRequest(url: url)
        http.method = request.method
        http.headers.add(name: "Accept", value: "application/json")
        for (name, value) in headers { http.headers.add(name: name, value: value) }
        if let body = request.body {
            http.headers.add(name: "Content-Type", value: "application/json")
            http.body = .bytes(ByteBuffer(string: body))
        }
        do {
            let response = try await HTTPClient.shared.execute(http, timeout: timeout)
            let body = try await response.body.collect(upTo: maximumAnswerBytes)
            return .answered(status: Int(response.status.code), body: Data(body.readableBytesView))
        } catch {
            return .unanswered(String(describing: error), neverSent: neverConnected(error))
        }
    }

    /// Errors that happen before a request is written: the connection failed or timed out.
    private static func neverConnected(_ error: any Error) -> Bool {
        if error is NIOConnectionError { return true }
        if let error = error as? HTTPClientError, error == .connectTimeout { return true }
        if let error = error as? ChannelError, case .connectTimeout = error { return true }
        return false
    }

    /// The 2xx answer as JSON, refused when it is not JSON or nested too deep.
    static func document(_ body: Data, label: String) throws(FFIError) -> JSONValue {
        do {
            return try UntrustedJSON.decode(JSONValue.self, from: body, what: "the answer to \(label)")
        } catch let error as JSONNestingError {
            throw FFIError(.client, "\(label): \(error)")
        } catch {
            throw FFIError(.client, "\(label): the answer is not JSON (\(body.count) bytes): \(error)")
        }
    }

    /// The longest API message an error carries (the rest is cut, marked with `…`).
    static let maximumMessageCharacters = 1000

    /// The API's own message (`{"error":{"message"}}` or `{"message"}`), else the answer's start; at
    /// most ``maximumMessageCharacters``, control characters escaped (it ends up in log lines).
    static func apiMessage(_ body: Data) -> String {
        var message: String?
        if let value = try? UntrustedJSON.decode(JSONValue.self, from: body, what: "an error answer"),
            case .object(let members) = value
        {
            if case .object(let error)? = members["error"] { message = error["message"]?.stringValue }
            message = message ?? members["message"]?.stringValue ?? members["error"]?.stringValue
        }
        let text = message ?? String(decoding: body.prefix(maximumMessageCharacters), as: UTF8.self)
        guard !text.isEmpty else { return "(empty answer)" }
        let escaped = StringEscaping.escapingControls(text)
        return escaped.count > maximumMessageCharacters ? String(escaped.prefix(maximumMessageCharacters)) + "…" : escaped
    }

    static func trimmedBase(_ base: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }

    /// `value` encoded for a query string (RFC 3986 unreserved characters kept).
    static func queryValue(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
