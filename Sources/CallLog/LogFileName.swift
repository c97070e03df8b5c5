/// The names of rotated log files, as the collector and `callstats serve` write them: they sort
/// by time, `<prefix>-20251121T121850123Z-0001.ndjson.zst` (UTC, ms; `.ndjson.gz` for gzip).
public enum LogFileName {
    /// The endings of the files the collector writes and rotates: its own compressions.
    public static let suffixes = [LogCompression.zstd.fileSuffix, LogCompression.gzip.fileSuffix]

    public static func make(prefix: String, epochMs: Int64, counter: Int, compression: LogCompression) -> String {
        let (y, mo, d, h, mi, s, ms) = civil(epochMs)
        func pad(_ n: Int64, _ w: Int) -> String {
            let t = String(n)
            return String(repeating: "0", count: max(0, w - t.count)) + t
        }
        return
            "\(prefix)-\(pad(y, 4))\(pad(mo, 2))\(pad(d, 2))T\(pad(h, 2))\(pad(mi, 2))\(pad(s, 2))\(pad(ms, 3))Z-\(pad(Int64(counter % 10_000), 4))\(compression.fileSuffix)"
    }

    public static func isLog(_ name: String, prefix: String) -> Bool {
        name.hasPrefix(prefix + "-") && suffixes.contains { name.hasSuffix($0) }
    }

    /// UTC calendar fields of an epoch time (days-from-civil inverse, Howard Hinnant's algorithm).
    static func civil(_ epochMs: Int64) -> (Int64, Int64, Int64, Int64, Int64, Int64, Int64) {
        let ms = ((epochMs % 1000) + 1000) % 1000
        let secs = (epochMs - ms) / 1000
        var days = secs / 86_400
        var rem = secs % 86_400
        if rem < 0 { rem += 86_400; days -= 1 }
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60, ms)
    }
}
