import CallLog

/// Records compared as JSON values: object members unordered (RFC 8259; the delta codec does
/// not keep member order), the writer's `seq` left out.
func canonical(_ v: JSONValue) -> JSONValue {
    switch v {
    case .array(let a): return .array(a.map(canonical))
    case .object(let o):
        return .object(JSONObject(o.entries.map { (key: $0.key, value: canonical($0.value)) }.sorted { $0.key < $1.key }))
    default: return v
    }
}

func canonical(_ r: LogRecord) -> LogRecord {
    var r = r
    r.body["seq"] = nil
    guard case .object(let o) = canonical(.object(r.body)) else { return r }
    r.body = o
    return r
}
