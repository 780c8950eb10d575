//! A progress bar on stderr for long commands: simulated time done and ETA
//! for one run, runs done for `compare` and `repro`. It appears only when
//! stderr is a terminal and the command has lasted longer than a delay
//! (2 s, or `SCHEDLAB_PROGRESS_DELAY_MS`), and never with `--quiet`.
//!
//! The command installs one reporter for the process; `run::run` hands the
//! kernel a handle, which the event loop ticks every few thousand events.
//! Nothing here feeds back into results: it only writes to stderr.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a command runs silently before the bar appears.
const DEFAULT_DELAY_MS: u64 = 2000;

/// What the bar counts.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    /// One run: simulated time done of the run's end.
    SimTime,
    /// Many runs (compare: of a known total; repro: an open count).
    Runs(Option<u64>),
}

/// A cheap handle on the process's bar.
#[derive(Clone)]
pub struct Progress(Arc<Inner>);

struct Inner {
    kind: Kind,
    start: Instant,
    delay: Duration,
    bar: ProgressBar,
    /// The bar's screen: it knows how many lines the bar took, to erase them.
    screen: MultiProgress,
    /// Whether the bar is on screen; `switch` serialises showing and
    /// hiding between the threads of a compare.
    shown: AtomicBool,
    switch: Mutex<()>,
}

static REPORTER: OnceLock<Progress> = OnceLock::new();

/// Install the reporter for this command, unless `quiet` or stderr is not
/// a terminal (then every call below does nothing).
pub fn install(kind: Kind, quiet: bool) {
    if quiet || !std::io::stderr().is_terminal() {
        return;
    }
    let delay = std::env::var("SCHEDLAB_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_DELAY_MS);
    let len = match kind {
        Kind::Runs(n) => n,
        Kind::SimTime => None,
    };
    let screen = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
    let bar = screen.add(ProgressBar::with_draw_target(
        len,
        ProgressDrawTarget::hidden(),
    ));
    bar.set_style(style(kind, len.is_some()));
    let _ = REPORTER.set(Progress(Arc::new(Inner {
        kind,
        start: Instant::now(),
        delay: Duration::from_millis(delay),
        bar,
        screen,
        shown: AtomicBool::new(false),
        switch: Mutex::new(()),
    })));
}

/// A handle for one run that stops at simulated time `end` (None: when
/// its tasks exit), if a reporter is installed.
pub fn for_run(end: Option<u64>) -> Option<Progress> {
    let p = REPORTER.get()?;
    if p.0.kind == Kind::SimTime {
        match end {
            Some(e) => p.0.bar.set_length(e),
            None => p.0.bar.unset_length(),
        }
        p.0.bar.set_style(style(Kind::SimTime, end.is_some()));
    }
    Some(p.clone())
}

/// A run has finished: count it, and take the bar off the screen so the
/// command's own output is not mixed with it (a later tick brings it back).
pub fn run_done() {
    if let Some(p) = REPORTER.get() {
        if matches!(p.0.kind, Kind::Runs(_)) {
            p.0.bar.inc(1);
        }
        p.hide();
    }
}

impl crate::kernel::ProgressHook for Progress {
    /// Called by the kernel's event loop every `PROGRESS_TICK_EVERY` events
    /// with the simulated time.
    fn tick(&self, now: u64) {
        let i = &self.0;
        if i.kind == Kind::SimTime {
            i.bar.set_position(now);
        }
        if !i.shown.load(Ordering::Relaxed) && i.start.elapsed() >= i.delay {
            self.show();
        } else if i.kind != Kind::SimTime {
            // Redraws the elapsed time and spinner (rate-limited).
            i.bar.tick();
        }
    }
}

impl Progress {
    fn show(&self) {
        let i = &self.0;
        let _g = i.switch.lock();
        if !i.shown.swap(true, Ordering::Relaxed) {
            i.screen.set_draw_target(ProgressDrawTarget::stderr());
            i.bar.force_draw();
        }
    }

    /// Stop drawing and erase the bar's line.
    fn hide(&self) {
        let i = &self.0;
        let _g = i.switch.lock();
        if i.shown.swap(false, Ordering::Relaxed) {
            let _ = i.screen.clear();
            i.screen.set_draw_target(ProgressDrawTarget::hidden());
        }
    }
}

fn style(kind: Kind, bounded: bool) -> ProgressStyle {
    let template = match (kind, bounded) {
        (Kind::SimTime, true) => {
            "{spinner} simulated {sim} [{bar:20}] {percent}%  {elapsed} elapsed, ETA {eta}"
        }
        (Kind::SimTime, false) => "{spinner} simulated {sim}  {elapsed} elapsed",
        (Kind::Runs(_), true) => {
            "{spinner} runs {pos}/{len} [{bar:20}]  {elapsed} elapsed, ETA {eta}"
        }
        (Kind::Runs(_), false) => "{spinner} {pos} runs done  {elapsed} elapsed",
    };
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
        .with_key("sim", sim_key)
}

/// `1.234 s / 3.000 s` from positions in simulated ns.
fn sim_key(s: &ProgressState, w: &mut dyn std::fmt::Write) {
    let secs = |ns: u64| ns as f64 / 1e9;
    let _ = match s.len() {
        Some(len) => write!(w, "{:.3} s / {:.3} s", secs(s.pos()), secs(len)),
        None => write!(w, "{:.3} s", secs(s.pos())),
    };
}
