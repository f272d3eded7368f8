import HTTPTypes
import Hummingbird

/// The one defence of both REST servers against cross-site request forgery (auth is off by default,
/// so a page on any other origin could otherwise make a visitor's browser change state here).
///
/// Requests that cannot change state (`GET`, `HEAD`, `OPTIONS`) pass untouched. Every other method:
/// 1. **Same origin only for browsers.** `Sec-Fetch-Site: cross-site` is refused; so is
///    `Sec-Fetch-Site: same-site` and any `Origin` header that is not this server's own origin
///    (`http(s)://` + the request's `Host`, default ports ignored; `Origin: null` included) → 403
///    `FORBIDDEN` naming the header and value. A request with neither header (curl, tasker-py's
///    client, any non-browser client) is not a browser's and passes.
/// 2. **JSON only.** A request with a `Content-Type`, or with a `Content-Length` above 0, must say
///    `application/json` (parameters such as `charset` allowed) → else 415
///    `UNSUPPORTED_MEDIA_TYPE` naming the type sent. A browser cannot send that type cross-origin
///    without a CORS preflight, and `text/plain` or form bodies (what `mode: "no-cors"` and
///    `<form>` can send) are refused. A request without body and without `Content-Type` (a bare
///    `DELETE`, upstream's body-less `POST …/validate`) passes.
///
/// Not covered: DNS rebinding (a hostile name resolving to this server makes `Origin` and `Host`
/// agree); bind the ports to a private network, or turn auth on.
package enum CrossSiteRequestGuard {
    /// What the guard decided for one request.
    package enum Verdict: Equatable, Sendable {
        case allow
        /// 403: a browser request from another origin; the message names why.
        case crossSite(String)
        /// 415: a body that is not `application/json`; the message names the type sent.
        case unsupportedMediaType(String)
    }

    /// The decision for a request of `method` with `headers`, received as `authority` (the `Host`).
    package static func verdict(method: HTTPRequest.Method, headers: HTTPFields, authority: String?) -> Verdict {
        guard !safeMethods.contains(method) else { return .allow }
        if let refusal = crossSiteRefusal(headers: headers, authority: authority) { return .crossSite(refusal) }
        if let refusal = mediaTypeRefusal(headers: headers) { return .unsupportedMediaType(refusal) }
        return .allow
    }

    /// Methods that never change state here.
    static let safeMethods: Set<HTTPRequest.Method> = [.get, .head, .options]

    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!

    static func crossSiteRefusal(headers: HTTPFields, authority: String?) -> String? {
        let origins = headers[values: .origin]
        let sites = headers[values: secFetchSite].map { $0.lowercased() }
        guard origins.count <= 1, sites.count <= 1 else {
            return "Cross-site request refused: more than one Origin or Sec-Fetch-Site header"
        }
        let origin = origins.first
        let sameOrigin = origin.map { isOwnOrigin($0, authority: authority) } ?? false
        if let site = sites.first, site == "cross-site" || (site == "same-site" && !sameOrigin) {
            return "Cross-site request refused: Sec-Fetch-Site is \(quoted(site))"
                + (origin.map { " from Origin \(quoted($0))" } ?? "")
                + "; state-changing requests are accepted from this server's own origin or from non-browser clients only"
        }
        if let origin, !sameOrigin {
            let own = authority.map { " (\(quoted("http://" + $0)))" } ?? " (the request named no Host)"
            return "Cross-site request refused: Origin \(quoted(origin)) is not this server's origin\(own)"
                + "; state-changing requests are accepted from this server's own origin or from non-browser clients only"
        }
        return nil
    }

    static func mediaTypeRefusal(headers: HTTPFields) -> String? {
        let types = headers[values: .contentType]
        let length = headers[values: .contentLength]
        // A chunked body without a type passes: browsers send form and fetch bodies with a length and
        // a type, and clients such as NIO's send an empty POST chunked.
        let hasBody = length.contains { $0.trimmed != "0" }
        guard hasBody || !types.isEmpty else { return nil }
        guard types.count <= 1 else { return "Unsupported media type: more than one Content-Type header; send application/json" }
        guard let type = types.first else {
            return "Unsupported media type: the request has a body but no Content-Type; send application/json"
        }
        let essence = type.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map { String($0).trimmed } ?? ""
        guard essence.lowercased() != "application/json" else { return nil }
        return "Unsupported media type \(quoted(type)): send application/json"
    }

    /// Whether `origin` (`scheme://host[:port]`) is this server's: the same host and port as
    /// `authority`, the default port of the scheme (80, 443) matching its omission.
    static func isOwnOrigin(_ origin: String, authority: String?) -> Bool {
        guard let authority, !authority.isEmpty else { return false }
        let lowered = origin.lowercased()
        let scheme: String
        let rest: Substring
        if lowered.hasPrefix("http://") {
            (scheme, rest) = ("http", lowered.dropFirst(7))
        } else if lowered.hasPrefix("https://") {
            (scheme, rest) = ("https", lowered.dropFirst(8))
        } else {
            return false
        }
        guard !rest.isEmpty, !rest.contains("/") else { return false }
        return normalized(String(rest), scheme: scheme) == normalized(authority.lowercased(), scheme: scheme)
    }

    /// `host:port` without the scheme's default port.
    static func normalized(_ authority: String, scheme: String) -> String {
        let defaultPort = scheme == "https" ? ":443" : ":80"
        return authority.hasSuffix(defaultPort) ? String(authority.dropLast(defaultPort.count)) : authority
    }

    /// At most 200 characters of a client's value, quoted and escaped.
    static func quoted(_ value: String) -> String {
        String(value.prefix(200)).debugDescription
    }
}

extension String {
    fileprivate var trimmed: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return String(text)
    }
}

extension HTTPFields {
    /// Every value of the fields named `name`.
    fileprivate subscript(values name: HTTPField.Name) -> [String] {
        self[fields: name].map(\.value)
    }
}

/// Applies ``CrossSiteRequestGuard`` to every request: 403 `FORBIDDEN` or 415
/// `UNSUPPORTED_MEDIA_TYPE` in upstream's `{"error":{"code","message"}}` shape. Add it to the router
/// before any route, so that every state-changing route (and each added later) is behind it.
package struct CrossSiteRequestMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The guard for every route of the router it is added to.
    package init() {}

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        switch CrossSiteRequestGuard.verdict(method: request.method, headers: request.headers, authority: request.head.authority) {
        case .allow:
            return try await next(request, context)
        case .crossSite(let message):
            return APIErrorResponse.make(.forbidden, message: message)
        case .unsupportedMediaType(let message):
            return APIErrorResponse.make(.unsupportedMediaType, message: message)
        }
    }
}
