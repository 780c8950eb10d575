//! Which autogroup each task of a recording was in. With
//! `CONFIG_SCHED_AUTOGROUP` and `kernel.sched_autogroup_enabled = 1`, a
//! task whose cpu cgroup is the root task group runs in its session's
//! autogroup, a task group of its own under the root
//! (`autogroup_task_group`, `task_wants_autogroup`, kernel/sched/
//! autogroup.h and autogroup.c, v6.18): `setsid` creates one
//! (`sched_autogroup_create_attach`), fork and clone inherit it
//! (`sched_autogroup_fork`: the signal struct's). Processes that never
//! called setsid (init, kernel threads) are in `autogroup_default`,
//! which is the root task group, and `/proc/PID/autogroup` reads empty
//! for them. The recording says it in `# autogroup` lines (docs/replay.md,
//! "Autogroups").

use std::collections::BTreeMap;
use std::path::Path;

/// Where a process's fair tasks are scheduled, by what `/proc` said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// The root task group (`autogroup_default`, kernel threads).
    Root,
    /// A cpu cgroup other than the root: `task_wants_autogroup` is false,
    /// and the recording does not know the group's weight.
    Cgroup,
    /// An autogroup: its path (`/autogroup-ID`, as the kernel names it
    /// in `autogroup_path`; `/session-SID` where the file was unreadable)
    /// and its nice.
    Auto { path: String, nice: i32 },
}

/// The sysctl that switches autogroups on and off.
pub const ENABLED: &str = "/proc/sys/kernel/sched_autogroup_enabled";

/// Whether autogroups are in use: the sysctl reads 1 (a kernel without
/// CONFIG_SCHED_AUTOGROUP has no such file).
pub fn enabled() -> bool {
    std::fs::read_to_string(ENABLED).is_ok_and(|s| s.trim() == "1")
}

/// Whether a process may be in a cpu cgroup other than the root, and
/// in which hierarchy, from `/proc/mounts`: a v1 `cpu` hierarchy with a
/// child group (`Some(false)`), or a cgroup2 one with the cpu controller
/// enabled below its root (`Some(true)`); None where every process is in
/// the root cpu group, and `/proc/PID/cgroup` (about 60 µs a read on this
/// VM, with nine v1 hierarchies) need not be read.
pub fn cpu_cgroups() -> Option<bool> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (dir, fstype, opts) = (Path::new(f.get(1)?), *f.get(2)?, *f.get(3)?);
        match fstype {
            "cgroup" if opts.split(',').any(|o| o == "cpu") => {
                let child = std::fs::read_dir(dir)
                    .ok()?
                    .flatten()
                    .any(|e| e.path().is_dir());
                child.then_some(false)
            }
            "cgroup2" => {
                let ctl = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
                ctl.split_whitespace().any(|c| c == "cpu").then_some(true)
            }
            _ => None,
        }
    })
}

/// `/proc/PID/autogroup` (`proc_sched_autogroup_show_task`: `"/autogroup-%ld
/// nice %d\n"`, nothing for `autogroup_default`): the path and nice, None
/// for the root; an error for text not in that form.
pub fn parse_proc(text: &str) -> Result<Option<(String, i32)>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let bad = || format!("`{t}` is not `/autogroup-ID nice N`");
    let mut w = t.split_whitespace();
    let (path, kw, nice) = (w.next(), w.next(), w.next());
    let (Some(path), Some("nice"), Some(nice), None) = (path, kw, nice, w.next()) else {
        return Err(bad());
    };
    let id = path.strip_prefix("/autogroup-").ok_or_else(bad)?;
    id.parse::<u64>().map_err(|_| bad())?;
    let nice: i32 = nice.parse().map_err(|_| bad())?;
    Ok(Some((path.to_string(), nice)))
}

/// Whether a `/proc/PID/cgroup` text puts the process in the root cpu
/// group: the v1 line whose controllers include `cpu`, else (with
/// `v2_cpu`, the cpu controller is cgroup2's) the v2 `0::` line.
pub fn in_root_cpu_cgroup(text: &str, v2_cpu: bool) -> bool {
    let mut v2 = None;
    for l in text.lines() {
        let mut f = l.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if ctrl.split(',').any(|c| c == "cpu") {
            return path == "/";
        }
        if ctrl.is_empty() {
            v2 = Some(path);
        }
    }
    !v2_cpu || v2.is_none_or(|p| p == "/")
}

