//! Results files written atomically: a reader never sees half a file, and a
//! run's outputs are all new or all old.
//!
//! Each output is written to a temporary `.NAME.tmpPID` beside it and renamed
//! over it at the end. An [`OutputSet`] opens every output of a run before
//! the simulation starts (a bad path fails at once) and renames them only
//! once all are written. Temporaries are removed when a write fails, on
//! SIGINT/SIGTERM/SIGHUP ([`install_signal_cleanup`]), and, after a SIGKILL,
//! by the next run that writes the same file (its PID is dead). A character
//! device, FIFO or socket is written in place and a symlink is followed:
//! neither is ever replaced.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

/// Write a results file atomically: a temporary file in the same directory,
/// then a rename, so a reader never sees a half-written file.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(data)?;
    f.commit()
}

/// A temporary written in full, waiting for its rename. Dropped before
/// it, the temporary is removed.
struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    slot: Option<usize>,
    renamed: bool,
}

impl Staged {
    fn rename(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.tmp, &self.path).map_err(|e| with_path(&self.path, e))?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.tmp);
        }
        unregister(self.slot.take());
    }
}

/// Where a file's bytes go: a temporary renamed at the end, or the path
/// itself (a device or FIFO, written through).
enum Target {
    Rename(Staged),
    Direct,
}

/// A results file written as a stream: a temporary file in the same
/// directory, renamed over `path` by `commit` (or, in an [`OutputSet`], by
/// the set's commit). Dropped uncommitted (a run that failed), the
/// temporary file is removed.
pub struct AtomicFile {
    path: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
    target: Option<Target>,
    set: Option<Arc<Mutex<Vec<Staged>>>>,
    /// Bytes handed to the file, and how many of them the disk was asked
    /// to write so far (`start_writeback`).
    written: u64,
    flushed: u64,
}

/// Bytes of a temporary after which they are sent to the disk while the
/// rest is written: the fsync at the commit then waits for the tail only
/// (a 14 MB trace's fsync took 6-7 ms of a 33 ms run).
const WRITEBACK_EVERY: u64 = 4 << 20;

/// Start writing `len` bytes of `f` from `offset` to the disk, without
/// waiting (sync_file_range with SYNC_FILE_RANGE_WRITE). A hint: an error
/// is left for the fsync to report.
#[cfg(target_os = "linux")]
fn start_writeback(f: &std::fs::File, offset: u64, len: u64) {
    use std::os::unix::io::AsRawFd;
    // SAFETY: a plain syscall on an open descriptor; no memory is passed.
    unsafe {
        libc::sync_file_range(
            f.as_raw_fd(),
            offset as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_f: &std::fs::File, _offset: u64, _len: u64) {}

/// An I/O error that names its file.
fn with_path(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

impl AtomicFile {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Self::open(path, None)
    }

    fn open(path: &Path, set: Option<Arc<Mutex<Vec<Staged>>>>) -> std::io::Result<Self> {
        let err = |e| with_path(path, e);
        let dest = resolve_symlink(path).map_err(err)?;
        if let Ok(m) = std::fs::metadata(&dest) {
            let t = m.file_type();
            if t.is_dir() {
                return Err(err(std::io::Error::other("is a directory")));
            }
            if t.is_char_device() || t.is_fifo() || t.is_socket() || t.is_block_device() {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&dest)
                    .map_err(err)?;
                return Ok(AtomicFile::new(path, f, Target::Direct, set));
            }
        }
        remove_stale_temporaries(&dest);
        let tmp = temp_path(&dest, std::process::id());
        let f = std::fs::File::create(&tmp).map_err(err)?;
        let staged = Staged {
            slot: register(&tmp),
            tmp,
            path: dest,
            renamed: false,
        };
        Ok(AtomicFile::new(path, f, Target::Rename(staged), set))
    }

    fn new(
        path: &Path,
        f: std::fs::File,
        target: Target,
        set: Option<Arc<Mutex<Vec<Staged>>>>,
    ) -> Self {
        AtomicFile {
            path: path.to_path_buf(),
            file: Some(std::io::BufWriter::with_capacity(1 << 16, f)),
            target: Some(target),
            set,
            written: 0,
            flushed: 0,
        }
    }

    pub fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        let Some(f) = &mut self.file else {
            return Ok(());
        };
        f.write_all(data).map_err(|e| with_path(&self.path, e))?;
        self.written += data.len() as u64;
        let in_file = self.written - f.buffer().len() as u64;
        // Only a temporary: a device or FIFO has no pages to write back.
        if in_file - self.flushed >= WRITEBACK_EVERY
            && matches!(self.target, Some(Target::Rename(_)))
        {
            start_writeback(f.get_ref(), self.flushed, in_file - self.flushed);
            self.flushed = in_file;
        }
        Ok(())
    }

    /// Flush, sync and rename into place; in a set, only flush and sync
    /// (the set renames).
    pub fn commit(mut self) -> std::io::Result<()> {
        let err = |e| with_path(&self.path, e);
        let (Some(f), Some(target)) = (self.file.take(), self.target.take()) else {
            return Ok(());
        };
        let f = f.into_inner().map_err(|e| err(e.into_error()))?;
        let Target::Rename(staged) = target else {
            return Ok(());
        };
        f.sync_all().map_err(err)?;
        match &self.set {
            Some(set) => {
                set.lock().unwrap_or_else(|e| e.into_inner()).push(staged);
                Ok(())
            }
            None => staged.rename(),
        }
    }
}

