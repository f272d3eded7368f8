/// A permission that a worker REST route or gRPC method can require (upstream `resource:action` names).
///
/// | Permission | REST | gRPC |
/// |---|---|---|
/// | `worker:templates_read` | `GET /v1/templates`, `GET /v1/templates/{ns}/{name}/{version}` | `WorkerTemplateService.*` |
/// | `worker:config_read` | `GET /config` | `WorkerConfigService.GetConfig` |
/// | `templates:validate` | `POST /v1/templates/{ns}/{name}/{version}/validate` | – |
package enum WorkerPermission: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `worker:templates_read`: list and read the worker's templates.
    case templatesRead = "worker:templates_read"
    /// `worker:config_read`: read the worker's (redacted) configuration.
    case configRead = "worker:config_read"
    /// `templates:validate`: validate a template against the worker's handlers.
    case templatesValidate = "templates:validate"

    /// The upstream wire name, e.g. `worker:config_read`.
    package var description: String { rawValue }
}

/// The upstream permission vocabulary and its matching rules.
///
/// Tokens are usually shared between the orchestration and the worker, so the vocabulary holds every
/// upstream permission (not just the worker's three); under `strict_validation` a token carrying a string
/// outside it is rejected. A grant is either an exact permission or a resource wildcard `resource:*`
/// (`worker:*` grants `worker:config_read` and `worker:templates_read`, but not `templates:validate`).
/// As upstream, there is no global `*` grant.
package enum PermissionVocabulary {
    /// The 17 upstream permissions.
    package static let permissions: Set<String> = [
        "tasks:create", "tasks:read", "tasks:list", "tasks:cancel", "tasks:context_read",
        "steps:read", "steps:resolve",
        "dlq:read", "dlq:update", "dlq:stats",
        "templates:read", "templates:validate",
        "system:config_read", "system:handlers_read", "system:analytics_read",
        "worker:config_read", "worker:templates_read",
    ]

    /// The resources that accept a `resource:*` wildcard.
    package static let resources: Set<String> = ["tasks", "steps", "dlq", "templates", "system", "worker"]

    /// Whether `grant` is a known permission or a wildcard over a known resource.
    package static func isKnown(_ grant: String) -> Bool {
        if permissions.contains(grant) { return true }
        if grant.hasSuffix(":*") { return resources.contains(String(grant.dropLast(2))) }
        return false
    }

    /// Whether `grant` satisfies `required` (exact match, or `resource:*` over the same resource).
    package static func grant(_ grant: String, satisfies required: String) -> Bool {
        if grant == required { return true }
        guard grant.hasSuffix(":*") else { return false }
        let resource = grant.dropLast(1)  // keeps the ':'
        return resource.count > 1 && required.hasPrefix(resource)
    }

    /// The grants in `grants` that are not known (see ``isKnown(_:)``), in their original order.
    package static func unknown(in grants: [String]) -> [String] {
        grants.filter { !isKnown($0) }
    }
}
