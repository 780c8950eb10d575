//! Results files written atomically: a reader never sees half a file.

use std::io::Write;
use std::path::Path;

/// Write a results file atomically: a temporary file in the same directory,
/// then a rename, so a reader never sees a half-written file.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(data)?;
    f.commit()
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
