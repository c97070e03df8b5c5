import Foundation
import TestSupport
import XCTest

/// The agent's `conference` and `participant` options (agent.js, run by node with a stand-in
/// peer connection and `fetch`): they become labels of the `call` record, over `labels`.
final class AgentLabelTests: XCTestCase {
    static let script = #"""
        const bodies = [];
        globalThis.fetch = (url, init) => {
          bodies.push(init.body);
          return Promise.resolve({status: 200, text: () => Promise.resolve("{}"), headers: {get: () => null}});
        };
        const agent = require(process.argv[2]);
        const pc = {signalingState: "stable", getTransceivers: () => [], getStats: () => Promise.resolve(new Map()),
                    addEventListener: () => {}};
        const cases = [
          {callId: "plain"},
          {callId: "labelled", labels: {room: "a"}},
          {callId: "leg", conference: "room-7", participant: "alice", labels: {room: "a", conference: "old", participant: "old"}},
          {callId: "numbers", conference: 7, participant: 3},
        ];
        const monitors = cases.map(o => agent.attach(pc, Object.assign({endpoint: "http://collector", flushIntervalMs: 100000}, o)));
        Promise.all(monitors.map(m => m.end())).then(function drain() {
          const t = monitors[0].transport;
          if (t.queue.length || t.inFlight) { t.pump(); setTimeout(drain, 10); return; }
          const calls = bodies.join("").split("\n").filter(l => l).map(l => JSON.parse(l)).filter(r => r.kind === "call");
          console.log(JSON.stringify(calls.map(r => [r.call, r.labels === undefined ? null : r.labels])));
          process.exit(0);
        });
        """#

    func testConferenceAndParticipantAreLabelsOverTheLabelsOption() throws {
        guard let node = AgentEncoderTests.node else { throw XCTSkip("node is not installed: the labels are checked by the Chromium conference test only") }
        let dir = TestPaths.temporaryDirectory("agent-labels")
        defer { try? FileManager.default.removeItem(at: dir) }
        let js = dir.appendingPathComponent("labels.js")
        try AgentLabelTests.script.write(to: js, atomically: true, encoding: .utf8)
        let agent = TestPaths.repositoryRoot.appendingPathComponent("Sources/IngestServer/Resources/agent.js").path
        let r = try runProcess(URL(fileURLWithPath: node), [js.path, agent])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(
            r.out.trimmingCharacters(in: .whitespacesAndNewlines),
            #"[["plain",null],["labelled",{"room":"a"}],["leg",{"room":"a","conference":"room-7","participant":"alice"}],"#
                + #"["numbers",{"conference":"7","participant":"3"}]]"#)
    }
}
