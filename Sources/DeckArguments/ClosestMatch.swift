/// Returns the candidate closest to `input` by edit distance, or `nil` if none is close enough.
///
/// The comparison is case-insensitive and uses the optimal-string-alignment variant of the
/// Damerau–Levenshtein distance (insertions, deletions, substitutions and adjacent transpositions
/// all cost 1). A candidate is accepted when its distance is at most 1 for inputs of up to 5
/// characters, 2 for up to 8 characters and 3 otherwise, and when it is not a complete rewrite
/// (the distance is below the longer length, so `"x"` never suggests `"y"`). Ties go to the earlier
/// candidate; an exact case-insensitive match wins immediately.
///
/// ```swift
/// closestMatch(to: "jsno", in: ["json", "csv"])     // "json"
/// closestMatch(to: "task", in: ["Task", "Note"])    // "Task"
/// closestMatch(to: "zzz", in: ["json", "csv"])      // nil
/// ```
public func closestMatch(to input: String, in candidates: [String]) -> String? {
    let needle = Array(input.lowercased())
    guard !needle.isEmpty else { return nil }
    let threshold = needle.count <= 5 ? 1 : (needle.count <= 8 ? 2 : 3)
    var best: (candidate: String, distance: Int)?
    for candidate in candidates {
        let hay = Array(candidate.lowercased())
        if hay == needle { return candidate }
        // Cheap lower bound: the length difference.
        guard abs(hay.count - needle.count) <= threshold else { continue }
        let distance = editDistance(needle, hay)
        guard distance <= threshold, distance < max(needle.count, hay.count) else { continue }
        if best == nil || distance < (best?.distance ?? Int.max) {
            best = (candidate, distance)
        }
    }
    return best?.candidate
}

/// Optimal-string-alignment distance between two character arrays.
func editDistance(_ lhs: [Character], _ rhs: [Character]) -> Int {
    if lhs.isEmpty { return rhs.count }
    if rhs.isEmpty { return lhs.count }
    let columns = rhs.count + 1
    // Three rolling rows: two rows back (for transpositions), previous and current.
    var twoBack = [Int](repeating: 0, count: columns)
    var previous = Array(0...rhs.count)
    var current = [Int](repeating: 0, count: columns)
    for i in 1...lhs.count {
        current[0] = i
        for j in 1...rhs.count {
            let cost = lhs[i - 1] == rhs[j - 1] ? 0 : 1
            var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1, j > 1, lhs[i - 1] == rhs[j - 2], lhs[i - 2] == rhs[j - 1] {
                value = min(value, twoBack[j - 2] + 1)
            }
            current[j] = value
        }
        (twoBack, previous, current) = (previous, current, twoBack)
    }
    return previous[rhs.count]
}
