#if DEBUG
import TaskerModel

/// A task template file (`config/tasks/**/*.yaml`, a mounted directory) →
/// `TaskTemplateLoader.loadFile(atPath:)`: `TemplateYAML` (size and alias budget, Yams), the NUL
/// check, `TaskTemplate` decoding and `TaskTemplateValidator`. Contract: the parsed tree never
/// exceeds the node budget; a template that loads re-decodes from its JSON form equal (the form it
/// is stored in, `named_tasks.configuration`).
public enum TemplateYAMLCheck {
    static let file = ScratchFile(name: "template.yaml")
    static let loader = TaskTemplateLoader(environment: [:], workingDirectory: "/")

    /// Checks one input against the contract above.
    public static func check(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let tree = try? TemplateYAML.parse(text) {
            let nodes = nodeCount(tree)
            FuzzContract.require(nodes <= TemplateYAML.maxExpandedNodes, "\(nodes) nodes parsed")
        }
        file.write(bytes)
        guard case .success(let loaded) = loader.loadFile(atPath: file.path) else { return }
        let stored: TaskTemplate?
        do {
            stored = try TaskTemplate.fromJSON(JSONValue(encoding: loaded.template))
        } catch {
            FuzzContract.require(false, "a loaded template's JSON form does not decode: \(error)")
            return
        }
        FuzzContract.require(stored == loaded.template, "a loaded template re-decodes differently")
    }

    /// Every value of the tree, counted without recursion.
    static func nodeCount(_ value: JSONValue) -> Int {
        var count = 0
        var pending = [value]
        while let current = pending.popLast() {
            count += 1
            switch current {
            case .array(let items): pending.append(contentsOf: items)
            case .object(let members): pending.append(contentsOf: members.values)
            default: continue
            }
        }
        return count
    }
}
#endif
