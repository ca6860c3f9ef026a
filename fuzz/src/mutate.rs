//! Byte mutations (flips, random bytes, cuts, splices from a donor,
//! insertions, deletions, and flips inside a function body or a data
//! segment, which often keep a module valid) and the mutated-guest target:
//! a built guest program mutated one to four times, then run through the
//! host like any module.

use crate::pipeline::{exercise, host_config};
use crate::{Limits, Outcomes, Target};
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use std::ops::Range;

/// Applies one to four random mutations to `bytes`, taking spliced bytes
/// from `donors`; returns their names, for the tally.
pub(crate) fn mutate(bytes: &mut Vec<u8>, donors: &[&[u8]], rng: &mut impl RngCore) -> String {
    let n = rng.random_range(1..=4);
    let names: Vec<&str> = (0..n).map(|_| mutate_once(bytes, donors, rng)).collect();
    names.join("+")
}

fn mutate_once(bytes: &mut Vec<u8>, donors: &[&[u8]], rng: &mut impl RngCore) -> &'static str {
    if bytes.is_empty() {
        bytes.push(rng.random());
        return "grow";
    }
    let at = rng.random_range(0..bytes.len());
    match rng.random_range(0..8) {
        0 => {
            bytes[at] ^= 1 << rng.random_range(0..8);
            "flip"
        }
        1 => {
            bytes[at] = *[0, 0xff, 0x7f, 0x80, rng.random()]
                .get(rng.random_range(0..5))
                .unwrap_or(&0);
            "byte"
        }
        2 => {
            bytes.truncate(at);
            "cut"
        }
        3 | 4 => {
            let chunk = donor_chunk(donors, rng);
            let end = (at + rng.random_range(0..=64)).min(bytes.len());
            let keep_len = rng.random_bool(0.5);
            let end = if keep_len {
                (at + chunk.len()).min(bytes.len())
            } else {
                end
            };
            bytes.splice(at..end, chunk.iter().copied());
            "splice"
        }
        5 => {
            let end = (at + rng.random_range(1..=64)).min(bytes.len());
            bytes.drain(at..end);
            "delete"
        }
        _ => {
            if !flip_in_body(bytes, rng) {
                bytes[at] = bytes[at].wrapping_add(1);
            }
            "flip-in-body"
        }
    }
}

/// Flips a bit inside a random function body or data segment; false when
/// `bytes` has none that parses.
fn flip_in_body(bytes: &mut [u8], rng: &mut impl RngCore) -> bool {
    match pick_body(bytes, rng) {
        Some(r) if !r.is_empty() && r.end <= bytes.len() => {
            let i = rng.random_range(r);
            bytes[i] ^= 1 << rng.random_range(0..8);
            true
        }
        _ => false,
    }
}

/// Up to 64 bytes of a random donor.
fn donor_chunk<'a>(donors: &[&'a [u8]], rng: &mut impl RngCore) -> &'a [u8] {
    let Some(d) = donors.get(rng.random_range(0..donors.len().max(1))) else {
        return &[];
    };
    if d.is_empty() {
        return &[];
    }
    let start = rng.random_range(0..d.len());
    let end = (start + rng.random_range(1..=64)).min(d.len());
    &d[start..end]
}

/// The byte range of a random function body or data segment of `bytes`,
/// as far as it parses.
fn pick_body(bytes: &[u8], rng: &mut impl RngCore) -> Option<Range<usize>> {
    use wasmparser::{Parser, Payload};
    let mut ranges = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload {
            Ok(Payload::CodeSectionEntry(body)) => ranges.push(body.range()),
            Ok(Payload::DataSection(r)) => ranges.extend(r.into_iter().flatten().map(|d| d.range)),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    ranges
        .get(rng.random_range(0..ranges.len().max(1)))
        .cloned()
}

/// The mutated-guest target: every built guest program, read once.
pub(crate) struct Guests {
    limits: Limits,
    guests: Vec<(String, Vec<u8>)>,
}

impl Guests {
    pub(crate) fn new(limits: &Limits) -> Result<Self, String> {
        let guests = read_guests()?;
        Ok(Guests {
            limits: limits.clone(),
            guests,
        })
    }
}

/// The built guest programs (`wasmrace-fixtures`), sorted by name.
pub(crate) fn read_guests() -> Result<Vec<(String, Vec<u8>)>, String> {
    wasmrace_fixtures::FIXTURES
        .iter()
        .map(|(name, path)| {
            std::fs::read(path)
                .map(|b| (name.to_string(), b))
                .map_err(|e| format!("cannot read the guest `{path}`: {e} (build the fixtures: `cargo build -p wasmrace-fixtures`)"))
        })
        .collect()
}

impl Target for Guests {
    fn run(&mut self, rng: &mut ChaCha8Rng, out: &mut Outcomes) -> Result<(), String> {
        let (_, seed) = &self.guests[rng.random_range(0..self.guests.len())];
        let mut bytes = seed.clone();
        let donors: Vec<&[u8]> = self.guests.iter().map(|(_, b)| b.as_slice()).collect();
        // Half the inputs only flip bits inside function bodies and data
        // segments, which mostly keeps the module valid, so it runs.
        if rng.random_bool(0.5) {
            for _ in 0..rng.random_range(1..=3) {
                flip_in_body(&mut bytes, rng);
            }
            out.push("mutation: in bodies".into());
        } else {
            let how = mutate(&mut bytes, &donors, rng);
            out.push(format!("mutation: {}", how.split('+').count()));
        }
        let config = host_config(&self.limits, None);
        exercise(&bytes, config, &self.limits, rng, out)
    }
}
