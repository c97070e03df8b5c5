-- wrk script for `callstats serve`: every request posts one statistics snapshot of one of many
-- calls (chains), the first of each chain in full and every later one as a delta (FORMAT.md).
-- Environment: CALLSTATS_RUN names the calls (a new name per run: the server takes a snapshot
-- whose seq it has already written for a retry), CALLSTATS_PACE_MS waits that long before each
-- request of a connection (0: as fast as the server answers), CALLSTATS_CHAINS calls per wrk
-- thread (many more than connections, so a chain's next delta is sent well after its previous
-- one was answered).

local run = os.getenv("CALLSTATS_RUN") or "load"
local pace = tonumber(os.getenv("CALLSTATS_PACE_MS") or "0")
local chains = tonumber(os.getenv("CALLSTATS_CHAINS") or "10000")
local threads = {}
local nextThread = 1

function setup(thread)
  thread:set("tid", nextThread)
  nextThread = nextThread + 1
  table.insert(threads, thread)
end

local counter = 0
local seqs = {}
statuses = {}
rejected = 0
local base = 1795349930000

function init(args)
  statuses = {}
end

local function full(call, seq, ts)
  local t = ts + 0.25
  return string.format(
    '{"v":1,"kind":"stats","call":"%s","ts":%d,"format":"w3c","pc":"pc-1","seq":%d,"report":[' ..
    '{"id":"T01","timestamp":%.2f,"type":"transport","bytesSent":120000,"bytesReceived":118000,"dtlsState":"connected","iceState":"connected","selectedCandidatePairId":"CP01","srtpCipher":"AES_CM_128_HMAC_SHA1_80"},' ..
    '{"id":"CP01","timestamp":%.2f,"type":"candidate-pair","transportId":"T01","localCandidateId":"CL1","remoteCandidateId":"CR1","state":"succeeded","nominated":true,"packetsSent":900,"packetsReceived":880,"bytesSent":120000,"bytesReceived":118000,"currentRoundTripTime":0.012,"availableOutgoingBitrate":2500000},' ..
    '{"id":"CL1","timestamp":%.2f,"type":"local-candidate","transportId":"T01","address":"192.0.2.10","port":50000,"protocol":"udp","candidateType":"host","priority":2122260223},' ..
    '{"id":"CR1","timestamp":%.2f,"type":"remote-candidate","transportId":"T01","address":"198.51.100.20","port":50001,"protocol":"udp","candidateType":"srflx","priority":1686052607},' ..
    '{"id":"IT01","timestamp":%.2f,"type":"inbound-rtp","kind":"audio","ssrc":3142301049,"transportId":"T01","codecId":"CIT01_111","packetsReceived":250,"packetsLost":0,"jitter":0.003,"bytesReceived":40000,"totalSamplesReceived":240000,"concealedSamples":0,"audioLevel":0.05,"jitterBufferDelay":12.5,"jitterBufferEmittedCount":240000},' ..
    '{"id":"OT01","timestamp":%.2f,"type":"outbound-rtp","kind":"audio","ssrc":1234567,"transportId":"T01","codecId":"COT01_111","packetsSent":250,"bytesSent":40000,"retransmittedPacketsSent":0,"targetBitrate":32000},' ..
    '{"id":"RIA1","timestamp":%.2f,"type":"remote-inbound-rtp","kind":"audio","ssrc":1234567,"transportId":"T01","localId":"OT01","packetsLost":0,"jitter":0.002,"roundTripTime":0.012,"fractionLost":0},' ..
    '{"id":"CIT01_111","timestamp":%.2f,"type":"codec","transportId":"T01","payloadType":111,"mimeType":"audio/opus","clockRate":48000,"channels":2,"sdpFmtpLine":"minptime=10;useinbandfec=1"},' ..
    '{"id":"COT01_111","timestamp":%.2f,"type":"codec","transportId":"T01","payloadType":111,"mimeType":"audio/opus","clockRate":48000,"channels":2,"sdpFmtpLine":"minptime=10;useinbandfec=1"}' ..
    ']}\n', call, ts, seq, t, t, t, t, t, t, t, t, t)
end

local function delta(call, seq, ts)
  return string.format(
    '{"v":1,"kind":"stats","call":"%s","ts":%d,"format":"w3c","pc":"pc-1","seq":%d,"base":%d,"delta":{"t":%.2f,' ..
    '"set":{"IT01":{"jitter":0.00%d,"audioLevel":0.0%d},"RIA1":{"roundTripTime":0.01%d},"CP01":{"currentRoundTripTime":0.01%d}},' ..
    '"inc":{"IT01":{"packetsLost":%d},"CP01":{"availableOutgoingBitrate":%d}}}}\n',
    call, ts, seq, seq - 1, ts + 0.25, seq % 9 + 1, seq % 7 + 1, seq % 5, seq % 5, seq % 2, (seq % 3) * 1000)
end

function request()
  counter = counter + 1
  -- wrk builds one request per thread that it never sends: make that one a snapshot no later
  -- delta leans on.
  if counter == 1 then
    return wrk.format("POST", "/v1/records", {["Content-Type"] = "application/x-ndjson"},
      full(run .. "-" .. tid .. "-unsent", 0, base))
  end
  local c = counter % chains
  local seq = seqs[c]
  local call = run .. "-" .. tid .. "-" .. c
  local body
  if seq == nil then
    seq = 0
    body = full(call, seq, base)
  else
    seq = seq + 1
    body = delta(call, seq, base + seq * 5000)
  end
  seqs[c] = seq
  return wrk.format("POST", "/v1/records", {["Content-Type"] = "application/x-ndjson"}, body)
end

function delay()
  return pace
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 200 and not string.find(body, '"rejected":0', 1, true) then rejected = rejected + 1 end
end

function done(summary, latency, requests)
  local ok, other, partial = 0, {}, 0
  for _, thread in ipairs(threads) do
    local s = thread:get("statuses")
    for status, n in pairs(s) do
      if status == 200 then ok = ok + n else other[status] = (other[status] or 0) + n end
    end
    partial = partial + thread:get("rejected")
  end
  local seconds = summary.duration / 1e6
  io.write(string.format("snapshots accepted: %d in %.1f s = %.0f /s\n", ok, seconds, ok / seconds))
  io.write(string.format("latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
  for status, n in pairs(other) do io.write(string.format("status %d: %d\n", status, n)) end
  if partial > 0 then io.write(string.format("replies with rejected lines: %d\n", partial)) end
  io.write(string.format("socket errors: connect %d, read %d, write %d, timeout %d\n",
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
