//! COMMAND DOCS entries, built from the command table.
//!
//! Each command's arguments are written in the table as one compact
//! grammar string, in the notation command references use:
//!
//! - a lowercase word (`key`, `seconds`, `ip:port`) is a typed argument
//!   named by the word; its type follows from the name (see [`word_type`]);
//! - an UPPERCASE word (`NX`, `LIB-NAME`) is a literal token;
//! - `[ ... ]` is optional, `( ... )` groups arguments into a block,
//!   `a | b` is a choice of one, and `...` after a word or group means
//!   it may repeat;
//! - a token directly before a typed word or a `( ... )` group labels it:
//!   `EX seconds` is one argument, `seconds`, introduced by `EX`. Write
//!   `[TOKEN word]...` when the token repeats with each value, and
//!   `TOKEN word...` when only the value repeats.
//!
//! `[ ... ]` around a single argument just marks it optional, and a choice
//! between several arguments needs no brackets of its own: `[NX | XX]`.

use super::spec::CommandSpec;
use crate::protocol::Reply;

/// The type of one argument, as COMMAND DOCS names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    Key,
    String,
    Integer,
    Double,
    Pattern,
    UnixTime,
    PureToken,
    Oneof,
    Block,
}

impl ArgType {
    pub fn name(self) -> &'static str {
        match self {
            ArgType::Key => "key",
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::Oneof => "oneof",
            ArgType::Block => "block",
        }
    }
}

/// One node of a command's argument tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub kind: ArgType,
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    /// With `multiple`: the token comes again before every repetition.
    pub multiple_token: bool,
    /// For keys: which of the command's key specs finds this argument.
    pub key_spec_index: Option<usize>,
    /// The members of a block or the choices of a oneof.
    pub args: Vec<Arg>,
}

impl Arg {
    fn new(name: String, kind: ArgType) -> Self {
        Arg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
            multiple_token: false,
            key_spec_index: None,
            args: Vec::new(),
        }
    }

    /// A oneof or block over `args`, named after its members.
    fn group(kind: ArgType, args: Vec<Arg>) -> Self {
        let name = args
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join("_");
        Arg {
            args,
            ..Arg::new(name, kind)
        }
    }
}

/// The type a typed argument gets from its name. `float` marks the
/// commands whose increments or timeouts are floating point (HINCRBYFLOAT,
/// the blocking list commands, whose timeouts are seconds with fractions).
pub fn word_type(word: &str, float: bool) -> ArgType {
    match word {
        "key" | "key1" | "key2" | "source" | "destination" | "newkey" => ArgType::Key,
        w if w.ends_with("key") => ArgType::Key,
        "pattern" => ArgType::Pattern,
        "increment" | "decrement" | "timeout" if float => ArgType::Double,
        "longitude" | "latitude" | "radius" | "width" | "height" => ArgType::Double,
        "seconds" | "milliseconds" | "count" | "cursor" | "numkeys" | "index" | "increment"
        | "decrement" | "database" | "timeout" | "client-id" | "protover" | "start" | "stop"
        | "rank" | "num-matches" | "len" | "limit" | "destination-db" | "db" | "index1"
        | "index2" | "ttl" | "frequency" | "offset" | "end" | "bit" | "bits" | "port" => {
            ArgType::Integer
        }
        w if w.starts_with("unix-time") => ArgType::UnixTime,
        _ => ArgType::String,
    }
}

/// The names Redis's docs give tokens that are symbols (XADD's `*`, `=`
/// and `~`, XGROUP's `$`).
fn symbol_token_name(word: &str) -> Option<&'static str> {
    match word {
        "*" => Some("auto-id"),
        "=" => Some("equal"),
        "~" => Some("approximately"),
        "$" => Some("new-id"),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Word(&'a str),
    Open(u8),
    Close(u8),
    Bar,
    Ellipsis,
}

fn lex(src: &str) -> Result<Vec<Tok<'_>>, String> {
    const SPECIAL: &[u8] = b"[]()|";
    let bytes = src.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'[' || c == b'(' {
            toks.push(Tok::Open(c));
            i += 1;
        } else if c == b']' || c == b')' {
            toks.push(Tok::Close(c));
            i += 1;
        } else if c == b'|' {
            toks.push(Tok::Bar);
            i += 1;
        } else if bytes[i..].starts_with(b"...") {
            toks.push(Tok::Ellipsis);
            i += 3;
        } else {
            let start = i;
            while i < bytes.len()
                && !bytes[i].is_ascii_whitespace()
                && !SPECIAL.contains(&bytes[i])
                && !bytes[i..].starts_with(b"...")
            {
                i += 1;
            }
            if !src.is_char_boundary(start) || !src.is_char_boundary(i) {
                return Err(format!("non-ASCII text at byte {start}"));
            }
            toks.push(Tok::Word(&src[start..i]));
        }
    }
    Ok(toks)
}

