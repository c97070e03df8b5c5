import Foundation

/// Inputs of the ITU-T G.107 (06/2015) narrow-band E-model, initialised to the defaults of G.107 §7.7.
///
/// Every field keeps the Recommendation's unit (dB, dBm0p, dB(A), ms, %). The abbreviation used by
/// G.107 is given in each comment so the code can be read against the Recommendation.
/// With every default the model yields R = 93.206208, the "93.2" quoted by G.107.
package struct EModelParameters: Sendable, Equatable {
    /// SLR, dB.
    package var sendLoudnessRating: Double = 8
    /// RLR, dB.
    package var receiveLoudnessRating: Double = 2
    /// STMR, dB.
    package var sidetoneMaskingRating: Double = 15
    /// LSTR, dB.
    package var listenerSidetoneRating: Double = 18
    /// Ds, D-value of the telephone on the send side.
    package var sendDValue: Double = 3
    /// Dr, D-value on the receive side. Not used by the narrow-band equations; kept so the parameter set is complete.
    package var receiveDValue: Double = 3
    /// TELR, dB. 65 dB means well-cancelled echo.
    package var talkerEchoLoudnessRating: Double = 65
    /// WEPL, dB.
    package var weightedEchoPathLoss: Double = 110
    /// T, mean one-way delay of the echo path, ms.
    package var echoPathDelayMs: Double = 0
    /// Tr, round-trip delay in a 4-wire loop, ms.
    package var roundTripDelayMs: Double = 0
    /// Ta, absolute (mouth-to-ear) delay in echo-free connections, ms.
    package var absoluteDelayMs: Double = 0
    /// qdu, number of quantization distortion units.
    package var quantizationDistortionUnits: Double = 1
    /// Ie, equipment impairment factor of the codec.
    package var equipmentImpairment: Double = 0
    /// Bpl, packet-loss robustness factor of the codec. Irrelevant while the loss is 0.
    package var packetLossRobustness: Double = 4.3
    /// Ppl, packet-loss probability, percent (0...100).
    package var packetLossPercent: Double = 0
    /// BurstR: 1 for random loss, above 1 for bursty loss.
    package var burstRatio: Double = 1
    /// Nc, circuit noise referred to 0 dBr, dBm0p.
    package var circuitNoise: Double = -70
    /// Nfor, noise floor at the receive side, dBmp.
    package var receiveNoiseFloor: Double = -64
    /// Ps, room noise at the send side, dB(A).
    package var sendRoomNoise: Double = 35
    /// Pr, room noise at the receive side, dB(A).
    package var receiveRoomNoise: Double = 35
    /// A, advantage factor. Kept at 0 for analytics so scores are not inflated by an expectation discount.
    package var advantageFactor: Double = 0
    /// mT, minimum perceivable delay, ms (default delay-sensitivity class).
    package var minimumPerceivableDelayMs: Double = 100
    /// sT, delay sensitivity (default class 1, which reproduces the pre-2014 Idd formula).
    package var delaySensitivity: Double = 1

    /// All G.107 defaults.
    package init() {}

    /// Parameters for a VoIP leg: default terminal and echo values, `T = Ta`, `Tr = 2·Ta`.
    ///
    /// The echo path of a packet call is about as long as the one-way delay, and the listener-echo loop
    /// twice that (the G.107/G.108 planning convention). The echo itself stays at the default
    /// TELR = 65 dB because WebRTC endpoints cancel echo.
    /// Scores one VoIP interval: conversational (with delay) and listening (without).
    ///
    /// - Parameters:
    ///   - oneWayDelayMs: mouth-to-ear delay Ta (see `StatsInputs.oneWayDelayMs`).
    ///   - packetLossPercent: effective loss Ppl after FEC/retransmission/jitter buffer, percent.
    ///   - burstRatio: BurstR, 1 for random loss.
    ///   - codec: Ie and Bpl of the codec.
    package static func voip(
        oneWayDelayMs: Double,
        codec: CodecImpairment,
        packetLossPercent: Double,
        burstRatio: Double
    ) -> EModelParameters {
        var parameters = EModelParameters()
        parameters.absoluteDelayMs = oneWayDelayMs
        parameters.echoPathDelayMs = oneWayDelayMs
        parameters.roundTripDelayMs = 2 * oneWayDelayMs
        parameters.equipmentImpairment = codec.equipmentImpairment
        parameters.packetLossRobustness = codec.packetLossRobustness
        parameters.packetLossPercent = packetLossPercent
        parameters.burstRatio = burstRatio
        return parameters
    }
}

