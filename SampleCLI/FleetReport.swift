import Foundation
import ImagePipelineKit

/// The fleet's report: a table for people, JSON for scripts and tests.
struct FleetReport {
    var workers: Int
    var images: Int
    var latencyMs: Int
    var redis: String
    var withTier: FleetPhase
    var warm: FleetPhase?
    var withoutTier: FleetPhase?

    var text: String {
        func cell(_ phase: FleetPhase?, _ value: (FleetPhase) -> String) -> String {
            (phase.map(value) ?? "-").padding(toLength: 14, withPad: " ", startingAt: 0)
        }
        let columns: [FleetPhase?] = [withTier, warm, withoutTier]
        let rows: [(String, (FleetPhase) -> String)] = [
            ("origin requests", { "\($0.originRequests)" }),
            ("origin requests/image", { String(format: "%.2f", Double($0.originRequests) / Double(max(images, 1))) }),
            ("most for one image", { "\($0.originRequestsPerImage.values.max() ?? 0)" }),
            ("tier hits", { "\($0.tierHits)" }),
            ("lease waits", { "\($0.leaseWaits)" }),
            ("origin bytes", { "\($0.originBytes)" }),
            ("failed fetches", { "\($0.failures)" }),
            ("identical bytes", { $0.identicalBytes ? "yes" : "NO" }),
            ("wall time ms", { String(format: "%.0f", $0.wallMs) }),
        ]
        var text = "fleet: \(workers) workers × \(images) images, origin latency \(latencyMs) ms, tier: \(redis)\n"
        text += "".padding(toLength: 24, withPad: " ", startingAt: 0) + "with tier     warm tier     without tier\n"
        for (name, value) in rows {
            text += name.padding(toLength: 24, withPad: " ", startingAt: 0) + columns.map { cell($0, value) }.joined() + "\n"
        }
        if let pid = withTier.killedWorker { text += "worker pid \(pid) was killed holding a fill lease\n" }
        return text
    }

    var jsonData: Data {
        let object: [String: Any] = [
            "workers": workers, "images": images, "latencyMs": latencyMs,
            "originRequests": withTier.originRequests,
            "warmOriginRequests": warm.map { $0.originRequests as Any } ?? NSNull(),
            "withTier": withTier.json,
            "warm": warm.map { $0.json as Any } ?? NSNull(),
            "withoutTier": withoutTier.map { $0.json as Any } ?? NSNull(),
            "withoutTierOriginRequests": withoutTier.map { $0.originRequests as Any } ?? NSNull(),
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }
}

/// Distinct JPEGs of noise (they do not compress away, so their sizes are those of photos).
enum FleetImages {
    static func make(count: Int, side: Int) throws -> [Data] {
        var generator = FleetShuffleGenerator(seed: 42)
        return try (0..<count).map { index in
            let bitmap = try Bitmap(width: side, height: side) { pixels, bytesPerRow in
                for row in 0..<side {
                    let line = pixels.advanced(by: row * bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    for column in 0..<side {
                        let noise = generator.next()
                        line[column * 4] = UInt8(truncatingIfNeeded: index)
                        line[column * 4 + 1] = UInt8(truncatingIfNeeded: noise)
                        line[column * 4 + 2] = UInt8(truncatingIfNeeded: noise >> 8) / 2 &+ UInt8(row % 128)
                        line[column * 4 + 3] = 255
                    }
                }
            }
            return try CodecCatalogue.shared.encode(ImageContainer(bitmap: bitmap), as: .jpeg, quality: 0.85)
        }
    }
}
