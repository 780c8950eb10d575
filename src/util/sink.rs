//! Where an output file's bytes go: `-` is stdout; otherwise an atomic
//! file (`fs::AtomicFile`), compressed when its name ends in `.gz`
//! (flate2) or `.zst` (ruzstd: pure Rust, a 2 s build where the `zstd`
//! crate compiles libzstd's C sources for ~35 s of CPU).

use super::fs::{AtomicFile, OutputSet};
use std::io::{self, Write};
use std::path::Path;

/// The path that means standard output (or input).
pub const STDIO: &str = "-";

/// Compressions named by a file's last extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

/// Extensions of compressors that are not supported: refused rather than
/// written as plain bytes under a misleading name.
const UNSUPPORTED: &[&str] = &[
    "bz2", "xz", "lz4", "lzma", "lz", "zip", "br", "7z", "Z", "tgz",
];

/// The compression `path`'s extension asks for; an unsupported
/// compressor's extension is an error that names the accepted ones.
pub fn compression(path: &str) -> Result<Compression, String> {
    match Path::new(path).extension().and_then(|e| e.to_str()) {
        Some("gz") => Ok(Compression::Gzip),
        Some("zst") => Ok(Compression::Zstd),
        Some(e) if UNSUPPORTED.contains(&e) => Err(format!(
            "`{path}`: compression `.{e}` is not supported (use .gz or .zst, or no compression)"
        )),
        _ => Ok(Compression::None),
    }
}

/// `path` without a `.gz` or `.zst` suffix: the name whose extension
/// tells the format (`t.json.gz` is JSON).
pub fn uncompressed_name(path: &str) -> &str {
    path.strip_suffix(".gz")
        .or_else(|| path.strip_suffix(".zst"))
        .unwrap_or(path)
}

/// Bytes written per zstd frame: frames are independent, so a streamed
/// trace needs no more memory than this; `zstd -d` joins them.
const ZSTD_FRAME: usize = 4 << 20;

/// An output being written: call `commit` at the end, or drop it to
/// discard (a file's temporary is removed).
pub struct Sink(Inner);

enum Inner {
    Stdout(io::BufWriter<io::Stdout>),
    File(AtomicFile),
    Gzip(flate2::write::GzEncoder<Atomic>),
    Zstd { buf: Vec<u8>, out: AtomicFile },
}

/// `AtomicFile` as an `io::Write` for the encoders.
struct Atomic(AtomicFile);

impl Write for Atomic {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.write_all(data)?;
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink {
    /// Open `path` (`-`: stdout), compressed as its extension says.
    pub fn create(path: &str) -> io::Result<Sink> {
        Self::open(path, None)
    }

    /// Open `path` as one output of `set` (renamed with the others by the
    /// set's commit), or on its own without a set.
    pub fn open(path: &str, set: Option<&OutputSet>) -> io::Result<Sink> {
        if path == STDIO {
            return Ok(Sink(Inner::Stdout(io::BufWriter::with_capacity(
                1 << 16,
                io::stdout(),
            ))));
        }
        let kind = compression(path).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let file = match set {
            Some(set) => set.create(Path::new(path))?,
            None => AtomicFile::create(Path::new(path))?,
        };
        Ok(Sink(match kind {
            Compression::None => Inner::File(file),
            Compression::Gzip => Inner::Gzip(flate2::write::GzEncoder::new(
                Atomic(file),
                flate2::Compression::fast(),
            )),
            Compression::Zstd => Inner::Zstd {
                buf: Vec::new(),
                out: file,
            },
        }))
    }

    pub fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match &mut self.0 {
            Inner::Stdout(w) => w.write_all(data),
            Inner::File(f) => f.write_all(data),
            Inner::Gzip(g) => g.write_all(data),
            Inner::Zstd { buf, out } => {
                buf.extend_from_slice(data);
                if buf.len() >= ZSTD_FRAME {
                    zstd_frame(buf, out)?;
                }
                Ok(())
            }
        }
    }

    /// Finish the stream and put the file in place.
    pub fn commit(self) -> io::Result<()> {
        match self.0 {
            Inner::Stdout(mut w) => w.flush(),
            Inner::File(f) => f.commit(),
            Inner::Gzip(g) => g.finish()?.0.commit(),
            Inner::Zstd { mut buf, mut out } => {
                if !buf.is_empty() {
                    zstd_frame(&mut buf, &mut out)?;
                }
                out.commit()
            }
        }
    }
}

/// Compress `buf` as one zstd frame onto `out` and empty it.
fn zstd_frame(buf: &mut Vec<u8>, out: &mut AtomicFile) -> io::Result<()> {
    use ruzstd::encoding::{compress_to_vec, CompressionLevel};
    let frame = compress_to_vec(&buf[..], CompressionLevel::Fastest);
    buf.clear();
    out.write_all(&frame)
}

/// Write a whole results file: `-` is stdout, `.gz`/`.zst` compress.
pub fn write(path: &str, data: &[u8]) -> io::Result<()> {
    let mut s = Sink::create(path)?;
    s.write_all(data)?;
    s.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn roundtrip(name: &str) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!("schedlab-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        write(path.to_str().unwrap(), &data).unwrap();
        let raw = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_ne!(raw, data, "{name} was not compressed");
        let mut out = Vec::new();
        match compression(name).unwrap() {
            Compression::Gzip => flate2::read::GzDecoder::new(&raw[..])
                .read_to_end(&mut out)
                .unwrap(),
            _ => ruzstd::decoding::StreamingDecoder::new(&raw[..])
                .unwrap()
                .read_to_end(&mut out)
                .unwrap(),
        };
        assert_eq!(out, data);
        out
    }

    #[test]
    fn gzip_and_zstd_round_trip() {
        roundtrip("x.txt.gz");
        roundtrip("x.txt.zst");
    }

    #[test]
    fn unsupported_compression_is_refused() {
        assert!(compression("t.txt.xz").unwrap_err().contains(".gz or .zst"));
        assert_eq!(compression("t.json").unwrap(), Compression::None);
        assert_eq!(uncompressed_name("t.json.zst"), "t.json");
    }
}
