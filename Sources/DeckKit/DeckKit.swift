// DeckKit is the library apps import. It re-exports DeckStore — the format, the Sendable
// `PackageStore`, the record API, the expression language, verification — and adds the
// document layer on top (sharing: export, import, pack, unpack, verification of archives). It
// re-exports DeckCoreData too: importing Core Data and SwiftData stores.
@_exported import DeckCoreData
@_exported import DeckStore
