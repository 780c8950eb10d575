//! The calling thread's CPU affinity (sched_getaffinity), for the commands
//! that run real tasks on this host (`calibrate`, `validate`).

/// The OS CPUs the calling thread may run on (empty if the call fails).
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
