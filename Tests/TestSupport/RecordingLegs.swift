import CallLog

/// The shared Chromium recording converted to log records (`ChromiumImporter`) holds both peers
/// in one call, each as its own peer connection (`pc` = `a`, `b`). Two agents would have logged
/// them as two calls: these helpers make those legs, and edit the reports' values to reproduce
/// other conditions on real-shaped data.
public enum RecordingLegs {
    /// Each side's statistics under its own call id; the `call`, event and `end` records go to
    /// both legs (each agent logs its own).
    public static func split(_ records: [LogRecord], a: String, b: String) -> (a: [LogRecord], b: [LogRecord]) {
        var legA: [LogRecord] = [], legB: [LogRecord] = []
        for r in records {
            var ra = r, rb = r
            ra.call = a
            rb.call = b
            if r.kind == .stats {
                if r["pc"]?.stringValue == "a" { legA.append(ra) } else if r["pc"]?.stringValue == "b" { legB.append(rb) }
            } else {
                legA.append(ra)
                legB.append(rb)
            }
        }
        return (legA, legB)
    }

    /// Applies `change` to every report object of the statistics records of side `side` (every
    /// side when nil).
    public static func editReports(_ records: inout [LogRecord], side: String? = nil, _ change: (inout JSONObject) -> Void) {
        for i in records.indices where records[i].kind == .stats {
            if let side, records[i]["pc"]?.stringValue != side { continue }
            guard case .array(let report)? = records[i]["report"] else { continue }
            records[i]["report"] = .array(
                report.map { v in
                    guard case .object(var o) = v else { return v }
                    change(&o)
                    return .object(o)
                })
        }
    }
}