/// One parsed element of a sequence, with what the token-labelling rule
/// needs to know about it.
struct Item {
    arg: Arg,
    /// A bare token that may label the element after it.
    bare_token: bool,
    /// A typed word or `( ... )` group that a token before it may label.
    labelable: bool,
}

struct Parser<'a> {
    toks: Vec<Tok<'a>>,
    pos: usize,
    float: bool,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<Tok<'a>> {
        let tok = self.peek();
        self.pos += 1;
        tok
    }

    /// `seq ('|' seq)*`, as its branches.
    fn alternatives(&mut self) -> Result<Vec<Vec<Arg>>, String> {
        let mut branches = vec![self.sequence()?];
        while self.peek() == Some(Tok::Bar) {
            self.pos += 1;
            branches.push(self.sequence()?);
        }
        Ok(branches)
    }

    fn sequence(&mut self) -> Result<Vec<Arg>, String> {
        let mut items = Vec::new();
        while let Some(Tok::Word(_) | Tok::Open(_)) = self.peek() {
            items.push(self.item()?);
        }
        if items.is_empty() {
            return Err(format!("expected an argument at token {}", self.pos));
        }
        let mut out: Vec<Arg> = Vec::with_capacity(items.len());
        let mut items = items.into_iter().peekable();
        while let Some(item) = items.next() {
            if item.bare_token
                && let Some(next) = items.peek_mut()
                && next.labelable
                && next.arg.token.is_none()
            {
                next.arg.token = item.arg.token;
                next.labelable = false;
                continue;
            }
            out.push(item.arg);
        }
        Ok(out)
    }

    fn item(&mut self) -> Result<Item, String> {
        let (mut item, bracketed) = match self.bump() {
            Some(Tok::Word(word)) => (self.word(word)?, false),
            Some(Tok::Open(open)) => {
                let branches = self.alternatives()?;
                let close = if open == b'[' { b']' } else { b')' };
                if self.bump() != Some(Tok::Close(close)) {
                    return Err(format!("expected '{}'", close as char));
                }
                if open == b'[' {
                    let mut arg = bracket_group(branches);
                    arg.optional = true;
                    let item = Item {
                        arg,
                        bare_token: false,
                        labelable: false,
                    };
                    (item, true)
                } else {
                    let item = Item {
                        arg: paren_group(branches),
                        bare_token: false,
                        labelable: true,
                    };
                    (item, false)
                }
            }
            other => return Err(format!("unexpected {other:?}")),
        };
        if self.peek() == Some(Tok::Ellipsis) {
            self.pos += 1;
            item.arg.multiple = true;
            item.arg.multiple_token = bracketed && item.arg.token.is_some();
            item.bare_token = false;
        }
        Ok(item)
    }

    fn word(&self, word: &str) -> Result<Item, String> {
        let has_lower = word.bytes().any(|b| b.is_ascii_lowercase());
        let has_upper = word.bytes().any(|b| b.is_ascii_uppercase());
        if has_lower {
            Ok(Item {
                arg: Arg::new(word.to_string(), word_type(word, self.float)),
                bare_token: false,
                labelable: true,
            })
        } else if let Some(name) = has_upper
            .then(|| word.to_ascii_lowercase())
            .or_else(|| symbol_token_name(word).map(str::to_string))
        {
            let mut arg = Arg::new(name, ArgType::PureToken);
            arg.token = Some(word.to_string());
            Ok(Item {
                arg,
                bare_token: true,
                labelable: false,
            })
        } else {
            Err(format!("'{word}' is neither a name nor a token"))
        }
    }
}

/// A branch of a choice: one argument, or a block of several.
fn branch(mut args: Vec<Arg>) -> Arg {
    if args.len() == 1 {
        args.pop().unwrap()
    } else {
        Arg::group(ArgType::Block, args)
    }
}

fn choice(branches: Vec<Vec<Arg>>) -> Arg {
    Arg::group(ArgType::Oneof, branches.into_iter().map(branch).collect())
}

/// `[ ... ]`: a choice, the single argument inside, or a block.
fn bracket_group(mut branches: Vec<Vec<Arg>>) -> Arg {
    if branches.len() > 1 {
        choice(branches)
    } else {
        branch(branches.pop().unwrap())
    }
}

