import ConsoleOutput
import ArgumentParser
import CallLog
import Foundation
import Simulator

/// `callstats simulate`: realistic call logs for tests, demos and benchmarks.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Write simulated call logs (log format v1), deterministic for a given seed.",
        discussion: """
            Calls are audio-only or audio+video, from several SDKs (W3C or legacy goog statistics), \
            on network profiles recorded in each call's labels (good, lossy_wifi, congested_cellular, \
            satellite, one_way_audio, ice_relay_fallback, ice_failure, ip_change). Files hold several \
            calls interleaved in time; some calls continue in the next file.

            --conference N writes instead one group call of N participants (2-32) through a \
            forwarding media server: one log per participant (<call id>.ndjson.zst, call ids \
            conf-<seed>-p<k>, labels conference and participant), one W3C snapshot a second, and \
            conference-answer.json saying whose uplink (p1 by default) and downlink (p2) were \
            impaired and when. --start sets when it starts (default 2026-11-21T09:00:00Z). It needs \
            a folder: --out - is refused.

            Examples:
              callstats simulate --calls 2 --out - | head -3
              callstats simulate --calls 300 --seed 42 --files 6 --out Data/sample
              callstats simulate --calls 100000 --out /tmp/sim --full-snapshots
              callstats simulate --conference 6 --seed 3 --out /tmp/conf
            """)

    @Option(help: "Number of calls.")
    var calls: Int?

    @Option(help: "Simulate one conference of this many participants (2-32) instead of --calls.")
    var conference: Int?

    @Option(help: "With --conference: its length in seconds.")
    var seconds: Int = 120

    @Option(help: "With --conference: the participant whose uplink is impaired (0: nobody).")
    var badUplink: Int = 1

    @Option(help: "With --conference: the participant whose downlink is impaired (0: nobody).")
    var badDownlink: Int = 2

    @Option(help: "Output folder, or - for plain NDJSON on standard output.")
    var out: String

    @Option(help: "Random seed: the same seed writes the same bytes.")
    var seed: UInt64 = 1

    @Option(help: "Seconds between statistics snapshots (default: 10, with --conference 1).")
    var period: Int?

    @Option(help: "Number of files (default: about one per thousand calls, at least 2).")
    var files: Int?

    @Flag(help: "Write every statistics snapshot in full (no deltas).")
    var fullSnapshots = false

    @Option(help: "First day of the range (ISO 8601, e.g. 2026-11-15 or 2026-11-15T00:00:00Z). Default: --days before 2026-11-22T00:00:00Z.")
    var start: String?

    @Option(help: "Length of the range in days.")
    var days: Double = 7

    @Option(help: "Worker threads (each writes its own files).")
    var workers: Int = 2

    @Flag(help: "Overwrite the log files of an earlier simulation in the output folder.")
    var force = false

    func validate() throws {
        switch (calls, conference) {
        case (nil, nil): throw ValidationError("Missing expected argument '--calls <calls>' (or --conference <participants>)")
        case (.some, .some): throw ValidationError("--calls and --conference cannot be combined: choose one")
        case (let calls?, nil): try OptionRange.check("--calls", calls, 1...100_000_000)
        case (nil, let participants?):
            try OptionRange.check("--conference", participants, 2...32)
            try OptionRange.check("--seconds", seconds, 10...86_400)
            try OptionRange.check("--bad-uplink", badUplink, 0...participants)
            try OptionRange.check("--bad-downlink", badDownlink, 0...participants)
            if out == "-" { throw ValidationError("--conference writes one file per participant and an answer file: --out needs a folder") }
            if let problem = conferenceConfiguration(participants: participants).problem() {
                throw ValidationError("--conference \(participants): \(problem)")
            }
        }
        if let period { try OptionRange.check("--period", period, 1...86_400) }
        // A range of up to a century: its end in epoch milliseconds stays far inside Int64.
        guard days.isFinite, days > 0, days <= 36_500 else {
            throw ValidationError("--days must be more than 0 and at most 36500, got \(days)")
        }
        if let files { try OptionRange.check("--files", files, 1...1_000_000) }
        try OptionRange.check("--workers", workers, OptionRange.threads)
        if let start, SimulateCommand.parseDate(start) == nil {
            throw ValidationError("--start \(start): expected an ISO 8601 date such as 2026-11-15 or 2026-11-15T08:00:00Z")
        }
    }

    /// The conference `--conference` asks for.
    func conferenceConfiguration(participants: Int) -> ConferenceSimulation.Configuration {
        var config = ConferenceSimulation.Configuration(participants: participants, seed: seed)
        config.seconds = seconds
        config.periodSeconds = period ?? 1
        config.badUplink = badUplink == 0 ? nil : badUplink
        config.badDownlink = badDownlink == 0 ? nil : badDownlink
        config.fullSnapshots = fullSnapshots
        if let start, let ms = SimulateCommand.parseDate(start) { config.startMs = ms }
        return config
    }

    func run() throws {
        guard let calls else { return try runConference(participants: conference ?? 0) }
        var config = SimulatorConfiguration(calls: calls, seed: seed)
        config.periodSeconds = period ?? 10
        config.days = days
        config.files = files
        config.fullSnapshots = fullSnapshots
        config.workers = max(1, workers)
        if let start, let ms = SimulateCommand.parseDate(start) {
            config.endMs = ms + Int64(days * 86_400_000)
        }
        let simulator = Simulator(config)
        if out == "-" {
            _ = try simulator.writeNDJSON(toPath: "/dev/stdout")
            return
        }
        if !force {
            let existing = ((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? [])
                .filter { $0.hasPrefix("calls-") && $0.hasSuffix(".ndjson.zst") }.sorted()
            if let first = existing.first {
                throw CommandFailure(
                    message: """
                        \(out) already holds \(existing.count) simulated log file\(existing.count == 1 ? "" : "s") (\(first)\(existing.count > 1 ? ", …" : "")), \
                        which this simulation would overwrite: use an empty folder, or --force to overwrite them
                        """)
            }
        }
        let total = calls
        let summary = try simulator.write(to: out) { s in
            Terminal.status("simulate: \(s.calls)/\(total) calls, \(s.records) records, \(mb(s.bytes)) MB")
        }
        Terminal.clearStatus()
        let rate = summary.seconds > 0 ? Double(summary.calls) / summary.seconds : 0
        print(
            """
            \(summary.calls) calls (\(summary.splitCalls) continued in a second file), \(summary.records) records, \
            \(summary.files) files in \(out)
            \(mb(summary.bytes)) MB written (\(mb(summary.uncompressedBytes)) MB NDJSON), \
            \(String(format: "%.1f", summary.seconds)) s, \(Int(rate)) calls/s, \
            \(String(format: "%.1f", Double(summary.uncompressedBytes) / 1e6 / max(summary.seconds, 1e-9))) MB/s NDJSON
            """)
    }

    /// `--conference`: one log per participant and the answer file.
    private func runConference(participants: Int) throws {
        let simulation = try ConferenceSimulation(conferenceConfiguration(participants: participants))
        if !force {
            let existing = ((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? [])
                .filter { name in
                    name == ConferenceSimulation.answerFileName || simulation.participants.contains { name.hasPrefix($0.callID + ".") }
                }
                .sorted()
            if let first = existing.first {
                throw CommandFailure(
                    message: """
                        \(out) already holds \(first)\(existing.count > 1 ? " and \(existing.count - 1) more" : ""), which this \
                        simulation would overwrite: use an empty folder, or --force to overwrite
                        """)
            }
        }
        let summary = try simulation.write(to: out)
        print(
            """
            conference \(simulation.conferenceID): \(participants) participants, \(summary.records) records, \
            \(summary.files.count) files and \(ConferenceSimulation.answerFileName) in \(out) (\(mb(summary.bytes)) MB)
            """)
    }

    /// `2026-11-15`, `2026-11-15T08:00:00Z` or with an offset, as epoch milliseconds.
    static func parseDate(_ s: String) -> Int64? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        if let d = f.date(from: s) { return Int64((d.timeIntervalSince1970 * 1000).rounded()) }
        f.formatOptions = [.withFullDate]
        if let d = f.date(from: s) { return Int64((d.timeIntervalSince1970 * 1000).rounded()) }
        return nil
    }
}

private func mb(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1e6) }
