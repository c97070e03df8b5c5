#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value shared between threads, read and changed only while its own mutex is held.
///
/// Invariant: `value` is touched only inside `withLock`, which holds the mutex for the whole of
/// `body`, so no two threads ever access it at once. That is what makes the box `Sendable`
/// whatever `Value` is; anything `body` returns leaves the lock's protection and must be safe to
/// use on its own. The mutex is not recursive: calling `withLock` on the same box from inside
/// `body` deadlocks. There is no condition variable; code that waits for the value to change
/// needs one of its own.
public final class Locked<Value>: @unchecked Sendable {
    /// Heap-allocated so that it never moves while threads wait on it.
    @usableFromInline
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline
    var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value and returns its result.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
