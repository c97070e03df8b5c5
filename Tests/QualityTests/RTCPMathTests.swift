import XCTest
@testable import Quality

final class RTCPMathTests: XCTestCase {
    func testJitterUnits() {
        XCTAssertEqual(RTCPMath.jitterMs(timestampUnits: 160, clockRate: 8000), 20)
        XCTAssertEqual(RTCPMath.jitterMs(timestampUnits: 480, clockRate: 48000), 10)
        XCTAssertEqual(RTCPMath.jitterMs(timestampUnits: 900, clockRate: 90000), 10)
        XCTAssertNil(RTCPMath.jitterMs(timestampUnits: 900, clockRate: 0))
    }

    /// RFC 3550 §6.4.1 figure: A = 0xb710:8000, LSR = 0xb705:2000, DLSR = 0x0005:4000 → 6.125 s.
    func testRoundTripTimeFromTheRFCExample() throws {
        let rtt = try XCTUnwrap(RTCPMath.roundTripTimeMs(
            arrival: 0xB710_8000, lastSenderReport: 0xB705_2000, delaySinceLastSenderReport: 0x0005_4000))
        XCTAssertEqual(rtt, 6125, accuracy: 1e-9)
    }

    func testRoundTripTimeEdgeCases() throws {
        // NTP seconds roll over between LSR and A.
        let wrapped = try XCTUnwrap(RTCPMath.roundTripTimeMs(
            arrival: 0x0000_1000, lastSenderReport: 0xFFFF_F000, delaySinceLastSenderReport: 0x0000_1000))
        XCTAssertEqual(wrapped, 4096 * 1000 / 65536, accuracy: 1e-9)
        XCTAssertNil(RTCPMath.roundTripTimeMs(arrival: 100, lastSenderReport: 0, delaySinceLastSenderReport: 0))
        XCTAssertNil(RTCPMath.roundTripTimeMs(arrival: 100, lastSenderReport: 90, delaySinceLastSenderReport: 20))
    }

    func testFractionLost() {
        XCTAssertEqual(RTCPMath.fractionLost(0), 0)
        XCTAssertEqual(RTCPMath.fractionLost(64), 0.25)
        XCTAssertEqual(RTCPMath.fractionLost(255), 255.0 / 256)
        XCTAssertEqual(RTCPMath.fractionLostField(expected: 100, lost: 25), 64)
        XCTAssertEqual(RTCPMath.fractionLostField(expected: 100, lost: 100), 255)
        XCTAssertEqual(RTCPMath.fractionLostField(expected: 100, lost: -2), 0)
        XCTAssertEqual(RTCPMath.fractionLostField(expected: 0, lost: 0), 0)
    }

    /// 8 kHz, 20-ms packets, one-way delays 50,60,50,70,50,50,90,50,50,50 ms (reference §5.1 trace).
    func testInterarrivalJitterTrace() {
        let delaysMs: [Double] = [50, 60, 50, 70, 50, 50, 90, 50, 50, 50]
        let expected: [Double] = [
            0, 5.0, 9.6875, 19.08203125, 27.889404296875, 26.146316528320312,
            44.51217174530029, 61.730161011219025, 57.872025948017836, 54.25502432626672,
        ]
        var jitter = InterarrivalJitter(clockRate: 8000)
        // Start near the top of the timestamp range so the sequence wraps.
        let firstTimestamp = UInt32.max - 400
        for (i, delay) in delaysMs.enumerated() {
            let sent = Double(i) * 0.020
            jitter.record(arrivalSeconds: 1000 + sent + delay / 1000,
                          rtpTimestamp: firstTimestamp &+ UInt32(i * 160))
            XCTAssertEqual(jitter.timestampUnits, expected[i], accuracy: 1e-6, "packet \(i + 1)")
        }
        XCTAssertEqual(jitter.reportField, 54)
        XCTAssertEqual(jitter.milliseconds, 54.25502432626672 / 8, accuracy: 1e-6)
    }
}
