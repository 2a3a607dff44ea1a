import Foundation

/// What the cores this process may run on (its affinity, as `taskset` sets it) did, from `/proc/stat`: busy
/// (user, system and interrupt time of any process), idle, or stolen by the hypervisor of a virtual machine.
///
/// Next to the process's CPU time it tells two causes of a slow benchmark apart: cores busy with the work
/// (CPU cost) and cores left idle while there is work (something other than CPU holds it up: a lock, a hand-off
/// between threads, a wait).
struct CoreTimes {
    var busy: UInt64 = 0
    var idle: UInt64 = 0
    var steal: UInt64 = 0

    /// The cores' times now, or `nil` where `/proc` cannot tell.
    static func now() -> CoreTimes? {
        guard !allowedCores.isEmpty, let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        var times = CoreTimes()
        for line in stat.split(separator: "\n") where line.hasPrefix("cpu") {
            // cpuN user nice system idle iowait irq softirq steal ...
            let fields = line.split(separator: " ")
            guard fields.count > 8, let core = Int(fields[0].dropFirst(3)), allowedCores.contains(core) else { continue }
            let ticks = fields[1...8].map { UInt64($0) ?? 0 }
            times.busy += ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
            times.idle += ticks[3] + ticks[4]
            times.steal += ticks[7]
        }
        return times
    }

    /// Busy, idle and stolen time as fractions of the cores' time between two readings.
    typealias Shares = (busy: Double, idle: Double, steal: Double)

    /// The shares of busy, idle and stolen time between `earlier` and this reading.
    func shares(since earlier: CoreTimes) -> Shares {
        let busy = Double(self.busy - earlier.busy), idle = Double(self.idle - earlier.idle)
        let steal = Double(self.steal - earlier.steal)
        let total = max(busy + idle + steal, 1)
        return (busy / total, idle / total, steal / total)
    }

    /// The cores in this process's affinity (`Cpus_allowed_list` of `/proc/self/status`, such as `0-3,8`).
    static let allowedCores: Set<Int> = {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return [] }
        var cores = Set<Int>()
        for range in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
            let bounds = range.trimmingCharacters(in: .whitespaces).split(separator: "-").compactMap { Int($0) }
            guard let first = bounds.first, let last = bounds.last, first <= last else { continue }
            cores.formUnion(first...last)
        }
        return cores
    }()
}
