/// Text from files and databases (file names, call ids, labels) made safe to print: control
/// characters shown as escapes, so that a newline in a file name cannot forge a line of its
/// own ("warning: …") and an escape sequence in a call id cannot reach the terminal.
public enum Printable {
    /// `text` with every C0 and C1 control character and DEL written as an escape (`\n`, `\e`,
    /// `\u{9b}`), except those in `keeping`.
    public static func escaped(_ text: String, keeping: Set<Character> = []) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if !isControl(scalar) || keeping.contains(Character(scalar)) {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{1B}": out += "\\e"
            default: out += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
        }
        return out
    }

    static func isControl(_ s: Unicode.Scalar) -> Bool {
        s.value < 0x20 || (0x7F...0x9F).contains(s.value)
    }
}
