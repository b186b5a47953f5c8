//! ACL users as Redis 7.0 keeps them: passwords, a root selector and
//! extra selectors (commands, key patterns, channel patterns), and the log
//! of refused commands and logins. Command names and categories come from
//! the command layer as a [`Catalog`], so this layer knows only ids.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use sha2::{Digest, Sha256};

use crate::util::glob_match;

/// What the command table says that ACL rules name: every command and
/// subcommand by id, its full name (`client|id`) and categories.
pub struct Catalog {
    pub names: Vec<String>,
    pub categories: Vec<u32>,
    /// The subcommands of each command (empty for the others).
    pub subs: Vec<Vec<usize>>,
    /// Top-level commands, in table order.
    pub top: Vec<usize>,
    /// Category bits and names (without `@`), in Redis's order.
    pub category_names: &'static [(u32, &'static str)],
    pub by_name: HashMap<String, usize>,
}

impl Catalog {
    pub fn category(&self, name: &str) -> Option<u32> {
        let name = name.to_ascii_lowercase();
        self.category_names
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(bit, _)| *bit)
    }
}

/// Why SETUSER refused a rule; the texts are Redis's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    Unknown,
    Syntax,
    AfterAllKeys,
    AfterAllChannels,
    NoSuchPassword,
    BadHash,
    FirstArgOfSubcommand,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::AfterAllKeys => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::AfterAllChannels => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
            }
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Bytes,
    pub read: bool,
    pub write: bool,
}

impl KeyPattern {
    fn describe(&self) -> String {
        let prefix = match (self.read, self.write) {
            (true, false) => "%R~",
            (false, true) => "%W~",
            _ => "~",
        };
        format!("{prefix}{}", String::from_utf8_lossy(&self.pattern))
    }
}

/// One set of permissions: a command runs if one selector allows the
/// command and every key and channel it names.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    allowed: Vec<u64>,
    /// Every command allowed (cleared by any removal): the fast path.
    pub all_commands: bool,
    /// `+@all` was the base: commands added later are allowed too.
    future: bool,
    /// `+cmd|arg` for commands without subcommands: ids → first arguments.
    first_args: BTreeMap<usize, Vec<String>>,
    pub all_keys: bool,
    pub keys: Vec<KeyPattern>,
    pub all_channels: bool,
    pub channels: Vec<Bytes>,
}

impl Selector {
    fn new(commands: usize) -> Self {
        Selector {
            allowed: vec![0; commands.div_ceil(64)],
            ..Default::default()
        }
    }

    pub fn allows_command(&self, id: usize, first_arg: Option<&[u8]>) -> bool {
        if self.all_commands || self.bit(id) {
            return true;
        }
        let (Some(args), Some(first)) = (self.first_args.get(&id), first_arg) else {
            return false;
        };
        args.iter()
            .any(|a| a.as_bytes().eq_ignore_ascii_case(first))
    }

    /// Whether a key may be read (`read`) and written (`write`) as asked.
    pub fn allows_key(&self, key: &[u8], read: bool, write: bool) -> bool {
        self.all_keys
            || self.keys.iter().any(|p| {
                (p.read || !read) && (p.write || !write) && glob_match(&p.pattern, key, false)
            })
    }

