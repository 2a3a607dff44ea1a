import Foundation
import ImagePipelineKit

/// One line of `sample-cli decode` output.
enum DecodeReport {
    case success(file: String, decoded: DecodedImage, milliseconds: Double)
    case failure(file: String, message: String, code: Int, name: String)

    var failed: Bool {
        if case .failure = self { return true }
        return false
    }

    func jsonLine() -> String {
        let object: [String: Any]
        switch self {
        case let .success(file, decoded, milliseconds):
            let properties = decoded.properties
            object = [
                "file": file, "format": properties.type.description,
                "width": decoded.container.dimensions.width, "height": decoded.container.dimensions.height,
                "originalWidth": properties.dimensions.width, "originalHeight": properties.dimensions.height,
                "frames": decoded.container.frameCount, "orientation": properties.orientation.rawValue,
                "progressive": properties.isProgressive,
                "decodeMs": (milliseconds * 1000).rounded() / 1000,
            ]
        case let .failure(file, message, code, name):
            object = ["file": file, "error": message, "errorCode": code, "errorName": name]
        }
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    func textLine() -> String {
        switch self {
        case let .success(file, decoded, milliseconds):
            let p = decoded.properties
            let frames = decoded.container.frameCount
            var details = ["\(frames) frame\(frames == 1 ? "" : "s")"]
            if p.orientation != .up { details.append("orientation \(p.orientation.rawValue)") }
            if p.isProgressive { details.append("progressive") }
            let size = decoded.container.dimensions == p.dimensions
                ? "\(p.dimensions)" : "\(p.dimensions) -> \(decoded.container.dimensions)"
            return "\(file.terminalSafe): \(p.type) \(size), \(details.joined(separator: ", ")), "
                + String(format: "%.2f ms", milliseconds)
        case let .failure(file, message, _, name):
            return "\(file.terminalSafe): error \(name): \(message.terminalSafe)"
        }
    }
}
