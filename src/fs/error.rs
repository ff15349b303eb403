//! Errors of the filesystem core: what went wrong, as a kind, and a message
//! for the user (logged, and for rejected writes also kept in the mount).
//! The kinds name the failure, not an errno: the FUSE adapter turns them
//! into errno in one table (`crate::fuse::errno_of`).

use std::fmt;

/// Declares [`ErrorKind`] and the list of all its kinds, from one list so
/// that no kind can be left out of [`ErrorKind::ALL`].
macro_rules! error_kinds {
    ($($(#[$doc:meta])* $kind:ident,)*) => {
        /// What went wrong, in the words of the core.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $($(#[$doc])* $kind,)*
        }

        impl ErrorKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind,)*];
        }
    };
}

error_kinds! {
    /// No such file or directory (or it vanished meanwhile).
    NotFound,
    /// A directory was expected.
    NotDir,
    /// A file was expected, the name is a directory.
    IsDir,
    /// The mount, the file or the database does not take changes.
    ReadOnly,
    /// The operation is not one this file or directory allows.
    NotPermitted,
    /// The operating system denied access to a file worldfs uses.
    Denied,
    /// The content or the name is not valid here.
    Invalid,
    /// A database or a file failed to read or write.
    Io,
    /// No open file has that handle.
    BadHandle,
    /// No space is left (a full disk, a quota, or the mount's write budget).
    NoSpace,
    /// The file would be larger than allowed.
    TooLarge,
    /// The change was made from a copy that is no longer current.
    Stale,
    /// The name exists already.
    Exists,
    /// Someone else holds the world (a running server).
    Busy,
    /// A rename between places that cannot exchange names.
    AcrossBoundary,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsError {
    pub kind: ErrorKind,
    pub message: String,
    /// Already shown in MNT/write-errors (not to be added twice).
    pub reported: bool,
}

pub type Result<T> = std::result::Result<T, FsError>;

impl FsError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        FsError { kind, message: message.into(), reported: false }
    }
    pub fn not_found() -> Self {
        Self::new(ErrorKind::NotFound, "no such file or directory")
    }
    pub fn not_dir() -> Self {
        Self::new(ErrorKind::NotDir, "not a directory")
    }
    pub fn is_dir() -> Self {
        Self::new(ErrorKind::IsDir, "is a directory")
    }
    pub fn read_only(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::ReadOnly, why)
    }
    pub fn perm(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotPermitted, why)
    }
    pub fn invalid(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, why)
    }
    pub fn io(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::Io, why)
    }
    pub fn bad_handle() -> Self {
        Self::new(ErrorKind::BadHandle, "unknown file handle")
    }
    pub fn stale(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::Stale, why)
    }
    pub fn exists(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::Exists, why)
    }
    pub fn busy(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, why)
    }
    pub fn no_space(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::NoSpace, why)
    }
    pub fn too_large(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::TooLarge, why)
    }
    pub fn across_boundary(why: impl Into<String>) -> Self {
        Self::new(ErrorKind::AcrossBoundary, why)
    }
    /// A failed file operation, keeping its kind: a full disk or quota is
    /// NoSpace, a read-only filesystem ReadOnly, a denied access Denied, a
    /// too large file TooLarge; anything else Io. `message` says what failed.
    /// The one place where an error of the operating system becomes a kind.
    pub fn from_io(e: &std::io::Error, message: impl Into<String>) -> Self {
        let kind = match e.raw_os_error() {
            Some(libc::ENOSPC | libc::EDQUOT) => ErrorKind::NoSpace,
            Some(libc::EROFS) => ErrorKind::ReadOnly,
            Some(libc::EACCES) => ErrorKind::Denied,
            Some(libc::EFBIG) => ErrorKind::TooLarge,
            _ => ErrorKind::Io,
        };
        Self::new(kind, message)
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
