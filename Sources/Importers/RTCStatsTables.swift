import CallLog

/// rtcstats-js 3's table compression of `getStats` deltas (rtcstats-shared, `compression.js`):
/// stats ids are replaced by numbers counted from "0" in order of first appearance (references
/// in members ending in `Id` with them), member names by the numbers of a fixed table, `type`
/// values by the numbers of another, the report's newest `timestamp` moves to the top level as
/// `t`, and an object that went away is sent as `null`. The numbers are part of the protocol
/// ("numbers must not be reassigned"); names not in the tables are sent as they are.
enum RTCStatsTables {
    /// The member name a key stands for: a number of the table, `t` (timestamp), or itself.
    static func memberName(_ key: String) -> String {
        if key == "t" { return "timestamp" }
        guard let first = key.utf8.first, first >= 0x30 && first <= 0x39, let n = Int(key) else { return key }
        return members[n] ?? key
    }

    /// The stats type a `type` value stands for.
    static func typeName(_ value: JSONValue) -> JSONValue {
        guard let n = value.int64Value, let name = types[Int(n)] else { return value }
        return .string(name)
    }

    static let types: [Int: String] = [
        1: "inbound-rtp", 2: "outbound-rtp", 3: "remote-inbound-rtp", 4: "remote-outbound-rtp", 5: "transport",
        6: "candidate-pair", 7: "local-candidate", 8: "remote-candidate", 9: "data-channel", 10: "peer-connection",
        11: "certificate", 12: "media-source", 13: "media-playout", 14: "codec",
    ]

    static let members: [Int: String] = [
        4: "payloadType", 5: "transportId", 6: "mimeType", 7: "clockRate", 8: "channels", 9: "sdpFmtpLine", 10: "ssrc", 11: "kind", 12: "codecId",
        14: "packetsReceived", 15: "packetsLost", 16: "jitter", 17: "trackIdentifier", 18: "mid", 19: "remoteId", 20: "framesDecoded",
        21: "keyFramesDecoded", 22: "framesDropped", 23: "frameWidth", 24: "frameHeight", 25: "framesPerSecond", 26: "qpSum",
        27: "totalDecodeTime", 28: "totalInterFrameDelay", 29: "totalSquaredInterFrameDelay", 30: "pauseCount", 31: "totalPausesDuration",
        32: "freezeCount", 33: "totalFreezesDuration", 34: "lastPacketReceivedTimestamp", 35: "headerBytesReceived", 36: "packetsDiscarded",
        37: "fecPacketsReceived", 38: "fecPacketsDiscarded", 39: "fecBytesReceived", 40: "fecSsrc", 41: "bytesReceived", 42: "nackCount",
        43: "firCount", 44: "pliCount", 45: "totalProcessingDelay", 46: "estimatedPlayoutTimestamp", 47: "jitterBufferDelay",
        48: "jitterBufferTargetDelay", 49: "jitterBufferEmittedCount", 50: "jitterBufferMinimumDelay", 51: "totalSamplesReceived",
        52: "concealedSamples", 53: "silentConcealedSamples", 54: "concealmentEvents", 55: "insertedSamplesForDeceleration",
        56: "removedSamplesForAcceleration", 57: "audioLevel", 58: "totalAudioEnergy", 59: "totalSamplesDuration", 60: "framesReceived",
        61: "decoderImplementation", 62: "playoutId", 63: "powerEfficientDecoder", 64: "framesAssembledFromMultiplePackets",
        65: "totalAssemblyTime", 66: "contentType", 67: "googTimingFrameInfo", 68: "retransmittedPacketsReceived",
        69: "retransmittedBytesReceived", 70: "rtxSsrc", 71: "totalCorruptionProbability", 72: "totalSquaredCorruptionProbability",
        73: "corruptionMeasurements", 74: "localId", 75: "roundTripTime", 76: "totalRoundTripTime", 77: "fractionLost",
        78: "roundTripTimeMeasurements", 79: "packetsSent", 80: "bytesSent", 81: "mediaSourceId", 82: "rid", 83: "encodingIndex",
        84: "headerBytesSent", 85: "retransmittedPacketsSent", 86: "retransmittedBytesSent", 87: "targetBitrate", 88: "totalEncodedBytesTarget",
        89: "framesSent", 90: "hugeFramesSent", 91: "framesEncoded", 92: "keyFramesEncoded", 93: "totalEncodeTime", 94: "totalPacketSendDelay",
        95: "qualityLimitationReason", 96: "qualityLimitationDurations", 97: "qualityLimitationResolutionChanges", 98: "encoderImplementation",
        99: "powerEfficientEncoder", 100: "active", 101: "scalabilityMode", 102: "remoteTimestamp", 103: "reportsSent", 104: "echoReturnLoss",
        105: "echoReturnLossEnhancement", 106: "width", 107: "height", 108: "frames", 109: "synthesizedSamplesDuration",
        110: "synthesizedSamplesEvents", 111: "totalPlayoutDelay", 112: "totalSamplesCount", 113: "dataChannelsOpened", 114: "dataChannelsClosed",
        115: "label", 116: "protocol", 117: "dataChannelIdentifier", 118: "state", 119: "messagesSent", 120: "messagesReceived", 121: "iceRole",
        122: "iceLocalUsernameFragment", 123: "dtlsState", 124: "iceState", 125: "selectedCandidatePairId", 126: "localCertificateId",
        127: "remoteCertificateId", 128: "tlsVersion", 129: "dtlsCipher", 130: "dtlsRole", 131: "srtpCipher", 132: "selectedCandidatePairChanges",
        133: "rtcpTransportStatsId", 134: "address", 135: "port", 136: "candidateType", 137: "priority", 138: "url", 139: "relayProtocol",
        140: "foundation", 141: "relatedAddress", 142: "relatedPort", 143: "usernameFragment", 144: "tcpType", 145: "networkType",
        148: "localCandidateId", 149: "remoteCandidateId", 150: "nominated", 151: "lastPacketSentTimestamp", 152: "currentRoundTripTime",
        153: "availableOutgoingBitrate", 154: "availableIncomingBitrate", 155: "requestsReceived", 156: "requestsSent", 157: "responsesReceived",
        158: "responsesSent", 159: "consentRequestsSent", 160: "packetsDiscardedOnSend", 161: "bytesDiscardedOnSend", 163: "fingerprint",
        164: "fingerprintAlgorithm", 165: "base64Certificate", 166: "issuerCertificateId", 167: "psnrMeasurements", 168: "psnrSum",
        169: "packetsReceivedWithEct1", 170: "packetsReceivedWithCe", 171: "packetsReportedAsLost", 172: "packetsReportedAsLostButRecovered",
        173: "packetsWithBleachedEct1Marking", 174: "packetsSentWithEct1", 175: "ccfbMessagesSent", 176: "ccfbMessagesReceived",
    ]
}
