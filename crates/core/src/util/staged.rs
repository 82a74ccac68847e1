//! Output files that appear whole or not at all.
//!
//! A writer that opened its output with `File::create` would truncate it
//! first: a conversion whose output is its own input destroys the input
//! before reading it, and one that fails half-way leaves a broken file where
//! a good one may have been. A [`StagedFile`] writes to a temporary file in
//! the same folder and renames it over the output only when
//! [`commit`](Output::commit) says the content is complete; dropped before
//! that, it removes the temporary file and the output is as it was.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Where a writer's bytes go; `commit` says they are complete. The writers
/// of this crate call it last, so that an output is never seen half-written.
pub trait Output: Write {
    /// Make what was written the output's content.
    fn commit(self) -> io::Result<()>;
}

impl<W: Write + ?Sized> Output for &mut W {
    fn commit(self) -> io::Result<()> {
        self.flush()
    }
}

/// A file written under a temporary name beside its target and renamed
/// onto it by [`commit`](Output::commit). A target that is not a regular
/// file (`/dev/stdout`, a FIFO) is written directly: it has no content to
/// keep, and no folder to stage in.
pub struct StagedFile {
    out: BufWriter<File>,
    /// The temporary file, until it is renamed onto `target`.
    temp: Option<PathBuf>,
    target: PathBuf,
}

/// Tells apart the temporary files of one process.
static SERIAL: AtomicU64 = AtomicU64::new(0);

impl StagedFile {
    /// Stage a new content for `target`. `inputs` are the files the content
    /// is made from: a target that is one of them (through a link or
    /// another path too) is refused before anything is opened for writing.
    pub fn create(target: impl AsRef<Path>, inputs: &[PathBuf]) -> Result<StagedFile> {
        let name = target.as_ref().display().to_string();
        refuse_inputs(target.as_ref(), inputs)?;
        // Through a symbolic link: the file it names gets the new content,
        // and the link stays.
        let resolved = match fs::symlink_metadata(target.as_ref()) {
            Ok(m) if m.file_type().is_symlink() => fs::canonicalize(target.as_ref()).ok(),
            _ => None,
        };
        let target = resolved.as_deref().unwrap_or(target.as_ref());
        let special = fs::metadata(target).is_ok_and(|m| !m.is_file());
        let temp = if special {
            None
        } else {
            let file_name = target
                .file_name()
                .ok_or_else(|| Error::io(&name, io::Error::new(io::ErrorKind::InvalidInput, "not a file name")))?;
            let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
            let pid = std::process::id();
            Some(target.with_file_name(format!(".{}.{pid}-{serial}.part", file_name.to_string_lossy())))
        };
        let file = File::create(temp.as_deref().unwrap_or(target)).map_err(|e| Error::io(&name, e))?;
        Ok(StagedFile { out: BufWriter::with_capacity(1 << 20, file), temp, target: target.to_path_buf() })
    }
}

impl Write for StagedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Output for StagedFile {
    fn commit(mut self) -> io::Result<()> {
        self.out.flush()?;
        if let Some(temp) = self.temp.take() {
            // On disk before it has the target's name: a crash never leaves
            // an empty file where the old one was.
            let renamed = self.out.get_ref().sync_data().and_then(|_| fs::rename(&temp, &self.target));
            if renamed.is_err() {
                let _ = fs::remove_file(&temp);
            }
            renamed?;
        }
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = fs::remove_file(temp);
        }
    }
}

/// An error if writing `target` would overwrite one of `inputs`: the same
/// file (device and inode) under any name, or failing that the same path
/// once links are resolved.
pub fn refuse_inputs(target: &Path, inputs: &[PathBuf]) -> Result<()> {
    let Some(out) = identity(target) else { return Ok(()) };
    for input in inputs {
        if identity(input).as_ref() == Some(&out) {
            return Err(Error::config(
                "output",
                "same_file",
                format!(
                    "{} is also an input ({}): writing it would destroy what is being read; choose another output",
                    target.display(),
                    input.display()
                ),
            ));
        }
    }
    Ok(())
}

