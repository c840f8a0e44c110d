import Foundation

#if DEBUG
    @_spi(Testing) import DeckKit
#else
    import DeckKit
#endif

/// What `deck` does on SIGINT, SIGTERM and SIGHUP: remove the hidden staging files and
/// directories of the command (an export's snapshot and archive, an import's or a reading
/// command's unpacked copy, a new package), then end as the signal would have.
enum Signals {
    /// Installs the handlers; called once by ``DeckCommandLine/main()``, before anything else.
    static func install() {
        StagingFiles.removeOnTerminationSignals()
        #if DEBUG
            // Tests interrupt a command at a known point: after its N-th staging item is made, the
            // command says so on standard error and waits for standard input to close.
            if let value = ProcessInfo.processInfo.environment["DECK_TEST_PAUSE_AFTER_STAGING"],
                let count = Int(value)
            {
                StagingFiles.afterCreating(count) { path in
                    FileHandle.standardError.write(Data("deck-test: staged \(path)\n".utf8))
                    var byte: UInt8 = 0
                    while read(0, &byte, 1) > 0 {}
                }
            }
        #endif
    }
}
