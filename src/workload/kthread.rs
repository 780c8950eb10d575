//! `kthread:count=N`: a driver creates N kernel threads one after the
//! other through kthreadd (kthread_create + kthread_run), lets each run,
//! parks and unparks it, then stops it; every step is a completion
//! handshake (see kernel/kthread.rs). The threads loop: check
//! kthread_should_stop, park if asked, work 50 µs, sleep 1 ms.

use super::params::Params;
use super::program::{Dist, KthreadOp, Mark, Op};
use super::{marked_span, BenchResult, Builder, TaskSpec};
use crate::kernel::completion::WaitHow;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::rc::Rc;

const MS: u64 = 1_000_000;

#[derive(Clone, Debug)]
pub struct KthreadBench {
    pub count: u64,
}

fn spec(comm: &str, ops: Vec<Op>) -> TaskSpec<'_> {
    TaskSpec {
        comm,
        group_of: None,
        nice: 0,
        allowed: None,
        ops: Rc::from(ops),
    }
}

impl KthreadBench {
    pub fn parse(p: &Params) -> Result<Self, String> {
        Ok(KthreadBench {
            count: p.count_max("count", 100, 50_000)?,
        })
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let driver = b.task(k, spec("insmod", vec![]));
        let kthreadd_ops = vec![
            Op::Loop { count: 0 },
            Op::Kthread(KthreadOp::ShouldStop),
            Op::Kthread(KthreadOp::Kthreadd),
            Op::EndLoop,
        ];
        let kthreadd = b.task(k, spec("kthreadd", kthreadd_ops));
        k.kthreads.kthreadd = Some(kthreadd);
        let plain = WaitHow::PLAIN;
        let mut ops = vec![Op::Mark(Mark::Start)];
        for _ in 0..self.count {
            let done = k.completion_new("(done).wait kthread_create");
            let parked = k.completion_new("&kthread->parked");
            let exited = k.completion_new("&kthread->exited");
            let thread = vec![
                Op::Complete {
                    c: done,
                    all: false,
                },
                Op::Kthread(KthreadOp::SleepUntilWoken),
                Op::Loop { count: 0 },
                Op::Kthread(KthreadOp::ShouldStop),
                Op::Kthread(KthreadOp::Parkme { parked }),
                Op::Run(Dist::Fixed(50_000)),
                Op::Sleep(Dist::Fixed(MS)),
                Op::EndLoop,
            ];
            let t = b.task(k, spec("kworker", thread));
            ops.extend([
                Op::Kthread(KthreadOp::Create { k: t, exited }),
                Op::WaitForCompletion {
                    c: done,
                    how: WaitHow::KILLABLE,
                },
                Op::Kthread(KthreadOp::WakeProcess { target: t }),
                Op::Run(Dist::Fixed(100_000)),
                Op::Kthread(KthreadOp::Park { k: t }),
                Op::WaitForCompletion {
                    c: parked,
                    how: plain,
                },
                Op::Kthread(KthreadOp::Unpark { k: t }),
                Op::Run(Dist::Fixed(100_000)),
                Op::Kthread(KthreadOp::Stop { k: t }),
                Op::WaitForCompletion {
                    c: exited,
                    how: plain,
                },
            ]);
        }
        ops.extend([
            Op::Mark(Mark::Stop),
            Op::Kthread(KthreadOp::Stop { k: kthreadd }),
            Op::Exit,
        ]);
        k.tasks[driver].prog.ops = Rc::from(ops);
        b.launch(k, kthreadd);
        b.launch(k, driver);
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let ns = marked_span(k, tasks).unwrap_or(0);
        let per = ns as f64 / 1e3 / self.count as f64;
        let lines = vec![format!(
            "kthread: {} threads created, run, parked, unparked and stopped in {:.3} ms, {per:.1} µs each",
            self.count,
            ns as f64 / 1e6
        )];
        let mut fields = Map::new();
        fields.insert("count".into(), json!(self.count));
        fields.insert("time_s".into(), json!(ns as f64 / 1e9));
        fields.insert("us_per_thread".into(), json!(per));
        BenchResult { lines, fields }
    }
}
