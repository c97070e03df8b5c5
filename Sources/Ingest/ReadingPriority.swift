#if canImport(Glibc)
import Glibc
#endif

/// The threads that read and decompress logs run a little below the writer's priority.
///
/// With two cores, the two readers and the writer share them, and the scheduler gives each an
/// equal part: the writer falls behind while the readers run, and writes what is left alone,
/// on one core, once they finish. Below the writer, the readers leave it a core whenever it
/// has calls to write, so its work overlaps theirs. (700 real-shaped calls, ten alternating
/// runs of each build: wall median 0.68 → 0.66 s; after the last reader ended, the writer took
/// 10-62 ms, median 35, before and 13-32 ms, median 17, after. 7,000 simulated calls, six
/// runs: 1.09 → 1.06 s.)
///
/// Three steps of `nice`: the writer then gets about two thirds of a core it shares with a
/// reader, where the scheduler's equal shares gave it half. Lowering a thread's priority needs
/// no privilege; raising the writer's would. It also leaves the rest of the machine a little
/// more room while a long run goes on. Linux gives each thread a nice value of its own; where
/// the value is the process's (Darwin), nothing is changed.
enum ReadingPriority {
    static let niceSteps: Int32 = 3

    /// Called by a thread that reads or decompresses logs, once, as it starts.
    static func lowerCurrentThread() {
        #if os(Linux)
        // `who` 0 is the calling thread on Linux. Failure only leaves the priority as it was.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) + niceSteps)
        #endif
    }
}
