import ArgumentParser
import Foundation
import ImagePipelineService
import Logging

/// The command's flags with the environment filled in where a flag is absent, checked and typed.
struct ServiceSettings {
    var host: String
    var port: Int
    var configuration = ImageServiceConfiguration()
    var cacheDirectory: URL
    var redis: String?
    var shutdownGrace: Duration
    var logLevel: Logger.Level

    init(_ command: ImageServiceCommand, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        func text(_ flag: String?, _ variable: String) -> String? {
            flag ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        func number<T: LosslessStringConvertible & Comparable>(_ flag: T?, _ variable: String, minimum: T,
                                                               maximum: T? = nil) throws -> T? {
            let inRange = { (value: T) in value >= minimum && maximum.map { value <= $0 } ?? true }
            let range = maximum.map { "\(minimum)...\($0)" } ?? "≥ \(minimum)"
            if let flag {
                guard inRange(flag) else { throw ValidationError("\(variable.lowercased()) must be \(range)") }
                return flag
            }
            guard let raw = environment[variable], !raw.isEmpty else { return nil }
            guard let value = T(raw), inRange(value) else { throw ValidationError("\(variable)=\(raw) is not a number \(range)") }
            return value
        }
        func list(_ flags: [String], _ variable: String) -> [String] {
            flags.isEmpty ? (environment[variable] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty } : flags
        }
        func isOn(_ flag: Bool, _ variable: String) -> Bool {
            flag || ["1", "true", "yes"].contains(environment[variable]?.lowercased() ?? "")
        }

        host = text(command.host, "IMAGE_SERVICE_HOST") ?? "127.0.0.1"
        port = try number(command.port, "IMAGE_SERVICE_PORT", minimum: 0) ?? 8888
        guard port <= 65_535 else { throw ValidationError("the port must be 0...65535") }
        configuration.securityKeys = list(command.securityKeys, "IMAGE_SERVICE_SECURITY_KEYS")
        configuration.allowsUnsafeURLs = isOn(command.allowsUnsafeURLs, "IMAGE_SERVICE_ALLOW_UNSAFE_URL")
        configuration.sourcePolicy = SourcePolicy(
            allowedSources: list(command.allowedSources, "IMAGE_SERVICE_ALLOWED_SOURCES"),
            allowsPrivateAddresses: isOn(command.allowsPrivateSources, "IMAGE_SERVICE_ALLOW_PRIVATE_SOURCES"))
        var limits = ServiceLimits()
        limits.maxSourceBytes = try number(command.maxSourceBytes, "IMAGE_SERVICE_MAX_SOURCE_BYTES", minimum: 1) ?? limits.maxSourceBytes
        limits.maxSourcePixels = try number(command.maxSourcePixels, "IMAGE_SERVICE_MAX_SOURCE_PIXELS", minimum: 1) ?? limits.maxSourcePixels
        limits.maxOutputPixels = try number(command.maxOutputPixels, "IMAGE_SERVICE_MAX_OUTPUT_PIXELS", minimum: 1) ?? limits.maxOutputPixels
        if let seconds = try number(command.deadlineSeconds, "IMAGE_SERVICE_DEADLINE", minimum: 0.001) {
            limits.requestDeadline = .milliseconds(Int64(seconds * 1000))
        }
        limits.maxRendersInFlight = try number(command.maxRenders, "IMAGE_SERVICE_MAX_RENDERS", minimum: 1) ?? limits.maxRendersInFlight
        limits.maxRendersProcessing = try number(command.maxProcessing, "IMAGE_SERVICE_MAX_PROCESSING", minimum: 1)
            ?? limits.maxRendersProcessing
        limits.maxRendersWaiting = try number(command.maxWaiting, "IMAGE_SERVICE_MAX_WAITING", minimum: 0) ?? limits.maxRendersWaiting
        configuration.limits = limits
        configuration.defaultQuality = try number(command.quality, "IMAGE_SERVICE_QUALITY", minimum: 1, maximum: 100)
            ?? configuration.defaultQuality
        configuration.defaultAVIFQuality = try number(command.avifQuality, "IMAGE_SERVICE_AVIF_QUALITY", minimum: 1, maximum: 100)
            ?? configuration.defaultAVIFQuality
        configuration.cacheMaxAge = try number(command.maxAge, "IMAGE_SERVICE_MAX_AGE", minimum: 0) ?? configuration.cacheMaxAge
        cacheDirectory = URL(fileURLWithPath: text(command.cacheDirectory, "IMAGE_SERVICE_CACHE_DIR")
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("image-service-\(getpid())").path)
        redis = text(command.redis, "IMAGE_SERVICE_REDIS")
        let grace = try number(command.shutdownGraceSeconds, "IMAGE_SERVICE_SHUTDOWN_GRACE", minimum: 0) ?? 10
        shutdownGrace = .milliseconds(Int64(grace * 1000))
        let levelName = text(command.logLevel, "IMAGE_SERVICE_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: levelName.lowercased()) else {
            throw ValidationError("log level \(levelName) is not trace, debug, info, notice, warning, error or critical")
        }
        logLevel = level
    }
}
