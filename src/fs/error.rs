//! Errors of the filesystem core: what went wrong, as a kind, and a message
//! for the user (logged, and for rejected writes also kept in the mount).
//! The kinds name the failure, not an errno: the FUSE adapter turns them
//! into errno in one table (`crate::fuse::errno_of`).

use std::fmt;

/// Declares [`ErrorKind`], the list of all its kinds and the constructors
/// of [`FsError`] (`=> name` for a constructor taking the message, `=>
/// name("message")` for one with a fixed message), from one list so that
/// no kind can be left out of [`ErrorKind::ALL`].
macro_rules! error_kinds {
    ($($(#[$doc:meta])* $kind:ident $(=> $ctor:ident $(($msg:literal))?)?,)*) => {
        /// What went wrong, in the words of the core.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $($(#[$doc])* $kind,)*
        }

        impl ErrorKind {
            /// Every kind, in declaration order (the errno table's tests).
            #[cfg(test)]
            pub(crate) const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind,)*];
        }

        impl FsError {
            $($(constructor!($kind, $ctor $(, $msg)?);)?)*
        }
    };
}

macro_rules! constructor {
    ($kind:ident, $ctor:ident, $msg:literal) => {
        pub fn $ctor() -> Self {
            Self::new(ErrorKind::$kind, $msg)
        }
    };
    ($kind:ident, $ctor:ident) => {
        pub(crate) fn $ctor(why: impl Into<String>) -> Self {
            Self::new(ErrorKind::$kind, why)
        }
    };
}

error_kinds! {
    /// No such file or directory (or it vanished meanwhile).
    NotFound => not_found("no such file or directory"),
    /// A directory was expected.
    NotDir => not_dir("not a directory"),
    /// A file was expected, the name is a directory.
    IsDir => is_dir("is a directory"),
    /// The mount, the file or the database does not take changes.
    ReadOnly => read_only,
    /// The operation is not one this file or directory allows.
    NotPermitted => perm,
    /// The operating system denied access to a file worldfs uses.
    Denied,
    /// The content or the name is not valid here.
    Invalid => invalid,
    /// A database or a file failed to read or write.
    Io => io,
    /// No open file has that handle.
    BadHandle => bad_handle("unknown file handle"),
    /// No space is left (a full disk, a quota, or the mount's write budget).
    NoSpace => no_space,
    /// The file would be larger than allowed.
    TooLarge => too_large,
    /// The change was made from a copy that is no longer current.
    Stale => stale,
    /// The name exists already.
    Exists => exists,
    /// Someone else holds the world (a running server).
    Busy => busy,
    /// A rename between places that cannot exchange names.
    AcrossBoundary => across_boundary,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsError {
    pub kind: ErrorKind,
    pub message: String,
    /// Already shown in MNT/write-errors (not to be added twice).
    pub(crate) reported: bool,
}

pub type Result<T> = std::result::Result<T, FsError>;

impl FsError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        FsError { kind, message: message.into(), reported: false }
    }
    /// A failed file operation, keeping its kind: a full disk or quota is
    /// NoSpace, a read-only filesystem ReadOnly, a denied access Denied, a
    /// too large file TooLarge; anything else Io. `message` says what failed.
    /// The one place where an error of the operating system becomes a kind.
    pub(crate) fn from_io(e: &std::io::Error, message: impl Into<String>) -> Self {
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
pub(crate) fn one_line(s: &str) -> String {
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
pub(crate) fn escape_name(name: &[u8]) -> String {
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
