import XCTest
@testable import Quality

final class StatsInputsTests: XCTestCase {
    /// Reference §6, worked example I1: Opus 48 kHz, 20 ms, RTT 120 ms.
    func testWorkedExampleI1() throws {
        let jitterBuffer = try XCTUnwrap(
            StatsInputs.averageJitterBufferDelayMs(
                jitterBufferDelaySeconds: 28_800, jitterBufferEmittedCount: 480_000))
        XCTAssertEqual(jitterBuffer, 60, accuracy: 1e-12)

        let loss = try XCTUnwrap(
            StatsInputs.effectiveLossPercent(
                concealedSamples: 14_400, silentConcealedSamples: 0, totalSamplesReceived: 480_000))
        XCTAssertEqual(loss, 3, accuracy: 1e-12)

        let perPacket = StatsInputs.samplesPerPacket(clockRate: 48_000, packetTimeMs: 20)
        XCTAssertEqual(perPacket, 960)
        let run = try XCTUnwrap(
            StatsInputs.meanLossRunPackets(
                concealedSamples: 14_400, silentConcealedSamples: 0, concealmentEvents: 6, samplesPerPacket: perPacket))
        XCTAssertEqual(run, 2.5, accuracy: 1e-12)
        let burst = StatsInputs.burstRatio(meanLossRunPackets: run, lossPercent: loss)
        XCTAssertEqual(burst, 2.425, accuracy: 1e-12)

        let ta = StatsInputs.oneWayDelayMs(roundTripTimeMs: 120, jitterBufferDelayMs: jitterBuffer, packetTimeMs: 20)
        XCTAssertEqual(ta, 160, accuracy: 1e-12)

        let codec = try XCTUnwrap(CodecImpairment.lookup("audio/opus"))
        let q = EModel.voip(oneWayDelayMs: ta, packetLossPercent: loss, burstRatio: burst, codec: codec)
        XCTAssertEqual(q.effectiveEquipmentImpairment, 10.821231, accuracy: 1e-5)
        XCTAssertEqual(q.rating, 78.315, accuracy: 5e-4)
        XCTAssertEqual(q.conversationalMOS, 3.959, accuracy: 5e-4)
        // MOS-LQ: no delay, 93.206 − Ie,eff.
        XCTAssertEqual(q.listeningRating, 93.206208 - 10.821231, accuracy: 1e-5)
        XCTAssertEqual(q.listeningMOS, MOS.fromR(82.384977), accuracy: 1e-5)
    }

    func testSilentConcealmentIsNotLoss() throws {
        let loss = try XCTUnwrap(
            StatsInputs.effectiveLossPercent(
                concealedSamples: 20_000, silentConcealedSamples: 15_200, totalSamplesReceived: 480_000))
        XCTAssertEqual(loss, 1, accuracy: 1e-12)
        XCTAssertEqual(
            StatsInputs.effectiveLossPercent(
                concealedSamples: 10, silentConcealedSamples: 20, totalSamplesReceived: 100), 0)
        XCTAssertNil(
            StatsInputs.effectiveLossPercent(
                concealedSamples: 0, silentConcealedSamples: 0, totalSamplesReceived: 0))
    }

    func testBurstRatioFloorAndMissingRuns() {
        XCTAssertEqual(StatsInputs.burstRatio(meanLossRunPackets: nil, lossPercent: 5), 1)
        XCTAssertEqual(StatsInputs.burstRatio(meanLossRunPackets: 1, lossPercent: 5), 1)
        XCTAssertEqual(StatsInputs.burstRatio(meanLossRunPackets: 4, lossPercent: 10), 3.6, accuracy: 1e-12)
        XCTAssertNil(
            StatsInputs.meanLossRunPackets(
                concealedSamples: 100, silentConcealedSamples: 0, concealmentEvents: 0, samplesPerPacket: 960))
    }

    func testNetworkLoss() {
        XCTAssertEqual(StatsInputs.networkLossPercent(packetsLost: 5, packetsReceived: 245), 2)
        XCTAssertEqual(StatsInputs.networkLossPercent(packetsLost: -3, packetsReceived: 250), 0)
        XCTAssertNil(StatsInputs.networkLossPercent(packetsLost: 0, packetsReceived: 0))
        XCTAssertNil(StatsInputs.averageJitterBufferDelayMs(jitterBufferDelaySeconds: 1, jitterBufferEmittedCount: 0))
    }

    func testOneWayDelayUsesTheAllowance() {
        XCTAssertEqual(StatsInputs.defaultDeviceAllowanceMs, 20)
        XCTAssertEqual(
            StatsInputs.oneWayDelayMs(
                roundTripTimeMs: 100, jitterBufferDelayMs: 40, packetTimeMs: 20, deviceAllowanceMs: 30), 140)
    }
}
