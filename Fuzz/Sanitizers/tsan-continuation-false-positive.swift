import Dispatch
// Shows the ThreadSanitizer false positive suppressed in tsan.supp: a continuation resumed on
// another thread, often before its task has suspended. The sum is always right.
//   swiftc -sanitize=thread -parse-as-library tsan-continuation-false-positive.swift -o /tmp/c && /tmp/c
@main struct Main {
    static func main() async {
        var sum = 0
        for i in 0..<20000 {
            sum += await withUnsafeContinuation { (c: UnsafeContinuation<Int, Never>) in
                DispatchQueue.global().async { c.resume(returning: i & 1) }
            }
        }
        print(sum)
    }
}
