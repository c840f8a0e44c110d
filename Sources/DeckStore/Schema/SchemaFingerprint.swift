import Foundation

extension StoreSchema {
    /// The schema's fingerprint (spec: section 5.10): the SHA-256, as 64 lowercase hex digits, of
    /// the schema's stored form (section 5.5) without its `version` and without any `originalName`.
    ///
    /// Two schemas with the same fingerprint derive the same tables and store the same values the
    /// same way, whatever their declared versions; so migrations identify a schema by its version
    /// *and* its fingerprint, never by the version alone.
    ///
    /// ```swift
    /// let stored = try PackageStore.open(at: url, mode: .readOnly)
    /// if stored.schema.fingerprint == appSchema.fingerprint { /* nothing to migrate */ }
    /// ```
    public var fingerprint: String {
        SHA256Hasher.hash(Data(fingerprintForm.utf8)).hexDigest
    }

    /// The text the fingerprint hashes: `{"entities":[…]}` in the stored form of section 5.5,
    /// every `originalName` left out.
    var fingerprintForm: String {
        var entities = self.entities
        for e in entities.indices {
            entities[e].originalName = nil
            for a in entities[e].attributes.indices { entities[e].attributes[a].originalName = nil }
            for r in entities[e].relationships.indices { entities[e].relationships[r].originalName = nil }
        }
        struct Form: Encodable { let entities: [Entity] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain values of a valid schema cannot fail; an empty form still hashes.
        return (try? encoder.encode(Form(entities: entities))).map { String(decoding: $0, as: UTF8.self) }
            ?? ""
    }

    /// Orders two schema versions (spec: section 5.10): split at `.`, compared component by
    /// component; two components of ASCII digits only compare as numbers, a digits-only component
    /// sorts before any other, and other components compare by their bytes; a missing component
    /// counts as `0`. So `1.9.0` < `1.10.0`, `2` = `2.0`, and `1.0-beta` > `1.0`.
    ///
    /// ```swift
    /// StoreSchema.compareVersions("1.9", "1.10")  // .orderedAscending
    /// ```
    public static func compareVersions(_ a: String, _ b: String) -> ComparisonResult {
        let left = a.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(
            Array.init)
        let right = b.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(
            Array.init)
        let zero = [UInt8(ascii: "0")]
        for index in 0..<max(left.count, right.count) {
            let x = index < left.count ? left[index] : zero
            let y = index < right.count ? right[index] : zero
            let result = compareComponents(x, y)
            if result != .orderedSame { return result }
        }
        return .orderedSame
    }

    private static func compareComponents(_ x: [UInt8], _ y: [UInt8]) -> ComparisonResult {
        func isNumber(_ c: [UInt8]) -> Bool { !c.isEmpty && c.allSatisfy { (0x30...0x39).contains($0) } }
        switch (isNumber(x), isNumber(y)) {
        case (true, true):
            let a = Array(x.drop { $0 == 0x30 })
            let b = Array(y.drop { $0 == 0x30 })
            if a.count != b.count { return a.count < b.count ? .orderedAscending : .orderedDescending }
            return bytesOrder(a, b)
        case (true, false): return .orderedAscending
        case (false, true): return .orderedDescending
        case (false, false): return bytesOrder(x, y)
        }
    }

    private static func bytesOrder(_ a: [UInt8], _ b: [UInt8]) -> ComparisonResult {
        if a == b { return .orderedSame }
        return a.lexicographicallyPrecedes(b) ? .orderedAscending : .orderedDescending
    }
}
