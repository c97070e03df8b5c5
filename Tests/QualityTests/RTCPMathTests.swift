import XCTest
@testable import Quality

final class RTCPMathTests: XCTestCase {
    func testJitterUnits() {
        XCTAssertEqual(RTCPMath.jitterMs(timestampUnits: 160, clockRate: 8000), 20)
        XCTAssertEqual(RTCPMath.jitterMs(timestampUnits: 480, clockRate: 48000), 10)
        XCTAssertEqual(RTCPMath.jitterMs(timestampUnits: 900, clockRate: 90000), 10)
        XCTAssertNil(RTCPMath.jitterMs(timestampUnits: 900, clockRate: 0))
    }

    func testCompactNTPUnits() {
        XCTAssertEqual(RTCPMath.compactNTPMs(0), 0)
        XCTAssertEqual(RTCPMath.compactNTPMs(0x0001_0000), 1000)
        XCTAssertEqual(RTCPMath.compactNTPMs(0x0005_4000), 5250)
        XCTAssertEqual(RTCPMath.compactNTPMs(1), 1000.0 / 65536)
    }

    /// RFC 3550 §6.4.1 figure: A = 0xb710:8000, LSR = 0xb705:2000 (A − LSR = 11.375 s),
    /// DLSR = 0x0005:4000 (5.25 s) → 6.125 s.
    func testRoundTripTimeFromTheRFCExample() {
        let rtt = RTCPMath.roundTripTimeMs(
            sinceSenderReportNanos: 11_375_000_000, delaySinceLastSenderReport: 0x0005_4000)
        XCTAssertEqual(rtt, 6125)
    }

    /// A DLSR longer than the elapsed time gives a negative figure, left for the caller to judge.
    func testRoundTripTimeBelowZero() {
        let rtt = RTCPMath.roundTripTimeMs(sinceSenderReportNanos: 1_000_000_000, delaySinceLastSenderReport: 0x0001_8000)
        XCTAssertEqual(rtt, -500)
    }

    func testFractionLost() {
        XCTAssertEqual(RTCPMath.fractionLost(0), 0)
        XCTAssertEqual(RTCPMath.fractionLost(64), 0.25)
        XCTAssertEqual(RTCPMath.fractionLost(255), 255.0 / 256)
    }

    /// 8 kHz, 20-ms packets, one-way delays 50,60,50,70,50,50,90,50,50,50 ms (reference §5.1 trace):
    /// the estimate after each packet, the RFC's J += (|D| − J)/16 evaluated as (15·J + |D|)/16.
    func testInterarrivalJitterTrace() {
        let delaysMs: [Double] = [50, 60, 50, 70, 50, 50, 90, 50, 50, 50]
        let expected: [Double] = [
            0, 0.625, 1.2109375, 2.38525390625, 3.486175537109375, 3.268289566040039,
            5.564021468162537, 7.716270126402378, 7.2340032435022295, 6.78187804078334,
        ]
        var jitter = InterarrivalJitter()
        XCTAssertEqual(jitter.milliseconds, 0)
        for i in 1..<delaysMs.count {
            let d = InterarrivalJitter.transitDifferenceMs(
                arrivalMs: 1000 + Double(i) * 20 + delaysMs[i],
                previousArrivalMs: 1000 + Double(i - 1) * 20 + delaysMs[i - 1],
                timestampStep: 160, clockRate: 8000)
            XCTAssertEqual(d, abs(delaysMs[i] - delaysMs[i - 1]), "packet \(i + 1)")
            let returned = jitter.add(transitDifferenceMs: d)
            XCTAssertEqual(returned, jitter.milliseconds)
            XCTAssertEqual(jitter.milliseconds, expected[i], "packet \(i + 1)")
        }
    }

    /// The two algebraically equal forms of the update round differently for these inputs; the
    /// estimate must follow (15·J + |D|)/16, the form `tshark` uses, to compare exactly.
    func testJitterUpdateFollowsTheWiresharkForm() {
        var jitter = InterarrivalJitter()
        jitter.add(transitDifferenceMs: 396.34806967355274)
        let previous = jitter.milliseconds
        XCTAssertEqual(previous, 24.771754354597046)
        let difference = 44.949106478873816
        jitter.add(transitDifferenceMs: difference)
        XCTAssertEqual(jitter.milliseconds, (15 * previous + difference) / 16)
        XCTAssertNotEqual((15 * previous + difference) / 16, previous + (difference - previous) / 16)
    }

    /// A negative timestamp step (a packet stamped before the previous one) is measured as such.
    func testTransitDifferenceWithBackwardTimestamp() {
        let d = InterarrivalJitter.transitDifferenceMs(
            arrivalMs: 100, previousArrivalMs: 80, timestampStep: -960, clockRate: 48000)
        XCTAssertEqual(d, 40)
    }
}