/// Process `pid`'s place, read from `/proc` (its cgroup only where
/// `cpu_cgroups` says one may be other than the root); `session` (from
/// its stat) names its group where `/proc/PID/autogroup` is unreadable
/// (an autogroup is created by setsid and inherited, so a session is
/// one autogroup unless someone wrote the file; a process gone since
/// its stat was read keeps the session it had).
pub fn read(pid: u32, session: u32, cpu_cgroups: Option<bool>) -> Place {
    let dir = Path::new("/proc").join(pid.to_string());
    if let Some(v2) = cpu_cgroups {
        let cg = std::fs::read_to_string(dir.join("cgroup")).unwrap_or_default();
        if !in_root_cpu_cgroup(&cg, v2) {
            return Place::Cgroup;
        }
    }
    let text = std::fs::read_to_string(dir.join("autogroup"));
    match text.map(|t| parse_proc(&t)) {
        Ok(Ok(None)) => Place::Root,
        Ok(Ok(Some((path, nice)))) => Place::Auto { path, nice },
        _ => session_place(session),
    }
}

/// The group of a session: session 0 is the kernel's (kernel threads,
/// init before its setsid), the root.
fn session_place(session: u32) -> Place {
    match session {
        0 => Place::Root,
        s => Place::Auto {
            path: format!("/session-{s}"),
            nice: 0,
        },
    }
}

/// Each task's place, from its process's (`tgid`: thread → process) and,
/// for a process no poll saw (it lived less than a poll), from the task
/// that forked it (`forks`, in trace order: parent tid, child tid), as
/// `sched_autogroup_fork` copies it.
pub fn places<'a>(
    seen: &'a BTreeMap<u32, Place>,
    tgid: impl Fn(u32) -> u32,
    forks: impl Iterator<Item = (u32, u32)>,
) -> impl Fn(u32) -> Option<&'a Place> {
    let mut inherited: BTreeMap<u32, &Place> = BTreeMap::new();
    for (parent, child) in forks {
        if seen.contains_key(&tgid(child)) {
            continue;
        }
        let from = (seen.get(&tgid(parent)))
            .or_else(|| inherited.get(&parent).copied())
            .or_else(|| inherited.get(&tgid(parent)).copied());
        if let Some(p) = from {
            inherited.insert(child, p);
        }
    }
    move |tid| {
        let pid = tgid(tid);
        (seen.get(&pid))
            .or_else(|| inherited.get(&tid).copied())
            .or_else(|| inherited.get(&pid).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_proc_files_forms() {
        assert_eq!(
            parse_proc("/autogroup-1047 nice 0\n"),
            Ok(Some(("/autogroup-1047".into(), 0)))
        );
        assert_eq!(
            parse_proc("/autogroup-3 nice -5"),
            Ok(Some(("/autogroup-3".into(), -5)))
        );
        assert_eq!(parse_proc(""), Ok(None));
        assert_eq!(parse_proc("\n"), Ok(None));
        for bad in [
            "/autogroup-x nice 0",
            "/autogroup-1 nice",
            "/autogroup-1 nice 0 1",
            "/foo-1 nice 0",
            "/autogroup-1 prio 0",
        ] {
            assert!(parse_proc(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cpu_cgroup_other_than_the_root_is_not_autogrouped() {
        let v1 = "9:name=systemd:/\n2:cpuacct:/x\n1:cpu:/\n0::/\n";
        assert!(in_root_cpu_cgroup(v1, true));
        assert!(!in_root_cpu_cgroup("3:cpu,cpuacct:/user.slice\n", false));
        assert!(in_root_cpu_cgroup("0::/user.slice/s.scope\n", false));
        assert!(!in_root_cpu_cgroup("0::/user.slice/s.scope\n", true));
        assert!(in_root_cpu_cgroup("0::/\n", true));
        // Where the mounts say no process can be outside the root cpu
        // group, this one is not.
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        match cpu_cgroups() {
            None => assert!(in_root_cpu_cgroup(&own, true), "{own}"),
            Some(v2) => println!("cpu cgroups here (v2 {v2}): {own}"),
        }
    }

    #[test]
    fn an_unseen_child_has_its_forkers_group() {
        let ag = |n: &str| Place::Auto {
            path: n.into(),
            nice: 0,
        };
        let seen = BTreeMap::from([(10, ag("/autogroup-1")), (20, ag("/autogroup-2"))]);
        // 12 is a thread of 10; 30 forked by 12, 31 by 30, 20 sampled.
        let tgid = |t: u32| if t == 12 { 10 } else { t };
        let forks = [(12, 30), (30, 31), (10, 20), (99, 40)];
        let at = places(&seen, tgid, forks.into_iter());
        assert_eq!(at(12), Some(&ag("/autogroup-1")));
        assert_eq!(at(30), Some(&ag("/autogroup-1")));
        assert_eq!(at(31), Some(&ag("/autogroup-1")));
        assert_eq!(at(20), Some(&ag("/autogroup-2")));
        assert_eq!(at(40), None);
        assert_eq!(session_place(0), Place::Root);
        assert_eq!(session_place(7), ag("/session-7"));
    }
}