/// `( ... )`: a choice, or else always a block, even of one argument.
fn paren_group(mut branches: Vec<Vec<Arg>>) -> Arg {
    if branches.len() > 1 {
        choice(branches)
    } else {
        Arg::group(ArgType::Block, branches.pop().unwrap())
    }
}

/// Parses a command's argument grammar (see the module docs) into the
/// tree COMMAND DOCS reports. `command` is the command's name, which
/// decides whether increments and timeouts are floating point.
pub fn parse_syntax(src: &str, command: &str) -> Result<Vec<Arg>, String> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Ok(Vec::new());
    }
    let mut parser = Parser {
        toks,
        pos: 0,
        float: command.ends_with("float")
            || matches!(command, "blpop" | "brpop" | "blmove" | "brpoplpush"),
    };
    let mut branches = parser.alternatives()?;
    if let Some(tok) = parser.peek() {
        return Err(format!("unexpected {tok:?} at token {}", parser.pos));
    }
    if branches.len() > 1 {
        Ok(vec![choice(branches)])
    } else {
        Ok(branches.pop().unwrap())
    }
}

/// Points every key argument at its key spec: the n-th key argument (in
/// order of appearance) at the n-th spec, the extra ones at the last. In a
/// command without key specs a key's name is only a string (CLUSTER
/// KEYSLOT hashes it, and touches no key).
fn assign_key_specs(args: &mut [Arg], seen: &mut usize, specs: usize) {
    for arg in args {
        if arg.kind == ArgType::Key && specs == 0 {
            arg.kind = ArgType::String;
        } else if arg.kind == ArgType::Key {
            arg.key_spec_index = Some((*seen).min(specs - 1));
            *seen += 1;
        }
        assign_key_specs(&mut arg.args, seen, specs);
    }
}

/// The argument tree of a command, key specs assigned.
pub fn arguments(spec: &CommandSpec) -> Result<Vec<Arg>, String> {
    let mut args = parse_syntax(spec.syntax, spec.name)?;
    assign_key_specs(&mut args, &mut 0, spec.keys.len());
    Ok(args)
}

fn arg_reply(arg: &Arg) -> Reply {
    let mut fields = vec![
        (Reply::bulk_str("name"), Reply::bulk_str(&arg.name)),
        (Reply::bulk_str("type"), Reply::bulk_str(arg.kind.name())),
    ];
    if let Some(index) = arg.key_spec_index {
        fields.push((Reply::bulk_str("key_spec_index"), Reply::Int(index as i64)));
    }
    if let Some(token) = &arg.token {
        fields.push((Reply::bulk_str("token"), Reply::bulk_str(token)));
    }
    let flags: Vec<Reply> = [
        (arg.optional, "optional"),
        (arg.multiple, "multiple"),
        (arg.multiple_token, "multiple_token"),
    ]
    .into_iter()
    .filter(|&(on, _)| on)
    .map(|(_, name)| Reply::status(name))
    .collect();
    if !flags.is_empty() {
        fields.push((Reply::bulk_str("flags"), Reply::Set(flags)));
    }
    if !arg.args.is_empty() {
        fields.push((
            Reply::bulk_str("arguments"),
            Reply::Array(arg.args.iter().map(arg_reply).collect()),
        ));
    }
    Reply::Map(fields)
}

