import XCTest
@testable import Quality

final class VideoScoreTests: XCTestCase {
    private let hd = 1280.0 * 720

    private func score(
        interval: Double = 10, pauses: Double = 0, frames: Double, freezes: Double = 0, frozen: Double = 0,
        received: Double, expected: Double, fps: Double = 30
    ) -> VideoScore? {
        VideoScore(
            VideoIntervalStats(
                intervalSeconds: interval, pausesDurationSeconds: pauses, framesRendered: frames,
                freezeCount: freezes, freezesDurationSeconds: frozen,
                receivedPixels: received, expectedPixels: expected, expectedFrameRate: fps))
    }

    /// Vectors computed from the §4.4 formulas by an independent transcription.
    func testComputedVectors() throws {
        let vectors: [(VideoScore?, Double, Double, Double)] = [
            // (result, score, V0, F)
            (score(frames: 300, received: hd, expected: hd), 4.9, 4.9, 1),
            (score(frames: 300, received: 640 * 360, expected: hd), 4.30276279325985, 4.30276279325985, 1),
            (score(frames: 150, received: hd, expected: hd), 4.559540311915909, 4.559540311915909, 1),
            (score(frames: 120, received: hd, expected: hd), 4.344812712825054, 4.344812712825054, 1),
            (
                score(frames: 100, freezes: 1, frozen: 0.5, received: hd, expected: hd),
                2.727714621687059, 4.218701590639628, 0.4515812349225922
            ),
            (
                score(frames: 50, freezes: 3, frozen: 4, received: 320 * 180, expected: hd),
                1.51092768993941, 1.8655122993533055, 0.029896914436926336
            ),
            (score(frames: 0, received: hd, expected: hd), 2.9167441960645064, 2.9167441960645064, 1),
            // 5 s paused: 150 frames over 5 active seconds is full rate.
            (score(pauses: 5, frames: 150, received: hd, expected: hd), 4.9, 4.9, 1),
            // Screen share at 7.5 of 15 fps scores as 15 of 30.
            (score(frames: 75, received: hd, expected: hd, fps: 15), 4.559540311915909, 4.559540311915909, 1),
        ]
        for (index, (result, expectedScore, base, factor)) in vectors.enumerated() {
            let v = try XCTUnwrap(result, "vector \(index)")
            XCTAssertEqual(v.score, expectedScore, accuracy: 1e-9, "vector \(index)")
            XCTAssertEqual(v.baseScore, base, accuracy: 1e-9, "vector \(index)")
            XCTAssertEqual(v.freezeFactor, factor, accuracy: 1e-12, "vector \(index)")
        }
        let quarter = try XCTUnwrap(score(frames: 300, received: 640 * 360, expected: hd))
        XCTAssertEqual(quarter.resolutionDegradation, 21.220713341193722, accuracy: 1e-9)
        XCTAssertEqual(quarter.frameRateDegradation, 0)
        let half = try XCTUnwrap(score(frames: 150, received: hd, expected: hd))
        XCTAssertEqual(half.frameRateDegradation, 14.601381042059007, accuracy: 1e-9)
        XCTAssertEqual(half.framesPerSecond, 15)
    }

    func testNoScoreWhenVideoIsOffOrPaused() {
        XCTAssertNil(score(pauses: 9.5, frames: 10, received: hd, expected: hd))
        XCTAssertNil(score(interval: 0.5, frames: 15, received: hd, expected: hd))
        XCTAssertNotNil(score(interval: 1, frames: 30, received: hd, expected: hd))
    }

    func testUnknownSizesAndRates() throws {
        // Unknown expected size: no resolution penalty. Nothing received: full penalty.
        XCTAssertEqual(try XCTUnwrap(score(frames: 300, received: hd, expected: 0)).score, 4.9)
        let blank = try XCTUnwrap(score(frames: 300, received: 0, expected: hd))
        XCTAssertEqual(blank.resolutionDegradation, 100)
        XCTAssertEqual(blank.score, 1.05, accuracy: 1e-12)
        // Unknown expected frame rate reads as 30.
        XCTAssertEqual(
            try XCTUnwrap(score(frames: 150, received: hd, expected: hd, fps: 0)).score,
            4.559540311915909, accuracy: 1e-9)
    }

    func testConfigurationChangesTheFreezeFactor() throws {
        var configuration = VideoScoreConfiguration()
        XCTAssertEqual(configuration.freezeTimeWeight, 0.15)
        XCTAssertEqual(configuration.freezeEventWeight, 0.19)
        XCTAssertEqual(configuration.freezeFloor, 1.5)
        configuration.freezeTimeWeight = 0
        configuration.freezeEventWeight = 0.1
        configuration.freezeFloor = 2
        let stats = VideoIntervalStats(
            intervalSeconds: 10, framesRendered: 240, freezeCount: 1,
            freezesDurationSeconds: 2, receivedPixels: hd, expectedPixels: hd)
        let v = try XCTUnwrap(VideoScore(stats, configuration: configuration))
        // 240 frames over 8 flowing seconds = 30 fps, V0 4.9; F = exp(−0.1·30/10).
        XCTAssertEqual(v.freezeFactor, 0.7408182206817179, accuracy: 1e-12)
        XCTAssertEqual(v.score, 2 + 2.9 * 0.7408182206817179, accuracy: 1e-12)
    }

    func testP1203Map() {
        XCTAssertEqual(VideoScore.p1203MOS(quality: -5), 1.05)
        XCTAssertEqual(VideoScore.p1203MOS(quality: 100), 4.9)
        XCTAssertEqual(VideoScore.p1203MOS(quality: 50), 1.05 + 1.925 - 50 * 10 * 50 * 7e-6, accuracy: 1e-12)
        XCTAssertEqual(VideoScore.frameRateDegradation(normalisedFps: 24, resolutionDegradation: 0), 0)
        XCTAssertEqual(
            VideoScore.frameRateDegradation(normalisedFps: 0, resolutionDegradation: 0),
            100 * 30.98 / 64.65, accuracy: 1e-12)
    }
}
