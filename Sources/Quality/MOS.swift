import Foundation

/// Conversions between the E-model rating R and the mean opinion score (G.107 Annex B and Appendix I),
/// and the satisfaction categories of G.109.
public enum MOS {
    /// Lowest and highest MOS the conversion produces.
    public static let range: ClosedRange<Double> = 1...4.5

    /// The bare Annex B polynomial `1 + 0.035·R + R·(R − 60)·(100 − R)·7·10⁻⁶`, without any clamping.
    ///
    /// Only for comparing with tools that use it unclamped (baresip reports MOS 0.990 at R = 4.2).
    /// It dips below 1 on (0, 6.5153), minimum 0.9888 at R ≈ 3.22, so use `fromR` for scores.
    public static func polynomial(_ r: Double) -> Double {
        1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6
    }

    /// MOS (MOS_CQE) from R, clamped to 1...4.5 so the map is monotone over all R.
    ///
    /// G.107 Annex B gives 1 below R = 0 and 4.5 above R = 100; the extra lower clamp removes the dip of
    /// the polynomial just above R = 0.
    public static func fromR(_ r: Double) -> Double {
        if r.isNaN { return .nan }
        if r <= 0 { return range.lowerBound }
        if r >= 100 { return range.upperBound }
        return min(max(polynomial(r), range.lowerBound), range.upperBound)
    }

    /// R from MOS (G.107 Appendix I), the inverse of the polynomial on its increasing branch.
    ///
    /// The Recommendation writes `arctan2(x, y)` meaning the angle of the point (x, y); in C/Swift argument
    /// order that is `atan2(y, x)` with x = 18566 − 6750·MOS. Swapping them gives wrong values.
    /// The MOS is clamped to 1...4.5 first, so the result lies in about 6.5153...100.
    public static func toR(_ mos: Double) -> Double {
        if mos.isNaN { return .nan }
        let m = min(max(mos, range.lowerBound), range.upperBound)
        let y = 15 * (-903_522 + 1_113_960 * m - 202_500 * m * m).squareRoot()
        let x = 18_566 - 6_750 * m
        let h = atan2(y, x) / 3
        return 20.0 / 3 * (8 - 226.0.squareRoot() * cos(h + Double.pi / 3))
    }

    /// Percentage of users judging the call "good or better", GoB = 100·Φ((R − 60)/16) (G.107 Annex B).
    ///
    /// The constants 60 and 16 are as recalled from Annex B, not re-verified against the Recommendation.
    public static func goodOrBetterPercent(r: Double) -> Double {
        100 * standardNormalCDF((r - 60) / 16)
    }

    /// Percentage of users judging the call "poor or worse", PoW = 100·Φ((45 − R)/16) (G.107 Annex B).
    ///
    /// The constants 45 and 16 are as recalled from Annex B, not re-verified against the Recommendation.
    public static func poorOrWorsePercent(r: Double) -> Double {
        100 * standardNormalCDF((45 - r) / 16)
    }

    private static func standardNormalCDF(_ x: Double) -> Double {
        0.5 * erfc(-x / 2.0.squareRoot())
    }
}

/// User satisfaction categories of ITU-T G.109, defined on R.
public enum UserSatisfaction: String, Sendable, CaseIterable, Comparable {
    /// R < 50.
    case notRecommended = "not recommended"
    /// 50 ≤ R < 60 (MOS ≥ 2.58).
    case nearlyAllUsersDissatisfied = "nearly all users dissatisfied"
    /// 60 ≤ R < 70 (MOS ≥ 3.10).
    case manyUsersDissatisfied = "many users dissatisfied"
    /// 70 ≤ R < 80 (MOS ≥ 3.60).
    case someUsersDissatisfied = "some users dissatisfied"
    /// 80 ≤ R < 90 (MOS ≥ 4.02).
    case satisfied = "satisfied"
    /// R ≥ 90 (MOS ≥ 4.34).
    case verySatisfied = "very satisfied"

    /// Lower R bound of the category (−∞ for `notRecommended`).
    public var minimumRating: Double {
        switch self {
        case .notRecommended: return -.infinity
        case .nearlyAllUsersDissatisfied: return 50
        case .manyUsersDissatisfied: return 60
        case .someUsersDissatisfied: return 70
        case .satisfied: return 80
        case .verySatisfied: return 90
        }
    }

    public init(r: Double) {
        self = Self.allCases.last { r >= $0.minimumRating } ?? .notRecommended
    }

    /// Category of a MOS, with each R bound mapped through `MOS.fromR` (4.339, 4.024, 3.597, 3.100, 2.575).
    public init(mos: Double) {
        self = Self.allCases.last { mos >= MOS.fromR($0.minimumRating) } ?? .notRecommended
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.minimumRating < rhs.minimumRating
    }
}

/// A three-level summary for dashboards, built from the G.109 categories.
///
/// - good: "satisfied" or better, R ≥ 80 (MOS ≥ 4.02);
/// - fair: "some users dissatisfied", 70 ≤ R < 80 (MOS ≥ 3.60);
/// - poor: "many users dissatisfied" or worse, R < 70.
///
/// The cut at 70 rather than 60 is deliberate: once many users are dissatisfied the call should
/// surface as a problem, not as middling.
public enum QualityCategory: String, Sendable, CaseIterable, Comparable {
    case poor, fair, good

    /// Lowest R counted as good.
    public static let goodMinimumRating: Double = 80
    /// Lowest R counted as fair.
    public static let fairMinimumRating: Double = 70

    public init(r: Double) {
        if r >= Self.goodMinimumRating {
            self = .good
        } else if r >= Self.fairMinimumRating {
            self = .fair
        } else {
            self = .poor
        }
    }

    /// Category of a MOS, with the thresholds mapped through `MOS.fromR` (4.024 and 3.597).
    public init(mos: Double) {
        if mos >= MOS.fromR(Self.goodMinimumRating) {
            self = .good
        } else if mos >= MOS.fromR(Self.fairMinimumRating) {
            self = .fair
        } else {
            self = .poor
        }
    }

    private var rank: Int {
        switch self {
        case .poor: return 0
        case .fair: return 1
        case .good: return 2
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}
