// libFuzzer entry point: the work is FuzzEntryPoints.zstd (Tests/FaultTests/FuzzEntryPoints.swift),
// shared with the replay test so that every crash found here replays there.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzZstd(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    FuzzEntryPoints.zstd(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