/// What makes two paths the same file: device and inode where the file
/// exists, else its canonical path (its folder's, joined to its name).
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(path: &Path) -> Option<Identity> {
    #[cfg(unix)]
    if let Ok(meta) = fs::metadata(path) {
        use std::os::unix::fs::MetadataExt;
        return Some(Identity::Inode(meta.dev(), meta.ino()));
    }
    if let Ok(full) = fs::canonicalize(path) {
        return Some(Identity::Path(full));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Some(Identity::Path(fs::canonicalize(parent).ok()?.join(path.file_name()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            let p = std::env::temp_dir().join(format!("cachesched-staged-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Dir(p)
        }

        fn names(&self) -> Vec<String> {
            let mut v: Vec<String> =
                fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
            v.sort();
            v
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_target_changes_only_on_commit() {
        let dir = Dir::new("commit");
        let target = dir.0.join("out.cst");
        fs::write(&target, b"old").unwrap();
        let mut staged = StagedFile::create(&target, &[]).unwrap();
        staged.write_all(b"new content").unwrap();
        staged.flush().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"old", "nothing shows before the commit");
        assert_eq!(dir.names().len(), 2, "the staged file sits beside the target");
        staged.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new content");
        assert_eq!(dir.names(), ["out.cst"]);
    }

    #[test]
    fn dropped_uncommitted_it_leaves_the_folder_as_it_was() {
        let dir = Dir::new("drop");
        let target = dir.0.join("out.cst");
        fs::write(&target, b"old").unwrap();
        let mut staged = StagedFile::create(&target, &[]).unwrap();
        staged.write_all(&[7; 3 << 20]).unwrap();
        drop(staged);
        assert_eq!(fs::read(&target).unwrap(), b"old");
        assert_eq!(dir.names(), ["out.cst"]);
        drop(StagedFile::create(dir.0.join("new.cst"), &[]).unwrap());
        assert_eq!(dir.names(), ["out.cst"], "a new target is not created either");
    }

    #[test]
    fn an_input_is_refused_under_any_name() {
        let dir = Dir::new("inputs");
        let input = dir.0.join("in.din");
        fs::write(&input, b"0 100\n").unwrap();
        let link = dir.0.join("link.din");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let hard = dir.0.join("hard.din");
        fs::hard_link(&input, &hard).unwrap();
        let dotted = dir.0.join(".").join("in.din");
        for target in [&input, &link, &hard, &dotted] {
            match StagedFile::create(target, std::slice::from_ref(&input)) {
                Err(Error::Config(issues)) => {
                    assert_eq!(issues[0].code, "same_file");
                    assert!(issues[0].message.contains("is also an input"), "{}", issues[0].message);
                }
                other => panic!("{} was not refused: {:?}", target.display(), other.map(|_| ())),
            }
        }
        assert_eq!(fs::read(&input).unwrap(), b"0 100\n");
        assert_eq!(dir.names(), ["hard.din", "in.din", "link.din"], "nothing was opened for writing");
        // Another file, and a target that does not exist yet, are fine.
        let other = dir.0.join("other.cst");
        drop(StagedFile::create(&other, std::slice::from_ref(&input)).unwrap());
        fs::write(&other, b"x").unwrap();
        drop(StagedFile::create(&other, std::slice::from_ref(&input)).unwrap());
    }

    #[test]
    fn through_a_link_the_linked_file_changes_and_the_link_stays() {
        let dir = Dir::new("link");
        let real = dir.0.join("real.cst");
        fs::write(&real, b"old").unwrap();
        let link = dir.0.join("link.cst");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut staged = StagedFile::create(&link, &[]).unwrap();
        staged.write_all(b"new").unwrap();
        staged.commit().unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
        assert_eq!(dir.names(), ["link.cst", "real.cst"]);
    }

    #[test]
    fn a_device_is_written_directly() {
        use std::os::unix::fs::FileTypeExt;
        let mut staged = StagedFile::create("/dev/null", &[]).unwrap();
        assert!(staged.temp.is_none());
        staged.write_all(b"gone").unwrap();
        staged.commit().unwrap();
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device(), "still the device");
    }

    #[test]
    fn a_folder_that_does_not_exist_is_an_io_error_naming_the_target() {
        let dir = Dir::new("nofolder");
        let target = dir.0.join("missing").join("out.cst");
        match StagedFile::create(&target, &[]) {
            Err(Error::Io { path, .. }) => assert!(path.ends_with("out.cst"), "{path}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
