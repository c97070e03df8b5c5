#if canImport(Glibc)
import Glibc
#endif

/// The threads that read and decompress logs run a little below the writer's priority.
///
/// With two cores, the two readers and the writer share them, and the scheduler gives each an
/// equal part: the writer falls behind while the readers run, and writes what is left alone,
/// on one core, once they finish. Below the writer, the readers leave it a core whenever it
/// has calls to write, so more of its work overlaps theirs: 1-3 % less wall time on 7,000
/// simulated calls, where the writer has the most to do; no change on 700 real-shaped calls
/// (DECISIONS.md).
///
/// Three steps of `nice`: the writer's scheduling weight is then about twice a reader's (1,024
/// against 526 in the Linux scheduler's table), where before they were equal. Lowering a thread's priority needs
/// no privilege; raising the writer's would. It also leaves the rest of the machine a little
/// more room while a long run goes on. Linux gives each thread a nice value of its own; where
/// the value is the process's (Darwin), nothing is changed.
enum ReadingPriority {
    static let niceSteps: Int32 = 3

    /// Called by a thread that reads or decompresses logs, once, as it starts.
    static func lowerCurrentThread() {
        #if os(Linux)
        // `who` 0 is the calling thread on Linux. Failure only leaves the priority as it was.
        let thread = __priority_which_t(PRIO_PROCESS.rawValue)
        _ = setpriority(thread, 0, getpriority(thread, 0) + niceSteps)
        #endif
    }
}
