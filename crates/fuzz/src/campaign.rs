//! A fuzzing campaign on one target: mutate inputs from a corpus, check
//! each, and keep as new corpus entries the inputs whose outcome had not
//! been seen (a kind of error not met before, a count of accesses of a new
//! order of magnitude): without coverage feedback, the outcomes are what
//! tells one input's path from another's.

use std::collections::HashSet;

use crate::mutate::Mutator;
use crate::targets::{check, Target, Verdict};

/// Corpus entries kept per campaign, at most.
const MAX_CORPUS: usize = 1024;

/// Findings kept per campaign (the first, one per message).
const MAX_FINDINGS: usize = 16;

/// What a campaign did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Inputs run.
    pub inputs: u64,
    /// Inputs read whole.
    pub accepted: u64,
    /// Inputs refused with an error that says where.
    pub rejected: u64,
    /// Distinct outcomes seen.
    pub outcomes: usize,
    /// Inputs not handled correctly, and how.
    pub findings: Vec<(Vec<u8>, String)>,
}

/// Run `inputs` inputs through `target`, mutating from its seeds with the
/// stream seeded `seed`.
pub fn run(target: &Target, inputs: u64, seed: u64) -> Report {
    let mut corpus = (target.seeds)();
    assert!(!corpus.is_empty(), "target {} has no seed inputs", target.name);
    let mut mutator = Mutator::new(seed);
    let mut seen = HashSet::new();
    let mut report = Report::default();
    for i in 0..inputs {
        let input = if (i as usize) < corpus.len() {
            corpus[i as usize].clone() // every seed once, as it is
        } else {
            let base = &corpus[mutator.below(corpus.len())];
            let other = &corpus[mutator.below(corpus.len())];
            mutator.mutate(base, other, target.tokens)
        };
        report.inputs += 1;
        let signature = match check(target, &input) {
            Ok(Verdict::Accepted(n)) => {
                report.accepted += 1;
                format!("ok {}", 64 - n.leading_zeros())
            }
            Ok(Verdict::Rejected(message)) => {
                report.rejected += 1;
                shape(&message)
            }
            Err(finding) => {
                let known = report.findings.iter().any(|(_, m)| *m == finding.0);
                if !known && report.findings.len() < MAX_FINDINGS {
                    report.findings.push((input, finding.0));
                }
                continue;
            }
        };
        if seen.insert(signature) {
            if corpus.len() < MAX_CORPUS {
                corpus.push(input);
            } else {
                let victim = mutator.below(MAX_CORPUS);
                corpus[victim] = input;
            }
        }
    }
    report.outcomes = seen.len();
    report
}

/// An error message with its numbers and quoted text taken out: errors of
/// one kind at different places share a shape.
fn shape(message: &str) -> String {
    let mut out = String::with_capacity(64);
    let mut quoted = false;
    for c in message.chars() {
        match c {
            '\'' | '`' | '"' => quoted = !quoted,
            _ if quoted || c.is_ascii_digit() => {}
            _ => out.push(c),
        }
        if out.len() >= 72 {
            break;
        }
    }
    // The file name and position come first; the kind of error after.
    out.split(": ")
        .filter(|p| !p.starts_with("byte offset") && !p.starts_with("line") && !p.starts_with("block"))
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_at_different_places_share_a_shape() {
        let a = shape("fuzz-input: line 3: byte offset 40: expected a hexadecimal address, found 'zz'");
        let b = shape("fuzz-input: line 17: byte offset 911: expected a hexadecimal address, found 'q'");
        assert_eq!(a, b);
        assert_ne!(a, shape("fuzz-input: line 3: byte offset 40: unknown access kind 'Q'"));
    }
}
