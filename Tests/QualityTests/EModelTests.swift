import XCTest
@testable import Quality

final class EModelTests: XCTestCase {
    func testDefaultsGiveTheG107Rating() {
        let b = EModel.breakdown(EModelParameters())
        XCTAssertEqual(b.rating, 93.206208, accuracy: 1e-5)
        XCTAssertEqual(b.basicSignalToNoise, 94.768822, accuracy: 1e-5)
        XCTAssertEqual(b.simultaneousImpairment, 1.413568, accuracy: 1e-5)
        XCTAssertEqual(b.overallLoudnessImpairment, 0.440178, accuracy: 1e-5)
        XCTAssertEqual(b.sidetoneImpairment, -0.000715, accuracy: 1e-5)
        XCTAssertEqual(b.quantizingImpairment, 0.974105, accuracy: 1e-5)
        XCTAssertEqual(b.delayImpairment, 0.149046, accuracy: 1e-5)
        XCTAssertEqual(b.listenerEchoImpairment, 0.149046, accuracy: 1e-5)
        XCTAssertEqual(b.talkerEchoImpairment, 0, accuracy: 1e-12)
        XCTAssertEqual(b.absoluteDelayImpairment, 0)
        XCTAssertEqual(b.effectiveEquipmentImpairment, 0)
    }

    /// Reference §1.4.3: defaults, T = Ta, Tr = 2·Ta, Ie = 0, no loss.
    func testDelayTable() {
        let rows: [(ta: Double, idd: Double, idFull: Double, rFull: Double)] = [
            (0, 0.000, 0.149, 93.206),
            (50, 0.000, 1.599, 91.756),
            (100, 0.000, 2.692, 90.664),
            (150, 0.164, 3.816, 89.539),
            (177.3, 1.172, 5.303, 88.052),
            (200, 3.044, 7.551, 85.805),
            (250, 8.917, 14.178, 79.177),
            (300, 14.761, 20.689, 72.666),
            (400, 24.070, 31.108, 62.247),
            (500, 30.636, 38.552, 54.803),
        ]
        for row in rows {
            let p = EModelParameters.voip(
                oneWayDelayMs: row.ta, codec: .g711WithPLC, packetLossPercent: 0, burstRatio: 1)
            let b = EModel.breakdown(p)
            XCTAssertEqual(b.absoluteDelayImpairment, row.idd, accuracy: 5e-4, "Idd at \(row.ta)")
            XCTAssertEqual(b.delayImpairment, row.idFull, accuracy: 5e-4, "Id at \(row.ta)")
            XCTAssertEqual(b.rating, row.rFull, accuracy: 5e-4, "R at \(row.ta)")
        }
    }

    /// `voip` computes the listening rating from a constant for the undelayed connection: it must
    /// be exactly the rating of that connection computed in full, for every codec and loss.
    func testListeningRatingIsTheUndelayedConnectionsRating() {
        for codec in CodecImpairment.all {
            for (loss, burst) in [(0.0, 1.0), (0.7, 1.0), (3.2, 1.6), (17.5, 4.0), (100, 1)] {
                let q = EModel.voip(oneWayDelayMs: 137.25, packetLossPercent: loss, burstRatio: burst, codec: codec)
                let undelayed = EModelParameters.voip(oneWayDelayMs: 0, codec: codec, packetLossPercent: loss, burstRatio: burst)
                XCTAssertEqual(q.listeningRating.bitPattern, EModel.breakdown(undelayed).rating.bitPattern, "\(codec) at \(loss) %")
            }
        }
    }

    func testEchoFreeDelayLeavesOnlyIdd() {
        var p = EModelParameters()
        p.absoluteDelayMs = 150
        let b = EModel.breakdown(p)
        XCTAssertEqual(b.absoluteDelayImpairment, 0.164, accuracy: 5e-4)
        XCTAssertEqual(b.rating, 93.04, accuracy: 5e-3)
    }

    func testAbsoluteDelayImpairmentDefaultClass() {
        XCTAssertEqual(EModel.absoluteDelayImpairment(absoluteDelayMs: 100), 0)
        XCTAssertEqual(EModel.absoluteDelayImpairment(absoluteDelayMs: 177.3), 1.172, accuracy: 5e-4)
        // Exponent 6·sT, not amplet2's 6 − sT (which gives 1.66 here).
        XCTAssertNotEqual(EModel.absoluteDelayImpairment(absoluteDelayMs: 177.3), 1.66, accuracy: 0.1)
    }

