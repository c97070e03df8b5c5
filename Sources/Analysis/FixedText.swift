#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Numbers in the texts the analysis stores (finding details, grade reasons).
enum FixedText {
    /// `v` with `places` decimals, exactly as C's `%.*f` prints it (the binary value rounded,
    /// ties to even), as `String(format:)` did: that took about 7 µs a call on Linux, more than
    /// the rest of a call's findings.
    static func decimal(_ v: Double, places: Int) -> String {
        // `%f` of the largest double is 309 digits, a point and the decimals.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 340) { buffer in
            _ = withVaList([Int32(min(max(places, 0), 20)), v]) { vsnprintf(buffer.baseAddress, buffer.count, "%.*f", $0) }
            return String(cString: buffer.baseAddress!)
        }
    }
}
