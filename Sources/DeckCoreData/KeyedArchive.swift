import Foundation

/// An `NSKeyedArchiver` archive: a property list whose `$objects` array holds the archived
/// objects, which refer to each other by UID (an index into `$objects`).
///
/// Nothing is followed eagerly: a caller asks for an object by UID and gets its dictionary, its
/// class, its string or its elements' UIDs, each checked. A UID that names no object is a
/// `danglingUID` error; an object graph's cycles (Core Data's entities point at their properties
/// and back) are harmless because references are handed out as UIDs, never decoded recursively.
public struct KeyedArchive: Sendable {
    /// The archived objects (`$objects`); index 0 is `$null`.
    public let objects: [PropertyListValue]
    /// The top-level references (`$top`), by key.
    public let top: [String: PropertyListValue]

    /// Reads the archive's frame from a decoded property list.
    ///
    /// - Throws: ``CoreDataError`` of kind `notAKeyedArchive`.
    public init(_ plist: PropertyListValue) throws(CoreDataError) {
        guard let root = plist.dictionary else {
            throw CoreDataError(.notAKeyedArchive, "keyed archive's top object is not a dictionary")
        }
        guard root["$archiver"]?.string == "NSKeyedArchiver" else {
            throw CoreDataError(.notAKeyedArchive, "property list has no '$archiver' of 'NSKeyedArchiver'")
        }
        guard let top = root["$top"]?.dictionary else {
            throw CoreDataError(.notAKeyedArchive, "keyed archive has no '$top' dictionary")
        }
        guard case .array(let objects) = root["$objects"] else {
            throw CoreDataError(.notAKeyedArchive, "keyed archive has no '$objects' array")
        }
        self.objects = objects
        self.top = top
    }

    /// Decodes `data` (a binary property list) and reads its frame.
    public init(data: Data, limits: BinaryPropertyList.Limits = .standard) throws(CoreDataError) {
        try self.init(BinaryPropertyList.decode(data, limits: limits))
    }

    /// The UID `$top` holds under `key`.
    public func topUID(_ key: String) throws(CoreDataError) -> UInt64 {
        guard let uid = top[key]?.uid else {
            throw CoreDataError(.notAKeyedArchive, "keyed archive's '$top' has no UID '\(key)'")
        }
        return uid
    }

    /// The object `uid` names.
    public func object(_ uid: UInt64) throws(CoreDataError) -> PropertyListValue {
        guard uid < UInt64(objects.count) else {
            throw CoreDataError(
                .danglingUID, "UID \(uid) names no object (the archive has \(objects.count))")
        }
        return objects[Int(uid)]
    }

    /// Whether `uid` is the `$null` reference (UID 0, or any UID of the string `$null`).
    public func isNull(_ uid: UInt64) -> Bool {
        uid == 0 || (uid < UInt64(objects.count) && objects[Int(uid)].string == "$null")
    }

    /// The dictionary of the archived object `uid` (its keys and `$class`).
    public func dictionary(_ uid: UInt64) throws(CoreDataError) -> [String: PropertyListValue] {
        guard let dictionary = try object(uid).dictionary else {
            throw CoreDataError(.unexpectedArchivedValue, "archived object \(uid) is not a keyed object")
        }
        return dictionary
    }

    /// The class chain of object `uid`, most derived first (`$classes`, else `[$classname]`).
    public func classes(_ uid: UInt64) throws(CoreDataError) -> [String] {
        guard let classUID = try dictionary(uid)["$class"]?.uid else {
            throw CoreDataError(.badClass, "archived object \(uid) has no '$class' UID")
        }
        guard classUID != uid, let description = try object(classUID).dictionary,
            let name = description["$classname"]?.string
        else {
            throw CoreDataError(
                .badClass,
                "archived object \(uid)'s class (object \(classUID)) is not a class description "
                    + "with a '$classname'")
        }
        let chain = description["$classes"]?.elements?.compactMap(\.string) ?? []
        return chain.isEmpty ? [name] : chain
    }

    /// The class name of object `uid` (`$classname` of its `$class`).
    public func className(_ uid: UInt64) throws(CoreDataError) -> String {
        try classes(uid)[0]
    }

    /// The text of `uid`: a string object, or an `NSString`/`NSMutableString` (`NS.string`).
    public func string(_ uid: UInt64) throws(CoreDataError) -> String {
        let value = try object(uid)
        if let text = value.string { return text }
        if let text = value.dictionary?["NS.string"]?.string { return text }
        throw CoreDataError(.unexpectedArchivedValue, "archived object \(uid) is not a string")
    }

    /// The UIDs of the elements of the `NSArray`/`NSSet` (or their mutable kinds) `uid` names.
    public func elements(_ uid: UInt64) throws(CoreDataError) -> [UInt64] {
        let dictionary = try dictionary(uid)
        guard let list = dictionary["NS.objects"]?.elements else {
            throw CoreDataError(.unexpectedArchivedValue, "archived object \(uid) is not an array or a set")
        }
        return try uids(list, of: uid)
    }

    /// The key and value UIDs of the `NSDictionary` (or mutable) `uid` names, in archive order.
    public func entries(_ uid: UInt64) throws(CoreDataError) -> [(key: UInt64, value: UInt64)] {
        let dictionary = try dictionary(uid)
        guard let keys = dictionary["NS.keys"]?.elements, let values = dictionary["NS.objects"]?.elements,
            keys.count == values.count
        else {
            throw CoreDataError(
                .unexpectedArchivedValue,
                "archived object \(uid) is not a dictionary (NS.keys and NS.objects)")
        }
        return zip(try uids(keys, of: uid), try uids(values, of: uid)).map { ($0, $1) }
    }

    private func uids(_ list: [PropertyListValue], of uid: UInt64) throws(CoreDataError) -> [UInt64] {
        var result: [UInt64] = []
        result.reserveCapacity(list.count)
        for element in list {
            guard let reference = element.uid else {
                throw CoreDataError(
                    .unexpectedArchivedValue, "archived collection \(uid) holds a value that is not a UID")
            }
            guard reference < UInt64(objects.count) else {
                throw CoreDataError(
                    .danglingUID,
                    "archived collection \(uid) refers to UID \(reference), which names no object "
                        + "(the archive has \(objects.count))")
            }
            result.append(reference)
        }
        return result
    }
}
