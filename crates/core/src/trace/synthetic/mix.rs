//! `kind = "mix"`: accesses interleaved from several workloads, each access
//! drawn from a component chosen at random by weight.
//!
//! Programs touch several data structures at once: a streaming scan next to
//! a hot hash table, a pointer chase next to a stack. A mix models that with
//! one stream whose components have different reuse behaviour and different
//! pcs, which is what pc-based replacement (SHiP) and working-set estimators
//! must tell apart.
//!
//! Rules: the mix produces exactly its own `accesses`; the components' own
//! `accesses` are ignored (leaf generators, `loop`, `phases` and `mix` nested
//! here run unbounded), so a component can supply any share of the stream. A
//! component that ends anyway (a trace file) drops out and the remaining
//! weights are renormalised; the mix ends early only if every component has
//! ended. Component choices come from the mix's own seeded stream, so each
//! component's accesses are the same sequence it would produce alone, just
//! interleaved.

use serde::{Deserialize, Serialize};

use crate::error::{Issues, Result};
use crate::plugin::PluginConfig;
use crate::trace::{Workload, WorkloadConfig, WorkloadCtx};
use crate::types::Access;
use crate::util::rng::Rng;

use super::common::{field_loc, stream_rng, Length, DEFAULT_ACCESSES};

/// Accesses pulled from a component at a time (they are handed out one by one).
const COMPONENT_BATCH: usize = 256;

impl MixParams {
    /// Host bytes the mix holds at most: its components', and a batch of
    /// accesses for each.
    pub fn host_bytes(&self) -> u64 {
        let batch = (COMPONENT_BATCH * std::mem::size_of::<Access>()) as u64;
        self.components.iter().map(|c| crate::trace::nested_host_bytes(&c.workload) + batch).sum()
    }
}
/// Component draws are 53-bit integers compared with cumulative thresholds.
const DRAW_ONE: u64 = 1 << 53;

fn default_weight() -> f64 {
    1.0
}

/// One component of a mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// Relative weight, at least 0 (default 1); weights need not sum to 1.
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The component's workload (`{ kind = "...", params = {...} }`).
    pub workload: PluginConfig,
}

/// Parameters of `kind = "mix"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MixParams {
    /// The components (default: `stream` and `uniform` with default params,
    /// weight 0.5 each).
    pub components: Vec<Component>,
    /// Accesses in the whole stream (default 1,000,000).
    pub accesses: u64,
}

impl Default for MixParams {
    fn default() -> Self {
        MixParams {
            components: vec![
                Component { weight: 0.5, workload: PluginConfig::named("stream") },
                Component { weight: 0.5, workload: PluginConfig::named("uniform") },
            ],
            accesses: DEFAULT_ACCESSES,
        }
    }
}

/// A built component with its read-ahead buffer.
struct Running {
    workload: Box<dyn Workload>,
    weight: f64,
    buf: Box<[Access]>,
    next: usize,
    len: usize,
    ended: bool,
}

/// The interleaver.
struct Mix {
    components: Vec<Running>,
    /// Component `i` is chosen when a 53-bit draw is below `cumulative[i]`
    /// and not below the previous threshold.
    cumulative: Vec<u64>,
    rng: Rng,
    remaining: u64,
    /// Total length when bounded.
    total: Option<u64>,
}

impl Mix {
    /// Recompute the thresholds from the weights of the live components.
    /// Returns false if no live component has weight left.
    fn set_thresholds(&mut self) -> bool {
        // Scaled by the largest weight so that the sum cannot overflow.
        let largest = self.components.iter().filter(|c| !c.ended).fold(0.0f64, |m, c| m.max(c.weight));
        let live = |c: &Running| if c.ended { 0.0 } else { c.weight / largest };
        let total: f64 = self.components.iter().map(live).sum();
        if total.is_nan() || total <= 0.0 {
            return false;
        }
        let last_live = self.components.iter().rposition(|c| live(c) > 0.0).unwrap_or(0);
        let mut sum = 0.0;
        self.cumulative = self
            .components
            .iter()
            .enumerate()
            .map(|(i, c)| {
                sum += live(c);
                if i >= last_live {
                    DRAW_ONE
                } else {
                    ((sum / total * DRAW_ONE as f64) as u64).min(DRAW_ONE)
                }
            })
            .collect();
        true
    }

