import CSwaggerUI
import NIOCore

/// Swagger UI's files as the binary embeds them (`CSwaggerUI`, vendored by `scripts/vendor-swagger-ui`):
/// looked up by the exact name they are requested under `/api-docs/ui/`, never through the file system.
/// The bytes stay in the binary's read-only pages; a response copies them chunk by chunk. Shared by the
/// worker's and the orchestration's REST servers (``SwaggerUIRoutes``).
package enum SwaggerUIFiles {
    /// One embedded file and how it is served.
    package struct File: Sendable, Equatable {
        /// The name under `/api-docs/ui/` (`swagger-ui-bundle.js`).
        package let name: String
        /// Its row in `CSwaggerUI`'s table.
        package let index: Int
        /// Its size in bytes.
        package let length: Int
        /// Upstream's content type for it (`text/javascript`, `text/css`, `text/html`, `image/png`).
        package let contentType: String
        /// A strong entity tag: the SHA-256 of the bytes, computed when the files were vendored.
        package let entityTag: String
    }

    /// The embedded Swagger UI version (`5.17.14`, as upstream's worker serves).
    package static let version = String(cString: tasker_swagger_ui_version())

    /// Every embedded file by name.
    package static let byName: [String: File] = {
        var files: [String: File] = [:]
        for index in 0..<tasker_swagger_ui_file_count() {
            let file = tasker_swagger_ui_file_at(index)
            guard let name = file.name, let sha256 = file.sha256 else { continue }
            let text = String(cString: name)
            files[text] = File(
                name: text, index: index, length: file.length, contentType: contentType(of: text),
                entityTag: "\"\(String(cString: sha256))\"")
        }
        return files
    }()

    /// The content type upstream's worker (mime_guess) sends for a file name, by its extension.
    package static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last {
        case "html": "text/html"
        case "css": "text/css"
        case "js": "text/javascript"
        case "png": "image/png"
        default: "application/octet-stream"
        }
    }

    /// `count` bytes of `file` from `offset` in a new buffer (the range is clamped to the file).
    package static func bytes(of file: File, offset: Int, count: Int) -> ByteBuffer {
        let embedded = tasker_swagger_ui_file_at(file.index)
        guard let start = embedded.bytes, offset >= 0, offset < embedded.length else { return ByteBuffer() }
        let bytes = UnsafeRawBufferPointer(start: start + offset, count: min(count, embedded.length - offset))
        return ByteBuffer(bytes: bytes)
    }
}
