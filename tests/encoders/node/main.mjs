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

const dir = process.argv[2] ?? "../data";
const { events } = JSON.parse(readFileSync("../expected.json", "utf8"));
const encoder = new FixtureEncoder({ extensionCodec });
const write = (name, records) =>
  writeFileSync(join(dir, name), Buffer.concat(records.map((r) => encoder.encode(r))));

write("node_events_map.msgpack", events.map(asMap));
write("node_events_array.msgpack", events.map(asArray));
