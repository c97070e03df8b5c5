// libFuzzer entry point: the work is FuzzEntryPoints.records (Tests/FaultTests/FuzzEntryPoints.swift),
// shared with the replay test so that every crash found here replays there.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecords(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    FuzzEntryPoints.records(UnsafeBufferPointer(start: data, count: size))
    return 0
}
