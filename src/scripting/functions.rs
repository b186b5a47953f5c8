//! The function libraries (FUNCTION LOAD): each library's code and what it
//! registered. Lua states load a library's code themselves the first time
//! one of its functions runs on them, keyed by the library's load id.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::Registered;
use crate::error::{CmdError, CmdResult};

pub struct Library {
    pub name: String,
    pub code: Bytes,
    /// Different for every load, so that a state that loaded an older
    /// version of the library loads it again.
    pub id: u64,
    /// By name.
    pub functions: Vec<Registered>,
}

/// Every loaded library. Function names are one namespace across
/// libraries, matched without regard to case, as in Redis.
#[derive(Default)]
pub struct Libraries {
    by_name: BTreeMap<String, Arc<Library>>,
    by_function: HashMap<String, Arc<Library>>,
    next_id: AtomicU64,
}

/// Why libraries could not be added: a name already taken.
pub enum Collision {
    Library(String),
    Function(String),
}

/// What RESTORE does with the libraries already there.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Flush,
    Append,
    Replace,
}

impl Libraries {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The library holding function `name`, and that function's flags.
    pub fn find(&self, name: &str) -> Option<Arc<Library>> {
        self.by_function.get(&name.to_ascii_lowercase()).cloned()
    }

    pub fn libraries(&self) -> impl Iterator<Item = &Arc<Library>> {
        self.by_name.values()
    }

    /// (libraries, functions), for FUNCTION STATS.
    pub fn counts(&self) -> (usize, usize) {
        (self.by_name.len(), self.by_function.len())
    }

    pub fn clear(&mut self) {
        self.by_name.clear();
        self.by_function.clear();
    }

    pub fn delete(&mut self, name: &str) -> CmdResult<()> {
        let library = self
            .by_name
            .remove(name)
            .ok_or_else(|| CmdError::other("ERR Library not found"))?;
        self.unlink(&library);
        Ok(())
    }

    fn unlink(&mut self, library: &Library) {
        for f in &library.functions {
            self.by_function.remove(&f.name.to_ascii_lowercase());
        }
    }

    /// Adds libraries, all or none: a library that exists already is an
    /// error unless `replace`, and so is a function name another library
    /// (not being replaced) has.
    pub fn add(&mut self, libraries: Vec<Library>, replace: bool) -> Result<(), Collision> {
        for library in &libraries {
            if !replace && self.by_name.contains_key(&library.name) {
                return Err(Collision::Library(library.name.clone()));
            }
        }
        let replaced = |owner: &Library| libraries.iter().any(|l| l.name == owner.name);
        for library in &libraries {
            for f in &library.functions {
                if let Some(owner) = self.by_function.get(&f.name.to_ascii_lowercase())
                    && !replaced(owner)
                {
                    return Err(Collision::Function(f.name.clone()));
                }
            }
        }
        for library in libraries {
            if let Some(old) = self.by_name.remove(&library.name) {
                self.unlink(&old);
            }
            let library = Arc::new(library);
            for f in &library.functions {
                self.by_function
                    .insert(f.name.to_ascii_lowercase(), library.clone());
            }
            self.by_name.insert(library.name.clone(), library);
        }
        Ok(())
    }
}

/// FUNCTION DUMP's payload: rlockd's own format (Redis's is an RDB
/// fragment), with a version and a checksum that RESTORE checks.
const DUMP_MAGIC: &[u8] = b"rlockd-functions";
const DUMP_VERSION: u8 = 1;

pub fn dump<'l>(libraries: impl Iterator<Item = &'l Arc<Library>>) -> Vec<u8> {
    let mut out = DUMP_MAGIC.to_vec();
    out.push(DUMP_VERSION);
    for library in libraries {
        out.extend_from_slice(&(library.code.len() as u64).to_le_bytes());
        out.extend_from_slice(&library.code);
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum);
    out
}

fn checksum(bytes: &[u8]) -> [u8; 8] {
    let digest = sha1_smol::Sha1::from(bytes).digest().bytes();
    let mut sum = [0; 8];
    sum.copy_from_slice(&digest[..8]);
    sum
}

/// The libraries' code in a FUNCTION DUMP payload.
pub fn undump(payload: &[u8]) -> CmdResult<Vec<Bytes>> {
    let bad = || CmdError::other("ERR DUMP payload version or checksum are wrong");
    let body_len = payload.len().checked_sub(8).ok_or_else(bad)?;
    let (body, sum) = payload.split_at(body_len);
    if checksum(body) != sum {
        return Err(bad());
    }
    let mut rest = body.strip_prefix(DUMP_MAGIC).ok_or_else(bad)?;
    let (&version, tail) = rest.split_first().ok_or_else(bad)?;
    if version != DUMP_VERSION {
        return Err(bad());
    }
    rest = tail;
    let mut codes = Vec::new();
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
        let len = usize::try_from(u64::from_le_bytes(*len)).map_err(|_| bad())?;
        if len > tail.len() {
            return Err(bad());
        }
        let (code, tail) = tail.split_at(len);
        codes.push(Bytes::copy_from_slice(code));
        rest = tail;
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library(name: &str, code: &str) -> Arc<Library> {
        Arc::new(Library {
            name: name.into(),
            code: Bytes::copy_from_slice(code.as_bytes()),
            id: 0,
            functions: Vec::new(),
        })
    }

    #[test]
    fn dump_round_trips_and_refuses_damage() {
        let libs = [
            library("a", "#!lua name=a\nx"),
            library("b", "#!lua name=b\ny"),
        ];
        let payload = dump(libs.iter());
        let codes = undump(&payload).unwrap();
        assert_eq!(codes, [libs[0].code.clone(), libs[1].code.clone()]);
        for cut in 0..payload.len() {
            assert!(undump(&payload[..cut]).is_err());
        }
        let mut damaged = payload.clone();
        damaged[20] ^= 1;
        assert!(undump(&damaged).is_err());
    }
}
