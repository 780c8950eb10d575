//! Thin wrappers over the system calls the microbenchmarks time. Each is
//! the bare call (no retries, no allocation), so that what is timed is the
//! kernel path and so that a forked child may use them.

use std::sync::atomic::AtomicU32;

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in ns (vDSO: no system call).
pub fn now_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has been charged, in ns (a system call:
/// `task_sched_runtime` includes the running slice).
pub fn thread_cpu_ns() -> u64 {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Voluntary context switches of the calling thread so far.
pub fn thread_nvcsw() -> i64 {
    // SAFETY: zeroed rusage is a valid out-buffer.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru.ru_nvcsw
    }
}

/// Pin the calling thread to one OS CPU.
pub fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks against CPU_SETSIZE.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "sched_setaffinity(CPU {cpu}): {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Scheduling policies a benchmark thread may take (no privilege needed).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Policy {
    Normal,
    /// SCHED_BATCH: a wakeup of it never preempts the running task
    /// (check_preempt_wakeup_fair returns early for non-normal policies).
    Batch,
    /// SCHED_IDLE: weight 3, and any normal wakee preempts it.
    Idle,
}

/// Set the calling thread's policy.
pub fn set_policy(p: Policy) -> Result<(), String> {
    let policy = match p {
        Policy::Normal => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
        Policy::Idle => libc::SCHED_IDLE,
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: param is valid; 0 = the calling thread.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "sched_setscheduler({p:?}): {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Lower the calling thread's timer slack to 1 ns, so short sleeps are short.
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// FUTEX_WAIT on a word (shared futex: works across fork on MAP_SHARED
/// memory): sleeps while `*word == val`.
pub fn futex_wait(word: &AtomicU32, val: u32) {
    // SAFETY: word points to a live, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            val,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

/// FUTEX_WAKE one waiter of a word.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: as in futex_wait.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1) };
}

/// The null system call.
pub fn getppid() {
    // SAFETY: no arguments; a raw syscall, not glibc's (uncached) wrapper.
    unsafe { libc::syscall(libc::SYS_getppid) };
}

/// Sleep `ns` on CLOCK_MONOTONIC.
pub fn sleep_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is valid; no remainder wanted.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

/// Sleep until CLOCK_MONOTONIC reads `t` ns (TIMER_ABSTIME).
pub fn sleep_until_ns(t: u64) {
    let ts = libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is valid; absolute sleeps have no remainder.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// Anonymous shared memory, visible to forked children; unmapped on drop.
pub struct SharedMem {
    ptr: *mut u8,
    len: usize,
}

impl SharedMem {
    pub fn new(len: usize) -> Result<SharedMem, String> {
        // SAFETY: a fresh anonymous mapping, no fd.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        Ok(SharedMem {
            ptr: ptr.cast(),
            len,
        })
    }

    /// The 32-bit word at 64-byte line `line` (each word on its own line).
    pub fn word(&self, line: usize) -> &AtomicU32 {
        assert!(line * 64 + 4 <= self.len);
        // SAFETY: in bounds, 64-byte aligned (mmap is page aligned), and
        // only ever accessed atomically; zero-initialised by mmap.
        unsafe { &*(self.ptr.add(line * 64) as *const AtomicU32) }
    }

    /// A u64 slot at byte offset `off` (8-aligned), for timestamps.
    pub fn u64_at(&self, off: usize) -> &std::sync::atomic::AtomicU64 {
        assert!(off.is_multiple_of(8) && off + 8 <= self.len);
        // SAFETY: in bounds and aligned; accessed atomically only.
        unsafe { &*(self.ptr.add(off) as *const std::sync::atomic::AtomicU64) }
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

// SAFETY: the memory is only accessed through atomics.
unsafe impl Sync for SharedMem {}
unsafe impl Send for SharedMem {}

/// Run `child` in a forked process, which `_exit`s when it returns; the
/// parent gets the pid. The child must only use async-signal-safe calls.
pub fn fork_child(child: impl FnOnce()) -> Result<libc::pid_t, String> {
    // SAFETY: the child runs only `child` (system calls and atomics on
    // shared memory) and then _exit, never returning into Rust's runtime.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        0 => {
            child();
            // SAFETY: terminates the child without running destructors.
            unsafe { libc::_exit(0) }
        }
        pid => Ok(pid),
    }
}

/// Wait for a child to exit.
pub fn wait_child(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: pid is our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
}

/// A pipe (read end, write end) or a connected AF_UNIX stream socket pair;
/// closed on drop.
pub struct Channel {
    pub rx: i32,
    pub tx: i32,
}

impl Channel {
    pub fn pipe() -> Result<Channel, String> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid 2-int buffer.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(format!("pipe: {}", std::io::Error::last_os_error()));
        }
        Ok(Channel {
            rx: fds[0],
            tx: fds[1],
        })
    }

    pub fn socketpair() -> Result<Channel, String> {
        let mut fds = [0; 2];
        // SAFETY: as in pipe.
        let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
        if rc != 0 {
            return Err(format!("socketpair: {}", std::io::Error::last_os_error()));
        }
        Ok(Channel {
            rx: fds[1],
            tx: fds[0],
        })
    }

    /// Write all of `buf` (one write for the sizes used here).
    pub fn send(&self, buf: &[u8]) {
        write_all(self.tx, buf);
    }

    /// Both ends O_NONBLOCK: a read or write that cannot proceed returns
    /// EAGAIN at once instead of sleeping.
    pub fn set_nonblocking(&self) -> Result<(), String> {
        for fd in [self.rx, self.tx] {
            // SAFETY: our own descriptor; F_GETFL/F_SETFL take plain ints.
            let rc = unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK)
            };
            if rc != 0 {
                return Err(format!(
                    "fcntl(O_NONBLOCK): {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        Ok(())
    }

    /// One read() of up to `buf.len()` bytes: the bytes read, 0 if it
    /// would block (EAGAIN on a non-blocking channel).
    pub fn try_recv(&self, buf: &mut [u8]) -> Result<usize, String> {
        // SAFETY: buf is a valid out-buffer.
        let n = unsafe { libc::read(self.rx, buf.as_mut_ptr().cast(), buf.len()) };
        again_is_zero(n, "read")
    }

    /// One write() of `buf`: the bytes written, 0 if it would block.
    pub fn try_send(&self, buf: &[u8]) -> Result<usize, String> {
        // SAFETY: buf is valid for reads.
        let n = unsafe { libc::write(self.tx, buf.as_ptr().cast(), buf.len()) };
        again_is_zero(n, "write")
    }

    /// Read exactly `buf.len()` bytes.
    pub fn recv(&self, buf: &mut [u8]) {
        let mut got = 0;
        while got < buf.len() {
            // SAFETY: the tail of buf is a valid out-buffer.
            let n = unsafe { libc::read(self.rx, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
            if n <= 0 {
                return;
            }
            got += n as usize;
        }
    }
}

/// A non-blocking call's result: EAGAIN is 0 bytes, other errors are errors.
fn again_is_zero(n: isize, call: &str) -> Result<usize, String> {
    if n >= 0 {
        return Ok(n as usize);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) => Ok(0),
        _ => Err(format!("{call}: {e}")),
    }
}

fn write_all(fd: i32, buf: &[u8]) {
    let mut put = 0;
    while put < buf.len() {
        // SAFETY: the tail of buf is valid for reads.
        let n = unsafe { libc::write(fd, buf[put..].as_ptr().cast(), buf.len() - put) };
        if n <= 0 {
            return;
        }
        put += n as usize;
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: our own descriptors.
        unsafe {
            libc::close(self.rx);
            libc::close(self.tx);
        }
    }
}