/// A symlink's final target (so the link itself is never replaced); any
/// other path as it is.
fn resolve_symlink(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// `.NAME.tmpPID` beside `path`.
fn temp_path(path: &Path, pid: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir_of(path).join(format!(".{name}.tmp{pid}"))
}

fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Remove `path`'s temporaries left by runs that were killed: `.NAME.tmpPID`
/// whose process no longer exists. Others' files are never touched.
fn remove_stale_temporaries(path: &Path) {
    let Some(name) = path.file_name() else { return };
    let prefix = format!(".{}.tmp", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir_of(path)) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name();
        let pid = file
            .to_string_lossy()
            .strip_prefix(&prefix)
            .and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(|p| p > 0 && !alive(p)) && e.path().is_file() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether process `pid` exists (kill with signal 0).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// All the outputs of one run: each opened (so checked) up front, written
/// as a temporary, and renamed only by `commit`, after every one of them
/// was written. Dropped uncommitted, every temporary is removed.
#[derive(Default)]
pub struct OutputSet {
    staged: Arc<Mutex<Vec<Staged>>>,
    paths: Mutex<Vec<PathBuf>>,
}

impl OutputSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Open `path` for writing as part of the set (its `commit` stages it).
    /// Two outputs to one file would overwrite each other; to a character
    /// device (/dev/null, a terminal) they are simply both written.
    pub fn create(&self, path: &Path) -> std::io::Result<AtomicFile> {
        let mut paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        let device = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device());
        if !device && paths.iter().any(|p| p == path) {
            let msg = "given as two outputs of one run";
            return Err(with_path(path, std::io::Error::other(msg)));
        }
        paths.push(path.to_path_buf());
        AtomicFile::open(path, Some(self.staged.clone()))
    }

    /// Rename every staged temporary into place.
    pub fn commit(self) -> std::io::Result<()> {
        let staged = std::mem::take(&mut *self.staged.lock().unwrap_or_else(|e| e.into_inner()));
        for s in staged {
            s.rename()?;
        }
        Ok(())
    }
}

/// `PATH (SIZE)` of each file, for the notice of what a command wrote
/// (a large trace's size tells whether to open it; stdout, `-`, is no file).
pub fn written<P: AsRef<Path>>(paths: &[P]) -> String {
    let named = paths
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| p.as_os_str() != "-");
    let each: Vec<String> = named
        .map(|p| {
            let size = std::fs::metadata(p).map_or(0, |m| m.len());
            format!("{} ({})", p.display(), byte_size(size))
        })
        .collect();
    each.join(", ")
}

