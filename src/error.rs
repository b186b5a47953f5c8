//! Command errors, rendered exactly as Redis 7.0 words them, because clients
//! branch on the text (`NOSCRIPT`, `ERR unknown command`, `WRONGTYPE`, …).

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum CmdError {
    /// The caller has already rendered `'arg' ` fragments the way Redis does.
    UnknownCommand {
        name: String,
        args: String,
    },
    UnknownSubcommand {
        sub: String,
        command: String,
    },
    /// `name` is the lowercase full name (`get`, `client|setname`).
    WrongArity(String),
    WrongType,
    NotInteger,
    NotFloat,
    HashValueNotInteger,
    HashValueNotFloat,
    Overflow,
    /// Redis's words for a number past what the command takes.
    OutOfRange,
    /// A count or length that must not be negative.
    NotPositive,
    /// A random-member count of -2^63, which has no positive counterpart.
    CountOutOfRange,
    /// A COUNT option below 1 (GEOSEARCH, XAUTOCLAIM).
    CountNotPositive,
    /// A LIMIT option below 0 (SINTERCARD, ZINTERCARD…).
    LimitNegative,
    /// A numkeys argument below 1 (SINTERCARD, LMPOP…).
    NumkeysNotPositive,
    /// A SCAN-family cursor that is not an unsigned number.
    InvalidCursor,
    /// A blocking command's timeout that is not a number.
    TimeoutNotNumber,
    TimeoutNegative,
    FunctionNotFound,
    IncrNanOrInf,
    Syntax,
    NoSuchKey,
    DbIndexOutOfRange,
    InvalidDbIndex,
    InvalidExpireTime(&'static str),
    NoAuth,
    WrongPass,
    AuthNotConfigured,
    ExecAbort,
    NestedMulti,
    ExecWithoutMulti,
    DiscardWithoutMulti,
    WatchInsideMulti,
    /// A key outside the shards a command declared was held elsewhere.
    ShardBusy,
    /// A script past the busy threshold holds what the command needs.
    Busy,
    /// Cluster mode: a command's keys are in more than one hash slot.
    CrossSlot,
    /// Cluster mode: one `redis.call` of a script names keys in more than
    /// one hash slot.
    ScriptCrossSlot,
    /// A cluster command while cluster mode is off.
    ClusterDisabled,
    /// Cluster mode: a CLUSTER subcommand that would change or report on a
    /// topology other than the one fixed node rlockd is.
    ClusterTopologyFixed(String),
    SelectInClusterMode,
    InvalidSlot,
    InvalidSlotOrCount,
    /// Anything else: the full text after the `-`, prefix included.
    Other(String),
    /// Like `Other`, for text that echoes raw bytes (a script's source) and
    /// must reach the client byte for byte.
    RawText(bytes::Bytes),
    /// Like `Other`, for a command's error that a script passes on: the
    /// error stats counted it where the command failed, not again for the
    /// script (its call still counts as failed).
    Counted(String),
}

impl CmdError {
    pub fn other(text: impl Into<String>) -> Self {
        CmdError::Other(text.into())
    }

    /// The first word of the error: clients match on it.
    pub fn code(&self) -> &str {
        let text = match self {
            CmdError::Other(t) | CmdError::Counted(t) => t.as_str(),
            CmdError::RawText(t) => {
                let end = t.iter().position(|&c| c == b' ').unwrap_or(t.len());
                return std::str::from_utf8(&t[..end]).unwrap_or("ERR");
            }
            CmdError::WrongType => return "WRONGTYPE",
            CmdError::NoAuth => return "NOAUTH",
            CmdError::WrongPass => return "WRONGPASS",
            CmdError::ExecAbort => return "EXECABORT",
            CmdError::Busy => return "BUSY",
            CmdError::CrossSlot => return "CROSSSLOT",
            _ => return "ERR",
        };
        text.split(' ').next().unwrap_or("ERR")
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CmdError::*;
        match self {
            UnknownCommand { name, args } => write!(
                f,
                "ERR unknown command '{name}', with args beginning with: {args}"
            ),
            UnknownSubcommand { sub, command } => write!(
                f,
                "ERR unknown subcommand '{sub}'. Try {} HELP.",
                command.to_ascii_uppercase()
            ),
            WrongArity(name) => write!(f, "ERR wrong number of arguments for '{name}' command"),
            WrongType => f.write_str(
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            NotInteger => f.write_str("ERR value is not an integer or out of range"),
            NotFloat => f.write_str("ERR value is not a valid float"),
            HashValueNotInteger => f.write_str("ERR hash value is not an integer"),
            HashValueNotFloat => f.write_str("ERR hash value is not a float"),
            Overflow => f.write_str("ERR increment or decrement would overflow"),
            OutOfRange => f.write_str("ERR value is out of range"),
            NotPositive => f.write_str("ERR value is out of range, must be positive"),
            CountOutOfRange => f.write_str(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ),
            CountNotPositive => f.write_str("ERR COUNT must be > 0"),
            LimitNegative => f.write_str("ERR LIMIT can't be negative"),
            NumkeysNotPositive => f.write_str("ERR numkeys should be greater than 0"),
            InvalidCursor => f.write_str("ERR invalid cursor"),
            TimeoutNotNumber => f.write_str("ERR timeout is not an integer or out of range"),
            TimeoutNegative => f.write_str("ERR timeout is negative"),
            FunctionNotFound => f.write_str("ERR Function not found"),
            IncrNanOrInf => f.write_str("ERR increment would produce NaN or Infinity"),
            Syntax => f.write_str("ERR syntax error"),
            NoSuchKey => f.write_str("ERR no such key"),
            DbIndexOutOfRange => f.write_str("ERR DB index is out of range"),
            InvalidDbIndex => f.write_str("ERR value is not an integer or out of range"),
            InvalidExpireTime(cmd) => write!(f, "ERR invalid expire time in '{cmd}' command"),
            NoAuth => f.write_str("NOAUTH Authentication required."),
            WrongPass => f.write_str(
                "WRONGPASS invalid username-password pair or user is disabled.",
            ),
            AuthNotConfigured => f.write_str(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ),
            ExecAbort => f.write_str("EXECABORT Transaction discarded because of previous errors."),
            NestedMulti => f.write_str("ERR MULTI calls can not be nested"),
            ExecWithoutMulti => f.write_str("ERR EXEC without MULTI"),
            DiscardWithoutMulti => f.write_str("ERR DISCARD without MULTI"),
            WatchInsideMulti => f.write_str("ERR WATCH inside MULTI is not allowed"),
            Busy => f.write_str(
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
            ),
            ShardBusy => f.write_str(
                "ERR a key the command did not declare is in use by another command, retry",
            ),
            CrossSlot => f.write_str("CROSSSLOT Keys in request don't hash to the same slot"),
            ScriptCrossSlot => {
                f.write_str("ERR Script attempted to access a non local key in a cluster node")
            }
            ClusterDisabled => f.write_str("ERR This instance has cluster support disabled"),
            ClusterTopologyFixed(sub) => write!(
                f,
                "ERR CLUSTER {sub} is not supported: this rlockd is a one-node cluster owning every slot"
            ),
            SelectInClusterMode => f.write_str("ERR SELECT is not allowed in cluster mode"),
            InvalidSlot => f.write_str("ERR Invalid slot"),
            InvalidSlotOrCount => f.write_str("ERR Invalid slot or number of keys"),
            Other(text) | Counted(text) => f.write_str(text),
            RawText(text) => f.write_str(&String::from_utf8_lossy(text)),
        }
    }
}

impl std::error::Error for CmdError {}

pub type CmdResult<T> = Result<T, CmdError>;
