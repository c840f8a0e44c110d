import DeckSQLite
import Foundation

/// A sort key: an expression — usually a property path — and a direction.
///
/// Any expression with a value sorts: attributes, to-one relationships (by record id), the record
/// id, and what arithmetic, `count` and `??` make of them; not a to-many relationship. Values sort as they compare (``QueryExpression``), nulls first in ascending order.
public struct SortKey: Sendable, Hashable {
    /// What to sort by.
    public var expression: QueryExpression
    /// Ascending (nulls first) or descending.
    public var ascending: Bool
    /// How a text sorts: `.exact` by its UTF-8 bytes; with a folding, by its folded text (spec
    /// 7.6) and then, among texts that fold alike, by their bytes — so `"Äpfel"` (`apfel`),
    /// `"Apple"`, `"apple"`, `"banana"` under `.caseAndDiacriticInsensitive`. Only a text
    /// expression sorts with a folding; `.asciiCaseInsensitive` folds ASCII letters only.
    public var folding: QueryExpression.TextComparison

    /// Sorts by a property path: `"front"`, `"deck.title"`, `"_id"`.
    public init(_ key: String, ascending: Bool = true, folding: QueryExpression.TextComparison = .exact) {
        self.expression = .property(key)
        self.ascending = ascending
        self.folding = folding
    }

    /// Sorts by an expression: `SortKey(.property("tags").count, ascending: false)`.
    public init(
        _ expression: QueryExpression, ascending: Bool = true,
        folding: QueryExpression.TextComparison = .exact
    ) {
        self.expression = expression
        self.ascending = ascending
        self.folding = folding
    }
}

/// What to fetch: an entity (with its subentities), a condition, an order and a window.
///
/// ```swift
/// let query = RecordQuery(
///     "Card", where: .property("deck.title").equals("Spanish basics"),
///     sort: [SortKey("front")], limit: 20)
/// ```
public struct RecordQuery: Sendable, Hashable {
    /// The entity whose records are fetched.
    public var entity: String
    /// The condition a record must satisfy; nil for every record.
    public var `where`: QueryExpression?
    /// The order, by the first key, then the next; the record id breaks ties.
    public var sort: [SortKey]
    /// At most this many records; nil for all.
    public var limit: Int?
    /// How many matching records to skip first.
    public var offset: Int
    /// Whether records of subentities are included (true, as in SwiftData).
    public var includesSubentities: Bool
    /// Only the records after this position in the query's order (keyset paging): a query that
    /// continues where an earlier page of the same query ended, whatever was inserted or deleted
    /// before that point since. The offset, if any, counts from there.
    package var after: Position? = nil
    /// Whether the query's cursors give each row's position (``RowCursor/position``), for a later
    /// page to continue ``after``.
    package var readsPositions = false
    /// Whether the caller orders the rows itself (``RowOrder``) when it can: when every sort key
    /// is a number attribute of the record, and the query has no window, no position to continue
    /// after and reads no positions, the statement has no `ORDER BY` and its cursor gives each
    /// row's sort values (``RowCursor/ordersInMemory``); otherwise the store sorts as usual.
    package var lettingCallerOrder = false

    /// A query of `entity`'s records that satisfy `condition` (all when nil).
    public init(
        _ entity: String, where condition: QueryExpression? = nil, sort: [SortKey] = [], limit: Int? = nil,
        offset: Int = 0, includesSubentities: Bool = true
    ) {
        self.entity = entity
        self.where = condition
        self.sort = sort
        self.limit = limit
        self.offset = offset
        self.includesSubentities = includesSubentities
    }
}

extension RecordQuery {
    /// Where a row stands in a query's order: the values the store sorted it by — one per term of
    /// the order, which is each sort key's value, preceded by its folded form for a key with a text
    /// folding — and its record id, the order's last tie-break. Read from the row by the statement
    /// that sorted it (``RowCursor/position``), never recomputed: so a page that continues
    /// ``RecordQuery/after`` it compares exactly what the order compared, even once the record has
    /// changed or gone.
    package struct Position: Sendable, Hashable {
        /// One term's value.
        package enum Key: Sendable, Hashable {
            /// The value, of the storage class SQLite gave it.
            case value(SQLValue)
            /// A text that is not valid UTF-8 (only a damaged or foreign store holds one), by its
            /// bytes, so that it compares as stored.
            case textBytes(Data)
        }

        /// The values of the order's terms, in order.
        package var keys: [Key]
        /// The record id.
        package var recordID: Int64

        package init(keys: [Key], recordID: Int64) {
            self.keys = keys
            self.recordID = recordID
        }
    }
}

/// One record as the generic API returns it.
public struct Record: Sendable, Hashable {
    /// The record's concrete entity (a subentity of the queried one, possibly).
    public var entity: String
    /// The record id (`_pk`), stable for the record's life.
    public var id: Int64
    /// Attribute values, and to-one relationships as `.reference` or `.null`.
    public var values: [String: Value]
    /// The record's global id (`_gid`, spec section 6.10): random, never changed, unique in the
    /// document and kept by every copy of it, where ``id`` is local to one store. Nil only when a
    /// package of format version 1 is read without being upgraded (``PackageStore/storeFormatVersion``).
    public var globalID: UUID? = nil

    /// The value of attribute or to-one relationship `name`.
    public subscript(_ name: String) -> Value? { values[name] }
}

/// One record as ``StoreReader``'s row-by-row reading gives it: the values in a fixed order per
/// entity, without a dictionary.
package struct StoreRow {
    package let entity: String
    package let id: Int64
    package let globalID: UUID?
    /// The entity's attributes, then its to-one relationships (the same array for every row of
    /// the entity).
    package let names: [String]
    /// The values, in the order of ``names``.
    package let cells: [Value]
}

extension RecordQuery {
    /// The limits on one query (documented in deck(1), "Expressions"). Beyond them a fetch throws
    /// ``DeckError/invalidQuery(_:)``; below them every query compiles, in time linear in its size,
    /// to SQL that SQLite's default limits accept.
    public enum Limits {
        /// Conditions in a query: comparisons, text tests, `in` lists, null and empty tests and
        /// quantifiers, wherever they are (inside quantifiers and conditionals too).
        public static let conditions = 10_000
        /// Values in a query (its condition and sort keys): each value written counts once, each
        /// element of an `in` list too.
        public static let values = 10_000
        /// How deeply `and`, `or` and `not` nest around the conditions: each may have at most this
        /// many of them around it. (`deck query --where` accepts at most 100 levels of nesting,
        /// so whatever it parses stays within this limit.)
        public static let nesting = 100
        /// How deeply one condition nests, in levels: each comparison, test, arithmetic operator,
        /// `??` and `count` is one level, each quantifier (`any`, `all`) three, and inside a
        /// quantifier `not` one and a list joined by `and` or `or` one for each doubling of its
        /// length. `a + 1 > 3` takes two levels, `tags.any(name = x or name = y)` five. A sort key
        /// counts as an operand.
        public static let depth = 10
        /// Different relationship steps that the paths of one query follow in all, inside
        /// quantifiers too: `deck.title` and `deck.size` take one step, `deck.owner.name` two.
        /// (Each is a join, and SQLite joins at most 64 tables.)
        public static let relationshipSteps = 63
        /// Sort keys, each counting once, or twice when it sorts text with a folding (by the folded
        /// text, then the text). (With the record id the store sorts by last, SQLite then sorts by at
        /// most 63 terms: SQLite 3.40 fails on 64 or more of which one reads a joined table.)
        public static let sortKeys = 62
    }
}
