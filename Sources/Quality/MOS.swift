import Foundation

/// The mean opinion score of an E-model rating R (G.107 Annex B).
package enum MOS {
    /// Lowest and highest MOS the conversion produces.
    package static let range: ClosedRange<Double> = 1...4.5

    /// The Annex B polynomial `1 + 0.035·R + R·(R − 60)·(100 − R)·7·10⁻⁶`, without any clamping.
    ///
    /// It dips below 1 on (0, 6.5153), minimum 0.9888 at R ≈ 3.22, so scores come from `fromR`.
    static func polynomial(_ r: Double) -> Double {
        1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6
    }

    /// MOS (MOS_CQE) from R, clamped to 1...4.5 so the map is monotone over all R.
    ///
    /// G.107 Annex B gives 1 below R = 0 and 4.5 above R = 100; the extra lower clamp removes the dip of
    /// the polynomial just above R = 0.
    package static func fromR(_ r: Double) -> Double {
        if r.isNaN { return .nan }
        if r <= 0 { return range.lowerBound }
        if r >= 100 { return range.upperBound }
        return min(max(polynomial(r), range.lowerBound), range.upperBound)
    }
}
