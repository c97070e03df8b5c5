@testable import MaterialScanning
import XCTest

/// `ObjectTable` finds objects by id through its own hash index; it must agree with a plain
/// dictionary through growth, removals and ids of every length.
final class ObjectTableTests: XCTestCase {
    func testEveryIdIsFoundAtItsSlotThroughGrowthAndRemovals() {
        var table = ObjectTable()
        var expected: [String: Int] = [:]
        var order: [String] = []
        // Lengths 0-40 cover the hash's whole words and every tail length; ids sharing long
        // prefixes (as browsers' do) must not be confused.
        for i in 0..<600 {
            let id = i % 41 == 0 ? String(repeating: "x", count: i / 41) : "RTCInboundRTPAudioStream_\(i)" + String(repeating: "é", count: i % 5)
            guard expected[id] == nil else { continue }
            var o = StatObject()
            o.type = .inboundRTP
            table[id] = o
            expected[id] = order.count
            order.append(id)
        }
        func check(_ context: String) {
            XCTAssertEqual(table.count, order.count, context)
            for (id, slot) in expected {
                XCTAssertEqual(table.index(forKey: id), slot, "\(context): \(id)")
                let bytes = Array(id.utf8)
                XCTAssertEqual(bytes.withUnsafeBufferPointer { table.index(forKeyBytes: $0, hint: nil) }, slot, "\(context): \(id) as bytes")
            }
            for absent in ["", "RTCInboundRTPAudioStream_", "RTCInboundRTPAudioStream_600", "y"] where expected[absent] == nil {
                XCTAssertNil(table.index(forKey: absent), "\(context): \(absent)")
            }
        }
        check("after adding")
        // Removing shifts later slots down and rebuilds the index.
        for id in order.enumerated().filter({ $0.offset % 7 == 3 }).map(\.element) { table[id] = nil }
        order.removeAll { expected[$0].map { $0 % 7 == 3 } ?? false }
        expected = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
        check("after removing")
        var o = StatObject()
        o.type = .codec
        table["added after removals"] = o
        expected["added after removals"] = order.count
        order.append("added after removals")
        check("after adding again")
    }
}