/// Every intermediate term of one E-model evaluation, so a stored score can be explained.
package struct EModelBreakdown: Sendable, Equatable {
    /// Ro, basic signal-to-noise ratio.
    package var basicSignalToNoise: Double
    /// Iolr, impairment from a too-low overall loudness.
    package var overallLoudnessImpairment: Double
    /// Ist, impairment from non-optimum sidetone.
    package var sidetoneImpairment: Double
    /// Iq, impairment from quantizing distortion.
    package var quantizingImpairment: Double
    /// Is = Iolr + Ist + Iq.
    package var simultaneousImpairment: Double
    /// Idte, talker echo.
    package var talkerEchoImpairment: Double
    /// Idle, listener echo.
    package var listenerEchoImpairment: Double
    /// Idd, pure (absolute) delay.
    package var absoluteDelayImpairment: Double
    /// Id = Idte + Idle + Idd.
    package var delayImpairment: Double
    /// Ie,eff, codec plus packet loss.
    package var effectiveEquipmentImpairment: Double
    /// A.
    package var advantageFactor: Double
    /// R = Ro − Is − Id − Ie,eff + A.
    package var rating: Double
}

/// ITU-T G.107 E-model: the transmission rating factor R for a narrow-band connection.
package enum EModel {
    /// The full model with every intermediate term (G.107 §7.1–7.6).
    package static func breakdown(_ p: EModelParameters) -> EModelBreakdown {
        breakdown(p, fixed: FixedTerms(p))
    }

    /// The terms that depend on neither delay nor codec nor loss: for the VoIP connection they
    /// are the same every interval, and they hold half of the model's powers and logarithms.
    struct FixedTerms {
        var noise: Double
        var ro: Double
        var iolr: Double
        var iq: Double

        init(_ p: EModelParameters) {
            let overallLoudness = p.sendLoudnessRating + p.receiveLoudnessRating  // OLR
            // §7.2: Ro from the power sum of all noise sources.
            noise = EModel.noiseSum(p, overallLoudness: overallLoudness)
            ro = 15 - 1.5 * (p.sendLoudnessRating + noise)
            // §7.3: Iolr and Iq (Ist depends on the echo path delay).
            let xolr = overallLoudness + 0.2 * (64 + noise - p.receiveLoudnessRating)
            iolr = 20 * (pow(1 + pow(xolr / 8, 8), 1.0 / 8) - xolr / 8)
            let q = 37 - 15 * log10(p.quantizationDistortionUnits)
            let g = 1.07 + 0.258 * q + 0.0602 * q * q
            let y = (ro - 100) / 15 + 46 / 8.4 - g / 9
            let z = 46.0 / 30 - g / 40
            iq = 15 * log10(1 + pow(10, y) + pow(10, z))
        }
    }

    private static func breakdown(_ p: EModelParameters, fixed: FixedTerms) -> EModelBreakdown {
        let noise = fixed.noise, ro = fixed.ro, iolr = fixed.iolr, iq = fixed.iq

        // §7.3: Is.
        let stmro =
            -10
            * log10(
                pow(10, -p.sidetoneMaskingRating / 10)
                    + exp(-p.echoPathDelayMs / 4) * pow(10, -p.talkerEchoLoudnessRating / 10))
        let ist =
            12 * pow(1 + pow((stmro - 13) / 6, 8), 1.0 / 8)
            - 28 * pow(1 + pow((stmro + 1) / 19.4, 35), 1.0 / 35)
            - 13 * pow(1 + pow((stmro - 3) / 33, 13), 1.0 / 13)
            + 29
        let isValue = iolr + ist + iq

        // §7.4: Id.
        let idte = talkerEchoImpairment(p, noise: noise, sidetoneImpairment: ist)
        let rle = 10.5 * (p.weightedEchoPathLoss + 7) * pow(p.roundTripDelayMs + 1, -0.25)
        let idle = (ro - rle) / 2 + ((ro - rle) * (ro - rle) / 4 + 169).squareRoot()
        let idd = absoluteDelayImpairment(
            absoluteDelayMs: p.absoluteDelayMs,
            minimumPerceivableDelayMs: p.minimumPerceivableDelayMs,
            delaySensitivity: p.delaySensitivity)
        let id = idte + idle + idd

        // §7.5: Ie,eff.
        let ieEff = effectiveEquipmentImpairment(
            equipmentImpairment: p.equipmentImpairment,
            packetLossRobustness: p.packetLossRobustness,
            packetLossPercent: p.packetLossPercent,
            burstRatio: p.burstRatio)

        return EModelBreakdown(
            basicSignalToNoise: ro,
            overallLoudnessImpairment: iolr,
            sidetoneImpairment: ist,
            quantizingImpairment: iq,
            simultaneousImpairment: isValue,
            talkerEchoImpairment: idte,
            listenerEchoImpairment: idle,
            absoluteDelayImpairment: idd,
            delayImpairment: id,
            effectiveEquipmentImpairment: ieEff,
            advantageFactor: p.advantageFactor,
            rating: ro - isValue - id - ieEff + p.advantageFactor)
    }

    /// No: power sum of circuit noise, send and receive room noise and the receive noise floor, dBm0p.
    fileprivate static func noiseSum(_ p: EModelParameters, overallLoudness: Double) -> Double {
        let sendRoom =
            p.sendRoomNoise - p.sendLoudnessRating - p.sendDValue - 100
            + 0.004 * pow(p.sendRoomNoise - overallLoudness - p.sendDValue - 14, 2)
        // Receive room noise raised by the listener sidetone path.
        let receiveRoomRaised =
            p.receiveRoomNoise
            + 10 * log10(1 + pow(10, (10 - p.listenerSidetoneRating) / 10))
        let receiveRoom =
            p.receiveLoudnessRating - 121 + receiveRoomRaised
            + 0.008 * pow(receiveRoomRaised - 35, 2)
        let floor = p.receiveNoiseFloor + p.receiveLoudnessRating
        return 10
            * log10(
                pow(10, p.circuitNoise / 10) + pow(10, sendRoom / 10)
                    + pow(10, receiveRoom / 10) + pow(10, floor / 10))
    }

    /// Idte, including the two sidetone branches (STMR < 9 dB, STMR > 20 dB).
    private static func talkerEchoImpairment(
        _ p: EModelParameters, noise: Double, sidetoneImpairment ist: Double
    ) -> Double {
        let t = p.echoPathDelayMs
        let roe = -1.5 * (noise - p.receiveLoudnessRating)
        var terv =
            p.talkerEchoLoudnessRating - 40 * log10((1 + t / 10) / (1 + t / 150))
            + 6 * exp(-0.3 * t * t)
        if p.sidetoneMaskingRating < 9 { terv += ist / 2 }
        let re = 80 + 2.5 * (terv - 14)
        let d = roe - re
        // G.107 writes e^(−T) with T in ms: the factor is ~1 for any echo path longer than a few ms.
        var idte = (d / 2 + (d * d / 4 + 100).squareRoot() - 1) * (1 - exp(-t))
        if p.sidetoneMaskingRating > 20 { idte = (idte * idte + ist * ist).squareRoot() }
        return idte
    }

    /// Idd, impairment of pure delay; 0 up to the minimum perceivable delay mT.
    ///
    /// With mT = 100 ms and sT = 1 this is the pre-2014 formula (exponent 6).
    package static func absoluteDelayImpairment(
        absoluteDelayMs ta: Double,
        minimumPerceivableDelayMs mT: Double = 100,
        delaySensitivity sT: Double = 1
    ) -> Double {
        guard ta > mT else { return 0 }
        let x = log2(ta / mT)
        let e = 6 * sT
        return 25 * (pow(1 + pow(x, e), 1 / e) - 3 * pow(1 + pow(x / 3, e), 1 / e) + 2)
    }

    /// Ie,eff = Ie + (95 − Ie)·Ppl / (Ppl/BurstR + Bpl) (G.107 eq. 7-29, Ppl in percent).
    ///
    /// Increasing in the loss and in the burst ratio: bursty loss hurts more than the same amount of
    /// random loss because concealment fails on long gaps.
    package static func effectiveEquipmentImpairment(
        equipmentImpairment ie: Double,
        packetLossRobustness bpl: Double,
        packetLossPercent ppl: Double,
        burstRatio: Double
    ) -> Double {
        let loss = min(max(ppl, 0), 100)
        guard loss > 0 else { return ie }
        // G.107 permits BurstR in 1...8; a non-positive value is meaningless and is read as random loss.
        let burst = burstRatio > 0 ? burstRatio : 1
        return ie + (95 - ie) * loss / (loss / burst + bpl)
    }

    /// The VoIP connection's terms that no interval changes (`EModelParameters.voip` sets only
    /// delay, codec and loss).
    private static let voipFixedTerms = FixedTerms(
        EModelParameters.voip(oneWayDelayMs: 0, codec: CodecImpairment.opus, packetLossPercent: 0, burstRatio: 1))

    /// `Ro − Is − Id` of the VoIP connection without delay: independent of codec and loss.
    private static let undelayedBase: Double = {
        let b = breakdown(EModelParameters.voip(oneWayDelayMs: 0, codec: CodecImpairment.opus, packetLossPercent: 0, burstRatio: 1))
        return b.basicSignalToNoise - b.simultaneousImpairment - b.delayImpairment
    }()

    /// Scores one VoIP interval: conversational (with delay) and listening (without).
    ///
    /// - Parameters:
    ///   - oneWayDelayMs: mouth-to-ear delay Ta (see `StatsInputs.oneWayDelayMs`).
    ///   - packetLossPercent: effective loss Ppl after FEC/retransmission/jitter buffer, percent.
    ///   - burstRatio: BurstR, 1 for random loss.
    ///   - codec: Ie and Bpl of the codec.
    package static func voip(
        oneWayDelayMs: Double,
        packetLossPercent: Double,
        burstRatio: Double,
        codec: CodecImpairment
    ) -> VoIPQuality {
        let parameters = EModelParameters.voip(
            oneWayDelayMs: oneWayDelayMs, codec: codec,
            packetLossPercent: packetLossPercent, burstRatio: burstRatio)
        let full = breakdown(parameters, fixed: voipFixedTerms)
        // Listening quality: the same connection with zero delay (Ta = T = Tr = 0). Without delay
        // only Ie,eff varies, so the rest is computed once; the sum is evaluated in the order
        // `breakdown` uses, so the result is the same double as `breakdown(undelayed).rating`.
        let listening = undelayedBase - full.effectiveEquipmentImpairment + parameters.advantageFactor
        return VoIPQuality(
            oneWayDelayMs: oneWayDelayMs,
            effectiveEquipmentImpairment: full.effectiveEquipmentImpairment,
            rating: full.rating,
            listeningRating: listening,
            conversationalMOS: MOS.fromR(full.rating),
            listeningMOS: MOS.fromR(listening))
    }
}

/// The scores of one VoIP interval, following the RFC 3611 split into conversational and listening quality.
package struct VoIPQuality: Sendable, Equatable {
    /// Ta used, ms.
    package var oneWayDelayMs: Double
    /// Ie,eff used by every rating below.
    package var effectiveEquipmentImpairment: Double
    /// R of the full G.107 model with `T = Ta`, `Tr = 2·Ta` (conversational: includes delay and echo).
    package var rating: Double
    /// R of the full model for the same connection with zero delay (Ta = T = Tr = 0): 93.206 − Ie,eff with
    /// the defaults, the reference document's "93.2 − Ie,eff" with the model's own constant.
    ///
    /// Zero delay rather than "Id = 0": the residual listener-echo term at Tr = 0 (0.149) is a terminal
    /// property, not a delay effect, and keeping it makes MOS-LQ equal MOS-CQ for a zero-delay call.
    /// R falls with delay, so listening ≥ conversational always.
    package var listeningRating: Double
    /// MOS-CQ: MOS of `rating`.
    package var conversationalMOS: Double
    /// MOS-LQ: MOS of `listeningRating`.
    package var listeningMOS: Double
}
