//! Writes the Rust fixtures of tests/encoders with serde and rmp-serde, from ../expected.json:
//! map form by `rmp_serde::to_vec_named`, array form by `rmp_serde::to_vec`, for the events and
//! the tagged events.
//!
//! Usage (from this folder): cargo run -- ../data

use serde::{Deserialize, Serialize, Serializer};
use serde_bytes::ByteBuf;
use std::collections::BTreeMap;
use std::error::Error;
use std::path::Path;

#[derive(Deserialize, Serialize)]
struct Event {
    id: i64,
    process_id: i64,
    thread_id: i64,
    timestamp: Timestamp,
    line: i64,
    value: f64,
    filename: String,
    path: String,
    tags: Vec<String>,
    attrs: BTreeMap<String, i64>,
    inner: Inner,
    note: Option<String>,
}

#[derive(Deserialize, Serialize)]
struct Inner {
    name: String,
    level: i64,
}

/// A tagged event: serde's internally tagged enum, the tag `type` first, then the variant's
/// fields (`seq` first). `to_vec_named` writes it as a map, `to_vec` as an array with the tag
/// first.
#[derive(Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Tagged {
    Click {
        seq: i64,
        x: i64,
        y: i64,
        button: String,
    },
    Key {
        seq: i64,
        code: String,
        modifiers: Vec<String>,
        repeat: bool,
    },
    Scroll {
        seq: i64,
        dx: f64,
        dy: f64,
        at: Timestamp,
    },
}

#[derive(Deserialize)]
struct Expected {
    events: Vec<Event>,
    tagged_events: Vec<Tagged>,
}

/// A UTC instant to the nanosecond: read from RFC 3339 text, written as the timestamp extension -1.
#[derive(Deserialize)]
#[serde(try_from = "String")]
struct Timestamp {
    seconds: u64,
    nanoseconds: u32,
}

/// rmp-serde writes a newtype struct of this name, holding (type, data), as a MessagePack extension.
#[derive(Serialize)]
#[serde(rename = "_ExtStruct")]
struct ExtStruct((i8, ByteBuf));

impl Serialize for Timestamp {
    /// The extension's data as the MessagePack spec lays it out: timestamp 32 (whole seconds
    /// below 2**32) or timestamp 64 (30-bit nanoseconds, 34-bit seconds). Instants between 2000
    /// and 2100 never need timestamp 96. rmp-serde only frames it: it has no timestamp type.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let data = if self.nanoseconds == 0 && self.seconds >> 32 == 0 {
            (self.seconds as u32).to_be_bytes().to_vec()
        } else {
            assert!(self.seconds >> 34 == 0, "needs timestamp 96");
            ((u64::from(self.nanoseconds) << 34) | self.seconds)
                .to_be_bytes()
                .to_vec()
        };
        ExtStruct((-1, ByteBuf::from(data))).serialize(serializer)
    }
}

impl TryFrom<String> for Timestamp {
    type Error = String;

    /// "2024-10-31T11:36:26.108998696Z": always UTC, always 9 fractional digits.
    fn try_from(text: String) -> Result<Self, String> {
        let b = text.as_bytes();
        let shape_ok = b.len() == 30
            && b.iter().enumerate().all(|(i, &c)| match i {
                4 | 7 => c == b'-',
                10 => c == b'T',
                13 | 16 => c == b':',
                19 => c == b'.',
                29 => c == b'Z',
                _ => c.is_ascii_digit(),
            });
        if !shape_ok {
            return Err(format!(
                "not an RFC 3339 UTC instant with 9 fractional digits: {text}"
            ));
        }
        let num = |from: usize, to: usize| text[from..to].parse::<u64>().unwrap();
        let days = days_from_civil(num(0, 4), num(5, 7), num(8, 10));
        let seconds = days * 86_400 + num(11, 13) * 3600 + num(14, 16) * 60 + num(17, 19);
        Ok(Timestamp {
            seconds,
            nanoseconds: num(20, 29) as u32,
        })
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar from 1970 on
/// (H. Hinnant's days_from_civil).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let (era, year_of_era) = (year / 400, year % 400);
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "../data".into());
    let expected: Expected = serde_json::from_str(&std::fs::read_to_string("../expected.json")?)?;
    let (mut maps, mut arrays) = (Vec::new(), Vec::new());
    for event in &expected.events {
        maps.extend(rmp_serde::to_vec_named(event)?);
        arrays.extend(rmp_serde::to_vec(event)?);
    }
    std::fs::write(Path::new(&dir).join("rust_events_map.msgpack"), maps)?;
    std::fs::write(Path::new(&dir).join("rust_events_array.msgpack"), arrays)?;
    let (mut maps, mut arrays) = (Vec::new(), Vec::new());
    for tagged in &expected.tagged_events {
        maps.extend(rmp_serde::to_vec_named(tagged)?);
        arrays.extend(rmp_serde::to_vec(tagged)?);
    }
    std::fs::write(Path::new(&dir).join("rust_tagged_map.msgpack"), maps)?;
    std::fs::write(Path::new(&dir).join("rust_tagged_array.msgpack"), arrays)?;
    Ok(())
}
