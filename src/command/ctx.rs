//! What every handler is given; below the families and the registry.

use bytes::Bytes;

use crate::config::DebugCommand;
use crate::context::{Client, Shared};
use crate::keyspace::{Db, Locked};

/// What a handler sees: its arguments, the client, the server, and the
/// shards its keys live in, locked for the length of the command.
pub struct Ctx<'c, 'a> {
    pub args: &'c [Bytes],
    pub shared: &'c Shared,
    pub client: &'c mut Client,
    pub locked: &'c mut Locked<'a>,
}

impl<'a> Ctx<'_, 'a> {
    pub fn db(&mut self) -> Db<'_, 'a> {
        self.locked.db(self.client.db)
    }

    pub fn now(&self) -> u64 {
        self.locked.now()
    }

    pub fn arg(&self, i: usize) -> &Bytes {
        &self.args[i]
    }

    /// Whether a protected action (`enable-debug-command`,
    /// `enable-protected-configs`) is open to this client.
    pub fn permits(&self, setting: DebugCommand) -> bool {
        match setting {
            DebugCommand::Yes => true,
            DebugCommand::Local => self.client.handle.addr.is_local(),
            DebugCommand::No => false,
        }
    }
}
