//! A task's workload run again and again: the work of each request of a
//! server (`[[tasks]] requests`), or a co-runner's load that lasts as long
//! as the run (`background`). The engine wraps the built workload; at each
//! end it is built again from its config, so that a trace file is read
//! again from its start and a generator draws its stream again (the same
//! work each pass).

use crate::error::{Error, Result};
use crate::trace::{Workload, WorkloadConfig, WorkloadCtx};
use crate::types::Access;

/// The workload, replayed `passes` times (`None`: for ever).
pub struct Replay {
    config: WorkloadConfig,
    ctx: WorkloadCtx,
    inner: Box<dyn Workload>,
    passes: Option<u64>,
    /// Passes begun so far.
    pass: u64,
    /// Passes begun before the first access of the last fill.
    begun: u64,
}

impl Replay {
    /// Replay `inner`, built from `config` in `ctx`, `passes` times.
    pub fn new(config: WorkloadConfig, ctx: WorkloadCtx, inner: Box<dyn Workload>, passes: Option<u64>) -> Replay {
        Replay { config, ctx, inner, passes, pass: 0, begun: 0 }
    }

    /// The next fill, through `fill` (a slice or a vector fill of a workload).
    fn next(&mut self, mut fill: impl FnMut(&mut dyn Workload) -> Result<usize>) -> Result<usize> {
        self.begun = 0;
        if self.pass > 0 {
            let n = fill(self.inner.as_mut())?;
            if n > 0 || self.passes.is_some_and(|p| self.pass >= p) {
                return Ok(n);
            }
            // A pass ended: the next begins with this fill.
            self.inner = self.config.build(&self.ctx)?;
        }
        // One that produces nothing would replay for ever without progress.
        let n = fill(self.inner.as_mut())?;
        if n == 0 {
            return Err(Error::config(
                &self.ctx.loc,
                "out_of_range",
                "the workload produced no access: nothing to replay",
            ));
        }
        self.pass += 1;
        self.begun = 1;
        Ok(n)
    }
}

impl Workload for Replay {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        self.next(|w| w.fill(buf))
    }

    fn fill_vec(&mut self, buf: &mut Vec<Access>) -> Result<usize> {
        self.next(|w| w.fill_vec(buf))
    }

    fn len_hint(&self) -> Option<u64> {
        let passes = self.passes?;
        self.inner.len_hint().map(|n| n.saturating_mul(passes))
    }

    fn most_instrs(&self) -> Option<u32> {
        self.inner.most_instrs()
    }

    fn requests(&self) -> u64 {
        self.begun
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::PluginConfig;
    use crate::trace::collect;

    fn stream(accesses: u64) -> (WorkloadConfig, WorkloadCtx) {
        let raw: PluginConfig = serde_json::from_value(serde_json::json!(
            {"kind": "stream", "params": {"accesses": accesses, "working_set_bytes": 4096}}
        ))
        .unwrap();
        let ctx = WorkloadCtx {
            seed: 1,
            component: "task0".into(),
            loc: "tasks[0].workload".into(),
            base_dir: None,
            thread: Default::default(),
        };
        (WorkloadConfig::parse(&raw, "tasks[0].workload").unwrap(), ctx)
    }

    #[test]
    fn each_pass_is_the_workload_again_and_begins_a_fill() {
        let (config, ctx) = stream(1000);
        let once = collect(config.build(&ctx).unwrap().as_mut()).unwrap();
        let mut replay = Replay::new(config.clone(), ctx.clone(), config.build(&ctx).unwrap(), Some(3));
        let (mut all, mut starts) = (Vec::new(), Vec::new());
        let mut buf = vec![Access::default(); 300];
        loop {
            let n = replay.fill_vec(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            if replay.requests() > 0 {
                starts.push(all.len());
            }
            all.extend_from_slice(&buf[..n]);
        }
        assert_eq!(starts, vec![0, 1000, 2000], "a pass begins at the first access of a fill");
        assert_eq!(all, [once.clone(), once.clone(), once].concat());
        assert_eq!(replay.len_hint(), Some(3000));
    }

    #[test]
    fn an_endless_replay_goes_on_and_an_empty_workload_is_an_error() {
        let (config, ctx) = stream(10);
        let mut replay = Replay::new(config.clone(), ctx.clone(), config.build(&ctx).unwrap(), None);
        let mut buf = vec![Access::default(); 7];
        let total: usize = (0..100).map(|_| replay.fill_vec(&mut buf).unwrap()).sum();
        assert!(total >= 100 * 3, "it never ends");
        let mut empty = Replay::new(config, ctx, Box::new(crate::trace::VecWorkload::new(Vec::new())), Some(2));
        let err = empty.fill_vec(&mut buf).unwrap_err().to_string();
        assert!(err.contains("tasks[0].workload") && err.contains("no access"), "{err}");
    }
}
