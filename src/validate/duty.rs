//! Real duty-cycle tasks: a thread pinned alone on one CPU busy-loops for
//! `run` of every `period` on CLOCK_MONOTONIC and sleeps to the end of the
//! period with an absolute clock_nanosleep. It records what really happened
//! (see [`Timeline`]), not what was intended, so interference from other
//! load shows up in both the real signal and the simulated one. Where it
//! cannot see itself run (a gap in its clock reads, a sleep), the CPU time
//! the kernel charged it tells how much of that time it ran.

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

/// CPU time the kernel has charged to the calling thread: its
/// se.sum_exec_runtime plus the running delta, on rq_clock_task, so without
/// the steal the host reports.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Record [from, to), when the task did not see itself run, and of which
/// the kernel charged it `charged` ns: that part ran (in the kernel, or in
/// a stall the host did not report as steal), first; the rest went to
/// another task if the task was switched out, else to the host (steal).
fn gap(tl: &mut Timeline, from: u64, to: u64, charged: u64, switched: bool) {
    let mid = from + charged.min(to - from);
    tl.push(Kind::Run, from, mid);
    let rest = if switched {
        Kind::Preempted
    } else {
        Kind::Stolen
    };
    tl.push(rest, mid, to);
}

/// Busy-loop from `start`, when the kernel had charged the thread `cpu` ns,
/// until `until`, recording runs and the gaps between them (a run is
/// charged 1:1). Returns the last clock read.
fn busy(tl: &mut Timeline, start: u64, mut cpu: u64, until: u64) -> u64 {
    let mut nivcsw = involuntary_switches();
    let (mut seg, mut last) = (start, start);
    loop {
        let t = now_ns();
        if t - last > GAP_NS {
            tl.push(Kind::Run, seg, last);
            let (now_cpu, n) = (thread_cpu_ns(), involuntary_switches());
            let charged = now_cpu.saturating_sub(cpu + (last - seg));
            gap(tl, last, t, charged, n > nivcsw);
            (nivcsw, seg, cpu) = (n, t, now_cpu);
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
    let (mut t, mut cpu) = (now_ns(), thread_cpu_ns());
    for p in program {
        let start = t;
        let end = start + p.len_ns;
        let mut period = start;
        while period < end {
            let busy_end = busy(&mut tl, t, cpu, period + p.run_ns);
            let before = thread_cpu_ns();
            period += p.period_ns;
            sleep_until(period);
            (t, cpu) = (now_ns(), thread_cpu_ns());
            // The kernel charges the syscall and the wake-up path (and any
            // unreported stall in it); count that as running at the wake.
            let charged = cpu.saturating_sub(before).min(t - busy_end);
            tl.push(Kind::Sleep, busy_end, t - charged);
            tl.push(Kind::Run, t - charged, t);
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
