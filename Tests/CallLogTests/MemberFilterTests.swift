import CallLog
import XCTest

final class StatsMemberFilterTests: XCTestCase {
    let filter = StatsMemberFilter(keeping: ["packetsLost", "qualityLimitationDurations", "googRtt"])

    func testKeepsIdentityAndListedMembersOnly() throws {
        let record = LogRecord.stats(
            call: "c", ts: 5, format: .w3c,
            report: [
                [
                    "id": "IT1", "timestamp": 4.5, "type": "inbound-rtp", "packetsLost": 3, "audioLevel": 0.2,
                    "qualityLimitationDurations": ["cpu": 1, "none": 9],
                ],
                ["id": "CF1", "type": "certificate", "timestamp": 4.5, "base64Certificate": "MIIB"],
                ["id": "ssrc_1_recv", "type": "ssrc", "timestamp": 4.5, "values": ["googRtt": "70", "googCodecName": "opus"]],
            ], peerConnection: "a")
        let out = filter.apply(to: record)
        XCTAssertEqual(
            out["report"],
            [
                [
                    "id": "IT1", "timestamp": 4.5, "type": "inbound-rtp", "packetsLost": 3,
                    "qualityLimitationDurations": ["cpu": 1, "none": 9],
                ],
                ["id": "CF1", "type": "certificate", "timestamp": 4.5],
                ["id": "ssrc_1_recv", "type": "ssrc", "timestamp": 4.5, "values": ["googRtt": "70"]],
            ])
        // Everything outside the report is untouched.
        var rest = out, original = record
        rest.body["report"] = nil
        original.body["report"] = nil
        XCTAssertEqual(rest, original)
    }

    func testOtherRecordsPassUnchanged() {
        let event = LogRecord(kind: .event, call: "c", ts: 1, body: ["action": "iceState", "type": "iceConnected", "packetsLost": 1])
        XCTAssertEqual(filter.apply(to: event), event)
        let delta = LogRecord(kind: .stats, call: "c", ts: 1, body: ["format": "w3c", "delta": ["set": ["IT1": ["audioLevel": 1]]]])
        XCTAssertEqual(filter.apply(to: delta), delta)
    }
}
