//! Errors of the filesystem core: an errno for the kernel and a message for
//! the user (logged, and for rejected writes also kept in the mount).

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsError {
    pub errno: i32,
    pub message: String,
    /// Already shown in MNT/write-errors (not to be added twice).
    pub reported: bool,
}

pub type Result<T> = std::result::Result<T, FsError>;

impl FsError {
    pub fn new(errno: i32, message: impl Into<String>) -> Self {
        FsError { errno, message: message.into(), reported: false }
    }
    pub fn not_found() -> Self {
        Self::new(libc::ENOENT, "no such file or directory")
    }
    pub fn not_dir() -> Self {
        Self::new(libc::ENOTDIR, "not a directory")
    }
    pub fn is_dir() -> Self {
        Self::new(libc::EISDIR, "is a directory")
    }
    pub fn read_only(why: impl Into<String>) -> Self {
        Self::new(libc::EROFS, why)
    }
    pub fn perm(why: impl Into<String>) -> Self {
        Self::new(libc::EPERM, why)
    }
    pub fn invalid(why: impl Into<String>) -> Self {
        Self::new(libc::EINVAL, why)
    }
    pub fn io(why: impl Into<String>) -> Self {
        Self::new(libc::EIO, why)
    }
    pub fn bad_handle() -> Self {
        Self::new(libc::EBADF, "unknown file handle")
    }
    /// A failed file operation, keeping its kind: a full disk or quota is
    /// ENOSPC, a read-only filesystem EROFS, a denied access EACCES;
    /// anything else EIO. `message` says what failed.
    pub fn from_io(e: &std::io::Error, message: impl Into<String>) -> Self {
        let errno = match e.raw_os_error() {
            Some(libc::ENOSPC | libc::EDQUOT) => libc::ENOSPC,
            Some(libc::EROFS) => libc::EROFS,
            Some(libc::EACCES) => libc::EACCES,
            Some(libc::EFBIG) => libc::EFBIG,
            _ => libc::EIO,
        };
        Self::new(errno, message)
    }
}

/// `s` as one line: control characters (newlines, NULs, escapes) written
/// as `\n`, `\0`, `\u{1b}`, so a name a program chose cannot start a
/// line of its own in write-errors or the log.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push_str("\\0"),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// A file name for a message: UTF-8 as it is, other bytes as `\xNN`, and
/// control characters escaped (see [`one_line`]).
pub fn escape_name(name: &[u8]) -> String {
    let mut out = String::new();
    for chunk in name.utf8_chunks() {
        out.push_str(&one_line(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FsError {}
