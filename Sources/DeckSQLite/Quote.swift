import Foundation

/// Quotes an SQL identifier.
///
/// Names rarely hold a double quote, and statements are built per row on some paths (a
/// relationship set on insert), so the usual case is a plain concatenation: Foundation's
/// `replacingOccurrences` searched through `NSString` and cost more than the SQLite work of a
/// row's relationship.
package func quote(_ identifier: String) -> String {
    guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
    // By bytes, not characters: a quote followed by a combining mark is one `Character`, which a
    // character-wise search would miss.
    var quoted: [UInt8] = [UInt8(ascii: "\"")]
    for byte in identifier.utf8 {
        quoted.append(byte)
        if byte == UInt8(ascii: "\"") { quoted.append(byte) }
    }
    quoted.append(UInt8(ascii: "\""))
    return String(decoding: quoted, as: UTF8.self)
}

/// `text` as an SQL string literal: in single quotes, each single quote doubled.
package func quoteLiteral(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
}
