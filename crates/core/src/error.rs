//! One error type for the whole core.
//!
//! Every failure a user can cause (a bad config, a corrupt trace, a missing
//! file) is an [`Error`] value with enough context to act on: the key path of
//! the config field, or the file, byte offset and block of the trace. The
//! Python bindings map each variant to its own exception class. A panic is
//! never the answer to bad input; it means a bug in cachesched.

use std::fmt;

/// Result alias used throughout the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One problem found in a configuration: where, what kind, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssue {
    /// Key path of the offending value, e.g. `machine.l2.ways`; empty for the root.
    pub loc: String,
    /// Stable machine-readable code, e.g. `unknown_field`, `not_power_of_two`.
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.loc.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.loc, self.message)
        }
    }
}

/// Where in a trace file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TracePos {
    /// Byte offset in the file (of the record, block or header that failed).
    pub offset: Option<u64>,
    /// Index of the compressed block, for block-structured formats.
    pub block: Option<u64>,
    /// 1-based line number, for text formats.
    pub line: Option<u64>,
}

/// The error type of the core.
#[derive(Debug)]
pub enum Error {
    /// The configuration is malformed or describes an impossible setup.
    Config(Vec<ConfigIssue>),
    /// A trace could not be opened, read or decoded.
    Trace { path: String, pos: TracePos, message: String },
    /// An I/O failure outside trace reading (e.g. writing output).
    Io { path: String, source: std::io::Error },
    /// The simulation could not continue (e.g. a callback asked to stop).
    Simulation(String),
}

impl Error {
    /// A configuration error with a single issue.
    pub fn config(loc: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        Error::Config(vec![ConfigIssue { loc: loc.into(), code, message: message.into() }])
    }

    /// A trace error at a position in `path`.
    pub fn trace(path: impl Into<String>, pos: TracePos, message: impl Into<String>) -> Self {
        Error::Trace { path: path.into(), pos, message: message.into() }
    }

    /// An I/O error while touching `path`.
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

/// Join two key paths with a dot, skipping empty parts.
pub fn join_path(prefix: &str, rest: &str) -> String {
    match (prefix.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_string(),
        (_, true) => prefix.to_string(),
        _ if rest.starts_with('[') => format!("{prefix}{rest}"),
        _ => format!("{prefix}.{rest}"),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(issues) => {
                let n = issues.len();
                write!(f, "{n} configuration error{}", if n == 1 { "" } else { "s" })?;
                for issue in issues {
                    write!(f, "\n  {issue}")?;
                }
                Ok(())
            }
            Error::Trace { path, pos, message } => {
                write!(f, "{path}")?;
                if let Some(line) = pos.line {
                    write!(f, ": line {line}")?;
                }
                if let Some(block) = pos.block {
                    write!(f, ": block {block}")?;
                }
                if let Some(offset) = pos.offset {
                    write!(f, ": byte offset {offset}")?;
                }
                write!(f, ": {message}")
            }
            Error::Io { path, source } => write!(f, "{path}: {source}"),
            Error::Simulation(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Collects config issues during `validate()` so that all of them are
/// reported at once, not just the first.
#[derive(Debug, Default)]
pub struct Issues(Vec<ConfigIssue>);

impl Issues {
    /// Record a problem at `loc` unless `ok`.
    pub fn check(&mut self, ok: bool, loc: impl Into<String>, code: &'static str, message: impl Into<String>) {
        if !ok {
            self.push(loc, code, message);
        }
    }

    /// Record a problem at `loc`.
    pub fn push(&mut self, loc: impl Into<String>, code: &'static str, message: impl Into<String>) {
        self.0.push(ConfigIssue { loc: loc.into(), code, message: message.into() });
    }

    /// Keep the issues of a nested result, if it failed with config issues.
    pub fn absorb<T>(&mut self, result: Result<T>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(Error::Config(issues)) => {
                self.0.extend(issues);
                None
            }
            Err(other) => {
                self.push("", "error", other.to_string());
                None
            }
        }
    }

    /// `Ok(())` if nothing was recorded, else the collected error.
    pub fn finish(self) -> Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(self.0))
        }
    }
}
