/// "Did you mean …?" for a first argument that names no command.
enum CommandSuggestion {
    /// The message for `word` when it is not a command but looks like one (no leading `-`,
    /// not a path), or nil when the parser should see it as it is.
    static func unknownCommand(_ word: String, among names: [String]) -> String? {
        guard !word.hasPrefix("-"), !word.contains("/"), !word.contains("."), !names.contains(word) else { return nil }
        let nearest = names.map { (name: $0, distance: editDistance(word.lowercased(), $0)) }
            .min { $0.distance < $1.distance || ($0.distance == $1.distance && $0.name < $1.name) }
        // Two edits, or a third of the word, whichever is more: closer than that is a typo,
        // farther is another word.
        if let nearest, nearest.distance <= max(2, word.count / 3) {
            return "error: unknown command '\(word)'. Did you mean '\(nearest.name)'? (callstats --help lists the commands)"
        }
        return "error: unknown command '\(word)' (callstats --help lists the commands)"
    }

    /// Levenshtein distance: insertions, deletions and substitutions of characters.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
