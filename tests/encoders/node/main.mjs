// Writes the Node.js fixtures of tests/encoders with @msgpack/msgpack, from ../expected.json.
//
// Usage (from this folder): npm install && node main.mjs ../data
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  Encoder,
  ExtensionCodec,
  EXT_TIMESTAMP,
  decodeTimestampToTimeSpec,
  encodeTimeSpecToTimestamp,
} from "@msgpack/msgpack";

// A UTC instant to the nanosecond, which a JS Date (milliseconds) cannot hold.
class Instant {
  constructor(sec, nsec) {
    this.sec = sec;
    this.nsec = nsec;
  }

  // "2024-10-31T11:36:26.108998696Z": always UTC, always 9 fractional digits.
  static parse(text) {
    if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/.test(text)) {
      throw new Error(`not an RFC 3339 UTC instant with 9 fractional digits: ${text}`);
    }
    return new Instant(Date.parse(`${text.slice(0, 19)}Z`) / 1000, Number(text.slice(20, 29)));
  }
}

// The timestamp extension (-1) of an Instant, by the library's own seconds+nanoseconds encoder.
const extensionCodec = new ExtensionCodec();
extensionCodec.register({
  type: EXT_TIMESTAMP,
  encode: (object) => (object instanceof Instant ? encodeTimeSpecToTimestamp(object) : null),
  decode: (data) => decodeTimestampToTimeSpec(data),
});

// Fluentd's EventTime: extension type 0, big-endian uint32 seconds then uint32 nanoseconds.
class EventTime {
  constructor(instant) {
    this.sec = instant.sec;
    this.nsec = instant.nsec;
  }

  toBytes() {
    const data = new Uint8Array(8);
    const view = new DataView(data.buffer);
    view.setUint32(0, this.sec);
    view.setUint32(4, this.nsec);
    return data;
  }
}

const EXT_EVENT_TIME = 0;
extensionCodec.register({
  type: EXT_EVENT_TIME,
  encode: (object) => (object instanceof EventTime ? object.toBytes() : null),
  decode: (data) => data,
});

// A JS number does not tell 3.0 from 3, and the library writes every whole number as an integer.
// `value` is a float in every record, so it is wrapped and written as a float64, as every other
// encoder writes it. doEncode and encodeNumberAsFloat are the library's own methods (private in
// its TypeScript, hence the exact version in package.json).
class Float64 {
  constructor(value) {
    this.value = value;
  }
}

class FixtureEncoder extends Encoder {
  doEncode(object, depth) {
    if (object instanceof Float64) {
      this.encodeNumberAsFloat(object.value);
    } else {
      super.doEncode(object, depth);
    }
  }
}

const asMap = (e) => ({
  id: e.id,
  process_id: e.process_id,
  thread_id: e.thread_id,
  timestamp: Instant.parse(e.timestamp),
  line: e.line,
  value: new Float64(e.value),
  filename: e.filename,
  path: e.path,
  tags: e.tags,
  attrs: e.attrs,
  inner: { name: e.inner.name, level: e.inner.level },
  note: e.note,
});

const asArray = (e) => [
  e.id,
  e.process_id,
  e.thread_id,
  Instant.parse(e.timestamp),
  e.line,
  new Float64(e.value),
  e.filename,
  e.path,
  e.tags,
  e.attrs,
  [e.inner.name, e.inner.level],
  e.note,
];

// Tagged events: the tag ("type") and seq first, then the kind's own fields, in this order (a JS
// object keeps the order its string keys were set in); the array form is the same values in turn.
const kindFields = {
  click: (t) => ({ x: t.x, y: t.y, button: t.button }),
  key: (t) => ({ code: t.code, modifiers: t.modifiers, repeat: t.repeat }),
  scroll: (t) => ({ dx: new Float64(t.dx), dy: new Float64(t.dy), at: Instant.parse(t.at) }),
};

const taggedAsMap = (t) => {
  if (!Object.hasOwn(kindFields, t.type)) throw new Error(`unknown tagged event type: ${t.type}`);
  return { type: t.type, seq: t.seq, ...kindFields[t.type](t) };
};

const taggedAsArray = (t) => Object.values(taggedAsMap(t));

// Fluent Bit 2.1+: [[EventTime, metadata], record]; Fluentd: [EventTime, record].
const fluentBitEntry = (f) => {
  const time = new EventTime(Instant.parse(f.time));
  const record = { message: f.record.message, level: f.record.level, count: f.record.count };
  if (f.form === "fluentbit") return [[time, f.metadata], record];
  if (f.form === "fluentd") return [time, record];
  throw new Error(`unknown form: ${f.form}`);
};

const dir = process.argv[2] ?? "../data";
const { events, tagged_events: tagged, fluentbit } = JSON.parse(
  readFileSync("../expected.json", "utf8"),
);
const encoder = new FixtureEncoder({ extensionCodec });
const write = (name, records) =>
  writeFileSync(join(dir, name), Buffer.concat(records.map((r) => encoder.encode(r))));

write("node_events_map.msgpack", events.map(asMap));
write("node_events_array.msgpack", events.map(asArray));
write("node_tagged_map.msgpack", tagged.map(taggedAsMap));
write("node_tagged_array.msgpack", tagged.map(taggedAsArray));
write("node_fluentbit.msgpack", fluentbit.map(fluentBitEntry));