    /// 2-state Markov loss with p = 0.02 (loss after a received packet) and q = 0.5 (arrival after
    /// a loss): Ppl = 100·p/(p + q) = 3.846 %, BurstR = 1/(p + q) = 1.923. The mean loss run 1/q = 2
    /// gives the same BurstR (reference §1.5).
    func testBurstRatioOfAMarkovLossModel() {
        let p = 0.02, q = 0.5
        let burstRatio = StatsInputs.burstRatio(meanLossRunPackets: 1 / q, lossPercent: 100 * p / (p + q))
        XCTAssertEqual(burstRatio, 1 / (p + q), accuracy: 1e-12)
        XCTAssertEqual(burstRatio, 1.923, accuracy: 5e-4)
    }

    func testEffectiveEquipmentImpairment() {
        // No loss: just Ie.
        XCTAssertEqual(effectiveEquipmentImpairment(.g729A, packetLossPercent: 0, burstRatio: 1), 11)
        // G.711+PLC, 1 % random: 95·1/(1 + 25.1).
        XCTAssertEqual(
            effectiveEquipmentImpairment(.g711WithPLC, packetLossPercent: 1, burstRatio: 1),
            95.0 / 26.1, accuracy: 1e-12)
        // G.729A, 2 % with BurstR 2: 11 + 84·2/(1 + 19).
        XCTAssertEqual(
            effectiveEquipmentImpairment(.g729A, packetLossPercent: 2, burstRatio: 2),
            11 + 84 * 2.0 / 20, accuracy: 1e-12)
        // Bursty loss hurts more than random loss of the same amount.
        XCTAssertGreaterThan(
            effectiveEquipmentImpairment(.opus, packetLossPercent: 5, burstRatio: 3),
            effectiveEquipmentImpairment(.opus, packetLossPercent: 5, burstRatio: 1))
        // 100 % loss of a codec with Bpl 25.1 and random loss: 95·100/125.1.
        XCTAssertEqual(
            effectiveEquipmentImpairment(.opus, packetLossPercent: 100, burstRatio: 1),
            9500 / 125.1, accuracy: 1e-9)
    }

    func testVoIPScoresWithoutImpairment() {
        let q = EModel.voip(oneWayDelayMs: 0, packetLossPercent: 0, burstRatio: 1, codec: .g711WithPLC)
        XCTAssertEqual(q.rating, 93.206208, accuracy: 1e-5)
        XCTAssertEqual(q.listeningRating, 93.206208, accuracy: 1e-5)
        XCTAssertEqual(q.listeningMOS, q.conversationalMOS, accuracy: 1e-12)
        XCTAssertEqual(q.conversationalMOS, 4.409406, accuracy: 1e-5)
    }

    func testListeningQualityIgnoresDelay() {
        let near = EModel.voip(oneWayDelayMs: 40, packetLossPercent: 2, burstRatio: 1.5, codec: .opus)
        let far = EModel.voip(oneWayDelayMs: 400, packetLossPercent: 2, burstRatio: 1.5, codec: .opus)
        let ieEff = effectiveEquipmentImpairment(.opus, packetLossPercent: 2, burstRatio: 1.5)
        // Listening R = R(Ta = 0) − Ie,eff = 93.206208 − Ie,eff.
        XCTAssertEqual(near.listeningRating, 93.206208 - ieEff, accuracy: 1e-5)
        XCTAssertEqual(far.listeningRating, near.listeningRating, accuracy: 1e-9)
        XCTAssertEqual(far.listeningMOS, near.listeningMOS, accuracy: 1e-12)
        XCTAssertLessThan(far.conversationalMOS, near.conversationalMOS)
        XCTAssertGreaterThan(far.listeningMOS, far.conversationalMOS)
    }

    func testVoIPParametersFollowTheDelayConvention() {
        let p = EModelParameters.voip(oneWayDelayMs: 80, codec: .g729A, packetLossPercent: 1, burstRatio: 2)
        XCTAssertEqual(p.absoluteDelayMs, 80)
        XCTAssertEqual(p.echoPathDelayMs, 80)
        XCTAssertEqual(p.roundTripDelayMs, 160)
        XCTAssertEqual(p.equipmentImpairment, 11)
        XCTAssertEqual(p.packetLossRobustness, 19)
        XCTAssertEqual(p.talkerEchoLoudnessRating, 65)
    }

    private func effectiveEquipmentImpairment(_ codec: CodecImpairment, packetLossPercent: Double, burstRatio: Double) -> Double {
        EModel.effectiveEquipmentImpairment(
            equipmentImpairment: codec.equipmentImpairment, packetLossRobustness: codec.packetLossRobustness,
            packetLossPercent: packetLossPercent, burstRatio: burstRatio)
    }
}
