import DeckTestSupport
import DeckTestTiming
import Testing

/// The seeds every randomised test takes its choices from: a failure must replay.
@Suite(.timed) struct TestSeedTests {
    @Test func seedsParseInDecimalAndHexadecimalOnly() {
        #expect(TestSeed.parse("12345") == 12_345)
        #expect(TestSeed.parse(" 0x1F ") == 31)
        #expect(TestSeed.parse("0XfF") == 255)
        #expect(TestSeed.parse("18446744073709551615") == UInt64.max)
        for bad in ["", "-1", "12a", "0x", "18446744073709551616", "seed"] {
            #expect(TestSeed.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func aTestsStreamFollowsFromTheRunsSeedAndItsLabelAlone() {
        let first = TestSeed("Suite.test", filter: "Suite")
        let again = TestSeed("Suite.test")
        let other = TestSeed("Suite.other")
        #expect(first.value == again.value)
        #expect(first.value != other.value)
        var a = first.generator()
        var b = again.generator()
        let drawn = (0..<8).map { _ in a.next() }
        #expect(drawn == (0..<8).map { _ in b.next() })
        #expect(Set(drawn).count == 8)
    }

    @Test func theDescriptionIsTheReplayCommand() {
        let seed = TestSeed(
            "KillMidSaveTests.x", filter: "KillMidSaveTests", environment: ["DECK_CRASH_ROUNDS=3"])
        #expect(
            seed.description
                == "seed \(TestSeed.run) (replay: DECK_TEST_SEED=\(TestSeed.run) DECK_CRASH_ROUNDS=3 "
                + "swift test --filter KillMidSaveTests)")
    }

    @Test func theGeneratorIsSplitMix64() {
        // The first outputs of SplitMix64 from seed 0 (Steele, Lea and Flood's reference values).
        var generator = SeededGenerator(seed: 0)
        #expect(generator.next() == 0xE220_A839_7B1D_CDAF)
        #expect(generator.next() == 0x6E78_9E6A_A1B9_65F4)
    }
}
