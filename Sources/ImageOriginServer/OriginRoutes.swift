import Synchronization
import PipelineLocking

/// What the server is told to serve and how: in-memory assets, shaping and scripted faults, by route.
///
/// A route is a decoded path (`/a b.jpg`), optionally with `?query`: a request looks up its path with
/// its query first, then without, then the global (`nil`) entry for shaping and faults. A route entry
/// replaces the global one entirely; they are not merged.
///
/// Thread-safe: one lock around the tables; ``snapshot(for:)`` takes everything one request needs (and uses
/// up one of a fault's counted requests) in one critical section, so a change made while a request is in
/// flight applies from the next request on.
final class OriginRoutes: Sendable {
    /// The part of the tables one request uses.
    struct Snapshot: Sendable {
        var asset: OriginAsset?
        var shaping: OriginShaping
        var faults: OriginFaultSet
    }

    private struct ScriptedFaults {
        var faults: [OriginFault]
        /// Requests left before the faults clear themselves; `nil` for until cleared.
        var remaining: Int?
    }

    private struct State {
        var assets: [String: OriginAsset] = [:]
        var shaping: [String: OriginShaping] = [:]
        var globalShaping = OriginShaping.none
        var faults: [String: ScriptedFaults] = [:]
        var globalFaults: ScriptedFaults?
    }

    private let state = Locked(State())
    /// Paths served by content negotiation; a plain asset at the same route wins.
    let variants = OriginVariantTable()

    /// The key a route is stored under: the decoded path (so `/a%20b.jpg` and `/a b.jpg` are one route) and
    /// the query as given. A leading `/` is added when missing.
    static func key(_ route: String) -> String {
        var route = route
        if !route.hasPrefix("/") { route = "/" + route }
        var path = route
        var query: String?
        if let mark = route.firstIndex(of: "?") {
            path = String(route[..<mark])
            query = String(route[route.index(after: mark)...])
        }
        if case .success(let target) = OriginRequestTarget.parse(path) { path = target.path }
        return query.map { "\(path)?\($0)" } ?? path
    }

    func setAsset(_ asset: OriginAsset, at route: String) {
        state.withLock { $0.assets[Self.key(route)] = asset }
    }

    func removeAsset(at route: String) {
        state.withLock { $0.assets[Self.key(route)] = nil }
    }

    func asset(at route: String) -> OriginAsset? {
        state.withLock { $0.assets[Self.key(route)] }
    }

    func setShaping(_ shaping: OriginShaping?, for route: String?) {
        state.withLock { state in
            if let route {
                state.shaping[Self.key(route)] = shaping
            } else {
                state.globalShaping = shaping ?? .none
            }
        }
    }

    func setFaults(_ faults: [OriginFault], for route: String?, count: Int?) {
        let scripted = faults.isEmpty || count.map({ $0 <= 0 }) == true ? nil : ScriptedFaults(faults: faults, remaining: count.map { max(0, $0) })
        state.withLock { state in
            if let route {
                state.faults[Self.key(route)] = scripted
            } else {
                state.globalFaults = scripted
            }
        }
    }

    func clearFaults(for route: String?) {
        setFaults([], for: route, count: nil)
    }

    /// The shaping for a request that is answered without its route's faults (a bad target, a wrong method).
    func shaping(path: String, query: String?) -> OriginShaping {
        let keys = [query.map { "\(path)?\($0)" }, path].compactMap { $0 }
        return state.withLock { state in Self.first(keys, in: state.shaping) ?? state.globalShaping }
    }

    /// Everything a request for `path` (decoded) with `query` needs; consumes one counted fault use.
    func snapshot(path: String, query: String?) -> Snapshot {
        let keys = [query.map { "\(path)?\($0)" }, path].compactMap { $0 }
        return state.withLock { state in
            let asset = Self.first(keys, in: state.assets)
            let shaping = Self.first(keys, in: state.shaping) ?? state.globalShaping
            var faults: [OriginFault] = []
            if let key = keys.first(where: { state.faults[$0] != nil }) {
                faults = Self.use(&state.faults[key])
            } else if state.globalFaults != nil {
                faults = Self.use(&state.globalFaults)
            }
            return Snapshot(asset: asset, shaping: shaping, faults: OriginFaultSet(faults))
        }
    }

    /// The value of the first of `keys` that `table` has.
    private static func first<Value>(_ keys: [String], in table: [String: Value]) -> Value? {
        for key in keys {
            if let value = table[key] { return value }
        }
        return nil
    }

    /// The faults of one entry for one request, removing the entry when that was its last counted use.
    private static func use(_ entry: inout ScriptedFaults?) -> [OriginFault] {
        guard var scripted = entry else { return [] }
        if let remaining = scripted.remaining {
            guard remaining > 0 else {
                entry = nil
                return []
            }
            scripted.remaining = remaining - 1
            entry = scripted.remaining == 0 ? nil : scripted
        }
        return scripted.faults
    }
}
