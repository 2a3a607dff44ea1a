import Foundation
import Testing

/// The shared test corpus (`../shared/corpus` next to the package), read at test time and never committed.
///
/// Tests that need it are guarded with `.enabled(if: Corpus.isAvailable, Corpus.missingMessage)` so a clone
/// without `../shared` skips them with a message instead of failing.
enum Corpus {
    /// The package root, found from this file's path (Tests/ImagePipelineKitTests/Support/Corpus.swift).
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `$IPK_CORPUS` if set, else `<package>/../shared/corpus`.
    static let root: URL = {
        if let override = ProcessInfo.processInfo.environment["IPK_CORPUS"] {
            return URL(fileURLWithPath: override)
        }
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus")
    }()

    static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: root.appendingPathComponent("MANIFEST.md").path)
    }

    static let missingMessage: Comment = "corpus not found at ../shared/corpus (set IPK_CORPUS): skipped"

    static func url(_ relativePath: String) -> URL { root.appendingPathComponent(relativePath) }

    static func data(_ relativePath: String) throws -> Data { try Data(contentsOf: url(relativePath)) }

    /// Relative paths of the regular files under `folder` (recursively), sorted.
    static func files(under folder: String, extensions: Set<String>? = nil) -> [String] {
        let base = url(folder)
        guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey])
        else { return [] }
        var out: [String] = []
        for case let file as URL in walker {
            guard (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
            if let extensions, !extensions.contains(file.pathExtension.lowercased()) { continue }
            out.append(folder + "/" + file.path.dropFirst(base.path.count + 1))
        }
        return out.sorted()
    }
}

/// Files committed under Tests/ImagePipelineKitTests/Fixtures (generated or registry-origin, with licence rows).
enum Fixtures {
    static func url(_ name: String) -> URL {
        Bundle.module.resourceURL!.appendingPathComponent("Fixtures").appendingPathComponent(name)
    }
    static func data(_ name: String) throws -> Data { try Data(contentsOf: url(name)) }
}
