//! Reports of a finished run: the perf-stat-like summary and the JSON file.

pub mod cgroup;
pub mod completion;
pub mod html;
pub mod json;
pub mod summary;

use std::io::Write;
use std::path::Path;

/// Write a results file atomically: a temporary file in the same directory,
/// then a rename, so a reader never sees a half-written file.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// A results file written as a stream: a temporary file in the same
/// directory, renamed over `path` by `commit`. Dropped uncommitted (a run
/// that failed), the temporary file is removed.
pub struct AtomicFile {
    tmp: std::path::PathBuf,
    path: std::path::PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl AtomicFile {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
        let f = std::fs::File::create(&tmp)?;
        Ok(AtomicFile {
            tmp,
            path: path.to_path_buf(),
            file: Some(std::io::BufWriter::with_capacity(1 << 16, f)),
        })
    }

    pub fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.write_all(data),
            None => Ok(()),
        }
    }

    /// Flush, sync and rename into place.
    pub fn commit(mut self) -> std::io::Result<()> {
        if let Some(f) = self.file.take() {
            let f = f.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
            std::fs::rename(&self.tmp, &self.path)?;
        }
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// 1234567 → "1,234,567"
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_digits() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(1234), "1,234");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }
}
