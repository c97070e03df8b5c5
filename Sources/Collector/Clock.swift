import Dispatch
import Foundation

/// Time and timers for the agent. A seam so that sampling, file age and retry timing are
/// tested exactly (a manual clock in the tests) rather than with sleeps.
package protocol AgentClock: Sendable {
    /// Epoch milliseconds.
    func now() -> Int64
    /// Runs `body` on `queue` every `interval` ms, first after one interval, until cancelled.
    func repeating(every interval: Int64, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable
    /// Runs `body` on `queue` once after `delay` ms unless cancelled.
    func after(_ delay: Int64, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable
}

package protocol Cancellable: Sendable {
    func cancel()
}

/// Wall clock and Dispatch timers (with leeway, so that timers of many calls coalesce).
struct SystemClock: AgentClock {
    func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    func repeating(every interval: Int64, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        let t = DispatchSource.makeTimerSource(queue: queue)
        let i = DispatchTimeInterval.milliseconds(Int(max(1, interval)))
        t.schedule(deadline: .now() + i, repeating: i, leeway: .milliseconds(Int(max(1, interval / 20))))
        t.setEventHandler(handler: body)
        t.resume()
        return TimerHandle(timer: t)
    }

    func after(_ delay: Int64, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now() + .milliseconds(Int(max(0, delay))), leeway: .milliseconds(10))
        t.setEventHandler(handler: body)
        t.resume()
        return TimerHandle(timer: t)
    }

    struct TimerHandle: Cancellable, @unchecked Sendable {
        let timer: DispatchSourceTimer
        func cancel() { timer.cancel() }
    }
}
