//! Logging in, and the ACL log's record of a refused login: what AUTH,
//! HELLO and RESET share with the ACL family.

use super::reply::client_line;
use crate::context::acl::{LogEntry, UserSlot};
use crate::context::{Client, Shared};
use crate::error::{CmdError, CmdResult};

/// Logs in as `username` (the default user when `None`), or says why not.
pub(super) fn authenticate(
    shared: &Shared,
    client: &mut Client,
    username: Option<&[u8]>,
    pass: &[u8],
) -> CmdResult<()> {
    let name = String::from_utf8_lossy(username.unwrap_or(b"default")).into_owned();
    if username.is_none() && shared.acl.default_user().rules().nopass {
        return Err(CmdError::AuthNotConfigured);
    }
    let Some(user) = shared.acl.authenticate(&name, pass) else {
        log_auth_failure(shared, client, &name);
        return Err(CmdError::WrongPass);
    };
    client.handle.info.lock().user = user.name.clone();
    client.user = user;
    client.authenticated = true;
    Ok(())
}

/// Whether a new or RESET connection starts logged in as the default user.
pub(super) fn starts_authenticated(user: &UserSlot) -> bool {
    let rules = user.rules();
    rules.enabled && rules.nopass
}

/// A refused login, for ACL LOG.
fn log_auth_failure(shared: &Shared, client: &Client, username: &str) {
    shared.acl.log(
        LogEntry {
            count: 1,
            reason: "auth",
            context: if client.multi.is_some() {
                "multi"
            } else {
                "toplevel"
            },
            object: "AUTH".into(),
            username: username.into(),
            created_ms: shared.now_ms(),
            client_info: client_line(shared, &client.handle, client.query_bytes),
        },
        log_max_len(shared),
    );
}

pub(super) fn log_max_len(shared: &Shared) -> usize {
    usize::try_from(shared.config.read().acllog_max_len).unwrap_or(usize::MAX)
}
