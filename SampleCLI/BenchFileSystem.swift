import Foundation

/// What a benchmark that creates many files should know of the file system under its directory.
enum BenchFileSystem {
    /// A warning when `directory` lies on ext4 without a journal, else `nil`.
    ///
    /// There, the kernel's inode allocator steps over every inode freed in the last minute or more (several
    /// minutes while the inode table is not yet written back) when it creates a file, reading each one's
    /// table entry. After thousands of files were deleted, creating and writing one of 130 KB cost 152–461 µs
    /// there against 55–101 µs on a journaled ext4 of the same disk, more for whichever side of a comparison
    /// ran closer to the deletions.
    static func journalWarning(for directory: URL) -> String? {
        guard let device = ext4Device(holding: directory.standardizedFileURL.path),
              let journal = try? String(contentsOfFile: "/sys/fs/ext4/\(device)/journal_task", encoding: .utf8),
              journal.trimmingCharacters(in: .whitespacesAndNewlines) == "<none>"
        else { return nil }
        return "note: \(directory.path) is on ext4 without a journal (\(device)), where creating a file costs several times more "
            + "for minutes after files were deleted: runs close together measure that, not the fetch. For figures to "
            + "compare, set TMPDIR to a file system with a journal (see docs/benchmarks.md)."
    }

    /// The name of the block device (`vda`, `loop0`) of the ext4 mount that holds `path`, from
    /// `/proc/self/mountinfo`: the longest mount point that is a prefix of the path.
    private static func ext4Device(holding path: String) -> String? {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return nil }
        var best: (mountPoint: String, device: String?)?
        for line in mounts.split(separator: "\n") {
            // ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS
            let halves = line.components(separatedBy: " - ")
            let fields = halves[0].split(separator: " ")
            guard halves.count == 2, fields.count >= 5 else { continue }
            let mountPoint = String(fields[4])
            let within = mountPoint == "/" || path == mountPoint || path.hasPrefix(mountPoint + "/")
            guard within, mountPoint.count >= (best?.mountPoint.count ?? -1) else { continue }
            let tail = halves[1].split(separator: " ")
            let device = tail.count >= 2 && tail[0] == "ext4" ? tail[1].split(separator: "/").last.map(String.init) : nil
            best = (mountPoint, device)
        }
        return best?.device
    }
}
