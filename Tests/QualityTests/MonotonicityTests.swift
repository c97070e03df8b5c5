import TestSupport
import XCTest
@testable import Quality

/// Property tests over many fixed-seed random cases: worse conditions never give a better score.
final class MonotonicityTests: XCTestCase {
    private let codecs = CodecImpairment.all
    private let cases = 5_000

    func testMOSNonIncreasingInDelay() {
        var rng = SeededGenerator(seed: 0x5EED_0001)
        for _ in 0..<cases {
            let codec = codecs.randomElement(using: &rng)!
            let loss = Double.random(in: 0...20, using: &rng)
            let burst = Double.random(in: 1...8, using: &rng)
            let a = Double.random(in: 0...600, using: &rng)
            let b = Double.random(in: 0...600, using: &rng)
            let (shorter, longer) = (min(a, b), max(a, b))
            let near = EModel.voip(oneWayDelayMs: shorter, packetLossPercent: loss, burstRatio: burst, codec: codec)
            let far = EModel.voip(oneWayDelayMs: longer, packetLossPercent: loss, burstRatio: burst, codec: codec)
            XCTAssertLessThanOrEqual(far.rating, near.rating + 1e-12, "\(codec.name) \(shorter)→\(longer)")
            XCTAssertLessThanOrEqual(far.conversationalMOS, near.conversationalMOS)
            XCTAssertEqual(far.listeningMOS, near.listeningMOS, accuracy: 1e-12)
            XCTAssertGreaterThanOrEqual(far.listeningMOS, far.conversationalMOS)
            XCTAssertTrue(MOS.range.contains(far.conversationalMOS))
        }
    }

    func testMOSNonIncreasingInLossAndBurstiness() {
        var rng = SeededGenerator(seed: 0x5EED_0002)
        for _ in 0..<cases {
            let codec = codecs.randomElement(using: &rng)!
            let delay = Double.random(in: 0...500, using: &rng)
            let a = Double.random(in: 0...30, using: &rng)
            let b = Double.random(in: 0...30, using: &rng)
            let burst = Double.random(in: 1...8, using: &rng)
            let lighter = EModel.voip(oneWayDelayMs: delay, packetLossPercent: min(a, b), burstRatio: burst, codec: codec)
            let heavier = EModel.voip(oneWayDelayMs: delay, packetLossPercent: max(a, b), burstRatio: burst, codec: codec)
            XCTAssertLessThanOrEqual(heavier.rating, lighter.rating + 1e-12)
            XCTAssertLessThanOrEqual(heavier.conversationalMOS, lighter.conversationalMOS)
            XCTAssertLessThanOrEqual(heavier.listeningMOS, lighter.listeningMOS)

            let moreBursty = EModel.voip(
                oneWayDelayMs: delay, packetLossPercent: a,
                burstRatio: burst + Double.random(in: 0...4, using: &rng), codec: codec)
            let random = EModel.voip(oneWayDelayMs: delay, packetLossPercent: a, burstRatio: burst, codec: codec)
            XCTAssertLessThanOrEqual(moreBursty.conversationalMOS, random.conversationalMOS)
        }
    }

    private struct VideoCase {
        var active: Double
        var notFrozenFps: Double
        var freezeCount: Double
        var frozen: Double
        var receivedPixels: Double
        var expectedPixels: Double
        var expectedFps: Double

        /// Frames follow from the frame rate while not frozen, so a longer freeze removes frames.
        func score() -> Double? {
            VideoScore(
                VideoIntervalStats(
                    intervalSeconds: active, framesRendered: notFrozenFps * max(0, active - frozen),
                    freezeCount: freezeCount, freezesDurationSeconds: frozen,
                    receivedPixels: receivedPixels, expectedPixels: expectedPixels,
                    expectedFrameRate: expectedFps))?.score
        }
    }

    private func randomVideoCase(_ rng: inout SeededGenerator) -> VideoCase {
        let active = Double.random(in: 1...60, using: &rng)
        return VideoCase(
            active: active,
            notFrozenFps: Double.random(in: 0...60, using: &rng),
            freezeCount: Double(Int.random(in: 0...10, using: &rng)),
            frozen: Double.random(in: 0...(active / 2), using: &rng),
            receivedPixels: Double.random(in: 1...(1920 * 1080), using: &rng),
            expectedPixels: Double.random(in: 1...(3840 * 2160), using: &rng),
            expectedFps: [5, 15, 24, 30, 60].randomElement(using: &rng)!)
    }

    func testVideoScoreMonotoneAndBounded() throws {
        var rng = SeededGenerator(seed: 0x5EED_0004)
        for _ in 0..<cases {
            let c = randomVideoCase(&rng)
            let base = try XCTUnwrap(c.score())
            XCTAssertTrue((1.0...5.0).contains(base), "\(c)")

            var smaller = c
            smaller.receivedPixels *= Double.random(in: 0.01...1, using: &rng)
            XCTAssertLessThanOrEqual(try XCTUnwrap(smaller.score()), base + 1e-12, "resolution \(c)")

            var slower = c
            slower.notFrozenFps *= Double.random(in: 0...1, using: &rng)
            XCTAssertLessThanOrEqual(try XCTUnwrap(slower.score()), base + 1e-12, "fps \(c)")

            var moreFreezes = c
            moreFreezes.freezeCount += Double(Int.random(in: 1...5, using: &rng))
            XCTAssertLessThanOrEqual(try XCTUnwrap(moreFreezes.score()), base + 1e-12, "count \(c)")

            var longerFreezes = c
            longerFreezes.frozen += Double.random(in: 0...(c.active - c.frozen), using: &rng)
            XCTAssertLessThanOrEqual(try XCTUnwrap(longerFreezes.score()), base + 1e-12, "duration \(c)")
        }
    }
}