    /// A channel, or (for PSUBSCRIBE) a pattern, which must be one of the
    /// allowed patterns literally.
    pub fn allows_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|p| {
                if is_pattern {
                    p[..] == *channel
                } else {
                    glob_match(p, channel, false)
                }
            })
    }

    fn bit(&self, id: usize) -> bool {
        self.allowed
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(word) = self.allowed.get_mut(id / 64) {
            if on {
                *word |= 1 << (id % 64);
            } else {
                *word &= !(1 << (id % 64));
                self.all_commands = false;
            }
        }
    }

    /// A command and all its subcommands.
    fn set_command(&mut self, cat: &Catalog, id: usize, on: bool) {
        self.set_bit(id, on);
        self.first_args.remove(&id);
        for &sub in &cat.subs[id] {
            self.set_bit(sub, on);
        }
    }

    fn set_category(&mut self, cat: &Catalog, bit: u32, on: bool) {
        for &id in &cat.top {
            if cat.categories[id] & bit != 0 {
                self.set_command(cat, id, on);
            }
            for &sub in &cat.subs[id] {
                if cat.categories[sub] & bit != 0 {
                    self.set_bit(sub, on);
                }
            }
        }
    }

    fn set_all(&mut self, cat: &Catalog, on: bool) {
        for id in 0..cat.names.len() {
            self.set_bit(id, on);
        }
        self.first_args.clear();
        self.all_commands = on;
        self.future = on;
    }

    /// Applies one selector rule (commands, keys, channels).
    fn apply(&mut self, cat: &Catalog, op: &str) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_str() {
            "allkeys" | "~*" => {
                self.all_keys = true;
                self.keys.clear();
            }
            "resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            "allchannels" | "&*" => {
                self.all_channels = true;
                self.channels.clear();
            }
            "resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            "allcommands" | "+@all" => self.set_all(cat, true),
            "nocommands" | "-@all" => self.set_all(cat, false),
            _ => return self.apply_pattern_or_command(cat, op),
        }
        Ok(())
    }

    fn apply_pattern_or_command(&mut self, cat: &Catalog, op: &str) -> Result<(), RuleError> {
        if let Some(pattern) = op.strip_prefix('~') {
            return self.add_key_pattern(pattern, true, true);
        }
        if let Some(rest) = op.strip_prefix('%') {
            let (perms, pattern) = rest.split_once('~').ok_or(RuleError::Syntax)?;
            let (mut read, mut write) = (false, false);
            for c in perms.chars() {
                match c.to_ascii_uppercase() {
                    'R' if !read => read = true,
                    'W' if !write => write = true,
                    _ => return Err(RuleError::Syntax),
                }
            }
            if !read && !write {
                return Err(RuleError::Syntax);
            }
            return self.add_key_pattern(pattern, read, write);
        }
        if let Some(channel) = op.strip_prefix('&') {
            if self.all_channels {
                return Err(RuleError::AfterAllChannels);
            }
            if channel.contains([' ', '\0']) {
                return Err(RuleError::Syntax);
            }
            let channel = Bytes::copy_from_slice(channel.as_bytes());
            if !self.channels.contains(&channel) {
                self.channels.push(channel);
            }
            return Ok(());
        }
        let (on, name) = match op.as_bytes().first() {
            Some(b'+') => (true, &op[1..]),
            Some(b'-') => (false, &op[1..]),
            _ => return Err(RuleError::Syntax),
        };
        if let Some(category) = name.strip_prefix('@') {
            let bit = cat.category(category).ok_or(RuleError::Unknown)?;
            self.set_category(cat, bit, on);
            return Ok(());
        }
        let name = name.to_ascii_lowercase();
        if let Some(&id) = cat.by_name.get(&name) {
            self.set_command(cat, id, on);
            return Ok(());
        }
        // `cmd|sub` names a subcommand; for a command without any, a
        // first argument it may be called with.
        let (command, arg) = name.rsplit_once('|').ok_or(RuleError::Unknown)?;
        let id = *cat.by_name.get(command).ok_or(RuleError::Unknown)?;
        if command.contains('|') {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !cat.subs[id].is_empty() || !on {
            return Err(RuleError::Unknown);
        }
        if !self.bit(id) {
            let args = self.first_args.entry(id).or_default();
            if !args.iter().any(|a| a == arg) {
                args.push(arg.to_string());
            }
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, pattern: &str, read: bool, write: bool) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::AfterAllKeys);
        }
        if pattern.contains([' ', '\0']) {
            return Err(RuleError::Syntax);
        }
        let pattern = Bytes::copy_from_slice(pattern.as_bytes());
        match self.keys.iter_mut().find(|p| p.pattern == pattern) {
            Some(p) => {
                p.read |= read;
                p.write |= write;
            }
            None => self.keys.push(KeyPattern {
                pattern,
                read,
                write,
            }),
        }
        Ok(())
    }

    /// The command rules as Redis 7.0 writes them: `+@all` or `-@all`,
    /// then the categories that fit best, then single commands.
    pub fn describe_commands(&self, cat: &Catalog) -> String {
        let mut fake = Selector::new(cat.names.len());
        let additive = !self.future;
        let mut rules = vec![if additive { "-@all" } else { "+@all" }.to_string()];
        fake.set_all(cat, !additive);
        // Greedy best fit: the category adding (or removing) the fewest
        // commands the user lacks (has), most commands on a tie, first in
        // Redis's order on a full tie.
        let mut left = self.clone();
        let mut applied = vec![false; cat.category_names.len()];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (usize::MAX, 0);
            for (j, &(bit, _)) in cat.category_names.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (on, off) = left.count_category(cat, bit);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(j);
                    (min_diff, max_same) = (diff, same);
                }
            }
            let Some(j) = best else { break };
            let (bit, name) = cat.category_names[j];
            rules.push(format!("{}@{name}", if additive { '+' } else { '-' }));
            fake.set_category(cat, bit, additive);
            left.set_category(cat, bit, !additive);
            applied[j] = true;
        }
        for &id in &cat.top {
            let user = self.bit(id);
            if user != fake.bit(id) {
                rules.push(format!("{}{}", if user { '+' } else { '-' }, cat.names[id]));
                fake.set_command(cat, id, user);
            }
            for &sub in &cat.subs[id] {
                let user = self.bit(sub);
                if user != fake.bit(sub) {
                    rules.push(format!(
                        "{}{}",
                        if user { '+' } else { '-' },
                        cat.names[sub]
                    ));
                    fake.set_bit(sub, user);
                }
            }
            if !user && let Some(args) = self.first_args.get(&id) {
                for arg in args {
                    rules.push(format!("+{}|{arg}", cat.names[id]));
                }
            }
        }
        rules.join(" ")
    }

    /// Commands and subcommands of a category this selector allows, and not.
    fn count_category(&self, cat: &Catalog, bit: u32) -> (usize, usize) {
        let ids = (0..cat.names.len()).filter(|&id| cat.categories[id] & bit != 0);
        let on = ids.clone().filter(|&id| self.bit(id)).count();
        (on, ids.count() - on)
    }

    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let patterns: Vec<String> = self.keys.iter().map(KeyPattern::describe).collect();
        patterns.join(" ")
    }

    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let channels: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        channels.join(" ")
    }

    /// The selector as ACL LIST writes it.
    fn describe(&self, cat: &Catalog) -> String {
        let mut out = String::new();
        let keys = self.describe_keys();
        if !keys.is_empty() {
            out.push_str(&keys);
            out.push(' ');
        }
        if !self.all_channels {
            out.push_str("resetchannels ");
        }
        let channels = self.describe_channels();
        if !channels.is_empty() {
            out.push_str(&channels);
            out.push(' ');
        }
        out.push_str(&self.describe_commands(cat));
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sanitize {
    Unset,
    Always,
    Skip,
}

#[derive(Debug, Clone)]
pub struct User {
    pub enabled: bool,
    pub nopass: bool,
    pub sanitize: Sanitize,
    /// SHA-256 hashes in lowercase hex, in the order they were added.
    pub passwords: Vec<String>,
    pub root: Selector,
    pub selectors: Vec<Selector>,
}

impl User {
    fn new(commands: usize) -> Self {
        User {
            enabled: false,
            nopass: false,
            sanitize: Sanitize::Unset,
            passwords: Vec::new(),
            root: Selector::new(commands),
            selectors: Vec::new(),
        }
    }

    /// The built-in default user: on, no password, everything allowed.
    fn permissive(commands: usize) -> Self {
        let mut user = User::new(commands);
        user.enabled = true;
        user.nopass = true;
        user.root.all_keys = true;
        user.root.all_channels = true;
        for id in 0..commands {
            user.root.set_bit(id, true);
        }
        user.root.all_commands = true;
        user.root.future = true;
        user
    }

    /// Applies one SETUSER rule; a selector is given with its parentheses.
    pub fn apply(&mut self, cat: &Catalog, op: &str) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        if let Some(inner) = op.strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
            let mut selector = Selector::new(cat.names.len());
            for rule in inner.split(' ').filter(|r| !r.is_empty()) {
                selector.apply(cat, rule)?;
            }
            self.selectors.push(selector);
            return Ok(());
        }
        match op.to_ascii_lowercase().as_str() {
            "on" => self.enabled = true,
            "off" => self.enabled = false,
            "nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            "resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            "skip-sanitize-payload" => self.sanitize = Sanitize::Skip,
            "sanitize-payload" => self.sanitize = Sanitize::Always,
            "clearselectors" => self.selectors.clear(),
            "reset" => {
                for rule in [
                    "resetpass",
                    "resetkeys",
                    "resetchannels",
                    "off",
                    "sanitize-payload",
                    "clearselectors",
                    "-@all",
                ] {
                    self.apply(cat, rule)?;
                }
            }
            _ => return self.apply_password_or_selector(cat, op),
        }
        Ok(())
    }

    fn apply_password_or_selector(&mut self, cat: &Catalog, op: &str) -> Result<(), RuleError> {
        let rest = &op[op.len().min(1)..];
        match op.as_bytes().first() {
            Some(b'>') => self.add_hash(hash_password(rest.as_bytes())),
            Some(b'#') => self.add_hash(valid_hash(rest)?),
            Some(b'<') => self.remove_hash(&hash_password(rest.as_bytes()))?,
            Some(b'!') => self.remove_hash(&valid_hash(rest)?)?,
            _ => self.root.apply(cat, op)?,
        }
        Ok(())
    }

    fn add_hash(&mut self, hash: String) {
        if !self.passwords.contains(&hash) {
            self.passwords.push(hash);
        }
        self.nopass = false;
    }

    fn remove_hash(&mut self, hash: &str) -> Result<(), RuleError> {
        let before = self.passwords.len();
        self.passwords.retain(|h| h != hash);
        if self.passwords.len() == before {
            return Err(RuleError::NoSuchPassword);
        }
        Ok(())
    }

    /// The root selector, then the others: a command passes if one allows it.
    pub fn all_selectors(&self) -> impl Iterator<Item = &Selector> {
        std::iter::once(&self.root).chain(&self.selectors)
    }

    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize {
            Sanitize::Skip => flags.push("skip-sanitize-payload"),
            Sanitize::Always => flags.push("sanitize-payload"),
            Sanitize::Unset => {}
        }
        flags
    }

    /// The rules as ACL LIST and the ACL file write them.
    pub fn describe(&self, cat: &Catalog) -> String {
        let mut parts: Vec<String> = self.flags().iter().map(|f| f.to_string()).collect();
        parts.extend(self.passwords.iter().map(|h| format!("#{h}")));
        parts.push(self.root.describe(cat));
        for selector in &self.selectors {
            parts.push(format!("({})", selector.describe(cat)));
        }
        parts.join(" ")
    }

    pub fn password_ok(&self, pass: &[u8]) -> bool {
        self.nopass || self.passwords.contains(&hash_password(pass))
    }

    /// Allowed everything, now and later: the check is skipped.
    fn unrestricted(&self) -> bool {
        let r = &self.root;
        r.all_commands && r.future && r.all_keys && r.all_channels
    }
}

