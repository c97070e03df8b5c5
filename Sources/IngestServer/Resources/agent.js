/*
 * callstats browser agent: records an RTCPeerConnection as callstats log records (format v1,
 * Data/FORMAT.md) and posts them to `callstats serve` (Data/INGEST.md).
 *
 *   <script src="https://collector.example/agent.js"></script>
 *   (or as a module: import { attach } from "https://collector.example/agent.mjs")
 *   const monitor = window.callstats.attach(pc, {callId: "c-42", token: "…", labels: {room: "a"}});
 *   (a conference leg: attach(pc, {callId: "alice-to-bob", conference: "room-7", participant: "alice"}))
 *   monitor.event("callState", "mute");
 *   monitor.end("terminatedLocally");
 *
 * Statistics are sent as the format's deltas: the first snapshot of a chain (call, pc, format)
 * in full, each later one as what changed, computed exactly as Sources/CallLog/StatsDelta.swift
 * does so that the server restores every snapshot bit for bit. Records wait in a bounded buffer
 * (the oldest are dropped first, and counted in an `agent` record) and go out in batches; a
 * batch that gets no reply is sent again, unchanged and under the same `Callstats-Batch` id,
 * so the server writes it once.
 */
(function (root) {
  "use strict";

  var script = typeof document !== "undefined" ? document.currentScript : null;
  var scriptOrigin = null;
  try { if (script && script.src) scriptOrigin = new URL(script.src).origin; } catch (e) { scriptOrigin = null; }
  // Loaded as a module (/agent.mjs), the module's URL stands in for the script tag's.
  try { if (!scriptOrigin && root.__callstatsAgentURL) scriptOrigin = new URL(root.__callstatsAgentURL).origin; } catch (e) { /* none */ }

  // ---- Statistics deltas (a port of StatsDeltaEncoder; keep the two in step) ----

  function isObject(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }

  /** JSON equality with members in order, as JSONValue's `==`. */
  function jsonEqual(a, b) {
    if (a === b) return true;
    if (typeof a === "number" && typeof b === "number") return a === b;
    if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) return false;
      for (var i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
      return true;
    }
    if (isObject(a) && isObject(b)) {
      var ka = Object.keys(a), kb = Object.keys(b);
      if (ka.length !== kb.length) return false;
      for (var j = 0; j < ka.length; j++) {
        if (ka[j] !== kb[j] || !jsonEqual(a[ka[j]], b[kb[j]])) return false;
      }
      return true;
    }
    return false;
  }

  /** A plain, JSON-shaped copy of one RTCStats dictionary (drops undefined and functions). */
  function plain(v) {
    if (v === null || typeof v === "string" || typeof v === "boolean") return v;
    if (typeof v === "number") return isFinite(v) ? v : null;
    if (Array.isArray(v)) return v.map(plain);
    if (typeof v === "object") {
      var o = {};
      for (var k in v) {
        var x = v[k];
        if (x === undefined || typeof x === "function") continue;
        o[k] = plain(x);
      }
      return o;
    }
    return null;
  }

  function commonTimestamp(objects) {
    var counts = new Map(), best = null, bestCount = 0;
    for (var i = 0; i < objects.length; i++) {
      var t = objects[i].timestamp;
      if (typeof t !== "number") continue;
      var c = (counts.get(t) || 0) + 1;
      counts.set(t, c);
      if (c > bestCount) { best = t; bestCount = c; }
    }
    return best;
  }

  /** Snapshot as the codec keeps it, or null when ids are missing or repeated. */
  function makeSnapshot(report, seq) {
    var index = new Map();
    for (var i = 0; i < report.length; i++) {
      var o = report[i];
      if (!isObject(o) || typeof o.id !== "string" || index.has(o.id)) return null;
      index.set(o.id, i);
    }
    return { objects: report, index: index, t: commonTimestamp(report), seq: seq, rates: new Map() };
  }

  function advanced(o, oldT, newT) {
    if (oldT === null || newT === null || o.timestamp !== oldT || typeof o.timestamp !== "number") return o;
    var copy = Object.assign({}, o);
    copy.timestamp = newT;
    return copy;
  }

  function predicted(o, rates) {
    if (!rates || rates.size === 0) return o;
    var out = Object.assign({}, o);
    for (var k in out) {
      if (typeof out[k] === "number" && rates.has(k)) out[k] = out[k] + rates.get(k);
    }
    return out;
  }

  function changeRates(oldObject, newObject) {
    var rates = new Map();
    for (var k in newObject) {
      var b = newObject[k], a = oldObject[k];
      if (typeof b !== "number" || typeof a !== "number") continue;
      var r = b - a;
      if (r !== 0 && isFinite(r)) rates.set(k, r);
    }
    return rates;
  }

  function computeRates(old, current) {
    var rates = new Map();
    for (var i = 0; i < current.objects.length; i++) {
      var o = current.objects[i], oi = old.index.get(o.id);
      if (oi === undefined) continue;
      var r = changeRates(advanced(old.objects[oi], old.t, current.t), o);
      if (r.size > 0) rates.set(o.id, r);
    }
    current.rates = rates;
  }

  function numberText(d) { return JSON.stringify(d); }

  function log10Floor(x) {
    x = Math.abs(x);
    var e = 0;
    while (x >= 10) { x /= 10; e += 1; }
    while (x < 1) { x *= 10; e -= 1; }
    return e;
  }

  function pow10(n) {
    var r = 1;
    if (n >= 0) { for (var i = 0; i < n; i++) r *= 10; } else { for (var j = 0; j < -n; j++) r /= 10; }
    return r;
  }

  /** The shortest number d with a + d === b exactly, when shorter to write than b. */
  function shortestAddend(a, b) {
    if (!isFinite(a) || !isFinite(b)) return null;
    var exact = b - a;
    if (!isFinite(exact) || exact === 0) return null;
    var best = null, bestLength = numberText(b).length;
    if (a + exact === b && numberText(exact).length < bestLength) { best = exact; bestLength = numberText(exact).length; }
    var magnitude = log10Floor(exact);
    for (var digits = 1; digits <= 15; digits++) {
      var scale = pow10(digits - 1 - magnitude);
      var candidate = isFinite(scale) && scale > 0 ? roundHalfAway(exact * scale) / scale : exact;
      if (!isFinite(candidate) || a + candidate !== b) continue;
      if (numberText(candidate).length < bestLength) { best = candidate; bestLength = numberText(candidate).length; }
      break;
    }
    return best;
  }

  function roundHalfAway(x) { return x < 0 ? -Math.round(-x) : Math.round(x); }

  function fieldDiff(oldObject, newObject) {
    var c = { set: {}, inc: {}, unset: [], setCount: 0, incCount: 0 };
    for (var k in newObject) {
      var v = newObject[k];
      if (!Object.prototype.hasOwnProperty.call(oldObject, k)) { c.set[k] = v; c.setCount++; continue; }
      var before = oldObject[k];
      if (jsonEqual(before, v)) continue;
      if (isObject(before) && isObject(v)) {
        var nested = fieldDiff(before, v);
        if (nested.unset.length === 0) {
          var merged = nested.set;
          for (var nk in nested.inc) merged[nk] = v[nk];
          c.set[k] = merged;
        } else {
          c.set[k] = v;
          c.unset.push(k);
        }
        c.setCount++;
      } else if (typeof before === "number" && typeof v === "number") {
        var d = shortestAddend(before, v);
        if (d !== null) { c.inc[k] = d; c.incCount++; } else { c.set[k] = v; c.setCount++; }
      } else {
        c.set[k] = v;
        c.setCount++;
      }
    }
    for (var ok in oldObject) if (!Object.prototype.hasOwnProperty.call(newObject, ok)) c.unset.push(ok);
    return c;
  }

  function diff(old, current) {
    var set = {}, inc = {}, unset = {}, put = [], del = [];
    var hasSet = false, hasInc = false, hasUnset = false;
    for (var i = 0; i < current.objects.length; i++) {
      var o = current.objects[i], oi = old.index.get(o.id);
      if (oi === undefined) { put.push(o); continue; }
      var before = predicted(advanced(old.objects[oi], old.t, current.t), old.rates.get(o.id));
      var change = fieldDiff(before, o);
      if (change.setCount > 0) { set[o.id] = change.set; hasSet = true; }
      if (change.incCount > 0) { inc[o.id] = change.inc; hasInc = true; }
      if (change.unset.length > 0) { unset[o.id] = change.unset; hasUnset = true; }
    }
    for (var j = 0; j < old.objects.length; j++) {
      if (!current.index.has(old.objects[j].id)) del.push(old.objects[j].id);
    }
    var d = {};
    if (current.t !== null) d.t = current.t;
    if (hasSet) d.set = set;
    if (hasInc) d.inc = inc;
    if (hasUnset) d.unset = unset;
    if (put.length) d.put = put;
    if (del.length) d.del = del;
    var natural = [];
    for (var n = 0; n < old.objects.length; n++) if (current.index.has(old.objects[n].id)) natural.push(old.objects[n].id);
    for (var p = 0; p < put.length; p++) natural.push(put[p].id);
    var actual = current.objects.map(function (x) { return x.id; });
    var same = natural.length === actual.length;
    for (var q = 0; same && q < actual.length; q++) same = natural[q] === actual[q];
    if (!same) d.order = actual;
    return d;
  }

  /**
   * Chains of one transport. `seq` never goes back within a chain (the server takes a snapshot
   * whose seq it has passed for a retry), even when the chain restarts with a full snapshot.
   */
  function DeltaEncoder() {
    this.chains = new Map();
    this.nextSeq = new Map();
  }

  DeltaEncoder.prototype.key = function (r) { return r.call + "\u0000" + (r.pc || "") + "\u0000" + (r.format || ""); };

  /** The record to send for a full `stats` record (other records pass through). */
  DeltaEncoder.prototype.encode = function (record) {
    if (record.kind !== "stats" || !Array.isArray(record.report)) return record;
    var key = this.key(record);
    var seq = this.nextSeq.get(key) || 0;
    this.nextSeq.set(key, seq + 1);
    var previous = this.chains.get(key) || null;
    var current = makeSnapshot(record.report, seq);
    var full = Object.assign({}, record);
    delete full.report;
    full.seq = seq;
    full.report = record.report;
    if (current === null) { this.chains.delete(key); return full; }
    if (previous === null || previous.seq !== seq - 1) {
      // Read back from a full record, a chain has no rates yet: keep the same state here.
      this.chains.set(key, current);
      return full;
    }
    computeRates(previous, current);
    var delta = diff(previous, current);
    var out = Object.assign({}, record);
    delete out.report;
    out.seq = seq;
    out.base = previous.seq;
    out.delta = delta;
    if (delta.put && delta.put.length * 2 > current.objects.length &&
        JSON.stringify(out).length >= JSON.stringify(full).length) {
      current.rates = new Map();
      this.chains.set(key, current);
      return full;
    }
    this.chains.set(key, current);
    return out;
  };

  /** The chain's next snapshot goes in full. */
  DeltaEncoder.prototype.restart = function (record) { this.chains.delete(this.key(record)); };
  DeltaEncoder.prototype.restartAll = function () { this.chains.clear(); };
  DeltaEncoder.prototype.forget = function (call) {
    var prefix = call + "\u0000";
    var self = this;
    Array.from(this.chains.keys()).forEach(function (k) { if (k.indexOf(prefix) === 0) self.chains.delete(k); });
  };

  // ---- Transport: buffer, batches, retries ----

  var transports = new Map();

  function randomId(prefix) {
    var bytes = new Uint8Array(8);
    (root.crypto || crypto).getRandomValues(bytes);
    return prefix + Array.from(bytes, function (b) { return (b < 16 ? "0" : "") + b.toString(16); }).join("");
  }

  function Transport(endpoint, token, options) {
    this.url = endpoint.replace(/\/+$/, "") + "/v1/records";
    this.token = token || null;
    this.maxBuffered = options.maxBufferedRecords || 5000;
    this.maxBatchRecords = options.maxBatchRecords || 500;
    this.flushMs = options.flushIntervalMs || 5000;
    this.queue = [];
    this.inFlight = null;
    this.encoder = new DeltaEncoder();
    this.backoffMs = 0;
    this.timer = null;
    this.lost = { bufferFull: 0, rejected: 0 };
    this.lostSince = Date.now();
    this.lastAgentRecord = 0;
    this.sent = 0;
    this.onReply = options.onReply || null;
    var self = this;
    this.interval = setInterval(function () { self.pump(); }, this.flushMs);
    if (typeof document !== "undefined") {
      document.addEventListener("visibilitychange", function () {
        if (document.visibilityState === "hidden") self.flushOnExit();
      });
    }
    if (typeof addEventListener === "function") addEventListener("pagehide", function () { self.flushOnExit(); });
  }

  Transport.prototype.push = function (record) {
    this.queue.push(record);
    if (this.queue.length > this.maxBuffered) {
      var excess = this.queue.length - this.maxBuffered;
      for (var i = 0; i < excess; i++) {
        var dropped = this.queue[i];
        // The chain's next snapshot must not lean on one the server never gets.
        if (dropped.kind === "stats") this.encoder.restart(dropped);
      }
      this.queue.splice(0, excess);
      this.lost.bufferFull += excess;
    }
  };

  Transport.prototype.lossRecord = function (force) {
    var total = this.lost.bufferFull + this.lost.rejected;
    var now = Date.now();
    if (total === 0 || (!force && now - this.lastAgentRecord < 60000)) return null;
    var reasons = {};
    if (this.lost.bufferFull) reasons.bufferFull = this.lost.bufferFull;
    if (this.lost.rejected) reasons.rejected = this.lost.rejected;
    var r = { v: 1, kind: "agent", call: "-", ts: now, agent: "browser", event: "dropped", since: this.lostSince,
              records: total, reasons: reasons };
    this.lost = { bufferFull: 0, rejected: 0 };
    this.lostSince = now;
    this.lastAgentRecord = now;
    return r;
  };

  /** Takes records off the queue and encodes them: the body of one batch. */
  Transport.prototype.compose = function (maxBytes) {
    var records = [], lines = [], bytes = 0;
    var loss = this.lossRecord(false);
    if (loss) { records.push(loss); var l = JSON.stringify(loss); lines.push(l); bytes += l.length + 1; }
    while (this.queue.length && records.length < this.maxBatchRecords) {
      var record = this.queue[0];
      var line = JSON.stringify(this.encoder.encode(record));
      if (maxBytes && bytes + line.length + 1 > maxBytes && records.length > 0) {
        this.encoder.restart(record);
        break;
      }
      this.queue.shift();
      records.push(record);
      lines.push(line);
      bytes += line.length + 1;
      if (record.kind === "end") this.encoder.forget(record.call);
    }
    if (!records.length) return null;
    return { id: randomId("b-"), records: records, body: lines.join("\n") + "\n", attempts: 0 };
  };

  Transport.prototype.headers = function (batch) {
    var h = { "Content-Type": "application/x-ndjson", "Callstats-Batch": batch.id };
    if (this.token) h.Authorization = "Bearer " + this.token;
    return h;
  };

  Transport.prototype.pump = function () {
    if (this.inFlight || this.timer) return;
    var batch = this.compose(0);
    if (!batch) return;
    this.send(batch);
  };

  Transport.prototype.send = function (batch) {
    var self = this;
    this.inFlight = batch;
    batch.attempts += 1;
    fetch(this.url, { method: "POST", headers: this.headers(batch), body: batch.body, mode: "cors",
                      keepalive: batch.body.length < 60000 })
      .then(function (response) {
        return response.text().then(function (text) { self.answered(batch, response, text); });
      })
      .catch(function () { self.retryLater(batch, 0); });
  };

  Transport.prototype.answered = function (batch, response, text) {
    var status = response.status, reply = null;
    try { reply = JSON.parse(text); } catch (e) { reply = null; }
    if (this.onReply) { try { this.onReply(status, reply, batch); } catch (e) { /* the page's callback */ } }
    if (status === 200 || status === 422) {
      this.inFlight = null;
      this.backoffMs = 0;
      this.sent += batch.records.length;
      var again = [];
      var rejections = (reply && reply.rejections) || [];
      for (var i = 0; i < rejections.length; i++) {
        var record = batch.records[rejections[i].line - 1];
        if (!record) continue;
        if (rejections[i].code === "missing-base" && record.kind === "stats") {
          this.encoder.restart(record);
          again.push(record);
        } else {
          this.lost.rejected += 1;
        }
      }
      // Snapshots the server could not place go again, their chains restarting in full.
      if (again.length) this.queue = again.concat(this.queue);
      if (this.queue.length >= this.maxBatchRecords || again.length) this.pump();
      return;
    }
    if (status === 429 || status === 503 || status === 408 || status >= 500) {
      var retryAfter = parseInt(response.headers.get("Retry-After") || "0", 10);
      return this.retryLater(batch, isFinite(retryAfter) ? retryAfter * 1000 : 0);
    }
    // 400, 401, 403, 413, 415: sending it again would fail the same way.
    this.inFlight = null;
    this.lost.rejected += batch.records.length;
    for (var j = 0; j < batch.records.length; j++) if (batch.records[j].kind === "stats") this.encoder.restart(batch.records[j]);
  };

  Transport.prototype.retryLater = function (batch, atLeastMs) {
    var self = this;
    this.backoffMs = Math.min(60000, this.backoffMs ? this.backoffMs * 2 : 500);
    var wait = Math.max(atLeastMs, this.backoffMs * (0.75 + Math.random() * 0.5));
    this.timer = setTimeout(function () {
      self.timer = null;
      self.send(batch);
    }, wait);
  };

  /**
   * The page is going away: what is queued goes now with `keepalive` (or `sendBeacon`). Its
   * chains start in full, since a batch still in flight may never arrive.
   */
  Transport.prototype.flushOnExit = function () {
    var loss = this.lossRecord(true);
    if (loss) this.queue.unshift(loss);
    if (!this.queue.length) return;
    this.encoder.restartAll();
    var batch = this.compose(60000);
    if (!batch) return;
    var sent = false;
    try {
      fetch(this.url, { method: "POST", headers: this.headers(batch), body: batch.body, mode: "cors", keepalive: true })
        .catch(function () { /* nothing more can be done while the page unloads */ });
      sent = true;
    } catch (e) { sent = false; }
    if (!sent && typeof navigator !== "undefined" && navigator.sendBeacon) {
      var url = this.url + (this.token ? "?token=" + encodeURIComponent(this.token) : "");
      sent = navigator.sendBeacon(url, new Blob([batch.body], { type: "text/plain" }));
    }
    if (!sent) this.lost.rejected += batch.records.length;
    this.lost.bufferFull += this.queue.length;
    this.queue = [];
  };

  function transportFor(endpoint, token, options) {
    var key = endpoint + "\u0000" + (token || "");
    var t = transports.get(key);
    if (!t) { t = new Transport(endpoint, token, options); transports.set(key, t); }
    return t;
  }

  // ---- attach ----

  function networkType() {
    var c = typeof navigator !== "undefined" && navigator.connection;
    var t = c && c.type;
    if (t === "wifi" || t === "cellular" || t === "ethernet") return t;
    return "unknown";
  }

  /**
   * Starts recording `pc`. Options: callId, endpoint (default: the origin agent.js came from),
   * token, intervalMs (statistics, default 1000), labels, conference, participant, direction,
   * app, appVersion, pcId, media, statsFormat, maxBufferedRecords, maxBatchRecords,
   * flushIntervalMs, onReply. `conference` (the conference's id) and `participant` (who this
   * leg is) go into the `call` record as the labels of the same names, over any in `labels`;
   * a conference is one leg (one attach) per peer connection, all with the same `conference`.
   * Returns {event(action, type, detail), end(reason, fields), callId, flush()}.
   */
  function attach(pc, options) {
    options = options || {};
    var endpoint = options.endpoint || scriptOrigin || (typeof location !== "undefined" ? location.origin : "");
    var transport = transportFor(endpoint, options.token, options);
    var callId = options.callId || randomId("call-");
    var pcId = options.pcId || randomId("pc-");
    var intervalMs = options.intervalMs || 1000;
    var attachedAt = Date.now();
    var direction = options.direction || null;
    var callWritten = false, ended = false, connectedOnce = false, iceDown = false;
    var poll = null;

    function record(kind, fields, ts) {
      var r = { v: 1, kind: kind, call: callId, ts: ts || Date.now() };
      for (var k in fields) r[k] = fields[k];
      transport.push(r);
    }

    function event(action, type, detail) {
      var f = { action: action, type: type };
      if (detail !== undefined && detail !== null) f.detail = detail;
      record("event", f);
    }

    function media() {
      if (options.media) return options.media;
      var kinds = [];
      try {
        pc.getTransceivers().forEach(function (t) {
          var k = (t.receiver && t.receiver.track && t.receiver.track.kind) || (t.sender && t.sender.track && t.sender.track.kind);
          if (k && kinds.indexOf(k) < 0) kinds.push(k);
        });
      } catch (e) { /* closed */ }
      kinds.sort();
      return kinds.length ? kinds : ["audio"];
    }

    /** `labels` with `conference` and `participant` set from the options (as strings), or null. */
    function callLabels() {
      var labels = {}, any = !!options.labels;
      for (var k in options.labels || {}) labels[k] = options.labels[k];
      if (options.conference !== undefined && options.conference !== null) { labels.conference = String(options.conference); any = true; }
      if (options.participant !== undefined && options.participant !== null) { labels.participant = String(options.participant); any = true; }
      return any ? labels : null;
    }

    function writeCall() {
      if (callWritten) return;
      callWritten = true;
      var f = { direction: direction || "outgoing", sdk: "callstats-agent.js", sdkVersion: "1",
                platform: "web", network: networkType(), media: media() };
      if (options.app) f.app = options.app;
      if (options.appVersion) f.appVersion = options.appVersion;
      var labels = callLabels();
      if (labels) f.labels = labels;
      if (typeof navigator !== "undefined" && navigator.userAgent) f.userAgent = navigator.userAgent;
      record("call", f, attachedAt);
    }

    function sample() {
      if (ended || pc.signalingState === "closed") return Promise.resolve();
      var ts = Date.now();
      return pc.getStats().then(function (report) {
        if (ended) return;
        var objects = [];
        report.forEach(function (s) { objects.push(plain(s)); });
        writeCall();
        record("stats", { format: options.statsFormat || "w3c", pc: pcId, report: objects }, ts);
      }).catch(function () { /* a closed connection has no statistics */ });
    }

    // The setup timeline, in the format's callMetric names where one applies.
    function wrap(name, after) {
      var original = pc[name];
      if (typeof original !== "function") return;
      pc[name] = function () {
        event("setup", name);
        var result = original.apply(pc, arguments);
        if (after && result && typeof result.then === "function") {
          result.then(function (value) { after(arguments.length ? value : undefined); }, function (e) {
            event("setup", name + "Failure", { error: String(e && e.message || e) });
          });
        }
        return result;
      };
    }
    wrap("createOffer", function () {
      if (!direction) direction = "outgoing";
      event("callMetric", "callCreate");
    });
    wrap("createAnswer", function () { event("callMetric", "callCreate"); });
    wrap("setLocalDescription", function () {});
    var originalSetRemote = pc.setRemoteDescription;
    if (typeof originalSetRemote === "function") {
      pc.setRemoteDescription = function (description) {
        event("setup", "setRemoteDescription", description && description.type ? { sdpType: description.type } : null);
        var p = originalSetRemote.apply(pc, arguments);
        var type = description && description.type;
        if (p && typeof p.then === "function") {
          p.then(function () {
            if (type === "offer") {
              if (!direction) direction = "incoming";
              event("callMetric", "incomingCall");
            } else if (type === "answer") {
              event("callMetric", "callAnswerReceived");
            }
          }, function (e) { event("setup", "setRemoteDescriptionFailure", { error: String(e && e.message || e) }); });
        }
        return p;
      };
    }

    pc.addEventListener("iceconnectionstatechange", function () {
      var s = pc.iceConnectionState;
      event("iceConnectionState", s);
      if ((s === "connected" || s === "completed") && (!connectedOnce || iceDown)) {
        connectedOnce = true;
        iceDown = false;
        event("iceState", "iceConnected");
        event("setup", "connected");
      } else if ((s === "disconnected" || s === "failed") && connectedOnce && !iceDown) {
        iceDown = true;
        event("iceState", "iceDisconnected");
      }
    });
    pc.addEventListener("connectionstatechange", function () { event("connectionState", pc.connectionState); });
    pc.addEventListener("signalingstatechange", function () { event("signalingState", pc.signalingState); });
    pc.addEventListener("icegatheringstatechange", function () { event("iceGatheringState", pc.iceGatheringState); });
    pc.addEventListener("icecandidateerror", function (e) {
      event("iceCandidateError", String(e.errorCode), { url: e.url, errorText: e.errorText, address: e.address, port: e.port });
    });
    pc.addEventListener("track", function (e) {
      var t = e.track;
      event("track", "added", { kind: t.kind, trackId: t.id });
      t.addEventListener("ended", function () { event("track", "ended", { kind: t.kind, trackId: t.id }); });
    });

    poll = setInterval(sample, intervalMs);

    function end(reason, fields) {
      if (ended) return Promise.resolve();
      // One last snapshot first: the call's final counters.
      return sample().then(function () {
        if (ended) return;
        ended = true;
        clearInterval(poll);
        writeCall();
        var f = { reason: reason || "terminatedLocally", durationMs: Date.now() - attachedAt };
        for (var k in fields || {}) f[k] = fields[k];
        record("end", f);
        transport.pump();
      });
    }

    return {
      callId: callId,
      pcId: pcId,
      event: event,
      end: end,
      /** Sends what is queued now (normally every flushIntervalMs). */
      flush: function () { transport.pump(); },
      transport: transport,
    };
  }

  var api = { attach: attach, version: "1", DeltaEncoder: DeltaEncoder };
  root.callstats = api;
  if (typeof module === "object" && module && module.exports) module.exports = api;
})(typeof window !== "undefined" ? window : globalThis);