/// Bytes in B, KiB or MiB, with one decimal above a KiB.
fn byte_size(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

/// Temporaries the signal handler removes: leaked C strings, so a handler
/// running at any moment never reads freed memory.
const SLOTS: usize = 64;
static TEMPS: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// Record `tmp` for the signal handler; None when every slot is taken
/// (the file is still removed on a failed write, not on a signal).
fn register(tmp: &Path) -> Option<usize> {
    let c = CString::new(tmp.as_os_str().as_bytes()).ok()?;
    let ptr = c.into_raw();
    for (i, slot) in TEMPS.iter().enumerate() {
        let free = std::ptr::null_mut();
        if slot
            .compare_exchange(free, ptr, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Some(i);
        }
    }
    // SAFETY: `ptr` came from `into_raw` above and was stored nowhere.
    drop(unsafe { CString::from_raw(ptr) });
    None
}

fn unregister(slot: Option<usize>) {
    if let Some(i) = slot {
        TEMPS[i].store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    for slot in &TEMPS {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: unlink is async-signal-safe; `p` is a leaked C string.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(128 + sig) };
}

/// A scratch file another program writes (perf's data file): removed when
/// dropped, and by the signal handler on SIGINT, SIGTERM and SIGHUP.
pub struct TempPath {
    path: PathBuf,
    slot: Option<usize>,
}

impl TempPath {
    pub fn new(path: PathBuf) -> TempPath {
        let slot = register(&path);
        TempPath { path, slot }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        unregister(self.slot);
        let _ = std::fs::remove_file(&self.path);
    }
}

/// On SIGINT, SIGTERM and SIGHUP remove the temporaries and exit
/// 128 + signal (130, 143, 129), as a shell reports a killed command.
pub fn install_signal_cleanup() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only calls async-signal-safe functions.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_names_each_file_with_its_size() {
        let d = scratch("written");
        std::fs::create_dir_all(&d).unwrap();
        let (a, b) = (d.join("a.html"), d.join("t.json"));
        std::fs::write(&a, vec![b'x'; 3000]).unwrap();
        std::fs::write(&b, b"{}").unwrap();
        let text = written(&[&a, &b, Path::new("-")]);
        let want = format!("{} (2.9 KiB), {} (2 B)", a.display(), b.display());
        assert_eq!(text, want);
        assert_eq!(byte_size(5 << 20), "5.0 MiB");
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("schedlab-fs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn temporaries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp"))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_temp_path_is_the_signal_handlers_until_dropped() {
        let d = scratch("temp-path");
        let f = d.join("perf.data");
        let held = |f: &Path| {
            TEMPS.iter().any(|s| {
                let p = s.load(Ordering::SeqCst);
                // SAFETY: a non-null slot holds a leaked C string.
                !p.is_null()
                    && unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes() == f.as_os_str().as_bytes()
            })
        };
        {
            let t = TempPath::new(f.clone());
            std::fs::write(t.path(), "data").unwrap();
            assert!(held(&f));
        }
        assert!(!f.exists());
        assert!(!held(&f));
    }

    #[test]
    fn a_set_renames_all_or_none() {
        let d = scratch("set");
        let (a, b) = (d.join("a.json"), d.join("b.txt"));
        std::fs::write(&a, "old a").unwrap();
        std::fs::write(&b, "old b").unwrap();
        {
            let set = OutputSet::new();
            let mut fa = set.create(&a).unwrap();
            fa.write_all(b"new a").unwrap();
            fa.commit().unwrap();
            let _fb = set.create(&b).unwrap();
            // b is never committed (its writer failed): nothing is renamed.
        }
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));
        let set = OutputSet::new();
        for (p, text) in [(&a, "new a"), (&b, "new b")] {
            let mut f = set.create(p).unwrap();
            f.write_all(text.as_bytes()).unwrap();
            f.commit().unwrap();
        }
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        set.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new a");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new b");
        let set = OutputSet::new();
        let _f = set.create(&a).unwrap();
        let e = set.create(&a).err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("two outputs")));
        let null = Path::new("/dev/null");
        let _n = set.create(null).unwrap();
        assert!(set.create(null).is_ok());
    }

    #[test]
    fn symlinks_are_followed_never_replaced() {
        let d = scratch("link");
        let target = d.join("real.json");
        let link = d.join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, b"through").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "through");
        write_atomic(&link, b"again").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "again");
    }

    #[test]
    fn a_fifo_is_written_through() {
        let d = scratch("fifo");
        let fifo = d.join("pipe");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a plain mkfifo on a path in our scratch directory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write_atomic(&fifo, b"streamed").unwrap();
        assert_eq!(reader.join().unwrap(), "streamed");
        let t = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(t.is_fifo());
        assert!(temporaries(&d).is_empty());
    }

    #[test]
    fn stale_temporaries_of_dead_runs_are_removed() {
        let d = scratch("stale");
        let out = d.join("out.json");
        // A dead PID: a child that has exited and been reaped.
        let dead = std::process::Command::new("true")
            .spawn()
            .and_then(|mut c| c.wait().map(|_| c.id()))
            .unwrap();
        std::fs::write(temp_path(&out, dead), "partial").unwrap();
        std::fs::write(d.join(".out.json.tmp1"), "init's?").unwrap();
        std::fs::write(d.join(".other.json.tmp999999999"), "not ours").unwrap();
        write_atomic(&out, b"whole").unwrap();
        assert_eq!(
            temporaries(&d),
            vec![".other.json.tmp999999999", ".out.json.tmp1"]
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "whole");
    }

    #[test]
    fn a_directory_is_refused_with_its_name() {
        let d = scratch("dir");
        let e = write_atomic(&d, b"x").unwrap_err().to_string();
        assert!(
            e.contains("is a directory") && e.contains("schedlab-fs"),
            "{e}"
        );
    }
}