    #[inline]
    fn pick(&mut self) -> usize {
        let r = self.rng.next_u64() >> 11;
        let mut i = 0;
        while r >= self.cumulative[i] {
            i += 1;
        }
        i
    }
}

impl Workload for Mix {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        let want = (buf.len() as u64).min(self.remaining) as usize;
        let mut done = 0;
        while done < want {
            let i = self.pick();
            let c = &mut self.components[i];
            if c.next == c.len {
                c.len = c.workload.fill(&mut c.buf)?;
                c.next = 0;
                if c.len == 0 {
                    c.ended = true;
                    if !self.set_thresholds() {
                        self.remaining = 0;
                        break;
                    }
                    continue;
                }
            }
            buf[done] = c.buf[c.next];
            c.next += 1;
            done += 1;
        }
        if self.total.is_some() {
            self.remaining -= done as u64;
        }
        Ok(done)
    }

    fn len_hint(&self) -> Option<u64> {
        self.total
    }
}

impl MixParams {
    /// Validate, build every component, and build the interleaver.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        self.build_with(ctx, Length::Own)
    }

    /// As [`build`](Self::build); `Length::Unbounded` runs forever.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        issues.check(
            !self.components.is_empty(),
            field_loc(&ctx.loc, "components"),
            "empty",
            "components must list at least one workload",
        );
        if length == Length::Own {
            issues.check(
                self.accesses >= 1,
                field_loc(&ctx.loc, "accesses"),
                "out_of_range",
                "accesses must be at least 1",
            );
        }
        let mut components = Vec::with_capacity(self.components.len());
        for (i, component) in self.components.iter().enumerate() {
            let w = component.weight;
            issues.check(
                w >= 0.0 && w.is_finite(),
                field_loc(&ctx.loc, &format!("components[{i}].weight")),
                "out_of_range",
                format!("a weight must be a finite number of at least 0, got {w}"),
            );
            let child = ctx.child(&format!("component{i}"), &format!("params.components[{i}].workload"));
            let built = WorkloadConfig::parse(&component.workload, &child.loc)
                .and_then(|config| super::build_nested(&config, &child));
            if let Some(workload) = issues.absorb(built) {
                components.push(Running {
                    workload,
                    weight: w,
                    buf: vec![Access::default(); COMPONENT_BATCH].into(),
                    next: 0,
                    len: 0,
                    ended: false,
                });
            }
        }
        let weights_ok = self.components.iter().all(|c| c.weight >= 0.0);
        if !self.components.is_empty() && weights_ok {
            issues.check(
                self.components.iter().any(|c| c.weight > 0.0),
                field_loc(&ctx.loc, "components"),
                "out_of_range",
                "at least one component needs a weight above 0",
            );
        }
        issues.finish()?;
        let mut mix = Mix {
            components,
            cumulative: Vec::new(),
            rng: stream_rng(ctx, "mix"),
            remaining: match length {
                Length::Own => self.accesses,
                Length::Unbounded => u64::MAX,
            },
            total: (length == Length::Own).then_some(self.accesses),
        };
        mix.set_thresholds();
        Ok(Box::new(mix))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{addrs, build, build_err};
    use crate::trace::collect;
    use serde_json::json;

    fn region(base: u64, kind: &str) -> serde_json::Value {
        json!({"kind": kind, "params": {"working_set_bytes": 4096, "base_addr": base,
               "store_fraction": 0.0, "accesses": 1}})
    }

    #[test]
    fn mix_has_its_length_and_the_weights() {
        // Three components in distinct regions; weights 1 : 2 : 5.
        let n = 80_000u64;
        let mut w = build(
            "mix",
            json!({"accesses": n, "components": [
                {"weight": 1.0, "workload": region(0x10000, "uniform")},
                {"weight": 2.0, "workload": region(0x20000, "stream")},
                {"weight": 5.0, "workload": region(0x30000, "chase")},
            ]}),
        );
        assert_eq!(w.len_hint(), Some(n));
        let all = collect(&mut *w).unwrap();
        assert_eq!(all.len() as u64, n);
        let mut counts = [0u64; 3];
        for a in &all {
            counts[(a.addr.0 / 0x10000 - 1) as usize] += 1;
        }
        for (c, p) in counts.iter().zip([1.0 / 8.0, 2.0 / 8.0, 5.0 / 8.0]) {
            let sigma = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((*c as f64 - n as f64 * p).abs() < 5.0 * sigma, "{counts:?}");
        }
        // Interleaved, not in blocks: the component changes often. With
        // these weights two consecutive accesses differ with probability
        // 1 - (1 + 4 + 25) / 64 = 0.53.
        let switches =
            all.windows(2).filter(|p| p[0].addr.0 / 0x10000 != p[1].addr.0 / 0x10000).count() as f64 / (n - 1) as f64;
        assert!((switches - 0.53125).abs() < 0.01, "{switches}");
    }

    #[test]
    fn components_keep_their_own_sequence() {
        // The stream component's accesses, taken out of the mix, are the
        // stream's own consecutive addresses.
        let mut w = build(
            "mix",
            json!({"accesses": 5000, "components": [
                {"workload": region(0x10000, "uniform")},
                {"workload": region(0x20000, "stream")},
            ]}),
        );
        let stream: Vec<u64> = addrs(&collect(&mut *w).unwrap()).into_iter().filter(|&a| a >= 0x20000).collect();
        assert!(stream.len() > 2000);
        for (i, a) in stream.iter().enumerate() {
            assert_eq!(*a, 0x20000 + (i as u64 * 8) % 4096);
        }
    }

    #[test]
    fn huge_weights_do_not_overflow() {
        let mut w = build(
            "mix",
            json!({"accesses": 4000, "components": [
                {"weight": f64::MAX, "workload": region(0x10000, "uniform")},
                {"weight": f64::MAX, "workload": region(0x20000, "uniform")},
            ]}),
        );
        let low = addrs(&collect(&mut *w).unwrap()).iter().filter(|&&a| a < 0x20000).count();
        // Half each: one standard deviation is about 32.
        assert!((1840..2160).contains(&low), "{low}");
    }

    #[test]
    fn zero_weight_components_are_never_drawn() {
        let mut w = build(
            "mix",
            json!({"accesses": 2000, "components": [
                {"weight": 0.0, "workload": region(0x10000, "uniform")},
                {"weight": 3.0, "workload": region(0x20000, "uniform")},
                {"weight": 0.0, "workload": region(0x30000, "uniform")},
            ]}),
        );
        assert!(addrs(&collect(&mut *w).unwrap()).iter().all(|&a| (0x20000..0x21000).contains(&a)));
    }

    #[test]
    fn mix_errors_carry_the_full_path() {
        let e = build_err(
            "mix",
            json!({"accesses": 0, "components": [
                {"weight": -1.0, "workload": {"kind": "uniform"}},
                {"workload": {"kind": "chase", "params": {"element_bytes": 0}}},
            ]}),
        );
        assert_eq!(
            e,
            [
                ("workload.params.accesses".into(), "out_of_range"),
                ("workload.params.components[0].weight".into(), "out_of_range"),
                ("workload.params.components[1].workload.params.element_bytes".into(), "out_of_range"),
            ]
        );
        let e = build_err("mix", json!({"components": [{"weight": 0.0, "workload": {"kind": "uniform"}}]}));
        assert_eq!(e, [("workload.params.components".into(), "out_of_range")]);
        let e = build_err("mix", json!({"components": []}));
        assert_eq!(e, [("workload.params.components".into(), "empty")]);
    }
}
