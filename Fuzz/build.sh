#!/usr/bin/env bash
# Builds the libFuzzer targets into .build-fuzz/ (ASan + libFuzzer coverage, optimised):
#   fuzz-records   NDJSON record parser, delta restoration, the analyser's stats scanner, analysis
#   fuzz-zstd      zstd frame reader and line chunker, reads split at every offset
#   fuzz-capture   capture decoders: link, VLAN, IP reassembly, UDP, RTP, RTCP, STUN, SIP
# The package's modules are compiled straight from Sources/ with swiftc (SwiftPM cannot give
# one target libFuzzer's main without giving it to the `callstats` executable too); what each
# target does with an input is Tests/FaultTests/FuzzEntryPoints.swift, which the replay tests
# share. Needs a Swift toolchain with libFuzzer (Linux swift.org toolchains have it).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFTC=${SWIFTC:-swiftc}
OUT=.build-fuzz
mkdir -p "$OUT/lib"
FLAGS=(-parse-as-library -O -g -sanitize=fuzzer,address -enable-testing -package-name callstats -I "$OUT/lib" -I Sources/CZstd -I Sources/CPcap -I Sources/CByteCompare/include)

# module name and its sources, in dependency order
module() {
    local name=$1; shift
    echo "  module $name"
    # A static library is an archive that the linker adds to: an object left from a renamed
    # source would define its symbols twice.
    rm -f "$OUT/lib/lib$name.a"
    "$SWIFTC" -emit-library -static -module-name "$name" "${FLAGS[@]}" \
        -emit-module -emit-module-path "$OUT/lib/$name.swiftmodule" "$@" -o "$OUT/lib/lib$name.a"
}
echo "building fuzz targets in $OUT (a few minutes on two cores)"
module CallLog Sources/CallLog/*.swift
module Quality Sources/Quality/*.swift
module MaterialScanning Sources/MaterialScanning/*.swift
module MaterialCodec Sources/MaterialCodec/*.swift
module Analysis Sources/Analysis/*.swift
module Capture Sources/Capture/*.swift

for target in records zstd capture; do
    entry=Fuzz/targets/Fuzz${target^}.swift
    echo "  fuzz-$target"
    "$SWIFTC" "${FLAGS[@]}" -module-name Fuzz "$entry" Tests/FaultTests/FuzzEntryPoints.swift \
        -L "$OUT/lib" -lAnalysis -lMaterialCodec -lMaterialScanning -lQuality -lCapture -lCallLog -lzstd -lpcap -o "$OUT/fuzz-$target"
done
echo "built: $(cd "$OUT" && ls fuzz-* | tr '\n' ' ')"
