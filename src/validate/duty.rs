//! Real duty-cycle tasks: a thread pinned alone on one CPU busy-loops for
//! `run` of every `period` on CLOCK_MONOTONIC and sleeps to the end of the
//! period with an absolute clock_nanosleep. It records what really happened
//! (see [`Timeline`]), not what was intended, so interference from other
//! load shows up in both the real signal and the simulated one.

use super::timeline::{Kind, PhaseSpan, Timeline};

/// A loop stall longer than this means the thread was not running.
const GAP_NS: u64 = 30_000;

/// One phase of the program: `run_ns` busy in every `period_ns`, for `len_ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub name: String,
    pub run_ns: u64,
    pub period_ns: u64,
    pub len_ns: u64,
    /// Compare the steady state (the phase's last half) against the real one.
    pub steady: bool,
    /// Count the phase in the statistics (not the warm-up).
    pub scored: bool,
}

const PERIOD_NS: u64 = 16_000_000;

fn phase(name: &str, pct: u64, len_ns: u64, steady: bool) -> Phase {
    Phase {
        name: name.into(),
        run_ns: PERIOD_NS * pct / 100,
        period_ns: PERIOD_NS,
        len_ns,
        steady,
        scored: true,
    }
}

/// The program: a warm-up that makes the initial state irrelevant, the three
/// duty cycles of `len_ns` each, then a ramp up and a decay in 20 % steps.
pub fn program(len_ns: u64) -> Vec<Phase> {
    let step = (len_ns / 5).max(3 * PERIOD_NS);
    let warm_up = Phase {
        scored: false,
        ..phase("warm-up 50%", 50, 400_000_000, false)
    };
    let mut p = vec![warm_up];
    for pct in [25, 50, 75] {
        p.push(phase(&format!("duty {pct}%"), pct, len_ns, true));
    }
    for pct in [10, 30, 50, 70, 90] {
        p.push(phase(&format!("ramp {pct}%"), pct, step, false));
    }
    for pct in [70, 50, 30, 10] {
        p.push(phase(&format!("decay {pct}%"), pct, step, false));
    }
    p
}

/// CLOCK_MONOTONIC in ns.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleep until monotonic instant `t` (absolute, so no drift).
fn sleep_until(t: u64) {
    let ts = libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is valid; a null remainder is allowed with TIMER_ABSTIME.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// Pin the calling thread to `cpu`.
pub fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks the index.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
            return Err(format!(
                "sched_setaffinity(CPU {cpu}): {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data, filled in by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// This thread's kernel id.
pub fn gettid() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::gettid() }
}

/// Involuntary context switches of the calling thread so far.
fn involuntary_switches() -> i64 {
    // SAFETY: ru is a valid out-pointer.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru.ru_nivcsw as i64
    }
}

/// Busy-loop from `start` until `until`, recording runs and the stalls
/// between them. Returns the time of the last clock read.
fn busy(tl: &mut Timeline, start: u64, until: u64) -> u64 {
    let mut nivcsw = involuntary_switches();
    let (mut seg, mut last) = (start, start);
    loop {
        let t = now_ns();
        if t - last > GAP_NS {
            tl.push(Kind::Run, seg, last);
            let n = involuntary_switches();
            let kind = if n > nivcsw {
                Kind::Preempted
            } else {
                Kind::Stalled
            };
            nivcsw = n;
            tl.push(kind, last, t);
            seg = t;
        }
        last = t;
        if t >= until {
            tl.push(Kind::Run, seg, t);
            return t;
        }
    }
}

/// Run the program on the calling thread (already pinned) and return what
/// really happened.
pub fn run(program: &[Phase]) -> Timeline {
    let mut tl = Timeline::default();
    let mut t = now_ns();
    for p in program {
        let start = t;
        let end = start + p.len_ns;
        let mut period = start;
        while period < end {
            let busy_end = busy(&mut tl, t, period + p.run_ns);
            period += p.period_ns;
            sleep_until(period);
            t = now_ns();
            tl.push(Kind::Sleep, busy_end, t);
        }
        tl.phases.push(PhaseSpan {
            name: p.name.clone(),
            start,
            end: t,
            steady_from: p.steady.then_some(start + (t - start) / 2),
            scored: p.scored,
        });
    }
    tl
}