pub fn command_doc(spec: &CommandSpec) -> Reply {
    let mut fields = vec![
        (Reply::bulk_str("summary"), Reply::bulk_str(spec.summary)),
        (Reply::bulk_str("since"), Reply::bulk_str(spec.since)),
        (Reply::bulk_str("group"), Reply::bulk_str(spec.group.name())),
    ];
    // The table's grammars are checked by the tests below; a broken one
    // would only cost the command its argument list.
    if let Ok(args) = arguments(spec)
        && !args.is_empty()
    {
        fields.push((
            Reply::bulk_str("arguments"),
            Reply::Array(args.iter().map(arg_reply).collect()),
        ));
    }
    if !spec.subcommands.is_empty() {
        let subs = spec
            .subcommands
            .iter()
            .map(|sub| {
                (
                    Reply::bulk_str(&format!("{}|{}", spec.name, sub.name)),
                    command_doc(sub),
                )
            })
            .collect();
        fields.push((Reply::bulk_str("subcommands"), Reply::Map(subs)));
    }
    Reply::Map(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::REGISTRY;

    /// Renders a tree back the way redis-cli builds its hints, so tests
    /// can state expectations compactly.
    fn hint(args: &[Arg], sep: &str) -> String {
        args.iter().map(hint_one).collect::<Vec<_>>().join(sep)
    }

    fn hint_one(arg: &Arg) -> String {
        let token = match (&arg.token, arg.kind) {
            (Some(t), ArgType::PureToken) => t.clone(),
            (Some(t), _) => format!("{t} "),
            (None, _) => String::new(),
        };
        let body = match arg.kind {
            ArgType::Oneof => hint(&arg.args, "|"),
            ArgType::Block => hint(&arg.args, " "),
            ArgType::PureToken => String::new(),
            _ => arg.name.clone(),
        };
        let mut out = format!("{token}{body}");
        if arg.multiple {
            let again = if arg.multiple_token {
                format!("{token}{body}")
            } else {
                body
            };
            out = format!("{out} [{again} ...]");
        }
        if arg.optional {
            out = format!("[{out}]");
        }
        out
    }

    fn parse(src: &str) -> Vec<Arg> {
        parse_syntax(src, "test").unwrap()
    }

    #[test]
    fn empty_syntax_has_no_arguments() {
        assert!(parse("").is_empty());
        assert!(parse("   ").is_empty());
    }

    #[test]
    fn words_and_types() {
        let args = parse("key newkey destkey value seconds pattern unix-time-seconds ip:port");
        let kinds: Vec<_> = args.iter().map(|a| a.kind).collect();
        assert_eq!(
            kinds,
            [
                ArgType::Key,
                ArgType::Key,
                ArgType::Key,
                ArgType::String,
                ArgType::Integer,
                ArgType::Pattern,
                ArgType::UnixTime,
                ArgType::String,
            ]
        );
        assert_eq!(args[7].name, "ip:port");
        assert_eq!(
            parse_syntax("key field increment", "hincrbyfloat").unwrap()[2].kind,
            ArgType::Double
        );
        assert_eq!(
            parse_syntax("key field increment", "hincrby").unwrap()[2].kind,
            ArgType::Integer
        );
    }

    #[test]
    fn set_syntax() {
        let src = "key value [NX | XX] [GET] \
                   [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]";
        let args = parse(src);
        assert_eq!(args.len(), 5);
        let cond = &args[2];
        assert_eq!((cond.kind, cond.optional), (ArgType::Oneof, true));
        assert_eq!(cond.name, "nx_xx");
        assert_eq!(cond.args[0].token.as_deref(), Some("NX"));
        assert_eq!(cond.args[0].name, "nx");
        let get = &args[3];
        assert_eq!((get.kind, get.optional), (ArgType::PureToken, true));
        let ex = &args[4].args[0];
        assert_eq!(ex.kind, ArgType::Integer);
        assert_eq!(ex.name, "seconds");
        assert_eq!(ex.token.as_deref(), Some("EX"));
        assert!(!ex.optional);
        assert_eq!(args[4].args[4].kind, ArgType::PureToken);
        assert_eq!(
            hint(&args, " "),
            "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|\
             PXAT unix-time-milliseconds|KEEPTTL]"
        );
    }

    #[test]
    fn blocks_and_repetition() {
        let args = parse("key (field value)...");
        let pairs = &args[1];
        assert_eq!((pairs.kind, pairs.multiple), (ArgType::Block, true));
        assert_eq!(pairs.name, "field_value");
        assert_eq!(pairs.args.len(), 2);
        assert_eq!(hint(&args, " "), "key field value [field value ...]");

        // Parentheses make a block even around a single argument.
        let args = parse("(parameter)...");
        assert_eq!(args[0].kind, ArgType::Block);
        assert_eq!(args[0].args[0].kind, ArgType::String);

        let args = parse("[section...]");
        assert!(args[0].optional && args[0].multiple);
        assert_eq!(hint(&args, " "), "[section [section ...]]");
    }

    #[test]
    fn tokens_label_what_follows() {
        // Only the value repeats.
        let args = parse("[ID client-id...]");
        assert_eq!(args[0].token.as_deref(), Some("ID"));
        assert!(args[0].multiple && !args[0].multiple_token);
        assert_eq!(hint(&args, " "), "[ID client-id [client-id ...]]");

        // The token repeats with each value.
        let args = parse("[PREFIX prefix]...");
        assert!(args[0].multiple && args[0].multiple_token);
        assert_eq!(hint(&args, " "), "[PREFIX prefix [PREFIX prefix ...]]");

        // A token before a group labels the whole group.
        let args = parse("[TYPE (NORMAL | MASTER)] [AUTH (username password)]");
        assert_eq!(args[0].kind, ArgType::Oneof);
        assert_eq!(args[0].token.as_deref(), Some("TYPE"));
        assert_eq!(args[1].kind, ArgType::Block);
        assert_eq!(args[1].token.as_deref(), Some("AUTH"));
        assert_eq!(
            hint(&args, " "),
            "[TYPE NORMAL|MASTER] [AUTH username password]"
        );

        // Tokens before optional parts stay on their own.
        let args = parse("GET [key]");
        assert_eq!(args.len(), 2);
        assert_eq!(args[0].kind, ArgType::PureToken);
    }

    #[test]
    fn top_level_choice_and_nested_groups() {
        let args = parse("ip:port | ([ID client-id] | [SKIPME yes/no])...");
        assert_eq!(args.len(), 1);
        let top = &args[0];
        assert_eq!(top.kind, ArgType::Oneof);
        assert_eq!(top.args[0].kind, ArgType::String);
        let filters = &top.args[1];
        assert_eq!((filters.kind, filters.multiple), (ArgType::Oneof, true));
        assert!(filters.args.iter().all(|a| a.optional && a.token.is_some()));

        let args = parse("[protover [AUTH (username password)] [SETNAME clientname]]");
        assert_eq!(args.len(), 1);
        assert_eq!((args[0].kind, args[0].optional), (ArgType::Block, true));
        assert_eq!(args[0].args.len(), 3);
        assert_eq!(args[0].args[0].kind, ArgType::Integer);

        // A choice branch of several arguments is a block.
        let args = parse("a b | C");
        assert_eq!(args[0].args[0].kind, ArgType::Block);
        assert_eq!(args[0].args[1].kind, ArgType::PureToken);
    }

    #[test]
    fn malformed_syntax_is_rejected() {
        for bad in [
            "[key", "key]", "(a | )", "| a", "...", "a [ ] b", "123", "a ) b",
        ] {
            assert!(parse_syntax(bad, "x").is_err(), "{bad:?} parsed");
        }
    }

    /// Every command and subcommand, with whether it is a subcommand.
    fn all_specs() -> impl Iterator<Item = (&'static CommandSpec, bool)> {
        REGISTRY.commands.iter().flat_map(|&c| {
            std::iter::once((c, false)).chain(c.subcommands.iter().map(|s| (s, true)))
        })
    }

    fn count_keys(args: &[Arg]) -> usize {
        args.iter()
            .map(|a| usize::from(a.kind == ArgType::Key) + count_keys(&a.args))
            .sum()
    }

    #[test]
    fn every_table_syntax_parses_and_matches_the_key_specs() {
        for (spec, is_sub) in all_specs() {
            let args = arguments(spec)
                .unwrap_or_else(|e| panic!("{}: bad syntax {:?}: {e}", spec.name, spec.syntax));
            let keys = count_keys(&args);
            // Each key spec is found by at least one key argument, and a
            // command without key specs has no key arguments. `not_key`
            // specs (shard channels) find string arguments, and `unknown`
            // ones (SORT's BY/GET) keys named by pattern arguments.
            let key_specs = spec
                .keys
                .iter()
                .filter(|k| !k.is_not_key() && !k.unknown)
                .count();
            assert!(
                keys >= key_specs && (keys == 0) == (key_specs == 0),
                "{}: {keys} key arguments for {key_specs} key specs",
                spec.name,
            );
            if !spec.subcommands.is_empty() {
                continue;
            }
            // Arguments are listed exactly when the arity allows some.
            let required = spec.arity.abs() - if is_sub { 2 } else { 1 };
            if required > 0 {
                assert!(!args.is_empty(), "{} needs arguments", spec.name);
            } else if spec.arity > 0 {
                assert!(args.is_empty(), "{} takes no arguments", spec.name);
            }
        }
    }

    #[test]
    fn rename_keys_point_at_their_own_specs() {
        let rename = REGISTRY.specs[REGISTRY.lookup(b"rename").unwrap()];
        let args = arguments(rename).unwrap();
        let specs: Vec<_> = args.iter().map(|a| a.key_spec_index).collect();
        assert_eq!(specs, [Some(0), Some(1)]);
    }

    #[test]
    fn docs_reply_omits_empty_arguments() {
        let has_args = |spec: &CommandSpec| match command_doc(spec) {
            Reply::Map(fields) => fields
                .iter()
                .any(|(k, _)| matches!(k, Reply::Bulk(b) if &b[..] == b"arguments")),
            _ => unreachable!(),
        };
        let find = |name: &str| REGISTRY.specs[REGISTRY.lookup(name.as_bytes()).unwrap()];
        assert!(has_args(find("set")));
        assert!(!has_args(find("multi")));
    }
}
