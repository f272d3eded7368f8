import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TaskerHTTP
import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// Swagger UI at `/api-docs/ui/` as upstream's worker serves it (seen on tasker-py 0.1.8): the
/// redirect, every vendored file byte for byte with upstream's content types, 404 for any other name
/// or spelling (path traversal included), public with auth on; plus our caching headers.
@Suite("Swagger UI", .timeLimit(.minutes(3)))
struct SwaggerUITests {
    /// Sources/CSwaggerUI/files, the vendored files the binary embeds.
    static let filesDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/CSwaggerUI/files")

    /// The content types upstream's worker sends for each file it serves (seen on the live worker).
    static let upstreamContentTypes = [
        "index.html": "text/html", "index.css": "text/css", "swagger-ui.css": "text/css",
        "swagger-ui-bundle.js": "text/javascript", "swagger-ui-standalone-preset.js": "text/javascript",
        "swagger-initializer.js": "text/javascript", "favicon-16x16.png": "image/png",
        "favicon-32x32.png": "image/png", "oauth2-redirect.html": "text/html",
    ]

    /// The vendored files the UI is made of (the licences and PROVENANCE are not served).
    static func vendoredFiles() throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: filesDirectory.path)
        where !name.hasPrefix("LICENSE") && name != "PROVENANCE" {
            files[name] = try Data(contentsOf: filesDirectory.appendingPathComponent(name))
        }
        return files
    }

    /// Runs `body` against a worker started by `start`, which is stopped whether `body` throws or not.
    static func withWorker(
        _ db: TestDatabase, start: (TestDatabase) async throws -> WebTestWorker = { try await WebTestWorker.start($0) },
        _ body: (WebTestWorker) async throws -> Void
    ) async throws {
        let worker = try await start(db)
        do {
            try await body(worker)
        } catch {
            try? await worker.stop()
            throw error
        }
        try await worker.stop()
    }

    /// A response's body bytes (none: empty).
    static func bytes(_ response: TestClient.Response) -> [UInt8] {
        response.body.flatMap { $0.getBytes(at: $0.readerIndex, length: $0.readableBytes) } ?? []
    }

    @Test
    func everyVendoredFileIsServedByteForByteWithUpstreamsTypes() async throws {
        let vendored = try Self.vendoredFiles()
        #expect(Set(vendored.keys) == Set(Self.upstreamContentTypes.keys))
        #expect(Set(SwaggerUIFiles.byName.keys) == Set(vendored.keys), "the binary embeds exactly the vendored files")
        #expect(SwaggerUIFiles.version == "5.17.14")
        try await withTestDatabase { db in
            try await Self.withWorker(db) { worker in
                for (name, bytes) in vendored.sorted(by: { $0.key < $1.key }) {
                    let response = try await worker.get("/api-docs/ui/\(name)")
                    #expect(response.status == .ok, "\(name)")
                    #expect(response.headers[.contentType] == Self.upstreamContentTypes[name], "\(name)")
                    #expect(response.headers[.contentLength] == String(bytes.count), "\(name)")
                    // (A Bool: Swift Testing would diff two megabyte arrays element by element.)
                    let identical = Self.bytes(response) == [UInt8](bytes)
                    #expect(identical, "\(name): the served bytes differ from the vendored file")
                    #expect(response.headers[.cacheControl] == "no-cache", "\(name)")
                    #expect(response.headers[.eTag] == SwaggerUIFiles.byName[name]?.entityTag, "\(name)")

                    guard response.status == .ok else { continue }  // (HEAD is checked on a served file)
                    let head = try await worker.execute(TestClient.Request("/api-docs/ui/\(name)", method: .head))
                    #expect(head.status == .ok, "HEAD \(name)")
                    #expect(head.headers[.contentLength] == String(bytes.count), "HEAD \(name)")
                    #expect(head.headers[.contentType] == Self.upstreamContentTypes[name], "HEAD \(name)")
                    #expect((head.body?.readableBytes ?? 0) == 0, "HEAD \(name) has no body")
                }
                // The initializer points the UI at our document, as upstream's does.
                let initializer = try await worker.get("/api-docs/ui/swagger-initializer.js").text
                #expect(initializer.contains(#""url": "/api-docs/openapi.json","#))
            }
        }
    }

    @Test
    func theUIRedirectsToItsFolderAndServesItsIndexThere() async throws {
        try await withTestDatabase { db in
            try await Self.withWorker(db) { worker in
                let redirect = try await worker.get("/api-docs/ui")
                #expect(redirect.status == .seeOther)
                #expect(redirect.headers[.location] == "/api-docs/ui/")
                #expect(redirect.headers[.contentLength] == "0")
                if redirect.status == .seeOther {
                    let head = try await worker.execute(TestClient.Request("/api-docs/ui", method: .head))
                    #expect(head.status == .seeOther)
                    #expect(head.headers[.location] == "/api-docs/ui/")
                }

                let index = try await worker.get("/api-docs/ui/")
                #expect(index.status == .ok)
                #expect(index.headers[.contentType] == "text/html")
                let html = try Data(contentsOf: Self.filesDirectory.appendingPathComponent("index.html"))
                let identical = Self.bytes(index) == [UInt8](html)
                #expect(identical, "/api-docs/ui/ is index.html")
                #expect(index.text.contains(#"<script src="./swagger-initializer.js""#))
                // A query string does not change what is served; a percent-encoded name is decoded (as upstream).
                #expect(try await worker.get("/api-docs/ui/index.html?x=1").status == .ok)
                #expect(try await worker.get("/api-docs/ui/index%2ehtml").status == .ok)
            }
        }
    }

    @Test
    func unknownNamesOtherSpellingsAndTraversalAre404() async throws {
        try await withTestDatabase { db in
            try await Self.withWorker(db) { worker in
                let served = Set(try Self.vendoredFiles().values.map { [UInt8]($0) })
                // The same server serves the files by their names…
                #expect(try await worker.get("/api-docs/ui/index.html").status == .ok)
                // …and nothing for any other name or spelling.
                let paths = [
                    "/api-docs/ui/nope.js", "/api-docs/ui/Index.html", "/api-docs/ui/LICENSE", "/api-docs/ui/PROVENANCE",
                    "/api-docs/ui/swagger-ui-bundle.js.map", "/api-docs/ui/swagger-config.json", "/api-docs/ui/.",
                    "/api-docs/ui/..", "/api-docs/ui/../openapi.json", "/api-docs/ui/%2e%2e/openapi.json",
                    "/api-docs/ui/%2e%2e%2fopenapi.json", "/api-docs/ui/..%2f..%2f..%2fPackage.swift",
                    "/api-docs/ui/%2fetc%2fpasswd", "/api-docs/ui/..%5c..%5cPackage.swift", "/api-docs/ui/index.html%00",
                    "/api-docs/ui//index.html", "/api-docs/ui/a/index.html", "/api-docs/ui/index.html/",
                    "//api-docs/ui", "/api-docs//ui/", "/api-docs/ui//", "/api-docs", "/api-docs/",
                ]
                for path in paths {
                    let response = try await worker.get(path)
                    #expect(response.status == .notFound, "\(path)")
                    #expect(!served.contains(Self.bytes(response)), "\(path) must not serve a file")
                }
                // Only GET and HEAD are served.
                for method: HTTPRequest.Method in [.post, .put, .delete, .patch] {
                    let response = try await worker.execute(TestClient.Request("/api-docs/ui/index.html", method: method))
                    #expect([.notFound, .methodNotAllowed].contains(response.status), "\(method)")
                }
            }
        }
    }

    @Test
    func aClientWithTheCurrentCopyGets304() async throws {
        try await withTestDatabase { db in
            try await Self.withWorker(db) { worker in
                let first = try await worker.get("/api-docs/ui/swagger-ui.css")
                let tag = try #require(first.headers[.eTag])
                #expect(tag.hasPrefix("\"") && tag.count == 66, "a quoted SHA-256: \(tag)")
                for header in [tag, "W/\(tag)", "\"other\", \(tag)", "*"] {
                    let again = try await worker.get("/api-docs/ui/swagger-ui.css", headers: [.ifNoneMatch: header])
                    #expect(again.status == .notModified, "\(header)")
                    #expect(again.headers[.eTag] == tag)
                    #expect((again.body?.readableBytes ?? 0) == 0)
                }
                let changed = try await worker.get("/api-docs/ui/swagger-ui.css", headers: [.ifNoneMatch: "\"stale\""])
                #expect(changed.status == .ok)
                #expect(changed.body?.readableBytes == first.body?.readableBytes)
            }
        }
    }

    @Test
    func theUIIsPublicWithAuthOnAsUpstreams() async throws {
        try await withTestDatabase { db in
            try await Self.withWorker(db, start: AuthIntegrationTests.startWorker) { worker in
                let denied = try await worker.get("/v1/templates")
                #expect(denied.status == .unauthorized, "auth is on")
                #expect(try await worker.get("/api-docs/ui").status == .seeOther)
                #expect(try await worker.get("/api-docs/ui/").status == .ok)
                #expect(try await worker.get("/api-docs/ui/swagger-ui-bundle.js").status == .ok)
                #expect(try await worker.get("/api-docs/openapi.json").status == .ok)
            }
        }
    }
}
