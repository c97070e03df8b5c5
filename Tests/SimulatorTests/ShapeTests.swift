import CallLog
import Foundation
import Simulator
import TestSupport
import XCTest

/// The simulated reports look like the real ones: W3C like the Chromium recording, goog like
/// the SDK's Appendix E.
final class ShapeTests: XCTestCase {
    /// Members the recording cannot show: its call had no relay candidate (Chromium adds these
    /// to relay candidates only).
    static let relayOnly: Set<String> = ["relayProtocol", "url"]

    func testW3CMembersPerTypeMatchTheChromiumRecording() throws {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is not present") }
        let recording = try ChromiumRecording(url: url)
        var real: [String: Set<String>] = [:]
        for s in recording.snapshots {
            for o in s.stats { real[o["type"]!.stringValue!, default: []].formUnion(o.objectValue!.keys) }
        }
        let simulated = SimulatedRun.shared.w3cFields
        XCTAssertEqual(Set(simulated.keys), Set(real.keys), "object types")
        for (type, fields) in real.sorted(by: { $0.key < $1.key }) {
            let ours = simulated[type] ?? []
            XCTAssertEqual(fields.subtracting(ours).sorted(), [], "\(type): members the simulator never writes")
            let extra = type == "local-candidate" ? ours.subtracting(ShapeTests.relayOnly) : ours
            XCTAssertEqual(extra.subtracting(fields).sorted(), [], "\(type): members Chromium does not have")
        }
        XCTAssertEqual(simulated["local-candidate"]!.intersection(ShapeTests.relayOnly), ShapeTests.relayOnly)
    }

    /// Appendix E of the Kandy Anonymous Call SDK guide, value names per object.
    static let appendixE: [String: Set<String>] = [
        "googTrack": ["googTrackId"],
        "googLibjingleSession": ["googInitiator"],
        "googComponent": ["selectedCandidatePairId", "googComponent"],
        "googCandidatePair": [
            "googActiveConnection", "bytesReceived", "bytesSent", "packetsSent", "googReadable", "googChannelId",
            "googLocalAddress", "localCandidateId", "googLocalCandidateType", "googRemoteAddress", "remoteCandidateId",
            "googRemoteCandidateType", "googRtt", "packetsDiscardedOnSend", "googTransportType", "googWritable",
        ],
        "localcandidate": ["ipAddress", "networkType", "portNumber", "priority", "transport", "candidateType"],
        "remotecandidate": ["ipAddress", "portNumber", "priority", "transport", "candidateType"],
        "VideoBwe": [
            "googActualEncBitrate", "googAvailableReceiveBandwidth", "googAvailableSendBandwidth", "googBucketDelay",
            "googRetransmitBitrate", "googTargetEncBitrate", "googTransmitBitrate",
        ],
        "ssrc_send_audio": [
            "audioInputLevel", "bytesSent", "packetsLost", "packetsSent", "ssrc", "transportId", "googCodecName",
            "googEchoCancellationQualityMin", "googEchoCancellationEchoDelayMedian", "googEchoCancellationEchoDelayStdDev",
            "googEchoCancellationReturnLoss", "googEchoCancellationReturnLossEnhancement", "googJitterReceived", "googRtt",
            "googTrackId", "googTypingNoiseState",
        ],
        "ssrc_recv_audio": [
            "audioOutputLevel", "bytesReceived", "packetsLost", "packetsReceived", "ssrc", "transportId", "googAccelerateRate",
            "googCaptureStartNtpTimeMs", "googCodecName", "googCurrentDelayMs", "googDecodingCNG", "googDecodingCTN",
            "googDecodingCTSG", "googDecodingNormal", "googDecodingPLC", "googDecodingPLCCNG", "googExpandRate",
            "googJitterBufferMs", "googJitterReceived", "googPreemptiveExpandRate", "googPreferredJitterBufferMs",
            "googSecondaryDecodedRate", "googSpeechExpandRate", "googTrackId",
        ],
        "ssrc_send_video": [
            "bytesSent", "packetsLost", "packetsSent", "ssrc", "transportId", "googAdaptationChanges", "googAvgEncodeMs",
            "googBandwidthLimitedResolution", "googCodecName", "googCpuLimitedResolution", "googEncodeUsagePercent",
            "googFirsReceived", "googFrameHeightInput", "googFrameHeightSent", "googFrameRateInput", "googFrameRateSent",
            "googFrameWidthInput", "googFrameWidthSent", "googNacksReceived", "googPlisReceived", "googRtt", "googTrackId",
            "googViewLimitedResolution",
        ],
        "ssrc_recv_video": [
            "bytesReceived", "packetsLost", "packetsReceived", "ssrc", "transportId", "googCaptureStartNtpTimeMs",
            "googCurrentDelayMs", "googDecodeMs", "googFirsSent", "googFrameHeightReceived", "googFrameRateDecoded",
            "googFrameRateOutput", "googFrameRateReceived", "googFrameWidthReceived", "googJitterBufferMs", "googMaxDecodeMs",
            "googMinPlayoutDelayMs", "googNacksSent", "googPlisSent", "googRenderDelayMs", "googTargetDelayMs", "googTrackId",
        ],
    ]

    func testGoogObjectsHaveTheAppendixEValueNames() {
        let run = SimulatedRun.shared
        XCTAssertEqual(
            run.googTypes,
            [
                "googTrack", "googLibjingleSession", "googComponent", "googCandidatePair",
                "localcandidate", "remotecandidate", "ssrc", "VideoBwe",
            ])
        XCTAssertEqual(Set(run.googFields.keys), Set(ShapeTests.appendixE.keys))
        for (key, names) in ShapeTests.appendixE {
            XCTAssertEqual(run.googFields[key], names, key)
        }
    }

    func testGoogValuesAreStringsAndIDsFollowTheSDK() throws {
        let run = SimulatedRun.shared
        let index = try XCTUnwrap(run.calls.firstIndex { $0.plan.format == .goog && $0.plan.hasVideo && $0.stats > 0 })
        let report = try XCTUnwrap(run.simulator.records(forCall: index).first { $0.kind == .stats }?["report"]?.arrayValue)
        for o in report {
            XCTAssertTrue(o["values"]!.objectValue!.entries.allSatisfy { $0.value.stringValue != nil })
            XCTAssertNotNil(o["timestamp"]?.doubleValue)
        }
        let ids = report.map { $0["id"]!.stringValue! }
        XCTAssertTrue(ids.contains { $0.hasPrefix("ssrc_") && $0.hasSuffix("_send") })
        XCTAssertTrue(ids.contains { $0.hasPrefix("ssrc_") && $0.hasSuffix("_recv") })
        XCTAssertTrue(ids.contains("bweforvideo"))
        XCTAssertTrue(ids.contains("Conn-audio-1-0"))
        XCTAssertTrue(ids.contains("Channel-audio-1"))
    }
}