fn hash_password(pass: &[u8]) -> String {
    Sha256::digest(pass)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn valid_hash(hash: &str) -> Result<String, RuleError> {
    let ok = hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ok.then(|| hash.to_string()).ok_or(RuleError::BadHash)
}

/// A user as clients hold it: SETUSER changes it in place, so clients
/// logged in as it see the new rules at their next command. Every script
/// run clones the caller's `Arc` of it (usually the default user's): the
/// alignment keeps the reference counts off the line that every command
/// on every core reads `unrestricted` from.
#[repr(align(128))]
pub struct UserSlot {
    pub name: String,
    unrestricted: AtomicBool,
    rules: RwLock<User>,
}

impl UserSlot {
    fn new(name: &str, user: User) -> Self {
        UserSlot {
            name: name.to_string(),
            unrestricted: AtomicBool::new(user.unrestricted()),
            rules: RwLock::new(user),
        }
    }

    /// The one test on the command path for a user allowed everything.
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Relaxed)
    }

    pub fn rules(&self) -> parking_lot::RwLockReadGuard<'_, User> {
        self.rules.read()
    }

    fn replace(&self, user: User) {
        let unrestricted = user.unrestricted();
        *self.rules.write() = user;
        self.unrestricted.store(unrestricted, Ordering::Relaxed);
    }
}

