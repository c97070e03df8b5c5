import ArgumentParser
import CallLog

/// `--pseudonymize-key` and `--keep-address`, as `analyze`, `import` and `serve` take them: the
/// same key gives the same pseudonyms in all three.
struct PseudonymizationOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Pseudonymise call ids, person fields and IP addresses with this key before anything is stored or written "
                + "(the same key gives the same pseudonyms in analyze, import and serve).",
            valueName: "32 hex digits"))
    var pseudonymizeKey: String?

    @Option(
        help: ArgumentHelp(
            "Keep addresses in this prefix as they are (your own TURN relays; repeatable; needs --pseudonymize-key).",
            valueName: "prefix"))
    var keepAddress: [String] = []

    func validate() throws {
        if let k = pseudonymizeKey, SipHashKey(hex: k) == nil {
            throw ValidationError("--pseudonymize-key must be 32 hexadecimal digits (a 128-bit key), got \(k.count) characters")
        }
        for p in keepAddress where IPPrefix(p) == nil { throw ValidationError("--keep-address: not a prefix: \(p) (e.g. 203.0.113.0/24)") }
        if !keepAddress.isEmpty && pseudonymizeKey == nil { throw ValidationError("--keep-address needs --pseudonymize-key") }
    }

    /// The key, when one was given (`validate` has checked it).
    var key: SipHashKey? { pseudonymizeKey.flatMap(SipHashKey.init(hex:)) }
    var keptAddresses: [IPPrefix] { keepAddress.compactMap(IPPrefix.init) }
}