/// One ACL LOG entry; equal refusals within a minute are counted in one.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: String,
    pub username: String,
    pub created_ms: u64,
    pub client_info: String,
}

const LOG_GROUP_MS: u64 = 60_000;
const LOG_GROUP_SCAN: usize = 10;

pub struct Acl {
    commands: usize,
    users: RwLock<BTreeMap<String, Arc<UserSlot>>>,
    log: Mutex<VecDeque<LogEntry>>,
}

impl Acl {
    /// The default user, allowed everything, with no password unless
    /// `requirepass` gives one.
    pub fn new(commands: usize, requirepass: Option<&str>) -> Self {
        let mut user = User::permissive(commands);
        if let Some(pass) = requirepass {
            user.nopass = false;
            user.passwords.push(hash_password(pass.as_bytes()));
        }
        let mut users = BTreeMap::new();
        users.insert(
            "default".to_string(),
            Arc::new(UserSlot::new("default", user)),
        );
        Acl {
            commands,
            users: RwLock::new(users),
            log: Mutex::new(VecDeque::new()),
        }
    }

    pub fn user(&self, name: &str) -> Option<Arc<UserSlot>> {
        self.users.read().get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<UserSlot> {
        self.user("default")
            .expect("the default user is never removed")
    }

    pub fn names(&self) -> Vec<String> {
        self.users.read().keys().cloned().collect()
    }

    pub fn all(&self) -> Vec<Arc<UserSlot>> {
        self.users.read().values().cloned().collect()
    }

    /// Creates or changes a user: every rule applies, or none does.
    pub fn set_user(
        &self,
        cat: &Catalog,
        name: &str,
        ops: &[String],
    ) -> Result<(), (usize, RuleError)> {
        let existing = self.user(name);
        let mut user = existing
            .as_ref()
            .map_or_else(|| User::new(self.commands), |slot| slot.rules().clone());
        for (i, op) in ops.iter().enumerate() {
            user.apply(cat, op).map_err(|e| (i, e))?;
        }
        match existing {
            Some(slot) => slot.replace(user),
            None => {
                self.users
                    .write()
                    .insert(name.to_string(), Arc::new(UserSlot::new(name, user)));
            }
        }
        Ok(())
    }

    pub fn delete(&self, name: &str) -> bool {
        self.users.write().remove(name).is_some()
    }

    /// Replaces every user at once (ACL LOAD): a default user the file
    /// does not define is the built-in one. Returns the users removed.
    pub fn replace_all(&self, users: Vec<(String, User)>) -> Vec<String> {
        let mut map = self.users.write();
        let mut loaded: BTreeMap<String, User> = users.into_iter().collect();
        loaded
            .entry("default".into())
            .or_insert_with(|| User::permissive(self.commands));
        let removed: Vec<String> = map
            .keys()
            .filter(|name| !loaded.contains_key(*name))
            .cloned()
            .collect();
        map.retain(|name, _| loaded.contains_key(name));
        for (name, user) in loaded {
            // Clients logged in as a user that stays keep it, with its new rules.
            match map.get(&name) {
                Some(slot) => slot.replace(user),
                None => {
                    map.insert(name.clone(), Arc::new(UserSlot::new(&name, user)));
                }
            }
        }
        removed
    }

    pub fn blank_user(&self) -> User {
        User::new(self.commands)
    }

    /// `requirepass` is the default user's password (none: `nopass`).
    pub fn set_default_password(&self, pass: Option<&str>) {
        let slot = self.default_user();
        let mut user = slot.rules().clone();
        user.passwords.clear();
        user.nopass = pass.is_none();
        if let Some(pass) = pass {
            user.passwords.push(hash_password(pass.as_bytes()));
        }
        slot.replace(user);
    }

    /// The user a login names, if the password is right and it is on.
    pub fn authenticate(&self, name: &str, pass: &[u8]) -> Option<Arc<UserSlot>> {
        self.user(name).filter(|slot| {
            let user = slot.rules();
            user.enabled && user.password_ok(pass)
        })
    }

    /// Records a refusal, keeping the newest `max_len` entries.
    pub fn log(&self, mut entry: LogEntry, max_len: usize) {
        let mut log = self.log.lock();
        // Only the newest entries are searched, as Redis bounds the work.
        let similar = log.iter().take(LOG_GROUP_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && entry.created_ms.saturating_sub(e.created_ms) < LOG_GROUP_MS
        });
        if let Some(i) = similar
            && let Some(old) = log.remove(i)
        {
            entry.count = old.count + 1;
        }
        log.push_front(entry);
        log.truncate(max_len);
    }

    pub fn log_entries(&self, count: usize) -> Vec<LogEntry> {
        self.log.lock().iter().take(count).cloned().collect()
    }

    pub fn reset_log(&self) {
        self.log.lock().clear();
    }
}
